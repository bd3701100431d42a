"""Transformer building blocks: encoder and decoder layers (LayerNorm, the FFN and dropout
are anatomy.layers').

Letters: b batch, t/q/k positions, m model dim, f FFN inner dim, h heads, d head dim.

Sub-layer wiring (x = input of the sub-layer, F = attention or FFN):
    post-LN (Vaswani et al. 2017, the default):  x <- LN(x + Dropout(F(x)))
    pre-LN  (Xiong et al. 2020):                 x <- x + Dropout(F(LN(x)))
Like torch.nn.TransformerEncoderLayer, dropout also follows the FFN's ReLU. Dropout is active
only when dropout_rate > 0 and an rng is given; rng=None means evaluation mode.

Parameter trees (all leaves float32):
    encoder: {'self_attn': mha, 'ln1': ln, 'ffn': ffn, 'ln2': ln}
    decoder: {'self_attn': mha, 'ln1': ln, 'cross_attn': mha, 'ln2': ln, 'ffn': ffn, 'ln3': ln}
    mha = init_mha(...) (see multihead.py); ln = {'scale': [m], 'bias': [m]};
    ffn = {'w1': [m, f], 'b1': [f], 'w2': [f, m], 'b2': [m]}
"""

import jax
import jax.numpy as jnp

from anatomy.attention import kv_cache
from anatomy.attention.multihead import (
    init_mha,
    multi_head_attention,
    output_projection,
    project_kv,
    project_q,
)
from anatomy.layers import dropout, ffn, init_ffn, init_layer_norm, layer_norm


def _keys(rng, n):
    return [None] * n if rng is None else list(jax.random.split(rng, n))


def _sublayer(x, fn, ln, *, pre_ln, eps, rate, rng):
    """Residual + LayerNorm around fn: x -> (new x, fn's auxiliary output)."""
    if pre_ln:
        y, aux = fn(layer_norm(ln, x, eps))
        return x + dropout(y, rate, rng, deterministic=rng is None), aux
    y, aux = fn(x)
    return layer_norm(ln, x + dropout(y, rate, rng, deterministic=rng is None), eps), aux


# --- encoder ----------------------------------------------------------------------------


def init_encoder_layer(key, d_model, n_heads, d_ff):
    """Encoder layer params {'self_attn', 'ln1', 'ffn', 'ln2'} (see the module docstring)."""
    ka, kf = jax.random.split(key)
    return {
        "self_attn": init_mha(ka, d_model, n_heads),
        "ln1": init_layer_norm(d_model),
        "ffn": init_ffn(kf, d_model, d_ff),
        "ln2": init_layer_norm(d_model),
    }


def encoder_layer(
    params,
    x,
    mask=None,
    *,
    pre_ln=False,
    dropout_rate=0.0,
    rng=None,
    return_weights=False,
    eps=1e-5,
):
    """One Transformer encoder layer: self-attention then FFN, each with residual + LN.

    Args:
      x: [b, t, m]. mask: bool broadcastable to [b, h, t, t] (True = may attend), e.g.
        padding_mask(lengths, t). pre_ln: pre-LN instead of the paper's post-LN.
      rng: PRNG key for dropout (None = evaluation). eps: LayerNorm epsilon.
    Returns:
      out [b, t, m], or (out, {'self_attn': weights [b, h, t, t]}) if return_weights.
    """
    if x.ndim != 3:
        raise ValueError(f"encoder_layer: x must be [b, t, m], got shape {x.shape}")
    r_res1, r_ffn, r_res2 = _keys(rng, 3)
    kw = dict(pre_ln=pre_ln, eps=eps, rate=dropout_rate)
    sa = params["self_attn"]
    x, w_self = _sublayer(
        x,
        lambda z: multi_head_attention(sa, z, z, mask, return_weights=True),
        params["ln1"],
        rng=r_res1,
        **kw,
    )
    x, _ = _sublayer(
        x,
        lambda z: (ffn(params["ffn"], z, dropout_rate=dropout_rate, rng=r_ffn), None),
        params["ln2"],
        rng=r_res2,
        **kw,
    )
    return (x, {"self_attn": w_self}) if return_weights else x


