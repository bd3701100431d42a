"""Hard-ALiBi heads (Jelassi et al. 2024; anatomy.attention.positions.hard_alibi_bias and the
attention mixer's positions='hard_alibi'): the bias against a loop, the mixer against a
float64 NumPy twin written from the definition (the first n_heads // 2 heads see windows of
1, 2, .. tokens, the rest every earlier token), decoding step by step equal to the full pass,
and clear errors."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rel

from anatomy import mixers
from anatomy.attention import positions
from anatomy.compiling import compiler_options, jit_options
from anatomy.errors import BadInputError

B, T, D, H = 2, 7, 8, 4
FAST = jit_options(compiler_options(0))


def test_bias_is_zero_inside_each_windowed_head_and_nowhere_masked_in_the_others():
    q_pos, k_pos = np.arange(3, 9), np.arange(9)
    bias = np.asarray(positions.hard_alibi_bias(H, 2, q_pos, k_pos))
    assert bias.shape == (H, 6, 9)
    for h in range(H):
        for i, q in enumerate(q_pos):
            for j, k in enumerate(k_pos):
                inside = h >= 2 or 0 <= q - k <= h  # head h < 2: its own and h keys back
                assert bias[h, i, j] == (0.0 if inside else positions.HARD_MASKED), (h, q, k)
    batched = positions.hard_alibi_bias(H, 2, np.stack([q_pos, q_pos]), np.stack([k_pos] * 2))
    np.testing.assert_array_equal(np.asarray(batched), np.stack([bias, bias]))
    assert (np.asarray(positions.hard_alibi_bias(H, 0, q_pos, k_pos)) == 0).all()  # NoPE
    for bad in ((H, H + 1), (0, 0), (H, -1), (H, 1.5)):
        with pytest.raises(BadInputError, match="hard_alibi_bias"):
            positions.hard_alibi_bias(*bad, q_pos, k_pos)


def _twin(p, x):
    """float64 NumPy: causal multi-head attention, head h < H // 2 limited to keys t-h .. t."""
    x = np.asarray(x, np.float64)
    w = {k: np.asarray(v, np.float64) for k, v in p.items()}
    q = np.einsum("btm,mhd->bthd", x, w["w_q"]) + w["b_q"]
    k = np.einsum("btm,mhd->bthd", x, w["w_k"]) + w["b_k"]
    v = np.einsum("btm,mhd->bthd", x, w["w_v"]) + w["b_v"]
    o = np.zeros_like(q)
    for h in range(H):
        for t in range(x.shape[1]):
            first = max(0, t - h) if h < H // 2 else 0
            logits = np.einsum("bd,bkd->bk", q[:, t, h], k[:, first : t + 1, h])
            a = np.exp(logits / np.sqrt(q.shape[-1]))
            a /= a.sum(1, keepdims=True)
            o[:, t, h] = np.einsum("bk,bkd->bd", a, v[:, first : t + 1, h])
    return np.einsum("bthd,hdm->btm", o, w["w_o"]) + w["b_o"]


def test_the_mixer_equals_its_float64_twin_and_decodes_step_by_step_alike():
    mixer = mixers.build_mixer("attention", D, n_heads=H, positions="hard_alibi", conv=0)
    noise = np.random.default_rng(0)
    params = mixer.init(jax.random.key(0))
    params = jax.tree.map(lambda a: a + 0.3 * noise.normal(size=a.shape).astype(a.dtype), params)
    x = jnp.asarray(np.random.default_rng(1).normal(size=(B, T, D)), jnp.float32)

    @functools.partial(jax.jit, compiler_options=FAST)
    def run(params, x):
        def body(state, x_t):
            y, state = mixer.step(params, state, x_t)
            return state, y

        _, ys = jax.lax.scan(body, mixer.init_state(params, B, T), jnp.swapaxes(x, 0, 1))
        return mixer.apply(params, x), jnp.swapaxes(ys, 0, 1)

    full, steps = run(params, x)
    assert rel(full, _twin(params["mix"], x)) < 1e-5
    assert rel(steps, full) < 1e-5
    # the windowed heads matter: it is not the NoPE mixer
    nope = mixers.build_mixer("attention", D, n_heads=H, positions="none", conv=0)
    assert rel(nope.apply(params, x), full) > 1e-3


def test_hard_alibi_needs_two_heads_and_the_dense_form():
    one = mixers.build_mixer("attention", D, n_heads=1, positions="hard_alibi", conv=0)
    x = jnp.zeros((B, T, D))
    with pytest.raises(BadInputError, match="2 heads"):
        one.apply(one.init(jax.random.key(0)), x)
    two = mixers.build_mixer("attention", D, n_heads=2, positions="hard_alibi", conv=0)
    with pytest.raises(BadInputError, match="no logit bias"):
        two.apply(two.init(jax.random.key(0)), x, form="chunked")
