"""Transformer building blocks: encoder and decoder layers (LayerNorm, the FFN and dropout
are anatomy.layers').

Letters: b batch, t/q/k positions, m model dim, f FFN inner dim, h heads, d head dim.

Sub-layer wiring, norm= (x = input of the sub-layer, G = attention or FFN, D = dropout):
    'post'      x <- LN(x + D(G(x)))          post-LN (Vaswani et al. 2017, the default)
    'pre'       x <- x + D(G(LN(x)))          pre-LN (Xiong et al. 2020); a stack of pre-LN
                                              layers ends with one more LN (its caller's)
    'deepnorm'  x <- LN(α·x + D(G(x)))        DeepNet (Wang et al. 2022): post-LN with the
                                              residual up-weighted by α and G's value, output
                                              and FFN weights initialised scaled by β
                                              (deepnorm_constants; init_*_layer(beta=))
    'none'      x <- x + D(G(x))              no LayerNorm at all (the layers hold no LN)
residual=False drops the skip connection: x <- LN(D(G(x))) ('post'), D(G(LN(x))) ('pre'),
D(G(x)) ('none'); 'deepnorm' is a way of weighting the residual and needs it.
Like torch.nn.TransformerEncoderLayer, dropout also follows the FFN's ReLU. Dropout is active
only when dropout_rate > 0 and an rng is given; rng=None means evaluation mode.

Positions reach the layers only through their self-attention: rotary= (RoPE) and bias=
(ALiBi) are passed to multihead.multi_head_attention (and, one token at a time, to
multihead.cached_self_attention); a stack builds them once from its positions.Encoding. The
decoder's cross-attention takes neither (positions.py says why).

Parameter trees (all leaves float32):
    encoder: {'self_attn': mha, 'ln1': ln, 'ffn': ffn, 'ln2': ln}
    decoder: {'self_attn': mha, 'ln1': ln, 'cross_attn': mha, 'ln2': ln, 'ffn': ffn, 'ln3': ln}
    mha = init_mha(...) (see multihead.py); ln = {'scale': [m], 'bias': [m]} (absent when
    the layer is built for norm='none'); ffn = {'w1': [m, f], 'b1': [f], 'w2': [f, m], 'b2': [m]}
"""

import numbers

import jax
import jax.numpy as jnp

from anatomy.attention import kv_cache
from anatomy.attention.multihead import (
    cached_self_attention,
    init_mha,
    multi_head_attention,
    project_kv,
)
from anatomy.errors import BadInputError
from anatomy.layers import dropout, ffn, init_ffn, init_layer_norm, layer_norm

NORMS = ("post", "pre", "deepnorm", "none")


def check_norm(norm, residual=True, field="norm"):
    """``norm`` if it is one of NORMS and fits ``residual`` (a bool), else BadInputError naming
    ``field`` and the choices ('deepnorm' weights the residual, so it needs residual=True)."""
    if not isinstance(norm, str) or norm not in NORMS:
        choices = ", ".join(repr(n) for n in NORMS)
        raise BadInputError(f"{field} must be one of {choices}; got {norm!r}")
    if not isinstance(residual, bool):
        raise BadInputError(f"residual must be True or False, got {residual!r}")
    if norm == "deepnorm" and not residual:
        raise BadInputError(
            f"{field}='deepnorm' scales the residual (x <- LN(α·x + G(x))): it needs residual=True"
        )
    return norm


