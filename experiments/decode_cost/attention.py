"""decode_cost's Transformer decoders: one post-LN block of anatomy.stack (an attention mixer
+ FFN) generating token N three ways, and with a sliding window:

    kv_cache   project the new token, append to a KVCache of N slots, attend over them
                                                                           O(N·d) + O(d²)
    recompute  re-run the block over the whole prefix of N tokens (causal mask), keeping the
               last position                                               O(N²·d) + O(N·d²)
    kv_fixed   the KV step with a cache of fixed capacity max(N) holding N tokens: XLA's
               static shapes attend over every slot, so its cost is flat in N
    window     causal sliding-window attention of radius r: a rolling cache of r+1 slots
               (sliding_window.window_append), the last r+1 tokens         O(r·d) + O(d²)

Each is the stack's own function (apply_stack, stack_step); the window step is stack_step
over the same block with the attention mixer's step swapped for one that appends to and
attends over the rolling cache (``_windowed``).
"""

import functools

import jax
import jax.numpy as jnp

from anatomy import probes
from anatomy.attention import init_cache, init_window_cache
from anatomy.attention.multihead import cached_self_attention
from anatomy.attention.sliding_window import window_append, window_attend
from anatomy.mixers import build_mixer
from anatomy.stack import apply_stack, init_stack_block, make_stack, stack_step


def _windowed(mixer):
    """The attention mixer with its step over a rolling cache (window_append / window_attend)
    instead of the KVCache's append / attend; no positions inside it, so nothing else moves."""

    def step(params, state, x_t):
        out, _, cache = cached_self_attention(
            params["mix"], x_t[:, None], state["mix"], append=window_append, attend=window_attend
        )
        return out[:, 0], {"mix": cache}

    return mixer._replace(step=step)


@functools.cache
def _stacks(d, n_heads, d_ff):
    """(the one post-LN block as a stack, the same with the windowed step); keys 'split'."""
    mixer = build_mixer("attention", d, n_heads=n_heads, positions="none")
    kw = dict(norm="post", d_ff=d_ff, keys="split")
    return make_stack((mixer,), **kw), make_stack((_windowed(mixer),), **kw)


def _stack_of(params, windowed=False):
    (block,) = params["blocks"]
    d, n_heads = block["ffn"]["w1"].shape[0], block["mixer"]["mix"]["w_q"].shape[1]
    return _stacks(d, n_heads, block["ffn"]["w1"].shape[1])[int(windowed)]


def init_block(key, cfg):
    """The one post-LN block {'blocks': [block]}, drawn from ``key`` itself."""
    stack, _ = _stacks(cfg.d, cfg.n_heads, cfg.ffn_mult * cfg.d)
    return {"blocks": [init_stack_block(key, stack)]}


def block_step(params, x_t, cache):
    """x_t [b, m] with a KVCache of past keys/values -> (out [b, m], new cache)."""
    y, (state,) = stack_step(params, _stack_of(params), [{"mix": cache}], x_t)
    return y, state["mix"]


def block_window_step(params, x_t, cache):
    """block_step over a rolling cache of r+1 slots (init_window_cache)."""
    y, (state,) = stack_step(params, _stack_of(params, windowed=True), [{"mix": cache}], x_t)
    return y, state["mix"]


def block_prefix(params, xs):
    """Recompute: the block over the whole prefix xs [b, N, m], causal; the last position [b, m]."""
    return apply_stack(params, _stack_of(params), xs)[:, -1]


def programs(cfg, n, x_t, prefix, capacity=None):
    """(fn, args) of each attention decoder for generating token n (1-based): x_t [b, 1, d] the
    new token, prefix [b, n, d] the tokens so far; kv_fixed only with a `capacity`."""
    b, d, h = cfg.batch, cfg.d, cfg.n_heads
    block = init_block(jax.random.PRNGKey(cfg.seed), cfg)
    x_t = x_t[:, 0]  # [b, d]: the stack's step reads one position

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
    x_t = jnp.ones((cfg.batch, cfg.d))
    return probes.xla_cost(block_window_step, block, x_t, cache)["flops"]
