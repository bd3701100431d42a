"""decode_cost's Transformer decoders: one post-LN decoder-only block (self-attention + FFN,
anatomy.attention.decoder_only) generating token N three ways, and with a sliding window:

    kv_cache   project the new token, append to a KVCache of N slots, attend over them
                                                                           O(N·d) + O(d²)
    recompute  re-run the block over the whole prefix of N tokens (causal mask), keeping the
               last position                                               O(N²·d) + O(N·d²)
    kv_fixed   the KV step with a cache of fixed capacity max(N) holding N tokens: XLA's
               static shapes attend over every slot, so its cost is flat in N
    window     causal sliding-window attention of radius r: a rolling cache of r+1 slots
               (sliding_window.window_append), the last r+1 tokens         O(r·d) + O(d²)
"""

import functools

import jax
import jax.numpy as jnp

from anatomy import probes
from anatomy.attention import decoder_only as stack
from anatomy.attention import init_cache, init_window_cache
from anatomy.attention.sliding_window import window_append, window_attend


def init_block(key, cfg):
    """One post-LN decoder-only block (anatomy.attention.decoder_only.init_block)."""
    return stack.init_block(key, cfg.d, cfg.n_heads, cfg.ffn_mult * cfg.d)


# x_t [b, 1, m] with a KVCache of past keys/values -> (out [b, 1, m], new cache); the window
# step appends to and attends over a rolling cache (window_append / window_attend)
block_step = stack.block_step
block_window_step = functools.partial(block_step, append=window_append, attend=window_attend)


def block_prefix(params, xs):
    """Recompute: the block over the whole prefix xs [b, N, m], causal; the last position [b, 1, m]."""
    return stack.decoder_only({"layers": [params]}, xs, positions=False)[:, -1:]


def programs(cfg, n, x_t, prefix, capacity=None):
    """(fn, args) of each attention decoder for generating token n (1-based): x_t [b, 1, d] the
    new token, prefix [b, n, d] the tokens so far; kv_fixed only with a `capacity`."""
    b, d, h = cfg.batch, cfg.d, cfg.n_heads
    block = init_block(jax.random.PRNGKey(cfg.seed), cfg)

    def filled_cache(cap):
        c = init_cache(b, cap, h, d // h)
        kv = jax.random.normal(jax.random.PRNGKey(cfg.seed + 2), (2, b, cap, h, d // h))
        return c._replace(k=kv[0], v=kv[1], length=jnp.asarray(n - 1, jnp.int32))

    window = init_window_cache(b, cfg.window_radius, h, d // h)
    kv_w = jax.random.normal(jax.random.PRNGKey(cfg.seed + 4), (2,) + window.k.shape)
    window = window._replace(k=kv_w[0], v=kv_w[1], length=jnp.asarray(n - 1, jnp.int32))
    out = {
        "kv_cache": (block_step, (block, x_t, filled_cache(n))),
        "recompute": (block_prefix, (block, prefix)),
        "window": (block_window_step, (block, x_t, window)),
    }
    if capacity is not None:
        out["kv_fixed"] = (block_step, (block, x_t, filled_cache(capacity)))
    return out


def window_step_flops(cfg, radius):
    """XLA FLOPs of one sliding-window decoder step with a rolling cache of radius+1 slots."""
    block = init_block(jax.random.PRNGKey(cfg.seed), cfg)
    cache = init_window_cache(cfg.batch, radius, cfg.n_heads, cfg.d // cfg.n_heads)
    x_t = jnp.ones((cfg.batch, 1, cfg.d))
    return probes.xla_cost(block_window_step, block, x_t, cache)["flops"]
