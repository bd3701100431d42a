"""anatomy.mixers.quasi: associative scan vs sequential scan vs a float64 NumPy loop."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rel

from anatomy.mixers.quasi import (
    init_sru,
    linear_recurrence,
    linear_recurrence_sequential,
    quasi_recurrence,
    sru,
)

B, T, H = 3, 9, 4
LENGTHS = np.array([9, 5, 0])


def np_quasi(f, z, c0, lengths):
    """c_t = f ⊙ c_{t-1} + (1 - f) ⊙ z, frozen past the length, float64 loop."""
    cs = np.zeros(f.shape)
    for b in range(f.shape[0]):
        c = c0[b].astype(np.float64)
        for t in range(f.shape[1]):
            if t < lengths[b]:
                c = f[b, t] * c + (1 - f[b, t]) * z[b, t]
            cs[b, t] = c
    return cs


@pytest.fixture(scope="module")
def gates():
    rng = np.random.default_rng(99)
    f = (1 / (1 + np.exp(-rng.normal(size=(B, T, H))))).astype(np.float32)
    z = rng.normal(size=(B, T, H)).astype(np.float32)
    c0 = rng.normal(size=(B, H)).astype(np.float32)
    return f, z, c0


@pytest.mark.slow
def test_associative_scan_matches_sequential_and_numpy(gates):
    f, z, c0 = gates
    par = quasi_recurrence(f, z, c0, lengths=LENGTHS)
    seq = quasi_recurrence(f, z, c0, lengths=LENGTHS, form="sequential")
    ref = np_quasi(f, z, c0, LENGTHS)
    assert rel(par, ref) <= 1e-5
    assert rel(seq, ref) <= 1e-5
    np.testing.assert_array_equal(par[2], np.broadcast_to(c0[2], (T, H)))  # length 0: frozen c0
    # without c0 / lengths: zeros start, every step real (c_t = a_t c_{t-1} + b_t, here a = f, b = z)
    want = np.zeros((B, T, H))
    c = np.zeros((B, H))
    for t in range(T):
        c = f[:, t] * c + z[:, t]
        want[:, t] = c
    assert rel(linear_recurrence(f, z), want) <= 1e-5
    assert rel(linear_recurrence_sequential(f, z), want) <= 1e-5


def test_sru_layer_vs_numpy(gates):
    f, z, c0 = gates
    rng = np.random.default_rng(5)
    for d_in in (H, 3):  # identity highway, projected highway
        shapes = jax.tree_util.tree_map(jnp.shape, init_sru(jax.random.key(0), d_in, H))
        p = {k: rng.normal(0, 0.5, s).astype(np.float32) for k, s in shapes.items()}
        xs = rng.normal(size=(B, T, d_in)).astype(np.float32)
        c_final, hs = sru(p, xs, c0, lengths=LENGTHS)
        _, hs_seq = sru(p, xs, c0, lengths=LENGTHS, form="sequential")
        w = p["w"].astype(np.float64)
        x64 = xs.astype(np.float64)
        zz, af, ar = x64 @ w[:, :H], x64 @ w[:, H : 2 * H], x64 @ w[:, 2 * H :]
        ff = 1 / (1 + np.exp(-(af + p["b"][:H])))
        rr = 1 / (1 + np.exp(-(ar + p["b"][H:])))
        cs = np_quasi(ff, zz, c0, LENGTHS)
        skip = x64 @ p["w_skip"] if "w_skip" in p else x64
        ref = rr * np.tanh(cs) + (1 - rr) * skip
        for b, n in enumerate(LENGTHS):
            ref[b, n:] = 0.0
        assert rel(hs, ref) <= 1e-5
        assert rel(hs_seq, ref) <= 1e-5
        assert rel(c_final, cs[:, -1]) <= 1e-5


def test_quasi_bad_shapes():
    a = jnp.ones((2, 3, 4))
    with pytest.raises(ValueError, match="a and b"):
        linear_recurrence(a, a[:, :2])
    with pytest.raises(ValueError, match="c0"):
        linear_recurrence(a, a, jnp.ones((2, 3)))
