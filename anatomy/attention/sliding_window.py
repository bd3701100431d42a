"""Sliding-window (restricted) attention: each query sees only the keys within r positions.

Letters: b batch, q query positions, k key positions, w window slot, h heads, d head dim,
m model dim. Query i sits at position i, key j at position j (as in causal_mask, offset 0).

    idx[i, w]       = i - r + w                     w = 0 .. 2r   (causal: w = 0 .. r)
    logits[b,h,i,w] = Σ_d q[b,i,h,d] k[b,idx[i,w],h,d] / √d
    weights         = softmax_w(logits); slots off [0, k) or masked get exactly 0
    out[b,i,h,d]    = Σ_w weights[b,h,i,w] v[b,idx[i,w],h,d]

Each query gathers its 2r+1 keys (r+1 when causal), so time and memory are O(r·N·d), never an
N×N matrix: Vaswani et al. (2017) Table 1's "restricted self-attention". It computes the same
numbers as scaled_dot_product under band_mask(q, k, r) (tests hold the two equal, gradients
included). A radius past the sequence is cut to max(q, k) - 1, which changes nothing but the
number of (empty) slots.

Decoding with a causal window needs only the last r+1 keys: a rolling KV cache of r+1 slots
(init_window_cache / window_append / window_attend) writes token t at slot t mod (r+1), so a
new token costs O(r·d) however long the sequence already is. Slot order does not matter:
softmax attention is a sum over keys, blind to their order.
"""

import numbers

import jax.numpy as jnp

from anatomy.attention.dot_product import scaled_dot_product
from anatomy.attention.kv_cache import KVCache, init_cache
from anatomy.attention.masks import as_mask4, combine_masks, masked_softmax
from anatomy.attention.multihead import output_projection, project_kv, project_q


def _check_radius(radius):
    if not isinstance(radius, numbers.Integral) or isinstance(radius, bool) or radius < 0:
        raise ValueError(f"sliding window: radius must be an int >= 0, got {radius!r}")
    return int(radius)


def window_indices(q_len, k_len, radius, *, causal=False):
    """Key position of every query's window slot and whether it is on the sequence.

    Returns: idx [q, w] (clipped into [0, k) so it can index), valid [q, w] bool;
    w = 2r+1 slots (r+1 when causal), slot w of query i holding key i - r + w.
    """
    radius = _check_radius(radius)
    width = radius + 1 if causal else 2 * radius + 1
    idx = jnp.arange(q_len)[:, None] - radius + jnp.arange(width)[None, :]  # [q, w]
    valid = (idx >= 0) & (idx < k_len)
    return jnp.clip(idx, 0, k_len - 1), valid


def _window_mask(mask, idx, shape):
    """A mask broadcastable to [b, h, q, k], read at the window's keys -> [b|1, h|1, q|1, w|1]."""
    m = as_mask4(mask, shape, "sliding_window_attention")
    if m.shape[3] == 1:  # the same answer for every key
        return m
    if m.shape[2] == 1:  # a key mask (e.g. padding_mask): gather it per query window
        return m[:, :, 0][..., idx]  # [b|1, h|1, q, w]
    idx4 = jnp.broadcast_to(idx, m.shape[:2] + idx.shape)  # [b|1, h|1, q, w]
    return jnp.take_along_axis(m, idx4, axis=3)  # [b|1, h|1, q, w]


