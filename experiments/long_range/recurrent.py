"""long_range's recurrent models: embedding -> anatomy.scan.run -> linear readout.

x = E[tokens]                    [B, L, E]
h = run(cell, x)                 [B, L, H]   rnn / lstm / gru step by step (jax.lax.scan);
                                             mingru / mamba, linear recurrences (gates from
                                             x only), by jax.lax.associative_scan
logits = h W_out + b_out         [B, L, V]
"""

import jax
import jax.numpy as jnp
import numpy as np

from anatomy.mixers import get_cell
from anatomy.scan import run as run_cell


def init(key, name, cfg, width):
    """Parameters of cell `name` at hidden size `width` (embedding cfg.embed)."""
    k1, k2, k3 = jax.random.split(key, 3)
    v = cfg.vocab
    return {
        "embed": jax.random.normal(k1, (v, cfg.embed)),
        "cell": get_cell(name).init(k2, cfg.embed, width),
        "out": jax.random.normal(k3, (width, v)) / np.sqrt(width),
        "b_out": jnp.zeros(v),
    }


def apply(name, params, tokens):
    """tokens [B, L] int -> logits [B, L, V] (causal: the recurrence reads left to right)."""
    x = run_cell(get_cell(name), params["cell"], params["embed"][tokens])[1]  # [B, L, H]
    return x @ params["out"] + params["b_out"]
