"""decode_cost, the convolutional rows: one ConvS2S decoder layer's causal GLU block.

    conv_buffer     the step form: window = [buffer of the last K-1 inputs; x_t], one GLU
                    conv over it, the residual (anatomy.conv.glu_conv_step)   O(K·d²), flat in N
    conv_recompute  the same block re-run causally over the whole prefix of N tokens,
                    keeping the last position (anatomy.conv.glu_block)          O(N·K·d²)

A causal conv only ever reads its last K inputs, so the buffer is all a decoder keeps: no
cache that grows with N (the KV cache's O(N·d)), no recurrence. The layer's attention over
the source (O(S·f) per token, S the source length) does not depend on N and is left out,
as decode_cost's KV rows leave out cross-attention.
"""

import jax

from anatomy import conv


def _step(params, buffer, x_t):
    """x_t [b, d] with buffer [b, K-1, d] -> (the block's output [b, d], buffer')."""
    h, buffer = conv.glu_conv_step(params, buffer, x_t)
    return conv.residual(h, x_t), buffer


def _prefix(params, xs):
    """The causal block over the prefix xs [b, N, d]; its last position [b, d]."""
    return conv.glu_block(params, xs, causal=True)[:, -1]


def programs(cfg, x_t, prefix):
    """(fn, args) of the two conv decoders for the next token, x_t [b, 1, d], prefix [b, N, d]."""
    x_t = x_t[:, 0]  # [b, d]
    params = conv.init_glu_block(jax.random.PRNGKey(cfg.seed + 5), cfg.d, cfg.conv_kernel)
    buffer = jax.random.normal(
        jax.random.PRNGKey(cfg.seed + 6), (x_t.shape[0], cfg.conv_kernel - 1, cfg.d)
    )  # a full buffer: the K-1 inputs before this one
    return {
        "conv_buffer": (_step, (params, buffer, x_t)),
        "conv_recompute": (_prefix, (params, prefix)),
    }
