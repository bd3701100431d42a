"""anatomy.mixers.cells and anatomy.scan.run: cells vs float64 NumPy, scan vs a Python loop, hoisted vs plain,
padding, reverse, jit, gradients. (torch and flax.linen twins: test_cells_torch.py.)"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rel
from jax.test_util import check_grads

from anatomy.mixers import get_cell
from anatomy.mixers.cells import LSTMState, gru_cell, gru_paper_cell, init_gru, init_lstm, init_rnn
from anatomy.scan import bidirectional, run

NAMES = ["rnn", "lstm", "gru", "gru_paper"]
B, T, D, H = 3, 6, 4, 5
LENGTHS = np.array([6, 2, 4])  # one full, two padded


# ------------------------------------------------------------ float64 NumPy twins
# Written from the equations, gate by gate; they share nothing with the JAX code.


def _sig(a):
    return 1.0 / (1.0 + np.exp(-a))


def np_step(name, p, carry, x):
    """One step in float64; carry is h, or (h, c) for the LSTM. Returns (carry, h)."""
    wx, wh = p["w_x"], p["w_h"]
    if name == "rnn":
        h = np.tanh(x @ wx + carry @ wh + p["b"])
        return h, h
    if name == "lstm":
        h, c = carry
        b = p["b"]
        a = [
            x @ wx[:, k * H : (k + 1) * H] + h @ wh[:, k * H : (k + 1) * H] + b[k * H : (k + 1) * H]
            for k in range(4)
        ]
        i, f, g, o = _sig(a[0]), _sig(a[1]), np.tanh(a[2]), _sig(a[3])
        c = f * c + i * g
        h = o * np.tanh(c)
        return (h, c), h
    h = carry
    bx, bh = p["b_x"], p["b_h"]
    sl = [slice(k * H, (k + 1) * H) for k in range(3)]
    r = _sig(x @ wx[:, sl[0]] + bx[sl[0]] + h @ wh[:, sl[0]] + bh[sl[0]])
    z = _sig(x @ wx[:, sl[1]] + bx[sl[1]] + h @ wh[:, sl[1]] + bh[sl[1]])
    if name == "gru":  # reset after the hidden matmul
        n = np.tanh(x @ wx[:, sl[2]] + bx[sl[2]] + r * (h @ wh[:, sl[2]] + bh[sl[2]]))
    else:  # Cho et al. 2014: reset before
        n = np.tanh(x @ wx[:, sl[2]] + bx[sl[2]] + (r * h) @ wh[:, sl[2]] + bh[sl[2]])
    h = (1 - z) * n + z * h
    return h, h


def np_zero(name, batch):
    z = np.zeros((batch, H))
    return (z, z) if name == "lstm" else z


def np_sequence(name, p, xs, reverse=False):
    """One unpadded sequence xs [T, D] -> (final carry, ys [T, H]) in float64."""
    carry = np_zero(name, 1)
    order = range(len(xs))[::-1] if reverse else range(len(xs))
    ys = np.zeros((len(xs), H))
    for t in order:
        carry, y = np_step(name, p, carry, xs[t][None])
        ys[t] = y[0]
    return carry, ys


# ------------------------------------------------------------------------ helpers


def rand_params(name, rng):
    """Random float32 parameters with the init's shapes (no zero biases)."""
    shapes = jax.tree_util.tree_map(jnp.shape, get_cell(name).init(jax.random.key(0), D, H))
    return {k: rng.normal(0, 0.5, s).astype(np.float32) for k, s in shapes.items()}


def to64(tree):
    return jax.tree_util.tree_map(lambda a: np.asarray(a, np.float64), tree)


def carry_h(name, carry):
    return carry[0] if name == "lstm" else carry


@pytest.fixture(scope="module")
def data():
    """Per-cell random params and one batch of inputs (fresh per module, never zeros)."""
    rng = np.random.default_rng(1234)
    params = {n: rand_params(n, rng) for n in NAMES}
    xs = rng.normal(size=(B, T, D)).astype(np.float32)
    return params, xs


