"""Attention, all positions at once: additive and multiplicative attention for RNN
translators, scaled dot-product and multi-head attention as batched einsums, sliding-window
attention in O(r·N·d), chunked attention with an online softmax in O(N) memory, masks, a KV
cache for incremental decoding, positional encodings (sinusoidal, learned, RoPE, ALiBi, NoPE;
positions.py: rope, alibi_slopes, alibi_bias, one Encoding per stack), Transformer
encoder/decoder layers with post-LN / pre-LN / DeepNorm / no-LN wiring (built on
anatomy.layers: LayerNorm, the FFN, dropout) and the decoder-only stack (the module
anatomy.attention.decoder_only: init_decoder_only, decoder_only, decoder_only_step).

Everything is a pure function over explicit parameter dicts; shapes are batch-major.
"""

from anatomy.attention.additive import (
    additive_attention,
    additive_scores,
    init_additive,
    project_keys,
)
from anatomy.attention.chunked import chunked_attention
from anatomy.attention.dot_product import scaled_dot_product
from anatomy.attention.kv_cache import (
    KVCache,
    any_overflow,
    append,
    attend,
    cache_mask,
    check_no_overflow,
    init_cache,
    raise_on_overflow,
)
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
from anatomy.attention.luong import init_luong, luong_attention, luong_scores
from anatomy.attention.masks import (
    band_mask,
    causal_mask,
    combine_masks,
    masked_softmax,
    padding_mask,
)
from anatomy.attention.multihead import (
    cached_self_attention,
    init_mha,
    multi_head_attention,
    output_projection,
    project_kv,
    project_q,
    rotate_qk,
)
from anatomy.attention.positions import (
    POSITIONS,
    Encoding,
    Rotary,
    alibi_bias,
    alibi_slopes,
    check_positions,
    encoding,
    init_learned_positions,
    learned_positions,
    rope,
    rope_frequencies,
    sinusoidal,
)
from anatomy.attention.positions import lookup as position_lookup
from anatomy.attention.sliding_window import (
    init_window_cache,
    sliding_window_attention,
    sliding_window_self_attention,
    window_append,
    window_attend,
    window_indices,
)

__all__ = [
    "Encoding",
    "KVCache",
    "NORMS",
    "POSITIONS",
    "Rotary",
    "LUONG_KINDS",
    "additive_attention",
    "additive_scores",
    "alibi_bias",
    "alibi_slopes",
    "any_overflow",
    "append",
    "attend",
    "band_mask",
    "cached_self_attention",
    "cache_mask",
    "causal_mask",
    "check_no_overflow",
    "check_norm",
    "check_positions",
    "chunked_attention",
    "combine_masks",
    "decoder_layer",
    "decoder_layer_step",
    "decoder_memory_kv",
    "deepnorm_constants",
    "encoder_layer",
    "encoding",
    "init_additive",
    "init_cache",
    "init_decoder_cache",
    "init_decoder_layer",
    "init_encoder_layer",
    "init_learned_positions",
    "init_luong",
    "init_mha",
    "init_window_cache",
    "learned_positions",
    "luong_attention",
    "luong_scores",
    "masked_softmax",
    "multi_head_attention",
    "output_projection",
    "padding_mask",
    "position_lookup",
    "project_keys",
    "project_kv",
    "project_q",
    "raise_on_overflow",
    "rope",
    "rotate_qk",
    "rope_frequencies",
    "scaled_dot_product",
    "sinusoidal",
    "sliding_window_attention",
    "sliding_window_self_attention",
    "window_append",
    "window_attend",
    "window_indices",
]
