"""Sliding-window attention against its slow twins: a float64 per-query NumPy loop, and
scaled_dot_product under band_mask (values and gradients, causal or not, with padding,
radius 0 / 1 / past the sequence). Fresh random inputs throughout."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import anatomy.attention as att
from anatomy import probes
from anatomy.attention.sliding_window import window_append, window_attend


def f32(x):
    return jnp.asarray(x, jnp.float32)


def qkv(rng, b, q_len, k_len, h, d):
    return (f32(rng.normal(size=(b, n, h, d))) for n in (q_len, k_len, k_len))


def test_band_mask_is_the_band(rng):
    for q_len, k_len, r in ((5, 5, 0), (6, 4, 1), (4, 7, 2), (3, 3, 9)):
        want = np.array([[abs(i - j) <= r for j in range(k_len)] for i in range(q_len)])
        np.testing.assert_array_equal(att.band_mask(q_len, k_len, r), want[None, None])
    with pytest.raises(ValueError, match="radius"):
        att.band_mask(3, 3, -1)


@pytest.mark.slow
@pytest.mark.parametrize("causal", [False, True])
def test_matches_numpy_loop(rng, causal):
    b, t, h, d, r = 2, 9, 2, 3, 2
    q, k, v = (rng.normal(size=(b, t, h, d)).astype(np.float32) for _ in range(3))
    lengths = np.array([t, 6])
    out, w = att.sliding_window_attention(
        f32(q), f32(k), f32(v), r, att.padding_mask(lengths, t), causal=causal
    )
    slots = r + 1 if causal else 2 * r + 1
    want, want_w = np.zeros((b, t, h, d)), np.zeros((b, h, t, slots))
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    for bi in range(b):
        for hi in range(h):
            for i in range(t):
                hi_j = i if causal else i + r
                js = [j for j in range(i - r, hi_j + 1) if 0 <= j < lengths[bi]]
                if not js:  # nothing to attend to: zero weights, zero output
                    continue
                s = np.array([q64[bi, i, hi] @ k64[bi, j, hi] for j in js]) / np.sqrt(d)
                p = np.exp(s - s.max())
                p /= p.sum()
                want[bi, i, hi] = sum(pj * v64[bi, j, hi] for pj, j in zip(p, js))
                for pj, j in zip(p, js):
                    want_w[bi, hi, i, j - (i - r)] = pj  # window slot w = j - i + r
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w, want_w, rtol=1e-5, atol=1e-6)  # slots off the sequence: 0


def _twin(q, k, v, radius, mask, causal):
    band = att.band_mask(q.shape[1], k.shape[1], radius)
    full = att.combine_masks(
        band, mask, att.causal_mask(q.shape[1], k.shape[1]) if causal else None
    )
    return att.scaled_dot_product(q, k, v, full)[0]


@pytest.mark.slow_except("0-True")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("radius", [0, 1, 3, 40])  # 40 >= N = 11: every key
def test_equals_banded_full_attention_values_and_gradients(rng, causal, radius):
    b, q_len, k_len, h, d = 3, 11, 11, 2, 4
    q, k, v = qkv(rng, b, q_len, k_len, h, d)
    mask = att.padding_mask(jnp.array([11, 7, 0]), k_len)  # the last row: nothing to attend to
    got, _ = att.sliding_window_attention(q, k, v, radius, mask, causal=causal)
    want = _twin(q, k, v, radius, mask, causal)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert np.all(np.asarray(got[2]) == 0)  # fully masked rows give zeros, like the twin
    cot = f32(rng.normal(size=want.shape))

    def loss(fn):
        return lambda q, k, v: jnp.sum(fn(q, k, v) * cot)

    fast = loss(
        lambda q, k, v: att.sliding_window_attention(q, k, v, radius, mask, causal=causal)[0]
    )
    slow = loss(lambda q, k, v: _twin(q, k, v, radius, mask, causal))
    g_fast = jax.jit(jax.grad(fast, argnums=(0, 1, 2)))(q, k, v)
    g_slow = jax.jit(jax.grad(slow, argnums=(0, 1, 2)))(q, k, v)
    for name, a, b_ in zip("qkv", g_fast, g_slow):
        # radius 0: one key per query, weight 1 whatever q and k are, so d/dq = d/dk = 0
        assert (np.abs(np.asarray(b_)).max() > 0) == (radius > 0 or name == "v"), name
        np.testing.assert_allclose(a, b_, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("q_len,k_len", [(5, 9), (9, 5)])
def test_unequal_lengths_and_general_masks(rng, q_len, k_len):
    b, h, d, r = 2, 3, 4, 2
    q, k, v = qkv(rng, b, q_len, k_len, h, d)
    for shape, causal in (
        ((b, h, q_len, k_len), False),
        ((1, 1, q_len, k_len), True),
        ((b, 1, q_len, 1), False),
    ):
        mask = jnp.asarray(rng.random(shape) > 0.3)
        got, _ = jax.jit(att.sliding_window_attention, static_argnums=3, static_argnames="causal")(
            q, k, v, r, mask, causal=causal
        )
        np.testing.assert_allclose(
            got, _twin(q, k, v, r, mask, causal), rtol=1e-5, atol=1e-6, err_msg=str(shape)
        )


@pytest.mark.slow
def test_self_attention_layer_equals_banded_multi_head(rng):
    b, t, m, heads, r = 2, 10, 8, 2, 2
    params = jax.tree.map(
        lambda a: f32(rng.normal(size=a.shape) * 0.5), att.init_mha(jax.random.key(0), m, heads)
    )
    x = f32(rng.normal(size=(b, t, m)))
    mask = att.padding_mask(jnp.array([10, 6]), t)
    for causal in (False, True):
        full = att.combine_masks(
            att.band_mask(t, t, r), mask, att.causal_mask(t, t) if causal else None
        )
        np.testing.assert_allclose(
            att.sliding_window_self_attention(params, x, r, mask, causal=causal),
            att.multi_head_attention(params, x, x, full),
            rtol=1e-5,
            atol=1e-6,
        )


def test_memory_and_flops_grow_with_r_times_n_not_n_squared(rng):
    """From the compiled program (deterministic): doubling N doubles the cost; full attention's
    logits alone grow 4x."""
    d, h, r = 16, 1, 4

    def measure(fn, n):
        x = jax.ShapeDtypeStruct((1, n, h, d), jnp.float32)
        exe = probes.compiled(fn, x, x, x)
        return exe.memory_analysis().temp_size_in_bytes, probes.cost_of(exe)["flops"]

    def window(radius):
        return lambda q, k, v: att.sliding_window_attention(q, k, v, radius)[0]

    (m1, f1), (m2, f2) = measure(window(r), 512), measure(window(r), 1024)
    assert 1.8 < m2 / m1 < 2.2 and 1.8 < f2 / f1 < 2.2
    full = measure(lambda q, k, v: _twin(q, k, v, r, None, False), 1024)[0]
    assert full / measure(lambda q, k, v: _twin(q, k, v, r, None, False), 512)[0] > 3.5
    wide = measure(window(2 * r + 1), 512)[1]  # 2r+1 = 9 -> 19 window slots
    assert 1.8 < wide / f1 < 2.4


@pytest.mark.slow
@pytest.mark.parametrize("per_row", [False, True])
def test_rolling_cache_decoding_equals_causal_window_attention(rng, per_row):
    """Token by token through a cache of r+1 slots == the whole sequence at once."""
    b, t, h, d, r = 2, 11, 2, 3, 3
    q, k, v = qkv(rng, b, t, t, h, d)
    want, want_w = att.sliding_window_attention(q, k, v, r, causal=True)
    cache = att.init_window_cache(b, r, h, d, per_row=per_row)
    step = jax.jit(
        lambda c, q_t, k_t, v_t: (
            window_attend(window_append(c, k_t, v_t), q_t) + (window_append(c, k_t, v_t),)
        )
    )
    for i in range(t):
        out, w, cache = step(cache, q[:, i : i + 1], k[:, i : i + 1], v[:, i : i + 1])
        np.testing.assert_allclose(out[:, 0], want[:, i], rtol=1e-5, atol=1e-6, err_msg=str(i))
        # the same weights, in slot order (token j sits in slot j mod (r+1))
        slots = [j % (r + 1) for j in range(max(0, i - r), i + 1)]
        got_w = np.asarray(w)[:, :, 0, slots]
        np.testing.assert_allclose(
            got_w, np.asarray(want_w)[:, :, i, r + 1 - len(slots) :], rtol=1e-5, atol=1e-6
        )
        np.testing.assert_allclose(np.asarray(w)[:, :, 0].sum(-1), 1.0, atol=1e-6)
    assert cache.k.shape[1] == r + 1 and np.all(np.asarray(cache.length) == t)
    with pytest.raises(ValueError, match="window_append"):
        window_append(cache, k[:, :2], v[:, :2])
    with pytest.raises(ValueError, match="window_attend"):
        window_attend(cache, q[:, :2])


def test_bad_input_names_the_problem(rng):
    q, k, v = qkv(rng, 1, 4, 4, 1, 2)
    with pytest.raises(ValueError, match="radius"):
        att.sliding_window_attention(q, k, v, -1)
    with pytest.raises(ValueError, match="radius"):
        att.sliding_window_attention(q, k, v, 1.5)
    with pytest.raises(ValueError, match=r"\[b, len, h, d\]"):
        att.sliding_window_attention(q[0], k, v, 1)
    with pytest.raises(ValueError, match="incompatible"):
        att.sliding_window_attention(q, k[..., :1], v, 1)
    with pytest.raises(ValueError, match="does not broadcast"):
        att.sliding_window_attention(q, k, v, 1, jnp.ones((1, 1, 1, 3), bool))