# -------------------------------------------------------------------------- cells


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_cell_matches_numpy_float64(name, data, rng):
    params, _ = data
    p = params[name]
    x = rng.normal(size=(B, D)).astype(np.float32)
    hc = [rng.normal(size=(B, H)).astype(np.float32) for _ in range(2)]
    carry = LSTMState(*hc) if name == "lstm" else hc[0]
    spec = get_cell(name)
    new, y = spec.cell(p, carry, x)
    ref_carry, ref_y = np_step(
        name, to64(p), to64(tuple(carry) if name == "lstm" else carry), to64(x)
    )
    assert rel(y, ref_y) <= 1e-5
    for got, ref in zip(jax.tree_util.tree_leaves(new), jax.tree_util.tree_leaves(ref_carry)):
        assert rel(got, ref) <= 1e-5
    # the plain cell is exactly project + recur
    new2, y2 = spec.recur(p, carry, spec.project(p, x))
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_array_equal(spec.hidden(new), y)


def test_gru_variants_differ_and_flag_works(data):
    params, xs = data
    h0 = xs[:, 0, :1] * np.ones((1, H), np.float32)
    a = gru_cell(params["gru"], h0, xs[:, 1])[0]
    b = gru_cell(params["gru"], h0, xs[:, 1], reset_after=False)[0]
    np.testing.assert_array_equal(b, gru_paper_cell(params["gru"], h0, xs[:, 1])[0])
    assert np.abs(a - b).max() > 1e-3


def test_inits_and_registry():
    key = jax.random.key(0)
    p = init_lstm(key, D, H, forget_bias=2.0)
    assert {k: v.shape for k, v in p.items()} == {
        "w_x": (D, 4 * H),
        "w_h": (H, 4 * H),
        "b": (4 * H,),
    }
    np.testing.assert_array_equal(p["b"].reshape(4, H)[1], 2.0)
    assert float(jnp.abs(p["w_h"]).max()) <= 1 / np.sqrt(H)
    p = init_gru(key, D, H)
    assert {k: v.shape for k, v in p.items()} == {
        "w_x": (D, 3 * H),
        "w_h": (H, 3 * H),
        "b_x": (3 * H,),
        "b_h": (3 * H,),
    }
    assert init_rnn(key, D, H)["w_h"].dtype == jnp.float32
    for name in NAMES:
        spec = get_cell(name)
        assert get_cell(spec) is spec
        carry = spec.zero_carry(2, H, jnp.float32)
        assert spec.hidden(carry).shape == (2, H)
    with pytest.raises(ValueError, match="unknown cell 'lsmt'.*lstm"):
        get_cell("lsmt")


def test_bad_inputs_raise_value_error(data):
    params, xs = data
    with pytest.raises(ValueError, match=r"\[B, T, D\]"):
        run(get_cell("rnn"), params["rnn"], xs[0])
    with pytest.raises(ValueError, match="feature size"):
        run(get_cell("rnn"), params["rnn"], xs[..., :2])
    with pytest.raises(ValueError, match="lengths must have shape"):
        run(get_cell("rnn"), params["rnn"], xs, lengths=np.array([1, 2]))
    with pytest.raises(ValueError, match="integers"):
        run(get_cell("rnn"), params["rnn"], xs, lengths=np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="positive"):
        init_lstm(jax.random.key(0), 0, H)


