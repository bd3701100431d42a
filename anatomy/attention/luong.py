"""Multiplicative attention (Luong, Pham & Manning, EMNLP 2015), the three score functions.

dot:     score(s, h_j) = sᵀ h_j                    (needs Dq == Dk; no parameters)
general: score(s, h_j) = sᵀ W h_j                  W: [Dq, Dk]
concat:  score(s, h_j) = vᵀ tanh(W [s; h_j])       W: [Dq + Dk, A], v: [A]
α_j = softmax_j(score), masked keys get α_j = 0;  c = Σ_j α_j v_j
"""

import jax
import jax.numpy as jnp

from anatomy.attention.masks import masked_softmax
from anatomy.axes import declare

KINDS = ("dot", "general", "concat")


def _check_kind(kind):
    if kind not in KINDS:
        raise ValueError(f"Luong attention kind must be one of {KINDS}, got {kind!r}")


def init_luong(key, kind, d_query, d_key, d_attn=None):
    """Parameters for one Luong score function.

    dot -> {} (and requires d_query == d_key); general -> {'w': [Dq, Dk]};
    concat -> {'w': [Dq + Dk, A], 'v': [A]} with A = d_attn or d_query.
    """
    _check_kind(kind)
    if kind == "dot":
        if d_query != d_key:
            raise ValueError(f"Luong 'dot' needs d_query == d_key, got {d_query} and {d_key}")
        return {}
    if kind == "general":
        w = jax.random.normal(key, (d_query, d_key), jnp.float32) / jnp.sqrt(d_query)
        return declare({"w": w}, {"w": (None, None)})  # [Dq, Dk]: never sharded
    d_attn = d_attn or d_query
    kw, kv = jax.random.split(key)
    d_cat = d_query + d_key
    p = {
        "w": jax.random.normal(kw, (d_cat, d_attn), jnp.float32) / jnp.sqrt(d_cat),
        "v": jax.random.normal(kv, (d_attn,), jnp.float32) / jnp.sqrt(d_attn),
    }
    return declare(p, {"w": (None, "mlp"), "v": ("mlp",)})  # [Dq+Dk, A], [A]


def luong_scores(params, query, keys, *, kind):
    """Scores [B, K] for query [B, Dq] and keys [B, K, Dk] (letters: b batch, k keys)."""
    _check_kind(kind)
    if query.ndim != 2 or keys.ndim != 3:
        raise ValueError(
            f"Luong attention: query must be [B, Dq] and keys [B, K, Dk], "
            f"got {query.shape} and {keys.shape}"
        )
    if kind == "dot":
        if query.shape[-1] != keys.shape[-1]:
            raise ValueError(
                f"Luong 'dot' needs Dq == Dk, got {query.shape[-1]} and {keys.shape[-1]}"
            )
        return jnp.einsum("bd,bkd->bk", query, keys)
    if kind == "general":
        return jnp.einsum("bq,qd,bkd->bk", query, params["w"], keys)
    # concat: W [s; h] = W_s s + W_h h, split W row-wise instead of materialising [s; h_j].
    d_q = query.shape[-1]
    w_s, w_h = params["w"][:d_q], params["w"][d_q:]  # [Dq, A], [Dk, A]
    pre = (query @ w_s)[:, None, :] + jnp.einsum("bkd,da->bka", keys, w_h)  # [B, K, A]
    return jnp.tanh(pre) @ params["v"]  # [B, K]


def luong_attention(params, query, keys, values, mask=None, *, kind):
    """Luong attention: query [B, Dq], keys [B, K, Dk], values [B, K, Dv], mask [B, K] bool.

    Returns context [B, Dv] and weights [B, K] (a fully masked row is all zeros).
    """
    scores = luong_scores(params, query, keys, kind=kind)  # [B, K]
    weights = masked_softmax(scores, mask, axis=-1)  # [B, K]
    return jnp.einsum("bk,bkv->bv", weights, values), weights
