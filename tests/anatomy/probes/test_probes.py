"""Probes against slow, obvious twins: explicit Jacobian products, unrolled loops, NumPy loops."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from anatomy import probes
from anatomy.attention import init_mha, multi_head_attention
from anatomy.mixers import get_cell
from anatomy.mixers.cells import LSTMState, init_rnn
from anatomy.probes import claims
from anatomy.scan import run


def test_input_grad_norms_match_explicit_jacobian_product(rng):
    """||∂L/∂x_t|| of a tiny tanh RNN vs Π ∂h_s/∂h_{s-1} built by hand in float64."""
    batch, n_time, d_in, hid = 2, 7, 3, 4
    params = {
        k: jnp.asarray(v, jnp.float32)
        for k, v in init_rnn(jax.random.PRNGKey(1), d_in, hid).items()
    }
    params["b"] = jnp.asarray(rng.normal(size=hid) * 0.1, jnp.float32)
    xs = rng.normal(size=(batch, n_time, d_in)).astype(np.float32)
    readout = rng.normal(size=hid).astype(np.float32)

    def loss(x):
        return jnp.sum(run(get_cell("rnn"), params, x)[1][:, -1] @ readout)

    got = np.asarray(probes.input_grad_norms(loss, jnp.asarray(xs)))
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    sq = np.zeros(n_time)
    for b in range(batch):
        h, hs = np.zeros(hid), []
        for t in range(n_time):
            h = np.tanh(xs[b, t] @ p["w_x"] + h @ p["w_h"] + p["b"])
            hs.append(h)
        g_h = readout.astype(np.float64)  # ∂L/∂h_T
        for t in reversed(range(n_time)):
            g_pre = g_h * (1 - hs[t] ** 2)  # through tanh
            sq[t] += np.sum((p["w_x"] @ g_pre) ** 2)  # ∂L/∂x_t
            g_h = p["w_h"] @ g_pre  # ∂L/∂h_{t-1} = J_tᵀ ∂L/∂h_t
    np.testing.assert_allclose(got, np.sqrt(sq), rtol=1e-5)
    dist, by_d = probes.by_distance(got)  # distance k from the loss = position T-1-k
    np.testing.assert_array_equal(dist, np.arange(n_time))
    np.testing.assert_array_equal(by_d, [got[n_time - 1 - k] for k in range(n_time)])


def test_pascanu_bound_holds_for_every_step(rng):
    w = jnp.asarray(rng.normal(size=(6, 6)), jnp.float32)
    w = probes.scale_to_sigma(w, 1.3)
    assert probes.sigma_max(w) == pytest.approx(1.3, rel=1e-5)
    bound = probes.pascanu_bound(w, "tanh")
    for _ in range(5):
        h = jnp.asarray(rng.normal(size=6), jnp.float32)
        jac = jax.jacobian(lambda h: jnp.tanh(h @ w + 0.3))(h)
        assert np.linalg.norm(np.asarray(jac, np.float64), 2) <= bound + 1e-5
    assert probes.spectral_radius(w) <= probes.sigma_max(w) + 1e-6
    q = probes.random_orthogonal(jax.random.PRNGKey(0), 5)
    np.testing.assert_allclose(np.linalg.svd(np.asarray(q))[1], 1.0, rtol=1e-5)
    with pytest.raises(ValueError, match="nonlinearity"):
        probes.pascanu_bound(w, "softsign")


def test_clip_by_global_norm_matches_optax(rng):
    import optax

    tree = {
        "a": jnp.asarray(rng.normal(size=(3, 4)), jnp.float32),
        "b": jnp.asarray(rng.normal(size=5) * 10, jnp.float32),
    }
    ours, norm = probes.clip_by_global_norm(tree, 1.0)
    theirs, _ = optax.clip_by_global_norm(1.0).update(tree, optax.EmptyState())
    assert float(norm) == pytest.approx(float(optax.tree.norm(tree)), rel=1e-6)
    for k in tree:
        np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-6)


@pytest.fixture(scope="module")
def lstm_setup():
    spec = get_cell("lstm")
    params = spec.init(jax.random.PRNGKey(0), 8, 8)
    return spec, params


def test_scan_cost_matches_unrolled_loop(lstm_setup):
    """Loop-corrected FLOPs of the scanned LSTM == FLOPs of a Python-unrolled twin (no loop)."""
    spec, params = lstm_setup
    batch, n_time = 2, 12
    xs = jnp.ones((batch, n_time, 8))

    def unrolled(p, x):
        carry, ys = spec.zero_carry(batch, 8, jnp.float32), []
        for t in range(n_time):
            carry, y = spec.cell(p, carry, x[:, t])
            ys.append(y)
        return jnp.stack(ys, axis=1)

    carry = LSTMState(jnp.ones((batch, 8)), jnp.ones((batch, 8)))
    got = probes.scan_cost(
        lambda p, x: run(spec, p, x)[1],
        (params, xs),
        spec.recur,
        (params, carry, jnp.ones((batch, 32))),
    )
    want = probes.xla_cost(unrolled, params, xs)
    assert got["trip_count"] == n_time
    assert got["raw"]["flops"] < 0.5 * want["flops"]  # XLA alone counts the loop body once
    # the hoisted scan adds the bias once per step in a different place: a few FLOPs apart
    assert got["flops"] == pytest.approx(want["flops"], rel=0.03)


def test_sequential_steps_lstm_linear_attention_none(lstm_setup):
    spec, params = lstm_setup
    steps = []
    for n in (8, 16, 32):
        xs = jnp.ones((2, n, 8))
        g = jax.grad(lambda p, x: jnp.sum(run(spec, p, x)[1]))
        hlo, jxp = (
            probes.compiled_sequential_steps(g, params, xs),
            probes.jaxpr_sequential_steps(g, params, xs),
        )
        assert hlo == jxp == 2 * n  # forward scan + backward scan
        steps.append(hlo)
    assert np.polyfit([8, 16, 32], steps, 1)[0] == pytest.approx(2.0)
    mha = init_mha(jax.random.PRNGKey(0), 8, 2)
    for n in (8, 32):
        x = jnp.ones((2, n, 8))
        g = jax.grad(lambda p, x: jnp.sum(multi_head_attention(p, x, x)))
        assert probes.compiled_sequential_steps(g, mha, x) == 0
        assert probes.jaxpr_sequential_steps(g, mha, x) == 0


def test_sequential_steps_multiply_through_nesting():
    def nested(x):
        def outer(c, _):
            c = jax.lax.scan(lambda ci, _: (jnp.sin(ci) * 1.01, None), c, None, length=5)[0]
            return c, None

        return jax.lax.scan(outer, x, None, length=3)[0]

    x = jnp.ones(4)
    assert probes.jaxpr_sequential_steps(nested, x) == 15
    assert probes.compiled_sequential_steps(nested, x) == 15
    loops = probes.while_loops(probes.compiled(nested, x).as_text())
    assert sorted(loop["trip_count"] for loop in loops) == [3, 5]


def test_timing_stats_arithmetic_on_injected_numbers():
    walls, cpus = [0.5, 0.1, 0.3, 0.2], [0.9, 0.1, 0.2, 0.6]
    t = probes.timing_stats(walls, cpus, cores=4)
    assert t["median_s"] == pytest.approx(0.25) and t["min_s"] == pytest.approx(0.1)
    assert t["times_s"] == pytest.approx(walls) and t["cpu_s"] == pytest.approx(0.4)
    assert t["cpu_over_wall"] == pytest.approx(1.8 / 1.1)  # a ratio of sums, not of medians
    assert t["utilisation"] == pytest.approx(1.8 / 1.1 / 4) and t["cores"] == 4
    with pytest.raises(ValueError, match="equal-length"):
        probes.timing_stats([0.1, 0.2], [0.1], cores=1)
    with pytest.raises(ValueError, match="cores"):
        probes.timing_stats([0.1], [0.1], cores=0)


class FakeClock:
    """Returns the next of a fixed list of readings, so time_fn's intervals are known exactly."""

    def __init__(self, readings):
        self.readings = list(readings)

    def __call__(self):
        return self.readings.pop(0)


