"""Multi-head attention as batched einsums over explicit parameters.

Letters: b batch, q query positions, k key positions, m model dim, h heads, d head dim.

    Q[b,q,h,d] = Σ_m x_q[b,q,m]  w_q[m,h,d] + b_q[h,d]      (likewise K, V from x_kv)
    Q, K      <- RoPE(Q, q positions), RoPE(K, k positions)  (only with rotary=)
    O[b,q,h,d] = scaled_dot_product(Q, K, V, mask, bias)      (bias: an additive logit bias)
    out[b,q,m] = Σ_{h,d} O[b,q,h,d] w_o[h,d,m] + b_o[m]

Positions enter attention here and nowhere else: rotary= rotates the projected queries and
keys (positions.Rotary, Su et al. 2021), bias= is added to the logits (ALiBi, Press et al.
2022). Every Transformer layer and its KV-cache step (layers.py, the attention mixer of
anatomy/mixers/attention.py) passes them through this module.

The parameter layout is flax.linen.MultiHeadDotProductAttention's
(query/key/value kernels [m,h,d], out kernel [h,d,m]).
"""

import jax
import jax.numpy as jnp

from anatomy.attention import kv_cache
from anatomy.attention.chunked import chunked_attention
from anatomy.attention.dot_product import scaled_dot_product
from anatomy.axes import declare
from anatomy.errors import BadInputError

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


def init_mha(key, d_model, n_heads, d_head=None, bias=True, value_scale=1.0):
    """Parameters {'w_q':[m,h,d],'b_q':[h,d],'w_k','b_k','w_v','b_v','w_o':[h,d,m],'b_o':[m]}.

    d_head defaults to d_model // n_heads. Weights ~ N(0, 1/fan_in); biases zero
    (bias=False omits the b_* entries). value_scale multiplies w_v and w_o (DeepNet's β,
    layers.py; the query and key projections are never scaled).
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
    if value_scale != 1.0:
        p["w_v"], p["w_o"] = p["w_v"] * value_scale, p["w_o"] * value_scale
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


def rotate_qk(q, k, rotary):
    """(q, k) rotated by ``rotary`` (positions.Rotary): q at its q_positions, k at its
    k_positions (k unchanged when they are None: keys that come rotated). rotary=None: as is."""
    if rotary is None:
        return q, k
    return rotary.queries(q), (k if rotary.k_positions is None else rotary.keys(k))


def multi_head_attention(
    params,
    x_q,
    x_kv,
    mask=None,
    *,
    kv=None,
    rotary=None,
    bias=None,
    return_weights=False,
    impl="dense",
):
    """Multi-head attention.

    Args:
      params: from init_mha.
      x_q: [b, q, m] queries' inputs.
      x_kv: [b, k, m] keys'/values' inputs (ignored, may be None, when kv is given).
      mask: bool broadcastable to [b, h, q, k] (True = may attend), or None.
      kv: optional precomputed project_kv(params, x_kv) = (k [b,k,h,d], v [b,k,h,d]).
      rotary: optional positions.Rotary: RoPE on the projected queries at its q_positions and
        on the keys at its k_positions (k_positions=None: the keys are taken as given, e.g.
        already rotated in kv). For self-attention only (see positions.py).
      bias: optional float logit bias broadcastable to [b, h, q, k] (ALiBi), dense only.
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
    if impl == "chunked" and bias is not None:
        raise BadInputError("multi_head_attention: impl='chunked' takes no logit bias (ALiBi)")
    if kv is None:
        if x_kv is None:
            raise ValueError("multi_head_attention: give x_kv or kv")
        kv = project_kv(params, x_kv)
    q, k = rotate_qk(project_q(params, x_q), kv[0], rotary)  # [b, q, h, d], [b, k, h, d]
    v = kv[1]
    if impl == "chunked":
        o, weights = chunked_attention(q, k, v, mask), None  # [b, q, h, d]
    else:
        o, weights = scaled_dot_product(q, k, v, mask, bias)  # [b, q, h, d], [b, h, q, k]
    out = output_projection(params, o)  # [b, q, m]
    return (out, weights) if return_weights else out


def cached_self_attention(
    params, x_t, cache, *, rotary=None, bias=None, append=kv_cache.append, attend=kv_cache.attend
):
    """Self-attention of one new position through a KV cache (incremental decoding).

        k_t, v_t = project_kv(x_t);  q_t = project_q(x_t)                [b, 1, h, d]
        q_t, k_t <- RoPE at this step's position   (rotary: q_positions = k_positions = it)
        cache    <- append(cache, k_t, v_t)        (each key cached rotated at its own position)
        o        = attend(cache, q_t, bias)        (bias over the cache's slots: ALiBi)

    The step is appended first, so the query sees itself and every cached position (the
    causal mask is implicit). append(cache, k, v) / attend(cache, q[, bias=]) -> (o, w) are
    the cache's two operations (kv_cache's by default; sliding_window's rolling cache takes
    no bias, its slots are not positions).

    Args:
      x_t: [b, 1, m]. cache: e.g. a KVCache with k, v [b, L, h, d].
      rotary: positions.Rotary of this step or None. bias: [b?, h, 1, L] or None.
    Returns:
      out [b, 1, m], weights [b, h, 1, L], the new cache.
    """
    k_t, v_t = project_kv(params, x_t)  # [b, 1, h, d] each
    q_t, k_t = rotate_qk(project_q(params, x_t), k_t, rotary)  # [b, 1, h, d] each
    new_cache = append(cache, k_t, v_t)
    o, w = attend(new_cache, q_t) if bias is None else attend(new_cache, q_t, bias=bias)
    return output_projection(params, o), w, new_cache  # [b, 1, m], [b, h, 1, L]
