"""Multi-head attention as batched einsums over explicit parameters.

Letters: b batch, q query positions, k key positions, m model dim, h heads, d head dim.

    Q[b,q,h,d] = Σ_m x_q[b,q,m]  w_q[m,h,d] + b_q[h,d]      (likewise K, V from x_kv)
    O[b,q,h,d] = scaled_dot_product(Q, K, V, mask)
    out[b,q,m] = Σ_{h,d} O[b,q,h,d] w_o[h,d,m] + b_o[m]

The parameter layout is flax.linen.MultiHeadDotProductAttention's
(query/key/value kernels [m,h,d], out kernel [h,d,m]).
"""

import jax
import jax.numpy as jnp

from anatomy.attention.chunked import chunked_attention
from anatomy.attention.dot_product import scaled_dot_product
from anatomy.axes import declare

# Logical axes (anatomy.axes): heads split over the mesh's 'model' axis by default.
MHA_AXES = {
    "w_q": ("embed", "heads", "head_dim"),  # [m, h, d]
    "w_k": ("embed", "heads", "head_dim"),
    "w_v": ("embed", "heads", "head_dim"),
    "b_q": ("heads", "head_dim"),  # [h, d]
    "b_k": ("heads", "head_dim"),
    "b_v": ("heads", "head_dim"),
    "w_o": ("heads", "head_dim", "embed"),  # [h, d, m]
    "b_o": ("embed",),  # [m]
}


def init_mha(key, d_model, n_heads, d_head=None, bias=True):
    """Parameters {'w_q':[m,h,d],'b_q':[h,d],'w_k','b_k','w_v','b_v','w_o':[h,d,m],'b_o':[m]}.

    d_head defaults to d_model // n_heads. Weights ~ N(0, 1/fan_in); biases zero
    (bias=False omits the b_* entries).
    """
    if d_head is None:
        if d_model % n_heads:
            raise ValueError(f"init_mha: d_model={d_model} is not divisible by n_heads={n_heads}")
        d_head = d_model // n_heads
    kq, kk, kv, ko = jax.random.split(key, 4)
    shape_in = (d_model, n_heads, d_head)
    p = {
        "w_q": jax.random.normal(kq, shape_in, jnp.float32) / jnp.sqrt(d_model),
        "w_k": jax.random.normal(kk, shape_in, jnp.float32) / jnp.sqrt(d_model),
        "w_v": jax.random.normal(kv, shape_in, jnp.float32) / jnp.sqrt(d_model),
        "w_o": jax.random.normal(ko, (n_heads, d_head, d_model), jnp.float32)
        / jnp.sqrt(n_heads * d_head),
    }
    if bias:
        p.update(
            b_q=jnp.zeros((n_heads, d_head)),
            b_k=jnp.zeros((n_heads, d_head)),
            b_v=jnp.zeros((n_heads, d_head)),
            b_o=jnp.zeros((d_model,)),
        )
    return declare(p, MHA_AXES)


def _proj(x, w, b):
    y = jnp.einsum("btm,mhd->bthd", x, w)  # [b, t, h, d]
    return y if b is None else y + b


def project_q(params, x_q):
    """Queries: x_q [b, q, m] -> [b, q, h, d]."""
    return _proj(x_q, params["w_q"], params.get("b_q"))


def project_kv(params, x_kv):
    """Keys and values: x_kv [b, k, m] -> (k [b, k, h, d], v [b, k, h, d]).

    Compute once per source (e.g. encoder memory) and pass as `kv=` to reuse it.
    """
    if x_kv.ndim != 3:
        raise ValueError(f"project_kv: x_kv must be [b, k, m], got shape {x_kv.shape}")
    return (
        _proj(x_kv, params["w_k"], params.get("b_k")),
        _proj(x_kv, params["w_v"], params.get("b_v")),
    )


def output_projection(params, o):
    """Merge heads: o [b, q, h, d] -> [b, q, m]."""
    out = jnp.einsum("bqhd,hdm->bqm", o, params["w_o"])
    return out if params.get("b_o") is None else out + params["b_o"]


def multi_head_attention(
    params, x_q, x_kv, mask=None, *, kv=None, return_weights=False, impl="dense"
):
    """Multi-head attention.

    Args:
      params: from init_mha.
      x_q: [b, q, m] queries' inputs.
      x_kv: [b, k, m] keys'/values' inputs (ignored, may be None, when kv is given).
      mask: bool broadcastable to [b, h, q, k] (True = may attend), or None.
      kv: optional precomputed project_kv(params, x_kv) = (k [b,k,h,d], v [b,k,h,d]).
      return_weights: also return the attention weights (impl="dense" only).
      impl: "dense" (scaled_dot_product, the [b, h, q, k] weights in memory) or "chunked"
        (chunked_attention: the same numbers by an online softmax in O(N) memory).
    Returns:
      out [b, q, m], or (out, weights [b, h, q, k]) if return_weights.
    """
    if x_q.ndim != 3:
        raise ValueError(f"multi_head_attention: x_q must be [b, q, m], got shape {x_q.shape}")
    if impl not in ("dense", "chunked"):
        raise ValueError(f"multi_head_attention: impl must be 'dense' or 'chunked', got {impl!r}")
    if impl == "chunked" and return_weights:
        raise ValueError("multi_head_attention: impl='chunked' never forms the weights to return")
    if kv is None:
        if x_kv is None:
            raise ValueError("multi_head_attention: give x_kv or kv")
        kv = project_kv(params, x_kv)
    k, v = kv
    q = project_q(params, x_q)  # [b, q, h, d]
    if impl == "chunked":
        o, weights = chunked_attention(q, k, v, mask), None  # [b, q, h, d]
    else:
        o, weights = scaled_dot_product(q, k, v, mask)  # [b, q, h, d], [b, h, q, k]
    out = output_projection(params, o)  # [b, q, m]
    return (out, weights) if return_weights else out