# --- decoder ----------------------------------------------------------------------------


def init_decoder_layer(key, d_model, n_heads, d_ff):
    """Decoder layer params {'self_attn', 'ln1', 'cross_attn', 'ln2', 'ffn', 'ln3'}."""
    ks, kc, kf = jax.random.split(key, 3)
    return {
        "self_attn": init_mha(ks, d_model, n_heads),
        "ln1": init_layer_norm(d_model),
        "cross_attn": init_mha(kc, d_model, n_heads),
        "ln2": init_layer_norm(d_model),
        "ffn": init_ffn(kf, d_model, d_ff),
        "ln3": init_layer_norm(d_model),
    }


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
    pre_ln=False,
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
    kw = dict(pre_ln=pre_ln, eps=eps, rate=dropout_rate)
    sa, ca = params["self_attn"], params["cross_attn"]
    y, w_self = _sublayer(
        y,
        lambda z: multi_head_attention(sa, z, z, self_mask, return_weights=True),
        params["ln1"],
        rng=r1,
        **kw,
    )
    y, w_cross = _sublayer(
        y,
        lambda z: multi_head_attention(ca, z, None, cross_mask, kv=memory_kv, return_weights=True),
        params["ln2"],
        rng=r2,
        **kw,
    )
    y, _ = _sublayer(
        y,
        lambda z: (ffn(params["ffn"], z, dropout_rate=dropout_rate, rng=r_ffn), None),
        params["ln3"],
        rng=r3,
        **kw,
    )
    return (y, {"self_attn": w_self, "cross_attn": w_cross}) if return_weights else y


def init_decoder_cache(params, batch, max_len, dtype=jnp.float32):
    """An empty KVCache sized for this decoder layer's self-attention."""
    _, n_heads, d_head = params["self_attn"]["w_k"].shape
    return kv_cache.init_cache(batch, max_len, n_heads, d_head, dtype)


def decoder_layer_step(params, y_t, cache, memory_kv, cross_mask=None, *, pre_ln=False, eps=1e-5):
    """Incremental decoding: one new target position through a decoder layer (no dropout).

    The step's self-attention keys/values are appended to `cache` and the query attends
    over all cached positions (the causal mask is implicit); cross-attention uses the
    precomputed memory_kv. Equals decoder_layer with a causal mask, one row at a time.

    Args:
      y_t: [b, 1, m]. cache: KVCache with k, v [b, L, h, d]. memory_kv: (k, v) [b, k, h, d].
      cross_mask: bool broadcastable to [b, h, 1, k], or None.
    Returns:
      out [b, 1, m], new_cache, {'self_attn': [b, h, 1, L], 'cross_attn': [b, h, 1, k]}.
    """
    if y_t.ndim != 3 or y_t.shape[1] != 1:
        raise ValueError(f"decoder_layer_step: y_t must be [b, 1, m], got shape {y_t.shape}")
    sa, ca = params["self_attn"], params["cross_attn"]
    kw = dict(pre_ln=pre_ln, eps=eps, rate=0.0, rng=None)

    def self_attn(z):
        k_t, v_t = project_kv(sa, z)  # [b, 1, h, d] each
        new_cache = kv_cache.append(cache, k_t, v_t)
        o, w = kv_cache.attend(new_cache, project_q(sa, z))  # [b, 1, h, d], [b, h, 1, L]
        return output_projection(sa, o), (w, new_cache)

    y, (w_self, new_cache) = _sublayer(y_t, self_attn, params["ln1"], **kw)
    y, w_cross = _sublayer(
        y,
        lambda z: multi_head_attention(ca, z, None, cross_mask, kv=memory_kv, return_weights=True),
        params["ln2"],
        **kw,
    )
    y, _ = _sublayer(y, lambda z: (ffn(params["ffn"], z), None), params["ln3"], **kw)
    return y, new_cache, {"self_attn": w_self, "cross_attn": w_cross}
