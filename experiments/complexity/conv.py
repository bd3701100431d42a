"""complexity's convolution: one 1-D convolution over time (anatomy.conv.conv1d), width k,
O(k·N·d²)."""

import jax
import jax.numpy as jnp

from anatomy import conv, probes


def conv_cost(cfg, n, d, width=None):
    params = conv.init_conv1d(jax.random.PRNGKey(cfg.seed), d, d, width or cfg.kernel_fixed)
    x = jax.random.normal(jax.random.PRNGKey(cfg.seed + 1), (cfg.batch, n, d), jnp.float32)
    return probes.xla_cost(conv.conv1d, params, x)
