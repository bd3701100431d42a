"""anatomy.mixers and the recurrences behind them: decoding step by step equals the full pass
(short conv included); a state carries over from one call to the next and stops at each length;
state sizes; the hybrid pattern; clear errors. Every mixer in every form against a float64 NumPy
loop written from its paper (values) and its float64 sequential form (gradients): one file per
mixer, test_<mixer>_twin.py beside this one, sharing twins.py.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rel
from twins import FAST, B, D, T, build, inputs, moved

from anatomy import mixers, stack
from anatomy.conv import init_short_conv, short_conv
from anatomy.errors import BadInputError


def _steps(mixer, params, x, state):
    def body(state, x_t):
        y, state = mixer.step(params, state, x_t)
        return state, y

    state, ys = jax.lax.scan(body, state, jnp.swapaxes(x, 0, 1))
    return jnp.swapaxes(ys, 0, 1), state


@pytest.mark.slow_except("rglru")
@pytest.mark.parametrize("name", mixers.NAMES)
def test_decoding_step_by_step_equals_the_full_pass_and_a_state_carries_over(name):
    """With the short conv: step by step == apply (KV-cache style); for the recurrent
    mixers also apply(x[:, :4]) then apply(x[:, 4:], state) == apply(x), and with lengths the
    state stops at each row's last real step."""
    mixer = build(name, conv=3)
    params, x = moved(mixer, 2), inputs(3)
    recurrent = name != "attention"

    @functools.partial(jax.jit, compiler_options=FAST)
    def run(params, x):
        full = mixer.apply(params, x)
        steps, _ = _steps(mixer, params, x, mixer.init_state(params, B, T))
        if not recurrent:
            return full, steps, None
        y1, s1 = mixer.apply(params, x[:, :4], return_state=True)
        y2, s2 = mixer.apply(params, x[:, 4:], s1, return_state=True)
        _, s_len = mixer.apply(params, x, lengths=jnp.asarray([T, 4]), return_state=True)
        return full, steps, (jnp.concatenate([y1, y2], 1), s1, s_len)

    full, steps, carried = run(params, x)
    assert rel(steps, full) < 1e-5
    if recurrent:
        _, s_full = mixer.apply(params, x, return_state=True)
        y, s_4, s_len = carried
        assert rel(y, full) < 1e-5
        for a, b4, b_full in zip(*(jax.tree.leaves(s) for s in (s_len, s_4, s_full))):
            assert rel(a[1], b4[1]) < 1e-5 and rel(a[0], b_full[0]) < 1e-5


def test_short_conv_is_a_causal_depthwise_convolution():
    p = init_short_conv(jax.random.key(0), D, 3)
    p = {"w": p["w"], "b": p["b"] + 0.5}
    x = np.asarray(inputs(4), np.float64)
    w = np.asarray(p["w"], np.float64)
    want = np.zeros_like(x)
    for t in range(T):
        for k in range(3):
            if t - 2 + k >= 0:
                want[:, t] += w[k] * x[:, t - 2 + k]
    y, buffer = short_conv(p, jnp.asarray(x, jnp.float32))
    assert rel(y, want + 0.5) < 1e-6
    np.testing.assert_array_equal(buffer, np.asarray(x[:, -2:], np.float32))


