"""context_length's recurrent LM: a stacked LSTM (anatomy.recurrence.stack).

    x = E[tokens]                  [B, N, m]
    h = run_stack('lstm', x)       [B, N, H]   cfg.lstm_layers layers, H = cfg.lstm_hidden,
                                               residual + LayerNorm from the second layer
    logits = h W_out + b_out       [B, N, vocab]

It has no positions to encode: the same cell runs at every step, so any length runs, and
extending the context can only mean training at the longer length.
"""

import jax

from anatomy.layers import dense, init_dense, init_embedding
from anatomy.recurrence.stack import init_stack, run_stack


def init(key, spec, cfg, vocab):
    """Parameters of the LSTM LM (spec is unused: the LSTM has no encoding to choose)."""
    k_emb, k_stack, k_out = jax.random.split(key, 3)
    h = cfg.lstm_hidden
    return {
        "embed": init_embedding(k_emb, vocab, cfg.d_model, scale=1.0),
        "stack": init_stack(
            k_stack, "lstm", cfg.d_model, h, cfg.lstm_layers, residual=True, layer_norm=True
        ),
        "out": init_dense(k_out, h, vocab),
    }


def apply(params, tokens, spec):
    """tokens [B, N] int -> logits [B, N, vocab] (the recurrence reads left to right)."""
    x = params["embed"][tokens]  # [B, N, m]
    _, h = run_stack(params["stack"], x, cell="lstm", residual=True)  # [B, N, H]
    return dense(params["out"], h)
