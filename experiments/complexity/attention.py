"""complexity's attention layers, each over a grid of N and d:

    attention_core    scaled_dot_product, the score + value part       O(N²·d)
    attention_layer   multi_head_attention, with the projections       O(N²·d + N·d²)
    windowed_core     sliding-window attention over 2r+1 keys          O(r·N·d)
    windowed_layer    the same with projections                        O(r·N·d + N·d²)

The two-term layers are judged against the formula's own slope on the grid (formula_flops).
"""

import jax
import jax.numpy as jnp
import numpy as np

from anatomy import probes
from anatomy.attention import (
    init_mha,
    multi_head_attention,
    scaled_dot_product,
    sliding_window_attention,
    sliding_window_self_attention,
)
from anatomy.errors import BadInputError


def _qkv(cfg, n, d):
    h = cfg.n_heads
    if d % h:
        raise BadInputError(f"d={d} is not divisible by n_heads={h}")
    keys = jax.random.split(jax.random.PRNGKey(cfg.seed), 3)
    return [
        jax.random.normal(k, (cfg.batch, n, h, d // h), jnp.float32) for k in keys
    ]  # q, k, v [b, n, h, d/h]


def attention_core_cost(cfg, n, d):
    q, k, v = _qkv(cfg, n, d)
    return probes.xla_cost(lambda q, k, v: scaled_dot_product(q, k, v)[0], q, k, v)


def attention_layer_cost(cfg, n, d):
    params = init_mha(jax.random.PRNGKey(cfg.seed), d, cfg.n_heads)
    x = jax.random.normal(jax.random.PRNGKey(cfg.seed + 1), (cfg.batch, n, d), jnp.float32)
    return probes.xla_cost(lambda p, x: multi_head_attention(p, x, x), params, x)


def windowed_core_cost(cfg, n, d, radius=None):
    q, k, v = _qkv(cfg, n, d)
    r = cfg.radius_fixed if radius is None else radius
    return probes.xla_cost(lambda q, k, v: sliding_window_attention(q, k, v, r)[0], q, k, v)


def windowed_layer_cost(cfg, n, d):
    params = init_mha(jax.random.PRNGKey(cfg.seed), d, cfg.n_heads)
    x = jax.random.normal(jax.random.PRNGKey(cfg.seed + 1), (cfg.batch, n, d), jnp.float32)
    r = cfg.radius_fixed
    return probes.xla_cost(lambda p, x: sliding_window_self_attention(p, x, r), params, x)


def formula_flops(layer, n, d, cfg):
    """Leading-term FLOP formulas for the two-term layers (for their expected local slope)."""
    n, d = np.asarray(n, float), np.asarray(d, float)
    if layer == "attention_layer":
        return 4 * n * n * d + 8 * n * d * d  # scores+values, Q/K/V/O projections
    return 4 * n * (2 * cfg.radius_fixed + 1) * d + 8 * n * d * d  # windowed_layer
