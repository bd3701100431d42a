"""The recurrent fast paths against the plain path: values and gradients, fresh random inputs.

anatomy.mixers.cells.run_lstm / run_gru (custom VJP: one matmul per backward step, the
weight gradients as one matmul after the scan) must compute what scan.run('lstm') /
scan.run('gru') compute, with hoist=True (the default, the same forward operations) and
hoist=False (the cell per step).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rel

from anatomy.mixers import get_cell
from anatomy.mixers.cells import LSTMState, run_gru, run_lstm
from anatomy.scan import run

B, T, D, H = 3, 7, 5, 4


@pytest.fixture
def data():
    rng = np.random.default_rng(13)
    f = lambda *s: jnp.asarray(rng.normal(size=s), jnp.float32)
    params = {"w_x": f(D, 4 * H) * 0.5, "w_h": f(H, 4 * H) * 0.5, "b": f(4 * H) * 0.3}
    carry0 = LSTMState(f(B, H), f(B, H))
    return params, f(B, T, D), carry0, (f(B, T, H), f(B, H), f(B, H)), jnp.asarray([7, 3, 5])


def loss(runner, params, xs, carry0, g, lengths, reverse):
    """<ys, g_ys> + <each leaf of the final carry, its cotangent> (LSTM: h, c; GRU: h)."""
    final, ys = runner(params, xs, carry0, lengths, reverse)
    out = jnp.vdot(ys, g[0])
    for leaf, g_leaf in zip(jax.tree.leaves(final), g[1:], strict=True):
        out = out + jnp.vdot(leaf, g_leaf)
    return out


def plain(hoist, cell="lstm"):
    return lambda p, x, c0, n, r: run(
        get_cell(cell), p, x, carry0=c0, lengths=n, reverse=r, hoist=hoist
    )


def fused_runner(hoist, run_fused=run_lstm):
    return lambda p, x, c0, n, r: run_fused(p, x, carry0=c0, lengths=n, reverse=r, hoist=hoist)


@pytest.mark.slow
@pytest.mark.parametrize("fused_hoist", [True, False])
@pytest.mark.parametrize("use_lengths", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_fused_lstm_equals_the_plain_path(data, use_lengths, reverse, fused_hoist):
    check_fused_equals_plain(data, "lstm", run_lstm, use_lengths, reverse, fused_hoist)


def check_fused_equals_plain(data, cell, run_fused, use_lengths, reverse, fused_hoist):
    fused = fused_runner(fused_hoist, run_fused)
    params, xs, carry0, g, lengths = data
    lengths = lengths if use_lengths else None
    out = fused(params, xs, carry0, lengths, reverse)
    grad = jax.grad(loss, argnums=(1, 2, 3))  # params, xs, carry0
    got = grad(fused, params, xs, carry0, g, lengths, reverse)
    for hoist in (True, False):
        want_out = plain(hoist, cell)(params, xs, carry0, lengths, reverse)
        for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(want_out)):
            assert rel(a, b) < 1e-6
        want = grad(plain(hoist, cell), params, xs, carry0, g, lengths, reverse)
        for path, a in jax.tree_util.tree_flatten_with_path(got)[0]:
            b = dict(jax.tree_util.tree_flatten_with_path(want)[0])[path]
            assert rel(a, b) < 1e-5, (cell, hoist, jax.tree_util.keystr(path))
    if use_lengths:  # padding: exactly zero outputs, and no gradient into padded inputs
        _, ys = out
        assert np.all(np.asarray(ys)[1, 3:] == 0.0)
        assert np.all(np.asarray(got[1])[1, 3:] == 0.0)  # d xs


@pytest.mark.slow
def test_fused_lstm_default_carry_and_jit(data):
    params, xs, _, g, _ = data
    final, ys = jax.jit(lambda p, x: run_lstm(p, x))(params, xs)
    ref_final, ref_ys = run(get_cell("lstm"), params, xs)
    assert rel(ys, ref_ys) < 1e-6 and rel(final.c, ref_final.c) < 1e-6
    dw = jax.grad(lambda p: jnp.vdot(run_lstm(p, xs)[1], g[0]))(params)
    ref = jax.grad(lambda p: jnp.vdot(run(get_cell("lstm"), p, xs)[1], g[0]))(params)
    for k in params:
        assert rel(dw[k], ref[k]) < 1e-5, k


@pytest.fixture
def gru_data():
    rng = np.random.default_rng(17)
    f = lambda *s: jnp.asarray(rng.normal(size=s), jnp.float32)
    params = {
        "w_x": f(D, 3 * H) * 0.5,
        "w_h": f(H, 3 * H) * 0.5,
        "b_x": f(3 * H) * 0.3,
        "b_h": f(3 * H) * 0.3,  # nonzero: its n slice sits inside r * (h W_hn + b_hn)
    }
    return params, f(B, T, D), f(B, H), (f(B, T, H), f(B, H)), jnp.asarray([7, 3, 5])


@pytest.mark.slow
@pytest.mark.parametrize("fused_hoist", [True, False])
@pytest.mark.parametrize("use_lengths", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_fused_gru_equals_the_plain_path(gru_data, use_lengths, reverse, fused_hoist):
    check_fused_equals_plain(gru_data, "gru", run_gru, use_lengths, reverse, fused_hoist)


@pytest.mark.slow
def test_fused_gru_default_carry_and_jit(gru_data):
    params, xs, _, g, _ = gru_data
    final, ys = jax.jit(lambda p, x: run_gru(p, x))(params, xs)
    ref_final, ref_ys = run(get_cell("gru"), params, xs)
    assert rel(ys, ref_ys) < 1e-6 and rel(final, ref_final) < 1e-6
    for hoist in (True, False):
        dw = jax.grad(lambda p, h=hoist: jnp.vdot(run_gru(p, xs, hoist=h)[1], g[0]))(params)
        ref = jax.grad(lambda p: jnp.vdot(run(get_cell("gru"), p, xs)[1], g[0]))(params)
        for k in params:
            assert rel(dw[k], ref[k]) < 1e-5, (hoist, k)
