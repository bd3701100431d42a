"""Linear-recurrence cells (sru, qrnn, mingru, mamba): associative scan == sequential scan
(values and gradients), each == a float64 NumPy loop, the one-step cell == the sequence form,
and the compiled programs' serial depth (T-trip loop for scan, none for associative scan)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rel

from anatomy import probes
from anatomy.axes import is_axes, trace
from anatomy.mixers import get_cell
from anatomy.mixers.mamba import init_mamba, mamba
from anatomy.mixers.mingru import mingru
from anatomy.mixers.quasi import SRUState, qrnn, sru
from anatomy.scan import bidirectional, reverse_padded, run

B, T, D, H = 3, 9, 5, 6
LENGTHS = np.array([9, 4, 0])
NAMES = ("sru", "qrnn", "mingru", "mamba")


def sig(x):
    return 1 / (1 + np.exp(-x))


def random_params(name, seed, d_in=D):
    """The cell's init with every leaf moved off it (biases start at zero, D at one)."""
    params = get_cell(name).init(jax.random.key(seed), d_in, H)
    noise = np.random.default_rng(seed)
    return jax.tree_util.tree_map(
        lambda p: p + 0.3 * noise.normal(size=p.shape).astype(p.dtype), params
    )


def random_carry(name, params, seed):
    """A fresh random carry of the cell's structure (never zeros)."""
    spec = get_cell(name)
    zero = spec.from_hidden(params, jnp.zeros((B, H)))
    noise = np.random.default_rng(seed)
    return jax.tree_util.tree_map(
        lambda z: jnp.asarray(noise.normal(size=z.shape), z.dtype) * 0.5, zero
    )


def inputs(seed):
    return np.random.default_rng(seed).normal(size=(B, T, D)).astype(np.float32)


# ------------------------------------------------------------- float64 NumPy references


def np_mingru(p, xs, h0):
    w, b = (np.asarray(p[k], np.float64) for k in ("w", "b"))
    hs, h = np.zeros(xs.shape[:2] + (H,)), h0.astype(np.float64)
    for t in range(xs.shape[1]):
        a = xs[:, t].astype(np.float64) @ w + b
        z, cand = sig(a[:, :H]), a[:, H:]
        h = (1 - z) * h + z * cand
        hs[:, t] = h
    return hs


def np_mamba(p, xs, s0):
    p = {k: np.asarray(v, np.float64) for k, v in p.items()}
    a_mat = -np.exp(p["a_log"])  # [H, N]
    s = s0.astype(np.float64)
    outs = np.zeros(xs.shape[:2] + (H,))
    for t in range(xs.shape[1]):
        uz = xs[:, t].astype(np.float64) @ p["w_in"]
        u, z = uz[:, :H], uz[:, H:]
        u = u * sig(u)
        delta = np.log1p(np.exp(u @ p["w_dt"] + p["b_dt"]))  # softplus
        b_in, c_out = u @ p["w_b"], u @ p["w_c"]  # [B, N]
        s = np.exp(delta[:, :, None] * a_mat) * s + (delta * u)[:, :, None] * b_in[:, None, :]
        y = np.einsum("bdn,bn->bd", s, c_out) + p["d"] * u
        outs[:, t] = (y * z * sig(z)) @ p["w_out"]
    return outs


def np_qrnn(p, xs, c0, xw_prev0):
    p = {k: np.asarray(v, np.float64) for k, v in p.items()}
    c, prev = c0.astype(np.float64), xw_prev0.astype(np.float64)
    hs = np.zeros(xs.shape[:2] + (H,))
    for t in range(xs.shape[1]):
        x = xs[:, t].astype(np.float64)
        a = x @ p["w"] + prev + p["b"]
        z, f, o = np.tanh(a[:, :H]), sig(a[:, H : 2 * H]), sig(a[:, 2 * H :])
        c = f * c + (1 - f) * z
        hs[:, t] = o * c
        prev = x @ p["w_prev"]
    return hs


