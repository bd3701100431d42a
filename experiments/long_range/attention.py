"""long_range's Transformer: embedding·√m -> the causal pre-LN decoder-only stack with
sinusoidal positions (anatomy.attention.decoder_only) -> linear readout.

    x = E[tokens]·√m + positions     [B, L, m]
    x = decoder_only(x)              [B, L, m]   n_layers causal pre-LN blocks, n_heads heads
    logits = x W_out + b_out         [B, L, V]
"""

import jax
import jax.numpy as jnp
import numpy as np

from anatomy.attention.decoder_only import decoder_only, init_decoder_only


def init(key, name, cfg, width):
    """Parameters of the Transformer at d_model `width` (FFN 4·width)."""
    k1, k2, k3 = jax.random.split(key, 3)
    v = cfg.vocab
    stack = init_decoder_only(k2, cfg.n_layers, width, cfg.n_heads, 4 * width)
    return {
        "embed": jax.random.normal(k1, (v, width)) / np.sqrt(width),
        "layers": stack["layers"],  # the stack reads params["layers"]
        "out": jax.random.normal(k3, (width, v)) / np.sqrt(width),
        "b_out": jnp.zeros(v),
    }


def apply(name, params, tokens):
    """tokens [B, L] int -> logits [B, L, V] (causal mask)."""
    x = params["embed"][tokens]  # [B, L, m]
    x = decoder_only(params, x * np.sqrt(x.shape[-1]), norm="pre")
    return x @ params["out"] + params["b_out"]
