"""long_range's Transformer: embedding·√m + sinusoidal positions -> anatomy.stack's causal
pre-LN stack of attention mixers -> linear readout.

    x = E[tokens]·√m + PE(t)         [B, L, m]
    x = Stack(x)                     [B, L, m]   n_layers causal pre-LN blocks (attention
                                                 mixers of n_heads heads, FFN 4·m), no final LN
    logits = x W_out + b_out         [B, L, V]
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from anatomy.attention import encoding
from anatomy.mixers import build_mixer
from anatomy.stack import apply_stack, init_stack, make_stack


@functools.cache
def _stack(n_layers, width, n_heads):
    """The causal pre-LN stack; its blocks drawn with keys 'split' (attention, then FFN)."""
    mixer = build_mixer("attention", width, n_heads=n_heads, positions="none")
    return make_stack((mixer,) * n_layers, norm="pre", d_ff=4 * width, keys="split")


def init(key, name, cfg, width):
    """Parameters of the Transformer at d_model `width` (FFN 4·width)."""
    k1, k2, k3 = jax.random.split(key, 3)
    v = cfg.vocab
    return {
        "embed": jax.random.normal(k1, (v, width)) / np.sqrt(width),
        "stack": init_stack(k2, _stack(cfg.n_layers, width, cfg.n_heads)),
        "out": jax.random.normal(k3, (width, v)) / np.sqrt(width),
        "b_out": jnp.zeros(v),
    }


def apply(name, params, tokens):
    """tokens [B, L] int -> logits [B, L, V] (causal mask)."""
    x = params["embed"][tokens]  # [B, L, m]
    blocks = params["stack"]["blocks"]
    width, n_heads = x.shape[-1], blocks[0]["mixer"]["mix"]["w_q"].shape[1]
    x = x * np.sqrt(width) + encoding("sinusoidal").added(x.shape[1], width, None)
    x = apply_stack(params["stack"], _stack(len(blocks), width, n_heads), x)
    return x @ params["out"] + params["b_out"]