def deepnorm_constants(n_encoder_layers, n_decoder_layers):
    """DeepNet's (α, β) (Wang et al. 2022, Table 1) for N encoder and M decoder layers:

        decoder-only (N = 0)   decoder α = (2M)^(1/4),            β = (8M)^(-1/4)
        encoder-only (M = 0)   encoder α = (2N)^(1/4),            β = (8N)^(-1/4)
        encoder-decoder        encoder α = 0.81 (N^4 M)^(1/16),   β = 0.87 (N^4 M)^(-1/16)
                               decoder α = (3M)^(1/4),            β = (12M)^(-1/4)

    α multiplies the residual of every sub-layer of that side; β scales the initial FFN,
    value and output projections (not the queries' and keys'). These are the paper's table
    (torchscale's encoder code divides its init by (N^4 M)^(1/16) / 1.15 instead of
    multiplying by 0.87 (N^4 M)^(-1/16)). Returns {'encoder': (α, β) or None,
    'decoder': (α, β) or None}.
    """
    n, m = n_encoder_layers, n_decoder_layers
    for name, v in (("n_encoder_layers", n), ("n_decoder_layers", m)):
        if not isinstance(v, numbers.Integral) or v < 0:
            raise BadInputError(f"deepnorm_constants: {name} must be an int >= 0, got {v!r}")
    if n == 0 and m == 0:
        raise BadInputError("deepnorm_constants: no layers")
    if n == 0:
        return {"encoder": None, "decoder": ((2 * m) ** 0.25, (8 * m) ** -0.25)}
    if m == 0:
        return {"encoder": ((2 * n) ** 0.25, (8 * n) ** -0.25), "decoder": None}
    return {
        "encoder": (0.81 * (n**4 * m) ** (1 / 16), 0.87 * (n**4 * m) ** (-1 / 16)),
        "decoder": ((3 * m) ** 0.25, (12 * m) ** -0.25),
    }


def _keys(rng, n):
    return [None] * n if rng is None else list(jax.random.split(rng, n))


def _sublayer(x, fn, ln, *, norm, residual=True, alpha=1.0, eps, rate, rng):
    """The module docstring's wiring around fn: x -> (new x, fn's auxiliary output)."""
    if norm == "pre":
        y, aux = fn(layer_norm(ln, x, eps))
        y = dropout(y, rate, rng, deterministic=rng is None)
        return (x + y if residual else y), aux
    y, aux = fn(x)
    y = dropout(y, rate, rng, deterministic=rng is None)
    if residual:
        y = alpha * x + y if norm == "deepnorm" else x + y
    return (y if norm == "none" else layer_norm(ln, y, eps)), aux


def _ffn_block(params, rate, rng):
    return lambda z: (ffn(params, z, dropout_rate=rate, rng=rng), None)


def _self_attention_block(params, mask, rotary, bias):
    return lambda z: multi_head_attention(
        params, z, z, mask, rotary=rotary, bias=bias, return_weights=True
    )


def _cross_attention_block(params, mask, memory_kv):
    return lambda z: multi_head_attention(params, z, None, mask, kv=memory_kv, return_weights=True)


def _init_ffn(key, d_model, d_ff, beta):
    p = init_ffn(key, d_model, d_ff)
    if beta != 1.0:
        p["w1"], p["w2"] = p["w1"] * beta, p["w2"] * beta
    return p


def _norms(names, d_model, norm):
    return {} if norm == "none" else {n: init_layer_norm(d_model) for n in names}


# --- encoder ----------------------------------------------------------------------------


def init_encoder_layer(key, d_model, n_heads, d_ff, *, norm="post", beta=1.0):
    """Encoder layer params {'self_attn', 'ln1', 'ffn', 'ln2'} (see the module docstring).

    norm: only 'none' changes the tree (no 'ln1', 'ln2'). beta: DeepNet's β, multiplying the
    initial value and output projections and both FFN weights (1.0: plain init).
    """
    check_norm(norm)
    ka, kf = jax.random.split(key)
    p = {
        "self_attn": init_mha(ka, d_model, n_heads, value_scale=beta),
        "ffn": _init_ffn(kf, d_model, d_ff, beta),
    }
    p.update(_norms(("ln1", "ln2"), d_model, norm))
    return {k: p[k] for k in ("self_attn", "ln1", "ffn", "ln2") if k in p}