def sliding_window_attention(q, k, v, radius, mask=None, *, causal=False):
    """Attention of every query to the keys within `radius` positions of it (see module doc).

    Args:
      q: [b, q, h, d]; k: [b, k, h, d]; v: [b, k, h, d_v].
      radius: int r >= 0; query i attends to keys i-r .. i+r (i-r .. i when causal).
      mask: bool broadcastable to [b, h, q, k] (True = may attend), e.g. padding_mask, or None.
      causal: also forbid keys after the query.
    Returns:
      out [b, q, h, d_v]; weights [b, h, q, w] over the window slots (w = 2r+1, or r+1 when
      causal, with r cut to max(q, k) - 1), slot w of query i holding key i - r + w. A query
      with no allowed key gets zero weights and a zero output, as in scaled_dot_product.
    """
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(
            f"sliding_window_attention: q, k, v must be [b, len, h, d], got "
            f"{q.shape}, {k.shape}, {v.shape}"
        )
    if q.shape[-1] != k.shape[-1] or k.shape[:3] != v.shape[:3] or q.shape[::2] != k.shape[::2]:
        raise ValueError(
            f"sliding_window_attention: incompatible shapes q {q.shape}, k {k.shape}, v {v.shape}"
        )
    b, q_len, h, d = q.shape
    k_len = k.shape[1]
    radius = min(_check_radius(radius), max(q_len, k_len) - 1)
    idx, valid = window_indices(q_len, k_len, radius, causal=causal)  # [q, w] each
    allowed = valid[None, None]  # [1, 1, q, w]
    if mask is not None:
        allowed = allowed & _window_mask(mask, idx, (b, h, q_len, k_len))
    k_win = k[:, idx]  # [b, q, w, h, d]
    v_win = v[:, idx]  # [b, q, w, h, d_v]
    scale = 1.0 / jnp.sqrt(jnp.asarray(d, q.dtype))
    logits = jnp.einsum("bihd,biwhd->bhiw", q, k_win) * scale  # [b, h, q, w]
    weights = masked_softmax(logits, allowed, axis=-1)  # [b, h, q, w]
    out = jnp.einsum("bhiw,biwhd->bihd", weights, v_win)  # [b, q, h, d_v]
    return out, weights


def sliding_window_self_attention(params, x, radius, mask=None, *, causal=False):
    """Multi-head sliding-window self-attention over x [b, t, m] with init_mha params -> [b, t, m]."""
    if x.ndim != 3:
        raise ValueError(f"sliding_window_self_attention: x must be [b, t, m], got {x.shape}")
    k, v = project_kv(params, x)  # [b, t, h, d] each
    o, _ = sliding_window_attention(project_q(params, x), k, v, radius, mask, causal=causal)
    return output_projection(params, o)  # [b, t, m]


def init_window_cache(batch, radius, n_heads, d_head, dtype=jnp.float32, per_row=False):
    """An empty rolling cache for causal window radius r: a KVCache of r+1 slots."""
    return init_cache(batch, _check_radius(radius) + 1, n_heads, d_head, dtype, per_row)


def window_append(cache, k_new, v_new):
    """Write token t = length (k_new, v_new [b, 1, h, d]) at slot t mod L; the new cache.

    The cache then holds the last min(t+1, L) tokens; length counts every token seen (it
    grows past L) and nothing overflows: the oldest token is the one overwritten.
    """
    b, cap = cache.k.shape[:2]
    if k_new.shape != (b, 1) + cache.k.shape[2:] or v_new.shape[:2] != (b, 1):
        raise ValueError(
            f"window_append: k_new, v_new must be [b, 1, h, d] = {[b, 1, *cache.k.shape[2:]]}, "
            f"got {k_new.shape}, {v_new.shape}"
        )
    rows, slot = jnp.arange(b), jnp.broadcast_to(cache.length % cap, (b,))  # [b], [b]
    k = cache.k.at[rows, slot].set(k_new[:, 0].astype(cache.k.dtype))
    v = cache.v.at[rows, slot].set(v_new[:, 0].astype(cache.v.dtype))
    return KVCache(k, v, cache.length + 1, cache.overflow)


def window_attend(cache, q, mask=None):
    """One query step q [b, 1, h, d] over a rolling cache (append the step first).

    Equals row t of sliding_window_attention(..., radius=L-1, causal=True) over the whole
    sequence. mask: optional bool broadcastable to [b, h, 1, L] over the slots.
    Returns: out [b, 1, h, d], weights [b, h, 1, L] (zero at slots not yet written).
    """
    if q.ndim != 4 or q.shape[1] != 1:
        raise ValueError(f"window_attend: q must be [b, 1, h, d], got shape {q.shape}")
    filled = jnp.minimum(jnp.reshape(cache.length, (-1, 1, 1, 1)), cache.k.shape[1])
    valid = jnp.arange(cache.k.shape[1])[None, None, None, :] < filled  # [1|b, 1, 1, L]
    return scaled_dot_product(q, cache.k, cache.v, combine_masks(valid, mask))
