"""Key/value cache for incremental (one token at a time) decoding.

Letters: b batch, L cache capacity, h heads, d head dim. Slots [0, length) hold the keys
and values of the tokens seen so far; slots >= length are masked out of attention.
A new token costs O(length · d) per head instead of recomputing all past projections.
"""
from typing import NamedTuple

import jax
import jax.numpy as jnp

from anatomy.attention.dot_product import scaled_dot_product
from anatomy.attention.masks import combine_masks


class KVCache(NamedTuple):
    """k [b, L, h, d], v [b, L, h, d], length int32 [] (number of filled slots)."""
    k: jax.Array
    v: jax.Array
    length: jax.Array


def init_cache(batch, max_len, n_heads, d_head, dtype=jnp.float32):
    """An empty cache of capacity max_len: zeros k, v [b, L, h, d] and length 0."""
    shape = (batch, max_len, n_heads, d_head)
    return KVCache(jnp.zeros(shape, dtype), jnp.zeros(shape, dtype), jnp.zeros((), jnp.int32))


def append(cache, k_new, v_new):
    """Write one step k_new, v_new [b, 1, h, d] at slot `length`; returns the new cache.

    Uses jax.lax.dynamic_update_slice, so `length` may be traced (one jit for all steps).
    Appending past capacity is not checked at trace time (XLA clamps the slot index).
    """
    if k_new.ndim != 4 or k_new.shape[1] != 1 or v_new.shape[:2] != k_new.shape[:2]:
        raise ValueError(f"append: k_new, v_new must be [b, 1, h, d], got {k_new.shape}, {v_new.shape}")
    if k_new.shape[2:] != cache.k.shape[2:] or k_new.shape[0] != cache.k.shape[0]:
        raise ValueError(f"append: step shape {k_new.shape} does not fit cache {cache.k.shape}")
    start = (0, cache.length, 0, 0)
    k = jax.lax.dynamic_update_slice(cache.k, k_new.astype(cache.k.dtype), start)
    v = jax.lax.dynamic_update_slice(cache.v, v_new.astype(cache.v.dtype), start)
    return KVCache(k, v, cache.length + 1)


def cache_mask(cache):
    """[1, 1, 1, L] bool: True for the filled slots (< length)."""
    return (jnp.arange(cache.k.shape[1]) < cache.length)[None, None, None, :]


def attend(cache, q, mask=None):
    """Attend one query step over the cached keys/values.

    Args:
      cache: KVCache (append the current step first to let it see itself).
      q: [b, 1, h, d].
      mask: optional extra bool mask broadcastable to [b, h, 1, L] (e.g. prompt padding).
    Returns:
      out [b, 1, h, d], weights [b, h, 1, L] (exactly zero at slots >= length).
    """
    if q.ndim != 4 or q.shape[1] != 1:
        raise ValueError(f"attend: q must be [b, 1, h, d], got shape {q.shape}")
    return scaled_dot_product(q, cache.k, cache.v, combine_masks(cache_mask(cache), mask))