def test_time_fn_times_each_call_with_the_clocks_it_is_given():
    f = jax.jit(lambda a: a @ a)
    a = jnp.ones((8, 8))
    # wall intervals 2, 3, 7; CPU intervals 1, 5, 2 (start, stop per repeat)
    wall, cpu = FakeClock([10, 12, 20, 23, 30, 37]), FakeClock([0, 1, 1, 6, 6, 8])
    t = probes.time_fn(f, a, warmup=1, repeats=3, wall_clock=wall, cpu_clock=cpu)
    assert t["times_s"] == [2, 3, 7] and t["median_s"] == 3 and t["cpu_s"] == 2
    assert t["utilisation"] == pytest.approx(8 / 12 / probes.n_cores())
    assert not wall.readings and not cpu.readings  # warm-up calls are not timed
    # the real clocks: only presence and sign (the values depend on machine load)
    t = probes.time_fn(f, a, warmup=1, repeats=3)
    assert len(t["times_s"]) == 3 and t["median_s"] > 0 and t["cores"] >= 1
    assert np.isfinite(t["utilisation"]) and t["utilisation"] >= 0
    with pytest.raises(ValueError):
        probes.time_fn(f, a, repeats=0)


def test_fits_recover_known_laws():
    n = np.array([16, 32, 64, 128.0])
    f = probes.fit_power_law(n, 3 * n**1.7)
    assert (
        f["exponent"] == pytest.approx(1.7)
        and f["prefactor"] == pytest.approx(3)
        and f["r2"] > 0.999
    )
    d = np.array([8, 32, 8, 32.0])
    nn = np.array([16, 16, 64, 64.0])
    g = probes.fit_power_law_2d(nn, d, 2 * nn * d**2)
    assert g["exp_n"] == pytest.approx(1) and g["exp_d"] == pytest.approx(2)
    dist = np.arange(20.0)
    lg = probes.fit_log2(n, 7 + 2.5 * np.log2(n))
    assert lg["per_doubling"] == pytest.approx(2.5) and lg["intercept"] == pytest.approx(7)
    assert lg["r2"] == pytest.approx(1) and probes.fit_log2(n, 3 * n)["r2"] < 0.95
    r = probes.fit_rate(dist, np.where(dist < 15, 5 * 0.8**dist, 0.0))  # zeros dropped
    assert r["rate"] == pytest.approx(0.8) and r["n_points"] == 15
    with pytest.raises(ValueError, match="positive"):
        probes.fit_power_law([1, 2], [1, -1])


