"""context_length's Transformers: one decoder-only LM per positional encoding.

    x = E[tokens]·√m (+ PE for 'sinusoidal' / 'learned')   [B, N, m]
    x = decoder_only(x, positions, rope_base, rope_scale)  [B, N, m]   pre-LN causal blocks;
                                                                       RoPE / ALiBi act inside
                                                                       the self-attention
    logits = LN(x) W_out + b_out                           [B, N, vocab]

The encodings (anatomy.attention.positions): 'sinusoidal', 'learned' (a table of
max(eval_lengths) rows, of which only the first L are ever trained: rows past L keep their
random initial values, which is what a learned table has to offer beyond L), 'rope',
'alibi', 'none' (NoPE). The same parameters serve every length and every rope_base /
rope_scale: an extension changes only how positions are encoded, never a weight's shape.
"""

import jax
import numpy as np

from anatomy.attention.decoder_only import decoder_only, init_decoder_only
from anatomy.layers import dense, init_dense, init_embedding, init_layer_norm, layer_norm


def init(key, spec, cfg, vocab):
    """Parameters of the Transformer `spec` (a models.Spec): d_model cfg.d_model, FFN 4·m."""
    k_emb, k_stack, k_out = jax.random.split(key, 3)
    m = cfg.d_model
    stack = init_decoder_only(
        k_stack,
        cfg.n_layers,
        m,
        cfg.n_heads,
        4 * m,
        norm="pre",
        positions=spec.positions,
        max_positions=max(cfg.length_factors) * cfg.train_length,
    )
    return {
        **stack,  # 'layers' (+ 'positions' for a learned table): what decoder_only reads
        "embed": init_embedding(k_emb, vocab, m),
        "ln_f": init_layer_norm(m),  # the final LayerNorm a pre-LN stack needs
        "out": init_dense(k_out, m, vocab),
    }


def apply(params, tokens, spec):
    """tokens [B, N] int -> logits [B, N, vocab] (position t sees tokens <= t)."""
    x = params["embed"][tokens]  # [B, N, m]
    x = x * np.sqrt(x.shape[-1])
    x = decoder_only(
        params,
        x,
        norm="pre",
        positions=spec.positions,
        rope_base=spec.rope_base,
        rope_scale=spec.rope_scale,
    )
    return dense(params["out"], layer_norm(params["ln_f"], x))