def encoder_layer(
    params,
    x,
    mask=None,
    *,
    norm="post",
    residual=True,
    alpha=1.0,
    rotary=None,
    bias=None,
    dropout_rate=0.0,
    rng=None,
    return_weights=False,
    eps=1e-5,
):
    """One Transformer encoder layer: self-attention then FFN, each wired by ``norm``.

    Args:
      x: [b, t, m]. mask: bool broadcastable to [b, h, t, t] (True = may attend), e.g.
        padding_mask(lengths, t), or a causal mask (a decoder-only block).
      norm, residual: the module docstring's wiring (NORMS); alpha: DeepNet's α ('deepnorm').
      rotary: positions.Rotary for the self-attention (RoPE), or None.
      bias: logit bias broadcastable to [b, h, t, t] (ALiBi), or None.
      rng: PRNG key for dropout (None = evaluation). eps: LayerNorm epsilon.
    Returns:
      out [b, t, m], or (out, {'self_attn': weights [b, h, t, t]}) if return_weights.
    """
    if x.ndim != 3:
        raise ValueError(f"encoder_layer: x must be [b, t, m], got shape {x.shape}")
    r_res1, r_ffn, r_res2 = _keys(rng, 3)
    kw = dict(norm=norm, residual=residual, alpha=alpha, eps=eps, rate=dropout_rate)
    self_attn = _self_attention_block(params["self_attn"], mask, rotary, bias)
    x, w_self = _sublayer(x, self_attn, params.get("ln1"), rng=r_res1, **kw)
    x, _ = _sublayer(
        x, _ffn_block(params["ffn"], dropout_rate, r_ffn), params.get("ln2"), rng=r_res2, **kw
    )
    return (x, {"self_attn": w_self}) if return_weights else x


# --- decoder ----------------------------------------------------------------------------


def init_decoder_layer(key, d_model, n_heads, d_ff, *, norm="post", beta=1.0):
    """Decoder layer params {'self_attn', 'ln1', 'cross_attn', 'ln2', 'ffn', 'ln3'}.

    norm: only 'none' changes the tree (no LayerNorms). beta: DeepNet's β on both attentions'
    value and output projections and the FFN's weights (1.0: plain init).
    """
    check_norm(norm)
    ks, kc, kf = jax.random.split(key, 3)
    p = {
        "self_attn": init_mha(ks, d_model, n_heads, value_scale=beta),
        "cross_attn": init_mha(kc, d_model, n_heads, value_scale=beta),
        "ffn": _init_ffn(kf, d_model, d_ff, beta),
    }
    p.update(_norms(("ln1", "ln2", "ln3"), d_model, norm))
    order = ("self_attn", "ln1", "cross_attn", "ln2", "ffn", "ln3")
    return {k: p[k] for k in order if k in p}


def decoder_memory_kv(params, memory):
    """Cross-attention keys/values of the encoder memory [b, k, m], computed once per source.

    Returns (k [b, k, h, d], v [b, k, h, d]) for decoder_layer(memory_kv=...) and decoder_layer_step.
    """
    return project_kv(params["cross_attn"], memory)


