"""Additive (Bahdanau) attention, "RNNsearch" (Bahdanau, Cho & Bengio, ICLR 2015).

    e_j   = vᵀ tanh(W s + U h_j)          s = decoder state s_{i-1}, h_j = encoder annotation j
    α_j   = softmax_j(e_j)                 masked keys get α_j = 0
    c     = Σ_j α_j h_j                    (values default to the annotations themselves)

U h_j does not depend on the decoder step, so `project_keys` computes it once per source
sentence and the caller passes it explicitly to every step.
"""

import jax
import jax.numpy as jnp

from anatomy.attention.masks import masked_softmax
from anatomy.axes import declare


def _dense_init(key, shape, fan_in):
    return jax.random.normal(key, shape, jnp.float32) / jnp.sqrt(fan_in)


def init_additive(key, d_query, d_key, d_attn):
    """Parameters {'w_q': [Dq, A], 'w_k': [Dk, A], 'v': [A]} (W, U and v above)."""
    kq, kk, kv = jax.random.split(key, 3)
    p = {
        "w_q": _dense_init(kq, (d_query, d_attn), d_query),
        "w_k": _dense_init(kk, (d_key, d_attn), d_key),
        "v": _dense_init(kv, (d_attn,), d_attn),
    }
    return declare(p, {"w_q": (None, "mlp"), "w_k": (None, "mlp"), "v": ("mlp",)})


def project_keys(params, keys):
    """U h_j for every key: keys [B, K, Dk] -> [B, K, A]. Compute once per source."""
    if keys.ndim != 3:
        raise ValueError(f"project_keys: keys must be [B, K, Dk], got shape {keys.shape}")
    return jnp.einsum("bkd,da->bka", keys, params["w_k"])


def additive_scores(params, query, projected_keys):
    """Scores e_j = vᵀ tanh(W s + U h_j): query [B, Dq], projected_keys [B, K, A] -> [B, K]."""
    if query.ndim != 2 or projected_keys.ndim != 3:
        raise ValueError(
            f"additive attention: query must be [B, Dq] and projected_keys [B, K, A], "
            f"got {query.shape} and {projected_keys.shape}"
        )
    wq = query @ params["w_q"]  # [B, A]
    return jnp.tanh(wq[:, None, :] + projected_keys) @ params["v"]  # [B, K]


def additive_attention(params, query, projected_keys, values, mask=None):
    """One step of Bahdanau attention.

    Args:
      params: from init_additive.
      query: [B, Dq], the previous decoder state s_{i-1}.
      projected_keys: [B, K, A], project_keys(params, keys).
      values: [B, K, Dv], usually the encoder annotations h_j.
      mask: [B, K] bool (True = may attend) or None.
    Returns:
      context [B, Dv], weights [B, K] (rows sum to 1; a fully masked row is all zeros).
    """
    scores = additive_scores(params, query, projected_keys)  # [B, K]
    weights = masked_softmax(scores, mask, axis=-1)  # [B, K]
    context = jnp.einsum("bk,bkv->bv", weights, values)  # [B, Dv]
    return context, weights
