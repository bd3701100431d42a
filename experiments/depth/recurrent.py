"""The recurrent contenders: anatomy.recurrence.stack's LSTM stacks, three wirings.

    lstm               y_l = LSTM_l(y_{l-1})                torch's multi-layer nn.LSTM
    lstm_residual      y_l = y_{l-1} + LSTM_l(y_{l-1})      GNMT (Wu et al. 2016), from layer 2
    lstm_residual_ln   y_l = y_{l-1} + LN(LSTM_l(y_{l-1}))  + LayerNorm on each layer's output
                                                            (not RNMT+'s per-gate LayerNorm)

GNMT's finding, the anchor: plain stacks "work well up to 4 layers, barely with 6, and very
poorly beyond 8"; residual connections made 8-layer encoders and decoders train. RNMT+ (Chen
et al. 2018) adds per-gate LayerNorm. Each layer is a scan over all N positions before the next
starts: L·N serial steps in the forward program (measured in __init__.py).

`xiong` has no theorem here: it returns the last layer's cell parameters, so the same slope of
the last layer's gradient against L is reported beside the Transformer's.
"""

from __future__ import annotations

from anatomy.recurrence.paths import resolve
from anatomy.recurrence.stack import init_stack as _init_stack
from anatomy.recurrence.stack import run_stack
from experiments.depth.lm import Family, Variant

CELL = "lstm"


def _variant(name, label, residual, layer_norm, citation=""):
    opts = (("residual", residual), ("layer_norm", layer_norm))
    return Variant(name, "recurrent", label, opts, citation=citation)


VARIANTS = {
    v.name: v
    for v in (
        _variant("lstm", "LSTM", False, False, "Wu et al. 2016 (plain)"),
        _variant("lstm_residual", "LSTM + residual", True, False, "Wu et al. 2016"),
        _variant("lstm_residual_ln", "LSTM + residual + LN", True, True, "Chen et al. 2018"),
    )
}


def init_stack(key, model_cfg, n_layers, variant):
    m = model_cfg.d_model
    return _init_stack(
        key,
        CELL,
        m,
        m,
        n_layers,
        residual=variant.option("residual"),
        layer_norm=variant.option("layer_norm"),
    )


def apply_stack(tree, x, variant):
    """x [b, t, m] -> y_L [b, t, m] (anatomy.recurrence.run_stack on the backend's fastest
    measured path, anatomy/recurrence/paths.py: the same function on every path)."""
    hoist, vjp = resolve(CELL)
    return run_stack(tree, x, cell=CELL, residual=variant.option("residual"), hoist=hoist, vjp=vjp)[
        1
    ]


def layers(tree):
    """One subtree per layer, bottom first: its cell's parameters and its LayerNorm."""
    norms = tree.get("ln")
    return [
        {"cell": p, **({"ln": norms[i]} if norms is not None else {})}
        for i, p in enumerate(tree["layers"])
    ]


def xiong(tree):
    """The last layer's cell parameters (no theorem: reported beside the Transformer's)."""
    return tree["layers"][-1]


FAMILY = Family(init=init_stack, apply=apply_stack, layers=layers, xiong=xiong)
