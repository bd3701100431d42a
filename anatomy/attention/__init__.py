"""Attention, all positions at once: additive and multiplicative attention for RNN
translators, scaled dot-product and multi-head attention as batched einsums, sliding-window
attention in O(r·N·d), chunked attention with an online softmax in O(N) memory, masks, a KV
cache for incremental decoding, positional encodings (sinusoidal, learned, RoPE, ALiBi, NoPE;
one Encoding per stack), Transformer encoder/decoder layers with post-LN / pre-LN / DeepNorm /
no-LN wiring (built on anatomy.layers: LayerNorm, the FFN, dropout). The decoder-only stack is
anatomy.stack's over attention mixers (anatomy.lm's 'attention' family).

This namespace holds what a user composes:

    attention      additive_attention, init_additive; luong_attention, init_luong, LUONG_KINDS;
                   scaled_dot_product; multi_head_attention, init_mha; chunked_attention;
                   sliding_window_attention, sliding_window_self_attention
    masks          causal_mask, padding_mask, band_mask, combine_masks, masked_softmax
    positions      POSITIONS, encoding (-> Encoding), sinusoidal, rope, alibi_slopes, alibi_bias
    decoding       KVCache, init_cache, append, attend; init_window_cache (sliding window)
    layers         NORMS, check_norm, deepnorm_constants, init_encoder_layer, encoder_layer,
                   init_decoder_layer, decoder_layer, decoder_memory_kv, init_decoder_cache,
                   decoder_layer_step

The steps those are made of stay in their modules: the split projections and scores
(additive.project_keys, multihead.project_q / project_kv / rotate_qk, luong.luong_scores),
the caches' checks (kv_cache.any_overflow, check_no_overflow, ...), the rolling window's
operations (sliding_window.window_append / window_attend), the positions' parts
(positions.Rotary, lookup, learned_positions, rope_frequencies, check_positions).

Everything is a pure function over explicit parameter dicts; shapes are batch-major.
"""

from anatomy.attention.additive import additive_attention, init_additive
from anatomy.attention.chunked import chunked_attention
from anatomy.attention.dot_product import scaled_dot_product
from anatomy.attention.kv_cache import KVCache, append, attend, init_cache
from anatomy.attention.layers import (
    NORMS,
    check_norm,
    decoder_layer,
    decoder_layer_step,
    decoder_memory_kv,
    deepnorm_constants,
    encoder_layer,
    init_decoder_cache,
    init_decoder_layer,
    init_encoder_layer,
)
from anatomy.attention.luong import KINDS as LUONG_KINDS
from anatomy.attention.luong import init_luong, luong_attention
from anatomy.attention.masks import (
    band_mask,
    causal_mask,
    combine_masks,
    masked_softmax,
    padding_mask,
)
from anatomy.attention.multihead import init_mha, multi_head_attention
from anatomy.attention.positions import (
    POSITIONS,
    Encoding,
    alibi_bias,
    alibi_slopes,
    encoding,
    rope,
    sinusoidal,
)
from anatomy.attention.sliding_window import (
    init_window_cache,
    sliding_window_attention,
    sliding_window_self_attention,
)

__all__ = [
    # attention
    "LUONG_KINDS",
    "additive_attention",
    "chunked_attention",
    "init_additive",
    "init_luong",
    "init_mha",
    "luong_attention",
    "multi_head_attention",
    "scaled_dot_product",
    "sliding_window_attention",
    "sliding_window_self_attention",
    # masks
    "band_mask",
    "causal_mask",
    "combine_masks",
    "masked_softmax",
    "padding_mask",
    # positions
    "POSITIONS",
    "Encoding",
    "alibi_bias",
    "alibi_slopes",
    "encoding",
    "rope",
    "sinusoidal",
    # decoding
    "KVCache",
    "append",
    "attend",
    "init_cache",
    "init_window_cache",
    # layers
    "NORMS",
    "check_norm",
    "decoder_layer",
    "decoder_layer_step",
    "decoder_memory_kv",
    "deepnorm_constants",
    "encoder_layer",
    "init_decoder_cache",
    "init_decoder_layer",
    "init_encoder_layer",
]
