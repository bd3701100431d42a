"""parallelism, the convolutional row: a stack of L GLU blocks (anatomy.conv, ConvS2S's layer).

    layer l:  x = (GLU(conv_K(x)) + x)·√0.5      all N positions at once, 'same' padding

What is measured (experiments/parallelism/__init__.py times it and reads its compiled
program like the other layers; its claims: experiments/parallelism/claims.py):
    serial loop iterations   0: no loop over positions (known_trip_count of the HLO)
    serial depth             the compiled critical path (anatomy.probes.depth): set by L, not N
    receptive field          positions an output depends on, read from the gradient's support
                             (exact zeros outside): 1 + L·(K-1) for every L measured
The price of having no serial loop: two positions N apart interact only after
⌈(N-1)/(K-1)⌉ layers without dilation; log_K N layers only with dilations K^l (Kalchbrenner
et al.'s ByteNet; ConvS2S does not dilate), O(1) for self-attention.
"""

import math

import jax
import jax.numpy as jnp

from anatomy import conv, probes


def init(key, cfg):
    """cfg.conv_layers GLU blocks of width cfg.d and kernel cfg.kernel_size."""
    return [
        conv.init_glu_block(k, cfg.d, cfg.kernel_size)
        for k in jax.random.split(key, cfg.conv_layers)
    ]


def forward(params, x):
    """The stack over x [b, n, d] -> [b, n, d] (non-causal, as ConvS2S's encoder)."""
    for p in params:
        x = conv.glu_block(p, x, causal=False)
    return x


def loss(params, x):
    return jnp.sum(forward(params, x) ** 2)


def flops(exe, params, x):
    """FLOPs of one forward+backward pass: XLA's count of the compiled gradient (no loops)."""
    return probes.cost_of(exe)["flops"]


LAYERS = {"conv": (loss, init, flops)}  # ConvS2S's GLU blocks


def receptive_field(params, d, seed=0):
    """Positions the middle output of the stack depends on (probes.receptive_field)."""
    width = params[0]["conv"]["w"].shape[0]
    n = 4 * len(params) * width + 1  # longer than the field: the edges do not clip it
    x = jax.random.normal(jax.random.PRNGKey(seed), (1, n, d))
    return probes.receptive_field(lambda x: forward(params, x), x, n // 2)


def analysis(cfg, raw):
    """Loop steps, depth against N, and the measured receptive field for L = 1..conv_layers."""
    rows = raw["conv"]
    ns = [r["n"] for r in rows]
    params = init(jax.random.PRNGKey(cfg.seed), cfg)
    fields = {
        n_layers: receptive_field(params[:n_layers], cfg.d, cfg.seed)
        for n_layers in range(1, len(params) + 1)
    }
    return {
        "conv_max_steps": max(r["steps_hlo"] for r in rows),
        "conv_depth_range": [min(r["depth"] for r in rows), max(r["depth"] for r in rows)],
        "conv_depth_exponent": probes.fit_power_law(ns, [r["depth"] for r in rows])["exponent"],
        "conv_receptive_field": fields,
        "conv_layers_to_span": {n: math.ceil((n - 1) / (cfg.kernel_size - 1)) for n in ns}
        if cfg.kernel_size > 1
        else {},
    }
