"""long_range, the convolutional model: causal GLU blocks (ConvS2S's decoder layer, no attention).

    x = E[tokens]                                      [B, L, w]   (no positions: the kernel
    x = (GLU(conv_K(x)) + x)·√0.5,  conv_layers times              slots are the offsets)
    logits = x W_out + b_out                           [B, L, V]

Output t depends on x_{t-F+1} .. x_t only, F = 1 + conv_layers·(conv_kernel - 1): the model
can recall x_{t-k} for k < F and must sit at chance for k >= F, however long it trains.
The claim (experiments/long_range/claims.py, long_range/conv_field) checks both sides of
that edge.
"""

import jax
import jax.numpy as jnp
import numpy as np

from anatomy import conv


def init(key, name, cfg, width):
    k1, k2, k3 = jax.random.split(key, 3)
    v = cfg.vocab
    return {
        "embed": jax.random.normal(k1, (v, width)),
        "blocks": [
            conv.init_glu_block(k, width, cfg.conv_kernel)
            for k in jax.random.split(k2, cfg.conv_layers)
        ],
        "out": jax.random.normal(k3, (width, v)) / np.sqrt(width),
        "b_out": jnp.zeros(v),
    }


def apply(name, params, tokens):
    """tokens [B, L] int -> logits [B, L, V], causal."""
    x = params["embed"][tokens]  # [B, L, w]
    for p in params["blocks"]:
        x = conv.glu_block(p, x, causal=True)
    return x @ params["out"] + params["b_out"]