@pytest.mark.slow
def test_mingru_mamba_qrnn_match_float64_loops():
    xs = inputs(0)
    p = random_params("mingru", 1)
    h0 = np.random.default_rng(2).normal(size=(B, H)).astype(np.float32)
    for form in ("associative", "sequential"):
        h_last, hs = mingru(p, xs, h0, form=form)
        ref = np_mingru(p, xs, h0)
        assert rel(hs, ref) <= 1e-5 and rel(h_last, ref[:, -1]) <= 1e-5

    p = random_params("mamba", 3)
    c0 = random_carry("mamba", p, 4)
    for form in ("associative", "sequential"):
        state, outs = mamba(p, xs, c0, form=form)
        assert rel(outs, np_mamba(p, xs, np.asarray(c0.s))) <= 1e-5
        assert rel(state.h, outs[:, -1]) == 0.0

    p = random_params("qrnn", 5)
    c0 = random_carry("qrnn", p, 6)
    for form in ("associative", "sequential"):
        _, hs = qrnn(p, xs, c0, form=form)
        assert rel(hs, np_qrnn(p, xs, np.asarray(c0.c), np.asarray(c0.xw_prev))) <= 1e-5


# ---------------------------------------- associative == sequential, values and gradients


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_associative_scan_equals_sequential_scan_values_and_gradients(name):
    params, xs = random_params(name, 10), jnp.asarray(inputs(11))
    carry0 = random_carry(name, params, 12)
    w = jnp.asarray(np.random.default_rng(13).normal(size=(B, T, H)), jnp.float32)

    def loss(params, xs, carry0, form):
        final, ys = run(get_cell(name), params, xs, lengths=LENGTHS, carry0=carry0, form=form)
        leaves = jax.tree_util.tree_leaves(final)
        return jnp.sum(ys * w) + sum(jnp.sum(jnp.sin(leaf)) for leaf in leaves)

    outs = {
        par: jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)), static_argnums=3)(
            params, xs, carry0, par
        )
        for par in ("associative", "sequential")
    }
    (v_par, g_par), (v_seq, g_seq) = outs["associative"], outs["sequential"]
    np.testing.assert_allclose(v_par, v_seq, rtol=1e-5)
    flat_par, flat_seq = jax.tree_util.tree_leaves(g_par), jax.tree_util.tree_leaves(g_seq)
    assert len(flat_par) == len(flat_seq) > 3
    for a, b in zip(flat_par, flat_seq):
        assert np.abs(np.asarray(b)).max() > 0  # every gradient reaches its leaf
        assert rel(a, b) <= 1e-5
    # the length-0 row: its carry passes through untouched, its outputs are exactly zero
    final, ys = run(get_cell(name), params, xs, lengths=LENGTHS, carry0=carry0)
    for got, want in zip(jax.tree_util.tree_leaves(final), jax.tree_util.tree_leaves(carry0)):
        np.testing.assert_array_equal(got[2], want[2])
    assert (np.asarray(ys)[1, LENGTHS[1] :] == 0).all() and (np.asarray(ys)[2] == 0).all()


# ------------------------------------------------- the one-step cell == the sequence form


def stepwise(spec, params, xs, lengths, carry):
    """A Python loop of spec.cell over time: the carry frozen past each length, y zero."""
    ys = []
    for t in range(xs.shape[1]):
        new, y = spec.cell(params, carry, xs[:, t])
        real = jnp.asarray(t < lengths)[:, None]
        carry = jax.tree_util.tree_map(
            lambda n, o, real=real: jnp.where(real.reshape(real.shape + (1,) * (n.ndim - 2)), n, o),
            new,
            carry,
        )
        ys.append(jnp.where(real, y, 0.0))
    return carry, jnp.stack(ys, axis=1)