def decoder_layer(
    params,
    y,
    memory,
    self_mask=None,
    cross_mask=None,
    *,
    norm="post",
    residual=True,
    alpha=1.0,
    rotary=None,
    bias=None,
    dropout_rate=0.0,
    rng=None,
    return_weights=False,
    eps=1e-5,
    memory_kv=None,
):
    """One Transformer decoder layer: masked self-attention, cross-attention, FFN.

    Args:
      y: [b, q, m] target-side inputs. memory: [b, k, m] encoder outputs (may be None when
        memory_kv is given). self_mask: bool broadcastable to [b, h, q, q], usually
        combine_masks(causal_mask(q, q), padding). cross_mask: bool broadcastable to [b, h, q, k].
      norm, residual, alpha: as encoder_layer.
      rotary, bias: positions for the SELF-attention only (as encoder_layer's).
      memory_kv: optional decoder_memory_kv(params, memory).
    Returns:
      out [b, q, m], or (out, {'self_attn': [b, h, q, q], 'cross_attn': [b, h, q, k]}).
    """
    if y.ndim != 3:
        raise ValueError(f"decoder_layer: y must be [b, q, m], got shape {y.shape}")
    if memory_kv is None:
        if memory is None:
            raise ValueError("decoder_layer: give memory or memory_kv")
        memory_kv = decoder_memory_kv(params, memory)
    r1, r2, r3, r_ffn = _keys(rng, 4)
    kw = dict(norm=norm, residual=residual, alpha=alpha, eps=eps, rate=dropout_rate)
    self_attn = _self_attention_block(params["self_attn"], self_mask, rotary, bias)
    cross_attn = _cross_attention_block(params["cross_attn"], cross_mask, memory_kv)
    y, w_self = _sublayer(y, self_attn, params.get("ln1"), rng=r1, **kw)
    y, w_cross = _sublayer(y, cross_attn, params.get("ln2"), rng=r2, **kw)
    y, _ = _sublayer(
        y, _ffn_block(params["ffn"], dropout_rate, r_ffn), params.get("ln3"), rng=r3, **kw
    )
    return (y, {"self_attn": w_self, "cross_attn": w_cross}) if return_weights else y


def init_decoder_cache(params, batch, max_len, dtype=jnp.float32):
    """An empty KVCache sized for this decoder layer's self-attention."""
    _, n_heads, d_head = params["self_attn"]["w_k"].shape
    return kv_cache.init_cache(batch, max_len, n_heads, d_head, dtype)


def decoder_layer_step(
    params,
    y_t,
    cache,
    memory_kv,
    cross_mask=None,
    *,
    norm="post",
    residual=True,
    alpha=1.0,
    rotary=None,
    bias=None,
    eps=1e-5,
):
    """Incremental decoding: one new target position through a decoder layer (no dropout).

    The step's self-attention keys/values are appended to `cache` and the query attends
    over all cached positions (the causal mask is implicit; multihead.cached_self_attention);
    cross-attention uses the precomputed memory_kv. Equals decoder_layer with a causal mask,
    one row at a time, when rotary / bias are that row's (positions.Encoding.step_attention).

    Args:
      y_t: [b, 1, m]. cache: KVCache with k, v [b, L, h, d]. memory_kv: (k, v) [b, k, h, d].
      cross_mask: bool broadcastable to [b, h, 1, k], or None.
      norm, residual, alpha: as decoder_layer. rotary: the step's positions.Rotary (RoPE at
        its position) or None; bias: [b?, h, 1, L] over the cache's slots (ALiBi) or None.
    Returns:
      out [b, 1, m], new_cache, {'self_attn': [b, h, 1, L], 'cross_attn': [b, h, 1, k]}.
    """
    if y_t.ndim != 3 or y_t.shape[1] != 1:
        raise ValueError(f"decoder_layer_step: y_t must be [b, 1, m], got shape {y_t.shape}")
    sa = params["self_attn"]
    kw = dict(norm=norm, residual=residual, alpha=alpha, eps=eps, rate=0.0, rng=None)

    def self_attn(z):
        out, w, new_cache = cached_self_attention(sa, z, cache, rotary=rotary, bias=bias)
        return out, (w, new_cache)

    cross_attn = _cross_attention_block(params["cross_attn"], cross_mask, memory_kv)
    y, (w_self, new_cache) = _sublayer(y_t, self_attn, params.get("ln1"), **kw)
    y, w_cross = _sublayer(y, cross_attn, params.get("ln2"), **kw)
    y, _ = _sublayer(y, _ffn_block(params["ffn"], 0.0, None), params.get("ln3"), **kw)
    return y, new_cache, {"self_attn": w_self, "cross_attn": w_cross}
