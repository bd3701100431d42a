"""The recurrent contenders: anatomy.lm's 'recurrent' family (anatomy.stack's LSTM
stack), three wirings.

    lstm               y_l = LSTM_l(y_{l-1})                torch's multi-layer nn.LSTM
    lstm_residual      y_l = y_{l-1} + LSTM_l(y_{l-1})      GNMT (Wu et al. 2016), from layer 2
    lstm_residual_ln   y_l = y_{l-1} + LN(LSTM_l(y_{l-1}))  + LayerNorm on each layer's output
                                                            (not RNMT+'s per-gate LayerNorm)

GNMT's finding, the anchor: plain stacks "work well up to 4 layers, barely with 6, and very
poorly beyond 8"; residual connections made 8-layer encoders and decoders train. RNMT+ (Chen
et al. 2018) adds per-gate LayerNorm. Each layer is a scan over all N positions before the next
starts: L·N serial steps in the forward program (measured in train.serial_steps).

`xiong` has no theorem here: it returns the last layer's parameters, so the same slope of the
last layer's gradient against L is reported beside the Transformer's.
"""

from __future__ import annotations

from experiments.depth.lm import Variant


def _variant(name, label, residual, layer_norm, citation=""):
    opts = (("cell", "lstm"), ("residual", residual), ("layer_norm", layer_norm))
    return Variant(name, "recurrent", label, opts, citation=citation)


VARIANTS = {
    v.name: v
    for v in (
        _variant("lstm", "LSTM", False, False, "Wu et al. 2016 (plain)"),
        _variant("lstm_residual", "LSTM + residual", True, False, "Wu et al. 2016"),
        _variant("lstm_residual_ln", "LSTM + residual + LN", True, True, "Chen et al. 2018"),
    )
}


def xiong(layers):
    """The last layer's parameters (its cell's and its LayerNorm's), from model.layers(tree)."""
    return layers[-1]