def test_crossover_is_where_its_slow_twin_sees_the_curves_cross(rng):
    """The crossing against a dense walk along the same log-log segments (the slow twin)."""
    x = np.array([256.0, 1024, 4096, 16384])
    a = 1e-6 * x**2 * rng.uniform(0.8, 1.2, 4)  # quadratic: overtakes b somewhere
    b = 3e-3 * x * rng.uniform(0.8, 1.2, 4)
    got = probes.crossover(x, a, b)
    fine = np.exp(np.linspace(np.log(x[0]), np.log(x[-1]), 200_001))  # [F]
    la, lb = (np.interp(np.log(fine), np.log(x), np.log(v)) for v in (a, b))
    first = fine[np.argmax(la > lb)]
    assert got == pytest.approx(first, rel=1e-4)
    assert probes.crossover(x, 2 * b, b) == x[0]  # above already at the first point
    assert probes.crossover(x, b / 2, b) is None  # never crosses inside the grid
    with pytest.raises(ValueError, match="increase"):
        probes.crossover(x[::-1], a, b)


@pytest.mark.slow
def test_receptive_field_is_the_support_its_slow_twin_finds():
    taps = jnp.array([0.5, -1.0, 2.0])  # a 3-tap 'valid' convolution; twice: 5 positions

    def conv(x):  # [b, t, d] -> [b, t - 2, d]
        return sum(taps[i] * x[:, i : x.shape[1] - 2 + i] for i in range(3))

    x = jax.random.normal(jax.random.key(0), (2, 12, 3))
    assert probes.receptive_field(lambda x: conv(conv(x)), x, 4) == 5
    # the slow twin: the input positions whose perturbation moves output 4
    out = conv(conv(x))[:, 4]
    moved = [not np.allclose(conv(conv(x.at[:, t].add(1.0)))[:, 4], out) for t in range(12)]
    assert sum(moved) == 5 and moved.index(True) == 4
    assert probes.receptive_field(lambda x: jnp.cumsum(x, axis=1), x, 6) == 7  # a causal prefix


def test_claims_have_one_vocabulary_and_one_writer():
    c = probes.Claim("attention: no decay", "rate ≈ 1", "0.9999/step", probes.HOLDS)
    d = probes.Claim("rnn: N steps | per token", "N^1", "N^1.30", probes.FAILS, "off by 0.3")
    with pytest.raises(ValueError, match="'agrees' is not one of"):
        probes.Claim("x", "y", "z", "agrees")
    assert probes.holds(True) == probes.HOLDS and probes.holds(0) == probes.FAILS
    rows = probes.claims_json([c, d])
    assert rows[1] == {
        "claim": "rnn: N steps | per token",
        "expected": "N^1",
        "measured": "N^1.30",
        "verdict": probes.FAILS,
        "detail": "off by 0.3",
    }
    assert claims.from_json(rows) == [c, d]
    assert claims.from_json([{k: v for k, v in rows[0].items() if k != "detail"}]) == [c]
    text = probes.claims_markdown([c, d]).splitlines()
    assert text[0] == "| claim | expected | measured | verdict | detail |"
    assert text[2] == "| attention: no decay | rate ≈ 1 | 0.9999/step | **holds** | — |"
    assert text[3] == (
        "| rnn: N steps \\| per token | N^1 | N^1.30 | **does not hold here** | off by 0.3 |"
    )
    assert len(text) == 4
    plain = probes.claims_markdown([c], header=("", "a", "b", "c"), extra={"plots": ["p.png"]})
    assert plain.splitlines()[0] == "|  | a | b | c | plots |" and "p.png |" in plain
    assert "detail" not in probes.claims_markdown([c, d], details=False)
    with pytest.raises(ValueError, match="'plots' has 2 cells for 1 claims"):
        probes.claims_markdown([c], extra={"plots": ["a", "b"]})
    assert claims.count([c, d, d]) == {probes.HOLDS: 1, probes.FAILS: 2}
    assert claims.summary([c, d, d]) == "1 holds, 2 does not hold here"