# ----------------------------------------------------------------------- the scan


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("reverse", [False, True])
def test_run_matches_numpy_per_sequence(name, reverse, data):
    """Padded batch, both paths, vs each unpadded sequence alone in float64 NumPy."""
    params, xs = data
    p64 = to64(params[name])
    for hoist in (True, False):
        final, ys, carries = run(
            get_cell(name),
            params[name],
            xs,
            lengths=LENGTHS,
            reverse=reverse,
            hoist=hoist,
            return_carries=True,
        )
        for b, length in enumerate(LENGTHS):
            ref_carry, ref_ys = np_sequence(name, p64, to64(xs[b, :length]), reverse)
            assert rel(ys[b, :length], ref_ys) <= 1e-5
            assert np.all(np.asarray(ys[b, length:]) == 0.0)  # exactly zero past the length
            for got, ref in zip(
                jax.tree_util.tree_leaves(final), jax.tree_util.tree_leaves(ref_carry)
            ):
                assert rel(got[b], ref[0]) <= 1e-5
            # per-step carries: the hidden part equals ys; zero past the length
            np.testing.assert_array_equal(get_cell(name).hidden(carries)[b], ys[b])
            for leaf in jax.tree_util.tree_leaves(carries):
                assert np.all(np.asarray(leaf[b, length:]) == 0.0)
        if name == "lstm":  # the cell states are the NumPy twin's c_t
            ref_c = [np_sequence_c(p64, to64(xs[b, :n]), reverse) for b, n in enumerate(LENGTHS)]
            for b, n in enumerate(LENGTHS):
                assert rel(carries.c[b, :n], ref_c[b]) <= 1e-5


def np_sequence_c(p, xs, reverse):
    """LSTM cell states c_t [T, H] of one unpadded sequence in float64."""
    carry, cs = np_zero("lstm", 1), np.zeros((len(xs), H))
    for t in range(len(xs))[::-1] if reverse else range(len(xs)):
        carry, _ = np_step("lstm", p, carry, xs[t][None])
        cs[t] = carry[1][0]
    return cs


