"""context_length's recurrent LM: anatomy.lm's 'recurrent' family, an LSTM stack.

    x = E[tokens]                  [B, N, H]
    h = LSTM stack(x)              [B, N, H]   cfg.lstm_layers layers of H = cfg.lstm_hidden,
                                               LayerNorm on each layer's output, residual
                                               from the second layer on
    logits = h W + b               [B, N, vocab]

It has no positions to encode: the same cell runs at every step, so any length runs, and
extending its context can only mean training at the longer length.
"""

from anatomy import lm


def lm_config(spec, cfg):
    """anatomy.lm's config of the LSTM LM (spec is unused: it has no encoding to choose)."""
    c = lm.default_config("recurrent")
    c.cell = "lstm"
    c.d_model = cfg.lstm_hidden
    c.n_layers = cfg.lstm_layers
    c.residual = True
    c.layer_norm = True
    c.tie_output = False  # its own readout: tied, no model learned the task in 1,200 steps
    return c
