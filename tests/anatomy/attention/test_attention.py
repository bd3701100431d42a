"""anatomy.attention against slow float64 NumPy twins, plus masks, padding, KV cache,
positions, jit and gradients. torch / flax.linen twins live in test_attention_torch.py.

Relative errors are norm-wise: ||ours - ref|| / ||ref||, float32 ours vs float64 reference.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rel
from jax.test_util import check_grads

import anatomy.attention as att
from anatomy import layers
from anatomy.attention.additive import project_keys
from anatomy.attention.kv_cache import any_overflow, check_no_overflow
from anatomy.attention.multihead import project_kv
from anatomy.attention.positions import Rotary
from anatomy.attention.positions import lookup as position_lookup
from anatomy.errors import BadInputError

TOL = 1e-5


def f32(x):
    return jnp.asarray(x, jnp.float32)


def randomize(tree, rng, scale=0.5):
    """Replace every leaf by fresh normal noise (never zeros), kept in float64 NumPy."""
    return jax.tree.map(lambda a: rng.normal(size=np.shape(a)) * scale, tree)


# --- float64 NumPy twins (per-query Python loops, written from the papers) -------------


def softmax_valid(scores, valid):
    """Softmax over the valid entries of a 1-D list; invalid get 0; all invalid -> zeros."""
    out = np.zeros(len(scores))
    idx = [j for j in range(len(scores)) if valid[j]]
    if not idx:
        return out
    top = max(scores[j] for j in idx)
    ex = {j: math.exp(scores[j] - top) for j in idx}
    total = sum(ex.values())
    for j in idx:
        out[j] = ex[j] / total
    return out


def ref_additive(p, s, keys, values, mask):
    """Bahdanau: e_j = vᵀ tanh(W s + U h_j)."""
    B, K = keys.shape[:2]
    ctx, wts = np.zeros((B, values.shape[-1])), np.zeros((B, K))
    for b in range(B):
        e = [float(p["v"] @ np.tanh(p["w_q"].T @ s[b] + p["w_k"].T @ keys[b, j])) for j in range(K)]
        wts[b] = softmax_valid(e, mask[b])
        for j in range(K):
            ctx[b] += wts[b, j] * values[b, j]
    return ctx, wts


def ref_luong(p, kind, s, keys, values, mask):
    B, K = keys.shape[:2]
    ctx, wts = np.zeros((B, values.shape[-1])), np.zeros((B, K))
    for b in range(B):
        e = []
        for j in range(K):
            h = keys[b, j]
            if kind == "dot":
                e.append(float(s[b] @ h))
            elif kind == "general":
                e.append(float(s[b] @ p["w"] @ h))
            else:
                e.append(float(p["v"] @ np.tanh(p["w"].T @ np.concatenate([s[b], h]))))
        wts[b] = softmax_valid(e, mask[b])
        for j in range(K):
            ctx[b] += wts[b, j] * values[b, j]
    return ctx, wts


def ref_sdp(q, k, v, mask):
    """q [b,q,h,d], k/v [b,k,h,d], mask bool [b,h,q,k] (already broadcast)."""
    B, Q, H, D = q.shape
    K = k.shape[1]
    out, wts = np.zeros((B, Q, H, v.shape[-1])), np.zeros((B, H, Q, K))
    for b in range(B):
        for h in range(H):
            for i in range(Q):
                e = [float(q[b, i, h] @ k[b, j, h]) / math.sqrt(D) for j in range(K)]
                wts[b, h, i] = softmax_valid(e, mask[b, h, i])
                for j in range(K):
                    out[b, i, h] += wts[b, h, i, j] * v[b, j, h]
    return out, wts


def ref_mha(p, xq, xkv, mask):
    """Per-head projection matrices, the sdp loop, then the output projection."""
    B, Q, _ = xq.shape
    H, D = p["w_q"].shape[1:]
    qs, ks = np.zeros((B, Q, H, D)), np.zeros((B, xkv.shape[1], H, D))
    vs = np.zeros_like(ks)
    for h in range(H):
        qs[:, :, h] = xq @ p["w_q"][:, h] + p["b_q"][h]
        ks[:, :, h] = xkv @ p["w_k"][:, h] + p["b_k"][h]
        vs[:, :, h] = xkv @ p["w_v"][:, h] + p["b_v"][h]
    o, w = ref_sdp(qs, ks, vs, mask)
    return sum(o[:, :, h] @ p["w_o"][h] for h in range(H)) + p["b_o"], w


def ref_positional(length, d_model):
    pe = np.zeros((length, d_model))
    for pos in range(length):
        for i in range(0, d_model, 2):
            pe[pos, i] = math.sin(pos / 10000 ** (i / d_model))
            if i + 1 < d_model:
                pe[pos, i + 1] = math.cos(pos / 10000 ** (i / d_model))
    return pe


def key_mask(rng, B, K):
    """Random [B, K] bool mask with at least one valid key per row; row 0 fully valid."""
    lengths = rng.integers(1, K + 1, size=B)
    lengths[0] = K
    return np.arange(K)[None] < lengths[:, None], lengths


# --- RNN-era attention ------------------------------------------------------------------


def test_additive_matches_loop(rng):
    B, K, Dq, Dk, Dv, A = 3, 5, 4, 6, 3, 7
    p = randomize(att.init_additive(jax.random.key(0), Dq, Dk, A), rng)
    s, keys, values = (
        rng.normal(size=(B, Dq)),
        rng.normal(size=(B, K, Dk)),
        rng.normal(size=(B, K, Dv)),
    )
    mask, _ = key_mask(rng, B, K)
    pj = jax.tree.map(f32, p)
    ctx, w = att.additive_attention(
        pj, f32(s), project_keys(pj, f32(keys)), f32(values), jnp.asarray(mask)
    )
    rctx, rw = ref_additive(p, s, keys, values, mask)
    assert ctx.shape == (B, Dv) and w.shape == (B, K)
    assert rel(ctx, rctx) <= TOL and rel(w, rw) <= TOL
    assert np.all(np.asarray(w)[~mask] == 0.0)  # masked keys: exactly zero weight
    np.testing.assert_allclose(np.asarray(w).sum(-1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("kind", att.LUONG_KINDS)
def test_luong_matches_loop(rng, kind):
    B, K, Dq, Dv = 3, 5, 4, 3
    Dk = Dq if kind == "dot" else 6
    p = randomize(att.init_luong(jax.random.key(1), kind, Dq, Dk, d_attn=5), rng)
    s, keys, values = (
        rng.normal(size=(B, Dq)),
        rng.normal(size=(B, K, Dk)),
        rng.normal(size=(B, K, Dv)),
    )
    mask, _ = key_mask(rng, B, K)
    ctx, w = att.luong_attention(
        jax.tree.map(f32, p), f32(s), f32(keys), f32(values), jnp.asarray(mask), kind=kind
    )
    rctx, rw = ref_luong(p, kind, s, keys, values, mask)
    assert rel(ctx, rctx) <= TOL and rel(w, rw) <= TOL
    assert np.all(np.asarray(w)[~mask] == 0.0)


def test_luong_bad_input():
    with pytest.raises(ValueError, match="kind"):
        att.init_luong(jax.random.key(0), "cosine", 4, 4)
    with pytest.raises(ValueError, match="d_query == d_key"):
        att.init_luong(jax.random.key(0), "dot", 4, 5)


# --- scaled dot-product and multi-head ----------------------------------------------------


def test_scaled_dot_product_matches_loop(rng):
    B, Q, K, H, D = 2, 4, 5, 3, 4
    q, k, v = (
        rng.normal(size=(B, Q, H, D)),
        rng.normal(size=(B, K, H, D)),
        rng.normal(size=(B, K, H, D)),
    )
    kmask, lengths = key_mask(rng, B, K)
    mask = att.combine_masks(
        att.padding_mask(jnp.asarray(lengths), K), att.causal_mask(Q, K, offset=K - Q)
    )
    out, w = att.scaled_dot_product(f32(q), f32(k), f32(v), mask)
    rout, rw = ref_sdp(q, k, v, np.broadcast_to(np.asarray(mask), (B, H, Q, K)))
    assert out.shape == (B, Q, H, D) and w.shape == (B, H, Q, K)
    assert rel(out, rout) <= TOL and rel(w, rw) <= TOL
    assert np.all(np.asarray(w)[~np.broadcast_to(np.asarray(mask), w.shape)] == 0.0)


@pytest.mark.slow
def test_fully_masked_row_gives_zeros_not_nan(rng):
    B, Q, K, H, D = 2, 3, 4, 2, 4
    q, k, v = (f32(rng.normal(size=s)) for s in [(B, Q, H, D), (B, K, H, D), (B, K, H, D)])
    mask = np.ones((B, 1, Q, K), bool)
    mask[1, :, 2, :] = False  # batch 1, query 2 sees nothing
    out, w = att.scaled_dot_product(q, k, v, jnp.asarray(mask))
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(w))
    assert np.all(np.asarray(w)[1, :, 2] == 0.0) and np.all(np.asarray(out)[1, 2] == 0.0)
    g = jax.grad(lambda q: jnp.sum(att.scaled_dot_product(q, k, v, jnp.asarray(mask))[0] ** 2))(q)
    assert np.all(np.isfinite(g))
    p = att.init_additive(jax.random.key(0), D, D, 3)
    ctx, wa = att.additive_attention(
        p, q[:, 0, 0], project_keys(p, k[:, :, 0]), v[:, :, 0], jnp.zeros((B, K), bool)
    )
    assert np.all(np.asarray(ctx) == 0.0) and np.all(np.asarray(wa) == 0.0)


def test_multi_head_matches_loop_and_weights(rng):
    B, Q, K, M, H = 2, 3, 5, 8, 2
    p = randomize(att.init_mha(jax.random.key(2), M, H), rng)
    xq, xkv = rng.normal(size=(B, Q, M)), rng.normal(size=(B, K, M))
    _, lengths = key_mask(rng, B, K)
    mask = att.padding_mask(jnp.asarray(lengths), K)
    pj = jax.tree.map(f32, p)
    out, w = att.multi_head_attention(pj, f32(xq), f32(xkv), mask, return_weights=True)
    rout, rw = ref_mha(p, xq, xkv, np.broadcast_to(np.asarray(mask), (B, H, Q, K)))
    assert out.shape == (B, Q, M) and w.shape == (B, H, Q, K)
    assert rel(out, rout) <= TOL and rel(w, rw) <= TOL
    # precomputed kv gives the same answer; no-weights call returns just the output
    out2 = att.multi_head_attention(pj, f32(xq), None, mask, kv=project_kv(pj, f32(xkv)))
    np.testing.assert_allclose(out2, out, rtol=1e-6, atol=1e-6)


def test_masks_shapes_and_values():
    pm = att.padding_mask(jnp.array([2, 4]), 4)
    assert pm.shape == (2, 1, 1, 4)
    np.testing.assert_array_equal(pm[:, 0, 0], [[1, 1, 0, 0], [1, 1, 1, 1]])
    cm = att.causal_mask(2, 4, offset=2)
    assert cm.shape == (1, 1, 2, 4)
    np.testing.assert_array_equal(cm[0, 0], [[1, 1, 1, 0], [1, 1, 1, 1]])
    with pytest.raises(ValueError, match="lengths"):
        att.padding_mask(jnp.ones((2, 2), int), 3)
    with pytest.raises(ValueError, match="q, k, v"):
        att.scaled_dot_product(jnp.ones((2, 3, 4)), jnp.ones((2, 3, 4)), jnp.ones((2, 3, 4)))


def test_positional_encoding_matches_loop():
    for length, d in [(50, 16), (7, 5)]:
        assert rel(att.sinusoidal(length, d), ref_positional(length, d)) <= TOL


def test_position_lookup_is_never_clamped():
    """table[pos] under jit clamps an out-of-range position to the last row; lookup gives NaN."""
    table = att.sinusoidal(4, 6)
    rows = jax.jit(position_lookup)(table, jnp.array([[0, 3], [4, -1]]))  # [2, 2, 6]
    np.testing.assert_array_equal(rows[0], table[jnp.array([0, 3])])
    assert np.isnan(np.asarray(rows[1])).all()


# --- padding, layers --------------------------------------------------------------------


@pytest.fixture(scope="module")
def layer_params():
    r = np.random.default_rng(7)
    M, H, F = 8, 2, 16
    enc = randomize(att.init_encoder_layer(jax.random.key(3), M, H, F), r, 0.4)
    dec = randomize(att.init_decoder_layer(jax.random.key(4), M, H, F), r, 0.4)
    return jax.tree.map(f32, enc), jax.tree.map(f32, dec)


@pytest.mark.slow
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_padded_batch_equals_unpadded_sequences(rng, layer_params, norm):
    enc, dec = layer_params
    B, T, S, M = 2, 6, 5, 8
    lengths, tlens = np.array([6, 3]), np.array([2, 5])
    x, y = f32(rng.normal(size=(B, T, M))), f32(rng.normal(size=(B, S, M)))
    src_mask = att.padding_mask(jnp.asarray(lengths), T)
    self_mask = att.combine_masks(att.causal_mask(S, S), att.padding_mask(jnp.asarray(tlens), S))
    mem, wts = att.encoder_layer(enc, x, src_mask, norm=norm, return_weights=True)
    out = att.decoder_layer(dec, y, mem, self_mask, src_mask, norm=norm)
    assert np.all(
        np.asarray(wts["self_attn"])[~np.broadcast_to(np.asarray(src_mask), wts["self_attn"].shape)]
        == 0
    )
    for b in range(B):
        n, m = lengths[b], tlens[b]
        mem_b = att.encoder_layer(enc, x[b : b + 1, :n], None, norm=norm)
        out_b = att.decoder_layer(
            dec, y[b : b + 1, :m], mem_b, att.causal_mask(m, m), None, norm=norm
        )
        np.testing.assert_allclose(mem[b, :n], mem_b[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(out[b, :m], out_b[0], rtol=1e-5, atol=1e-5)
    # the flag reaches both layers: the other branch computes something else on the same params
    other = att.encoder_layer(enc, x, src_mask, norm={"post": "pre", "pre": "post"}[norm])
    assert rel(other, mem) > 0.1
    assert (
        rel(
            att.decoder_layer(
                dec, y, mem, self_mask, src_mask, norm={"post": "pre", "pre": "post"}[norm]
            ),
            out,
        )
        > 0.1
    )


WIRINGS = [
    ("deepnorm", True, 1.7),
    ("none", True, 1.0),
    ("post", False, 1.0),
    ("pre", False, 1.0),
    ("none", False, 1.0),
]


def _wired(x, g, ln, norm, residual, alpha):
    """The twin of one sub-layer's wiring, spelled out (layers.py's module docstring)."""
    if norm == "pre":
        y = g(layers.layer_norm(ln, x))
        return x + y if residual else y
    y = g(x)
    if residual:
        y = alpha * x + y
    return y if norm == "none" else layers.layer_norm(ln, y)


@pytest.mark.slow
@pytest.mark.parametrize("norm,residual,alpha", WIRINGS)
def test_norm_and_residual_options_equal_their_composition(
    rng, layer_params, norm, residual, alpha
):
    """DeepNorm's LN(α·x + G(x)), no LayerNorm, no residual: the encoder and decoder layers
    (positions passed through to the self-attention) equal the sub-layers composed by hand."""
    enc, dec = layer_params
    x, y = f32(rng.normal(size=(2, 5, 8))), f32(rng.normal(size=(2, 4, 8)))
    mask = att.padding_mask(jnp.array([5, 3]), 5)
    pos = jnp.arange(5)
    rot, bias = Rotary(pos, pos, 50.0), att.alibi_bias(att.alibi_slopes(2), pos, pos)
    kw = dict(norm=norm, residual=residual, alpha=alpha)
    sa = lambda p, m, **a: lambda z: att.multi_head_attention(p, z, z, m, **a)
    want = _wired(x, sa(enc["self_attn"], mask, rotary=rot, bias=bias), enc["ln1"], **kw)
    want = _wired(want, lambda z: layers.ffn(enc["ffn"], z), enc["ln2"], **kw)
    got = att.encoder_layer(enc, x, mask, rotary=rot, bias=bias, **kw)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    causal, rot4 = att.causal_mask(4, 4), Rotary(pos[:4], pos[:4])
    cross = lambda z: att.multi_head_attention(dec["cross_attn"], z, got, mask)
    want = _wired(y, sa(dec["self_attn"], causal, rotary=rot4), dec["ln1"], **kw)
    want = _wired(want, cross, dec["ln2"], **kw)
    want = _wired(want, lambda z: layers.ffn(dec["ffn"], z), dec["ln3"], **kw)
    out = att.decoder_layer(dec, y, got, causal, mask, rotary=rot4, **kw)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_layers_built_without_layer_norm_hold_none_and_check_their_choices():
    enc = att.init_encoder_layer(jax.random.key(0), 8, 2, 16, norm="none")
    dec = att.init_decoder_layer(jax.random.key(0), 8, 2, 16, norm="none")
    assert set(enc) == {"self_attn", "ffn"} and set(dec) == {"self_attn", "cross_attn", "ffn"}
    x = jnp.ones((1, 3, 8))
    att.encoder_layer(enc, x, norm="none")  # runs without LN parameters
    with pytest.raises(
        BadInputError, match="norm must be one of 'post', 'pre', 'deepnorm', 'none'"
    ):
        att.init_encoder_layer(jax.random.key(0), 8, 2, 16, norm="rms")
    with pytest.raises(BadInputError, match="residual must be True or False"):
        att.check_norm("post", "yes")
    with pytest.raises(BadInputError, match="needs residual=True"):
        att.check_norm("deepnorm", False)
    with pytest.raises(BadInputError, match="no logit bias"):
        att.multi_head_attention(enc["self_attn"], x, x, bias=jnp.zeros((2, 3, 3)), impl="chunked")


def test_deepnorm_constants_are_the_papers_table():
    """Wang et al. 2022, Table 1 (checked at N = 6 encoder and M = 6 decoder layers, and
    decoder-only M = 24 / encoder-only N = 18)."""
    c = att.deepnorm_constants(6, 6)
    np.testing.assert_allclose(c["encoder"], (0.81 * 7776 ** (1 / 16), 0.87 * 7776 ** (-1 / 16)))
    np.testing.assert_allclose(c["decoder"], (18**0.25, 72**-0.25))
    assert att.deepnorm_constants(0, 24) == {"encoder": None, "decoder": (48**0.25, 192**-0.25)}
    assert att.deepnorm_constants(18, 0) == {"encoder": (36**0.25, 144**-0.25), "decoder": None}
    with pytest.raises(BadInputError, match="no layers"):
        att.deepnorm_constants(0, 0)


def test_layer_norm_and_ffn_match_numpy(rng):
    M, F = 6, 10
    x = rng.normal(size=(2, 3, M))
    ln = randomize(layers.init_layer_norm(M), rng)
    fp = randomize(layers.init_ffn(jax.random.key(0), M, F), rng)
    for eps in (1e-5, 1e-6):
        ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * ln[
            "scale"
        ] + ln["bias"]
        assert rel(layers.layer_norm(jax.tree.map(f32, ln), f32(x), eps), ref) <= TOL
    ref = np.maximum(x @ fp["w1"] + fp["b1"], 0) @ fp["w2"] + fp["b2"]
    assert rel(layers.ffn(jax.tree.map(f32, fp), f32(x)), ref) <= TOL


@pytest.mark.slow
def test_dropout(rng, layer_params):
    x = f32(rng.normal(size=(4, 50, 50)) + 3.0)
    y = layers.dropout(x, 0.25, jax.random.key(0))
    zero = np.asarray(y) == 0
    assert abs(zero.mean() - 0.25) < 0.03
    np.testing.assert_allclose(np.asarray(y)[~zero], np.asarray(x)[~zero] / 0.75, rtol=1e-6)
    assert layers.dropout(x, 0.25, None, deterministic=True) is x
    with pytest.raises(ValueError, match="rng"):
        layers.dropout(x, 0.25, None)
    enc, _ = layer_params
    xs = f32(rng.normal(size=(2, 4, 8)))
    a = att.encoder_layer(enc, xs, None, dropout_rate=0.3, rng=jax.random.key(1))
    b = att.encoder_layer(enc, xs, None, dropout_rate=0.3, rng=jax.random.key(1))
    c = att.encoder_layer(enc, xs, None, dropout_rate=0.3, rng=None)  # evaluation mode
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    np.testing.assert_array_equal(c, att.encoder_layer(enc, xs, None))


# --- KV cache ---------------------------------------------------------------------------


def test_kv_cache_equals_full_causal_attention(rng):
    B, T, L, H, D = 2, 5, 7, 2, 4
    q, k, v = (f32(rng.normal(size=(B, T, H, D))) for _ in range(3))
    full, full_w = att.scaled_dot_product(q, k, v, att.causal_mask(T, T))

    @jax.jit
    def step(cache, q_t, k_t, v_t):
        cache = att.append(cache, k_t, v_t)
        return (cache,) + att.attend(cache, q_t)

    cache = att.init_cache(B, L, H, D)
    for t in range(T):
        cache, out, w = step(cache, q[:, t : t + 1], k[:, t : t + 1], v[:, t : t + 1])
        assert int(cache.length) == t + 1 and w.shape == (B, H, 1, L)
        np.testing.assert_allclose(out[:, 0], full[:, t], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w[:, :, 0, :T], full_w[:, :, t], rtol=1e-5, atol=1e-6)
        assert np.all(np.asarray(w)[..., t + 1 :] == 0.0)
    with pytest.raises(ValueError, match="b, 1, h, d"):
        att.append(cache, k, v)


@pytest.mark.parametrize("per_row", [False, True])
def test_kv_cache_overflow_is_flagged_never_overwritten(per_row):
    """Capacity 3, five appends: the first three keys stay, length stops at 3, overflow set."""
    cache = att.init_cache(1, 3, 1, 1, per_row=per_row)
    append = jax.jit(att.append)
    for t in range(1, 6):
        kv = jnp.full((1, 1, 1, 1), float(t))
        cache = append(cache, kv, kv)
        assert bool(np.all(cache.overflow)) == (t > 3) and bool(any_overflow(cache)) == (t > 3)
    np.testing.assert_array_equal(np.asarray(cache.k)[0, :, 0, 0], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(cache.length, [3] if per_row else 3)
    _, w = att.attend(cache, jnp.ones((1, 1, 1, 1)))
    np.testing.assert_allclose(np.asarray(w).sum(), 1.0, rtol=1e-6)
    with pytest.raises(RuntimeError, match="overflowed"):
        check_no_overflow({"layers": (cache,)})
    check_no_overflow({"layers": (att.init_cache(1, 3, 1, 1),)})  # fresh: no error


def test_per_row_cache_lengths_equal_rows_decoded_alone(rng):
    """Rows at different lengths in one per-row cache (built by concatenating along the batch
    axis) attend exactly as each row's own cache does; a shared length would mix them up."""
    L, H, D = 6, 2, 4
    caches, qs = [], []
    for n in (2, 5, 0):  # tokens already cached in each row
        c = att.init_cache(1, L, H, D, per_row=True)
        for _ in range(n):
            c = att.append(
                c, f32(rng.normal(size=(1, 1, H, D))), f32(rng.normal(size=(1, 1, H, D)))
            )
        caches.append(c)
        qs.append(f32(rng.normal(size=(1, 1, H, D))))
    kv = f32(rng.normal(size=(3, 1, H, D)))
    both = jax.tree.map(lambda *x: jnp.concatenate(x, 0), *caches)
    both = att.append(both, kv, kv)
    out, w = att.attend(both, jnp.concatenate(qs, 0))
    np.testing.assert_array_equal(both.length, [3, 6, 1])
    for r, c in enumerate(caches):
        c = att.append(c, kv[r : r + 1], kv[r : r + 1])
        o1, w1 = att.attend(c, qs[r])
        np.testing.assert_allclose(out[r : r + 1], o1, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(w[r : r + 1], w1, rtol=1e-6, atol=1e-7)
        assert np.all(np.asarray(w)[r, :, 0, int(c.length[0]) :] == 0.0)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_decoder_layer_step_equals_full_decoder(rng, layer_params, norm):
    _, dec = layer_params
    B, T, S, M, L = 2, 5, 4, 8, 6
    y, mem = f32(rng.normal(size=(B, T, M))), f32(rng.normal(size=(B, S, M)))
    cross_mask = att.padding_mask(jnp.array([4, 2]), S)
    full, full_w = att.decoder_layer(
        dec, y, mem, att.causal_mask(T, T), cross_mask, norm=norm, return_weights=True
    )
    mkv = att.decoder_memory_kv(dec, mem)
    step = jax.jit(lambda c, y_t: att.decoder_layer_step(dec, y_t, c, mkv, cross_mask, norm=norm))
    cache = att.init_decoder_cache(dec, B, L)
    for t in range(T):
        out, cache, w = step(cache, y[:, t : t + 1])
        np.testing.assert_allclose(out[:, 0], full[:, t], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(
            w["self_attn"][:, :, 0, :T], full_w["self_attn"][:, :, t], atol=1e-6
        )
        np.testing.assert_allclose(
            w["cross_attn"][:, :, 0], full_w["cross_attn"][:, :, t], atol=1e-6
        )


# --- jit and gradients ------------------------------------------------------------------


def test_jit_equals_no_jit(rng, layer_params):
    enc, dec = layer_params
    x, y = f32(rng.normal(size=(2, 4, 8))), f32(rng.normal(size=(2, 3, 8)))
    mask = att.padding_mask(jnp.array([4, 2]), 4)
    f = lambda e, d, x, y: att.decoder_layer(
        d, y, att.encoder_layer(e, x, mask), att.causal_mask(3, 3), mask
    )
    np.testing.assert_allclose(jax.jit(f)(enc, dec, x, y), f(enc, dec, x, y), rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_gradients_check_grads(rng):
    # float64 so check_grads' finite differences are meaningful at its default tolerances;
    # each function is jitted so the many perturbed evaluations reuse one compilation.
    with jax.enable_x64():
        B, Q, K, H, D, M = 2, 2, 3, 2, 2, 4
        d64 = lambda *s: jnp.asarray(rng.normal(size=s), jnp.float64)
        mask = jnp.asarray(np.array([[[[1, 1, 0]]], [[[1, 1, 1]]]], bool))
        check_grads(
            jax.jit(lambda q, k, v: att.scaled_dot_product(q, k, v, mask)[0]),
            (d64(B, Q, H, D), d64(B, K, H, D), d64(B, K, H, D)),
            order=2,
            modes=["rev"],
        )
        pa = jax.tree.map(lambda a: d64(*a.shape), att.init_additive(jax.random.key(0), 3, 4, 5))
        check_grads(
            jax.jit(
                lambda p, s, h: att.additive_attention(p, s, project_keys(p, h), h, mask[:, 0, 0])[
                    0
                ]
            ),
            (pa, d64(B, 3), d64(B, K, 4)),
            order=1,
            modes=["rev", "fwd"],
        )
        pl = jax.tree.map(
            lambda a: d64(*a.shape), att.init_luong(jax.random.key(0), "concat", 3, 4, 5)
        )
        check_grads(
            jax.jit(
                lambda p, s, h: att.luong_attention(p, s, h, h, mask[:, 0, 0], kind="concat")[0]
            ),
            (pl, d64(B, 3), d64(B, K, 4)),
            order=1,
            modes=["rev"],
        )
        pe = jax.tree.map(
            lambda a: 0.5 * d64(*a.shape), att.init_encoder_layer(jax.random.key(0), M, H, 6)
        )
        check_grads(
            jax.jit(lambda p, x: att.encoder_layer(p, x, mask, norm="pre")),
            (pe, d64(B, K, M)),
            order=1,
            modes=["rev"],
        )


def _big_loop_fusions(model, batch, min_operands=12):
    """kLoop fusions with >= min_operands inputs in the compiled train step: XLA:CPU's sign of
    recomputing a chain of residual-stream gradients inside each consumer."""
    import re

    from anatomy import train

    tx = train.make_optimizer(train.default_train_config())
    step = train.compile_train_step(train.make_train_step(model, tx, label_smoothing=0.1))
    state = train.create_state(model.init(jax.random.key(0)), tx)
    hlo = step.lower(state, batch, jax.random.key(0)).compile().as_text()
    fusions = re.findall(r"= \S+ fusion\((.*?)\), kind=kLoop", hlo)
    return sum(f.count("%") >= min_operands for f in fusions)


@pytest.mark.slow
def test_layer_norm_is_differentiated_as_one_unit(monkeypatch):
    """layer_norm is jitted so that the backward pass adds ONE dLN/dx to the residual gradient.
    Inlined, autodiff adds LN's uses of x one by one (the last a broadcast), and XLA:CPU then
    recomputes the residual gradient of every later layer inside each consumer: ~3x our layout-
    copy time (benchmarks/profile.py). Same function either way; the control shows the
    inlined form still triggers it on this XLA, so the check is not vacuous."""
    from anatomy.attention import layers
    from anatomy.seq2seq import build_model
    from anatomy.seq2seq import transformer as tr

    cfg = dict(d_model=16, n_heads=4, d_ff=32, n_encoder_layers=2, n_decoder_layers=2)
    model = build_model("transformer", dict(cfg, norm="pre", dropout_rate=0.0), 40, 40)
    r = np.random.default_rng(0)
    src_len, tgt_len = np.array([5, 3]), np.array([5, 2])
    tok = lambda n: np.where(np.arange(5) < n[:, None], r.integers(4, 40, (2, 5)), 0)
    batch = {"src": tok(src_len), "src_len": src_len, "tgt_in": tok(tgt_len)}
    batch["tgt_out"] = tok(tgt_len)
    batch = {k: jnp.asarray(v, jnp.int32) for k, v in batch.items()}
    x = jnp.asarray(r.normal(size=(2, 5, 16)), jnp.float32)
    ln = {"scale": jnp.asarray(r.normal(size=16), jnp.float32), "bias": jnp.zeros(16)}
    inlined = layers.layer_norm.__wrapped__
    np.testing.assert_array_equal(layers.layer_norm(ln, x), jax.jit(inlined)(ln, x))

    as_unit = _big_loop_fusions(model, batch)
    monkeypatch.setattr(layers, "layer_norm", inlined)
    monkeypatch.setattr(tr, "layer_norm", inlined)
    model_inlined = build_model("transformer", dict(cfg, norm="pre", dropout_rate=0.0), 40, 40)
    assert as_unit * 2 < _big_loop_fusions(model_inlined, batch)