@pytest.mark.parametrize("name", NAMES)
def test_scan_matches_python_loop_and_hoist_matches_plain(name, data):
    params, xs = data
    spec = get_cell(name)
    p = params[name]
    rng = np.random.default_rng(7)
    carry0 = jax.tree_util.tree_map(
        lambda z: jnp.asarray(rng.normal(size=z.shape), jnp.float32),
        spec.zero_carry(B, H, jnp.float32),
    )
    carry, loop_ys = carry0, []
    for t in range(T):  # the slow, obvious twin: the plain cell in a Python loop
        carry, y = spec.cell(p, carry, xs[:, t])
        loop_ys.append(y)
    loop_ys = jnp.stack(loop_ys, axis=1)
    for hoist in (True, False):
        final, ys = run(get_cell(name), p, xs, carry0=carry0, hoist=hoist)
        # float32 vs float32 with different summation order (hoisted matmul): ~1e-7
        np.testing.assert_allclose(ys, loop_ys, rtol=1e-5, atol=1e-6)
        for a, b in zip(jax.tree_util.tree_leaves(final), jax.tree_util.tree_leaves(carry)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # reverse without lengths = the loop run over flipped time, outputs flipped back
    final_r, ys_r = run(get_cell(name), p, xs, carry0=carry0, reverse=True)
    final_f, ys_f = run(get_cell(name), p, xs[:, ::-1], carry0=carry0)
    np.testing.assert_allclose(ys_r, ys_f[:, ::-1], rtol=1e-6, atol=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_padding_equals_each_sequence_alone(name, data):
    """Padding content must not leak: fill the padding with large noise, compare to unpadded runs."""
    params, xs = data
    noisy = np.array(xs)
    for b, n in enumerate(LENGTHS):
        noisy[b, n:] = 100.0 * np.random.default_rng(b).normal(size=(T - n, D))
    for reverse in (False, True):
        final, ys = run(get_cell(name), params[name], noisy, lengths=LENGTHS, reverse=reverse)
        for b, n in enumerate(LENGTHS):
            fa, ya = run(get_cell(name), params[name], xs[b : b + 1, :n], reverse=reverse)
            np.testing.assert_allclose(ys[b : b + 1, :n], ya, rtol=1e-5, atol=1e-6)
            assert np.all(np.asarray(ys[b, n:]) == 0.0)
            for a, c in zip(jax.tree_util.tree_leaves(final), jax.tree_util.tree_leaves(fa)):
                np.testing.assert_allclose(a[b : b + 1], c, rtol=1e-5, atol=1e-6)


def test_zero_length_keeps_carry0(data):
    params, xs = data
    carry0 = jnp.asarray(np.random.default_rng(3).normal(size=(B, H)), jnp.float32)
    final, ys = run(get_cell("gru"), params["gru"], xs, lengths=np.array([0, 3, 0]), carry0=carry0)
    np.testing.assert_array_equal(final[0], carry0[0])
    np.testing.assert_array_equal(final[2], carry0[2])
    assert np.all(np.asarray(ys[0]) == 0.0)


def test_bidirectional_is_forward_concat_backward(data):
    params, xs = data
    rng = np.random.default_rng(5)
    p_bw = rand_params("lstm", rng)
    ys, (cf, cb) = bidirectional(get_cell("lstm"), params["lstm"], p_bw, xs, lengths=LENGTHS)
    assert ys.shape == (B, T, 2 * H)
    for b, n in enumerate(LENGTHS):
        _, ref_f = np_sequence("lstm", to64(params["lstm"]), to64(xs[b, :n]))
        ref_cb, ref_b = np_sequence("lstm", to64(p_bw), to64(xs[b, :n]), reverse=True)
        assert rel(ys[b, :n, :H], ref_f) <= 1e-5
        assert rel(ys[b, :n, H:], ref_b) <= 1e-5
        assert rel(cb.h[b], ref_cb[0][0]) <= 1e-5
        assert np.all(np.asarray(ys[b, n:]) == 0.0)


@pytest.mark.slow
def test_jit_equals_no_jit(data):
    """jax.jit against the same function run op by op: under jax.disable_jit the scan is a
    Python loop of eager steps, so the two results come from different programs."""
    params, xs = data
    fn = lambda p, x, n: run(get_cell("lstm"), p, x, lengths=n, reverse=True)
    with jax.disable_jit():
        eager = fn(params["lstm"], xs, LENGTHS)
    jitted = jax.jit(fn)(params["lstm"], xs, LENGTHS)
    for a, b in zip(jax.tree_util.tree_leaves(eager), jax.tree_util.tree_leaves(jitted)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rnn", "lstm", "gru_paper"])
def test_gradients_check_grads(name):
    """Reverse-mode (order 1 and 2) vs finite differences, in float64 so FD is accurate."""
    with jax.enable_x64(True):  # float64 only inside this test
        rng = np.random.default_rng(11)
        shapes = jax.tree_util.tree_map(jnp.shape, get_cell(name).init(jax.random.key(0), 3, 2))
        p = {k: jnp.asarray(rng.normal(0, 0.5, s)) for k, s in shapes.items()}
        xs = jnp.asarray(rng.normal(size=(2, 4, 3)))
        lengths = jnp.array([4, 2])

        @jax.jit  # FD evaluates the loss many times: compile it once
        def loss(p, xs):
            final, ys = run(get_cell(name), p, xs, lengths=lengths, reverse=True)
            return jnp.sum(ys**2) + jnp.sum(jax.tree_util.tree_leaves(final)[0])

        check_grads(loss, (p, xs), order=2, modes=["rev"], atol=1e-5, rtol=1e-5)


def test_hoist_puts_one_input_matmul_outside_the_scan(data):
    """hoist=True: a single [B, T, D] x [D, 4H] dot before the scan, one [B, H] x [H, 4H] inside."""
    params, xs = data
    jaxpr = jax.make_jaxpr(lambda p, x: run(get_cell("lstm"), p, x, hoist=True))(
        params["lstm"], xs
    ).jaxpr
    outside = [e for e in jaxpr.eqns if e.primitive.name == "dot_general"]
    assert [e.outvars[0].aval.shape for e in outside] == [(B, T, 4 * H)]
    (scan,) = [e for e in jaxpr.eqns if e.primitive.name == "scan"]
    inside = [e for e in scan.params["jaxpr"].jaxpr.eqns if e.primitive.name == "dot_general"]
    assert [e.outvars[0].aval.shape for e in inside] == [(B, 4 * H)]
