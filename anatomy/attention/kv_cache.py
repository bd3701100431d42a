"""Key/value cache for incremental (one token at a time) decoding.

Letters: b batch, L cache capacity, h heads, d head dim. Slots [0, length) hold the keys
and values of the tokens seen so far; slots >= length are masked out of attention.
A new token costs O(length · d) per head instead of recomputing all past projections.

`length` is either one int32 [] shared by every row, or int32 [b], one per row
(init_cache(..., per_row=True)); with per-row lengths every leaf is batch-leading, so a
decoder state holding caches can be reordered, sliced and concatenated along the batch
axis (beam search does). A full cache never overwrites a slot: an append past capacity
writes nothing, leaves `length` at L and sets the sticky `overflow` flag (same shape as
length); decoders check it with any_overflow / check_no_overflow.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from anatomy.attention.dot_product import scaled_dot_product
from anatomy.attention.masks import combine_masks


class KVCache(NamedTuple):
    """k [b, L, h, d], v [b, L, h, d]; length int32 [] or [b] (filled slots);
    overflow bool, the shape of length (True once an append found the cache full)."""

    k: jax.Array
    v: jax.Array
    length: jax.Array
    overflow: jax.Array


def init_cache(batch, max_len, n_heads, d_head, dtype=jnp.float32, per_row=False):
    """An empty cache of capacity max_len: zeros k, v [b, L, h, d], length 0, no overflow.

    per_row=False: one shared length []; per_row=True: one length per row [b].
    """
    shape = (batch, max_len, n_heads, d_head)
    n = (batch,) if per_row else ()
    return KVCache(
        jnp.zeros(shape, dtype),
        jnp.zeros(shape, dtype),
        jnp.zeros(n, jnp.int32),
        jnp.zeros(n, bool),
    )


def append(cache, k_new, v_new):
    """Write one step k_new, v_new [b, 1, h, d] at slot `length` (per row); the new cache.

        k[r, length_r] = k_new[r, 0]   (same for v)   if length_r < L
        length_r      <- min(length_r + 1, L)
        overflow_r    <- overflow_r or (length_r >= L)  (the step is dropped, nothing moves)

    A scatter with mode='drop', so `length` may be traced (one jit for all steps) and a
    write past capacity is dropped rather than clamped onto the last slot.
    """
    if k_new.ndim != 4 or k_new.shape[1] != 1 or v_new.shape[:2] != k_new.shape[:2]:
        raise ValueError(
            f"append: k_new, v_new must be [b, 1, h, d], got {k_new.shape}, {v_new.shape}"
        )
    if k_new.shape[2:] != cache.k.shape[2:] or k_new.shape[0] != cache.k.shape[0]:
        raise ValueError(f"append: step shape {k_new.shape} does not fit cache {cache.k.shape}")
    b, cap = cache.k.shape[:2]
    if cache.length.shape not in ((), (b,)) or cache.overflow.shape != cache.length.shape:
        raise ValueError(
            f"append: cache length must be [] or [{b}] with an overflow flag of "
            f"the same shape, got {cache.length.shape}, {cache.overflow.shape}"
        )
    rows, slot = jnp.arange(b), jnp.broadcast_to(cache.length, (b,))  # [b], [b]
    k = cache.k.at[rows, slot].set(k_new[:, 0].astype(cache.k.dtype), mode="drop")
    v = cache.v.at[rows, slot].set(v_new[:, 0].astype(cache.v.dtype), mode="drop")
    full = cache.length >= cap  # [] or [b]
    return KVCache(k, v, jnp.minimum(cache.length + 1, cap), cache.overflow | full)


def cache_mask(cache):
    """[1 or b, 1, 1, L] bool: True for the filled slots (< length, per row if per-row)."""
    length = jnp.reshape(cache.length, (-1, 1, 1, 1))  # [1 or b, 1, 1, 1]
    return jnp.arange(cache.k.shape[1])[None, None, None, :] < length


def attend(cache, q, mask=None, bias=None):
    """Attend one query step over the cached keys/values.

    Args:
      cache: KVCache (append the current step first to let it see itself).
      q: [b, 1, h, d].
      mask: optional extra bool mask broadcastable to [b, h, 1, L] (e.g. prompt padding).
      bias: optional logit bias broadcastable to [b, h, 1, L] (ALiBi: slot i holds the
        key of position i, so the bias is alibi_bias(slopes, query position, arange(L))).
    Returns:
      out [b, 1, h, d], weights [b, h, 1, L] (exactly zero at slots >= length).
    """
    if q.ndim != 4 or q.shape[1] != 1:
        raise ValueError(f"attend: q must be [b, 1, h, d], got shape {q.shape}")
    return scaled_dot_product(q, cache.k, cache.v, combine_masks(cache_mask(cache), mask), bias)


def _caches(tree):
    is_cache = lambda x: isinstance(x, KVCache)
    return [x for x in jax.tree_util.tree_leaves(tree, is_leaf=is_cache) if is_cache(x)]


def any_overflow(tree):
    """bool []: whether any KVCache anywhere in the pytree `tree` has overflowed (traceable)."""
    flags = [jnp.any(c.overflow) for c in _caches(tree)]
    return jnp.any(jnp.stack(flags)) if flags else jnp.zeros((), bool)


def check_no_overflow(tree, what="decoding"):
    """Raise RuntimeError if any KVCache in `tree` (concrete values) has overflowed."""
    raise_on_overflow(any_overflow(tree), what)


def raise_on_overflow(flag, what="decoding"):
    """Raise RuntimeError when the (concrete) bool `flag`, e.g. any_overflow(...), is set."""
    if bool(flag):
        raise RuntimeError(
            f"{what}: a KV cache overflowed (more steps than its capacity); "
            f"size the cache for the longest sequence (init_state's max_len)"
        )
