"""context_length's Transformers: anatomy.lm's 'attention' family, one per positional encoding.

    x = √m · E[tokens] (+ PE for 'sinusoidal' / 'learned')      [B, N, m]
    h = Stack(x; positions, rope_base, rope_scale)             [B, N, m]   pre-LN causal blocks;
                                                                           RoPE / ALiBi act
                                                                           inside attention
    logits = LN(h) W + b                                       [B, N, vocab]

The encodings (anatomy.attention.positions): 'sinusoidal', 'learned' (a table of 8L rows, of
which only the first L are ever trained: rows past L keep their random initial values, which
is what a learned table has to offer beyond L), 'rope', 'alibi', 'none' (NoPE). The same
parameters serve every length and every rope_base / rope_scale: an extension changes only how
positions are encoded, never a weight or its shape.
"""

from anatomy import lm


def lm_config(spec, cfg):
    """anatomy.lm's config of the Transformer `spec` (a models.Spec): cfg's sizes, pre-LN."""
    c = lm.default_config("attention")
    c.d_model = cfg.d_model
    c.n_layers = cfg.n_layers
    c.n_heads = cfg.n_heads
    c.d_ff = 4 * cfg.d_model
    c.norm = "pre"
    c.positions = spec.positions
    c.rope_base = spec.rope_base
    c.rope_scale = spec.rope_scale
    c.max_positions = max(cfg.length_factors) * cfg.train_length
    c.tie_output = False  # its own readout: tied, no model learned the task in 1,200 steps
    return c