@pytest.mark.parametrize("name", NAMES)
def test_one_step_cell_equals_sequence_form_also_reversed(name):
    spec = get_cell(name)
    params, xs = random_params(name, 20), jnp.asarray(inputs(21))
    carry0 = random_carry(name, params, 22)
    want_final, want = stepwise(spec, params, xs, LENGTHS, carry0)
    final, ys = run(get_cell(name), params, xs, lengths=LENGTHS, carry0=carry0)
    assert rel(ys, want) <= 1e-5
    for a, b in zip(jax.tree_util.tree_leaves(final), jax.tree_util.tree_leaves(want_final)):
        assert rel(a, b) <= 1e-5
    assert rel(spec.hidden(final)[:2], want[np.arange(2), LENGTHS[:2] - 1]) <= 1e-5
    # reverse: the cell reads each sequence backwards within its length, ys stay aligned
    _, back = stepwise(spec, params, reverse_padded(xs, jnp.asarray(LENGTHS)), LENGTHS, carry0)
    _, ys_rev = run(get_cell(name), params, xs, lengths=LENGTHS, carry0=carry0, reverse=True)
    assert rel(ys_rev, reverse_padded(back, jnp.asarray(LENGTHS))) <= 1e-5


def test_sru_cell_form_keeps_the_layer_and_bidirectional_runs():
    params, xs = random_params("sru", 30), jnp.asarray(inputs(31))
    c0 = jnp.asarray(np.random.default_rng(32).normal(size=(B, H)), jnp.float32)
    c_final, hs = sru(params, xs, c0, lengths=LENGTHS)  # the layer API
    state, hs_cell = run(get_cell("sru"), params, xs, lengths=LENGTHS, carry0=SRUState(c0, c0))
    np.testing.assert_array_equal(hs, hs_cell)  # h does not feed back: the same numbers
    np.testing.assert_array_equal(c_final, state.c)
    ann, (fw, bw) = bidirectional(
        get_cell("mingru"), *(random_params("mingru", s) for s in (1, 2)), xs
    )
    assert ann.shape == (B, T, 2 * H) and fw.shape == bw.shape == (B, H)


# --------------------------------------------------- serial depth of the compiled program


@pytest.mark.slow
@pytest.mark.parametrize("name", ("mingru", "mamba"))
def test_compiled_serial_depth_scan_has_t_steps_associative_scan_none(name):
    params, xs = random_params(name, 40), jnp.asarray(inputs(41))

    def loss(params, xs, form):
        return jnp.sum(run(get_cell(name), params, xs, form=form)[1] ** 2)

    steps = {
        par: probes.compiled_sequential_steps(
            jax.grad(lambda p, x, par=par: loss(p, x, par)), params, xs
        )
        for par in ("associative", "sequential")
    }
    assert steps["sequential"] == 2 * T  # T serial steps forward and T backward
    assert steps["associative"] == 0  # associative scan: no loop over time at all


@pytest.mark.parametrize("name", NAMES)
def test_every_parameter_declares_its_logical_axes(name):
    for d_in in (D, H):  # SRU: w_skip only when D != H
        axes, shapes = trace(
            lambda k, d_in=d_in: get_cell(name).init(k, d_in, H), jax.random.key(0)
        )
        assert jax.tree_util.tree_structure(shapes) == jax.tree_util.tree_structure(
            jax.tree_util.tree_map(lambda a: 0, axes, is_leaf=is_axes)
        )
        assert any("hidden" in a for a in jax.tree_util.tree_leaves(axes, is_leaf=is_axes))


# ----------------------------------------------------------------------- bad input


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown cell 'lru'.*mamba.*mingru.*qrnn.*sru"):
        get_cell("lru")
    p = random_params("mingru", 0)
    with pytest.raises(ValueError, match="mingru: xs must be"):
        mingru(p, jnp.ones((B, T, D + 1)))
    with pytest.raises(ValueError, match="return_carries"):
        run(get_cell("mamba"), random_params("mamba", 0), jnp.ones((B, T, D)), return_carries=True)
    with pytest.raises(ValueError, match="lengths"):
        run(
            get_cell("qrnn"),
            random_params("qrnn", 0),
            jnp.ones((B, T, D)),
            lengths=np.ones(B + 1, int),
        )
    with pytest.raises(ValueError, match="d_state"):
        init_mamba(jax.random.key(0), D, H, d_state=0)