def test_state_bytes_are_the_decoding_state():
    h, k, v = 2, 3, 4
    got = {
        name: build(name, conv=3).state_bytes(length=5)
        for name in ("linear_attention", "mlstm", "gated_deltanet", "mamba2", "rglru", "attention")
    }
    conv = 4 * 2 * D  # the conv's K-1 = 2 inputs of width D
    assert got["linear_attention"] == 4 * h * k * (v + 1) + conv  # d_value = D / h = 4
    assert got["mlstm"] == 4 * (h * (D // h) * (3 + 1) + h) + conv  # + the stabiliser m
    assert got["gated_deltanet"] == 4 * h * k * v + conv
    assert got["mamba2"] == 4 * (2 * D // 4) * 3 * 4 + conv  # heads = expand·D / head_dim
    assert got["rglru"] == 4 * D + conv
    kv = 2 * 4 * 5 * D  # keys and values of 5 positions, D = h · d numbers each
    assert got["attention"] == kv + 4 + 1 + conv  # + the length counter and overflow flag
    assert build("attention").state_bytes(length=10) == 2 * kv + 5  # grows with the length
    assert build("mlstm").state_bytes(length=10, batch=3) == 3 * build("mlstm").state_bytes()


def test_bad_names_knobs_forms_and_patterns_are_one_clear_line():
    with pytest.raises(
        BadInputError, match="unknown mixer 'lru'; choose one of linear_attention, rglru"
    ):
        mixers.build_mixer("lru", D)
    with pytest.raises(BadInputError, match=r"unknown knobs \['d_state'\]"):
        mixers.build_mixer("mlstm", D, d_state=4)
    with pytest.raises(BadInputError, match="form must be one of"):
        build("rglru").apply(build("rglru").init(jax.random.key(0)), inputs(), form="parallel")
    with pytest.raises(BadInputError, match="max_len"):
        m = build("attention")
        m.init_state(m.init(jax.random.key(0)), B)
    with pytest.raises(BadInputError, match="takes no state"):
        m = build("attention")
        m.apply(m.init(jax.random.key(0)), inputs(), return_state=True)
    with pytest.raises(BadInputError, match="pattern must be 3 letters of R/A"):
        stack.parse_pattern("RXA", 3)
    assert stack.parse_pattern("", 2) == ("R", "R") and stack.parse_pattern("AR", 2) == ("A", "R")


def test_every_recurrent_mixer_has_a_default_form_among_its_forms_with_its_source():
    from anatomy.mixers.defaults import TABLE, default_form, row

    forms = [r for r in TABLE if r.kind == "form"]
    for backend in {r.backend for r in forms}:
        assert {r.name for r in forms if r.backend == backend} == set(mixers.RECURRENT), backend
    for r in forms:
        assert r.choice in mixers.get_mixer(r.name).forms, r
    for r in TABLE:  # every row says where it comes from, and why
        assert r.source.split(":")[0] in ("measured", "reasoned") and r.reason, r
    assert default_form("mlstm", "tpu") == default_form("mlstm", "cpu")  # unmeasured: the CPU's
    assert build("mlstm").form == default_form("mlstm") and build("attention").form == "dense"
    with pytest.raises(BadInputError, match="no default form for 'attention'"):
        row("form", "attention", "cpu")


def test_a_recurrence_that_is_a_mixer_and_a_cell_is_registered_once():
    """The cell table is read from the mixers' registrations (their cell part) and the cells
    that are only cells: no name in both, none twice."""
    for name, cell in mixers.CELLS.items():
        if name in mixers.MIXERS:
            assert mixers.MIXERS[name].cell is cell
    assert {"mingru", "mamba", "rnn", "lstm", "gru"} <= set(mixers.MIXERS) & set(mixers.CELLS)
    assert mixers.get_cell("lstm").fused is not None and mixers.get_cell("gru_paper").fused is None
    m = mixers.build_mixer("lstm", D, vjp="autodiff")
    assert (m.config.hoist, m.config.vjp) == mixers.resolve_path("lstm", None, "autodiff")
    with pytest.raises(BadInputError, match="vjp='fused' exists for the cells"):
        mixers.build_mixer("rnn", D, vjp="fused")


@pytest.mark.parametrize("name", mixers.NAMES)
def test_every_parameter_declares_its_logical_axes(name):
    """trace() raises on an array no init declared (sharding reads the axes from it)."""
    from anatomy.axes import is_axes, trace

    axes, shapes = trace(build(name, conv=3).init, jax.random.key(0))
    assert jax.tree.structure(shapes) == jax.tree.structure(
        jax.tree.map(lambda a: 0, axes, is_leaf=is_axes)
    )


def test_the_taylor_feature_map_is_the_second_order_expansion_of_exp():
    from anatomy.mixers.linear_attention import taylor

    q, k = (np.random.default_rng(s).normal(size=(5, 4)) for s in (5, 6))
    s = np.sum(q * k, -1) / np.sqrt(4)
    got = np.sum(np.asarray(taylor(jnp.asarray(q))) * np.asarray(taylor(jnp.asarray(k))), -1)
    np.testing.assert_allclose(got, 1 + s + s**2 / 2, rtol=1e-5)
    m = build("linear_attention", feature_map="taylor")  # 2 heads, d_key 3: 13 features
    assert m.state_bytes() == 4 * 2 * (1 + 3 + 9) * (D // 2 + 1)
