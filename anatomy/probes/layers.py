"""The two layers of Vaswani et al.'s Table 1 that the attention package does not have:
a 1-D convolution and restricted (windowed) self-attention.

Letters: b batch, t/q positions, w window slot, k kernel width, i/o input/output channels,
h heads, d head dim, m model dim.

    conv1d:     y[b,t,o] = Σ_{k,i} x[b, t+k-(K-1)/2, i] · w[k,i,o] + bias[o]    O(K·N·d²)
    windowed:   query t attends to keys t-r .. t+r (2r+1 of them, fewer at the edges)
                logits[b,h,t,w] = Σ_d q[b,t,h,d] · k[b,t+w-r,h,d] / √d             O(r·N·d)
The windowed form gathers each query's 2r+1 keys, so its cost grows with r, not with N².
"""

import jax
import jax.numpy as jnp

from anatomy.attention.masks import masked_softmax
from anatomy.attention.multihead import output_projection, project_kv, project_q


def init_conv1d(key, d_in, d_out, width):
    """{'w': [K, d_in, d_out] ~ N(0, 1/(K·d_in)), 'b': zeros [d_out]}."""
    if width < 1:
        raise ValueError(f"init_conv1d: width must be >= 1, got {width}")
    w = jax.random.normal(key, (width, d_in, d_out), jnp.float32) / jnp.sqrt(width * d_in)
    return {"w": w, "b": jnp.zeros((d_out,), jnp.float32)}


def conv1d(params, x, *, causal=False):
    """1-D convolution over time with 'same' output length.

    Args:
      params: from init_conv1d, w [K, i, o].
      x: [b, t, i].
      causal: pad only on the left (output t sees inputs t-K+1 .. t) instead of centred.
    Returns: [b, t, o].
    """
    if x.ndim != 3 or x.shape[-1] != params["w"].shape[1]:
        raise ValueError(f"conv1d: x must be [b, t, {params['w'].shape[1]}], got {x.shape}")
    width = params["w"].shape[0]
    pad = (width - 1, 0) if causal else ((width - 1) // 2, width // 2)
    y = jax.lax.conv_general_dilated(
        x, params["w"], window_strides=(1,), padding=[pad], dimension_numbers=("NWC", "WIO", "NWC")
    )  # [b, t, o]
    return y + params["b"]


def window_indices(length, radius):
    """Key positions of every query's window: idx [t, 2r+1] = t - r + w, and valid [t, 2r+1]."""
    t = jnp.arange(length)[:, None]  # [t, 1]
    idx = t - radius + jnp.arange(2 * radius + 1)[None, :]  # [t, w]
    valid = (idx >= 0) & (idx < length)
    return jnp.clip(idx, 0, length - 1), valid


def windowed_attention(q, k, v, radius):
    """Restricted self-attention: each query attends to the 2r+1 keys around its position.

        logits[b,h,t,w] = Σ_d q[b,t,h,d] k[b,idx[t,w],h,d] / √d,  idx[t,w] = t - r + w
        weights = softmax_w(logits) (keys outside [0, t) masked to exactly 0)
        out[b,t,h,d] = Σ_w weights[b,h,t,w] v[b,idx[t,w],h,d]

    Args: q, k, v: [b, t, h, d] (same length t); radius: r >= 0.
    Returns: out [b, t, h, d], weights [b, h, t, 2r+1].
    """
    if q.ndim != 4 or k.shape != q.shape or v.shape[:3] != q.shape[:3]:
        raise ValueError(
            f"windowed_attention: q, k, v must be [b, t, h, d] alike, got "
            f"{q.shape}, {k.shape}, {v.shape}"
        )
    if radius < 0:
        raise ValueError(f"windowed_attention: radius must be >= 0, got {radius}")
    idx, valid = window_indices(q.shape[1], radius)
    k_win = k[:, idx]  # [b, t, w, h, d]
    v_win = v[:, idx]  # [b, t, w, h, d]
    scale = 1.0 / jnp.sqrt(jnp.asarray(q.shape[-1], q.dtype))
    logits = jnp.einsum("bthd,btwhd->bhtw", q, k_win) * scale  # [b, h, t, w]
    weights = masked_softmax(logits, valid[None, None], axis=-1)  # [b, h, t, w]
    out = jnp.einsum("bhtw,btwhd->bthd", weights, v_win)  # [b, t, h, d]
    return out, weights


def windowed_self_attention(params, x, radius):
    """Multi-head restricted self-attention over x [b, t, m] with init_mha params -> [b, t, m]."""
    k, v = project_kv(params, x)  # [b, t, h, d] each
    o, _ = windowed_attention(project_q(params, x), k, v, radius)  # [b, t, h, d]
    return output_projection(params, o)
