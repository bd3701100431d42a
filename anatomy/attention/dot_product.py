"""Scaled dot-product attention (Vaswani et al. 2017): softmax(Q Kᵀ / √d) V, batched with einsum.

Letters: b batch, q query positions, k key positions, h heads, d head dimension.
"""

import jax.numpy as jnp

from anatomy.attention.masks import masked_softmax


def scaled_dot_product(q, k, v, mask=None, bias=None):
    """Attention(Q, K, V) = softmax(Q Kᵀ / √d + B) V for every batch element and head at once.

        logits[b,h,q,k] = Σ_d q[b,q,h,d] k[b,k,h,d] / √d  (+ bias[b,h,q,k])
        weights         = softmax_k(logits) with masked keys set to exactly 0
        out[b,q,h,d]    = Σ_k weights[b,h,q,k] v[b,k,h,d]

    Args:
      q: [b, q, h, d]; k: [b, k, h, d]; v: [b, k, h, d_v].
      mask: bool broadcastable to [b, h, q, k] (True = may attend), or None.
      bias: float broadcastable to [b, h, q, k] added to the logits (ALiBi's -slope·|q-k|,
        positions.alibi_bias), or None.
    Returns:
      out [b, q, h, d_v], weights [b, h, q, k]. A query whose keys are all masked gets
      weights of zero and an output of zero.
    """
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(
            f"scaled_dot_product: q, k, v must be [b, len, h, d], got "
            f"{q.shape}, {k.shape}, {v.shape}"
        )
    if q.shape[-1] != k.shape[-1] or k.shape[:3] != v.shape[:3]:
        raise ValueError(
            f"scaled_dot_product: incompatible shapes q {q.shape}, k {k.shape}, v {v.shape}"
        )
    scale = 1.0 / jnp.sqrt(jnp.asarray(q.shape[-1], q.dtype))
    logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) * scale  # [b, h, q, k]
    if bias is not None:
        logits = logits + bias  # [b, h, q, k]
    weights = masked_softmax(logits, mask, axis=-1)  # [b, h, q, k]
    out = jnp.einsum("bhqk,bkhd->bqhd", weights, v)  # [b, q, h, d_v]
    return out, weights
