"""long_range, the convolutional model: causal GLU blocks (ConvS2S's decoder layer, no attention).

    x = E[tokens]                                      [B, L, w]   (no positions: the kernel
    x = (GLU(conv_K(x)) + x)·√0.5,  conv_layers times              slots are the offsets)
    logits = x W_out + b_out                           [B, L, V]

Output t depends on x_{t-F+1} .. x_t only, F = 1 + conv_layers·(conv_kernel - 1): the model
can recall x_{t-k} for k < F and must sit at chance for k >= F, however long it trains.
The claim row checks both sides of that edge.
"""

import jax
import jax.numpy as jnp
import numpy as np

from anatomy import conv, probes
from experiments import thresholds


def field(cfg):
    """The receptive field F of the stack: positions each output sees."""
    return 1 + cfg.conv_layers * (cfg.conv_kernel - 1)


def init(key, cfg, width):
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


def apply(params, tokens):
    """tokens [B, L] int -> logits [B, L, V], causal."""
    x = params["embed"][tokens]  # [B, L, w]
    for p in params["blocks"]:
        x = conv.glu_block(p, x, causal=True)
    return x @ params["out"] + params["b_out"]


def claims(cfg, results, acc_at, chance):
    """One row: recall well above chance inside the field, at chance beyond it."""
    if "conv" not in results:
        return []
    f = field(cfg)
    inside = [k for k in cfg.k_grid if k < f]
    beyond = [k for k in cfg.k_grid if k >= f]
    learned = all(thresholds.well_above_chance(acc_at("conv", k), chance) for k in inside)
    flat = all(acc_at("conv", k) <= chance + thresholds.AT_CHANCE_MARGIN for k in beyond)
    if not inside or not beyond:
        verdict, why = probes.NOT_SHOWN, "k_grid does not straddle the receptive field"
    elif not learned:
        verdict, why = probes.NOT_SHOWN, "the conv stack did not learn recall inside its field"
    else:
        verdict, why = probes.holds(flat), ""
    return [
        probes.Claim(
            f"causal convolution ({cfg.conv_layers} layers, K={cfg.conv_kernel}) recalls only "
            f"within its receptive field F = {f}",
            f"k < {f} well above chance, k >= {f} at chance (<= {chance + thresholds.AT_CHANCE_MARGIN:.3f})",
            ", ".join(f"k={k}: {acc_at('conv', k):.3f}" for k in cfg.k_grid),
            verdict,
            why,
        )
    ]
