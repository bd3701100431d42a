"""The Transformer (Vaswani et al. 2017) from anatomy.attention's layers.

    x   = Dropout(√m · E_src[src] + PE)                 PE: sinusoidal positions
    x   = EncoderLayer^N(x, source padding mask)          (+ final LayerNorm if pre-LN)
    y   = Dropout(√m · E_tgt[tgt_in] + PE)
    y   = DecoderLayer^N(y, x, causal mask, padding mask) (+ final LayerNorm if pre-LN)
    logits = y E_tgtᵀ + b  (tie_output)  or  y W_o + b

Letters: b batch, s source / t target positions, m model dim, h heads, d head dim.
Post-LN (the paper) by default, pre-LN with config.pre_ln. share_embeddings uses ONE
table for source, target and output (needs equal vocabularies). Incremental decoding:
encode precomputes each decoder layer's cross-attention k/v [b, s, h, d] and keeps the
source padding mask in the form attention reads it, [b, 1, 1, s]; the state is one per-row
KVCache per decoder layer (a tuple), whose length is each row's position, so a step costs
O(t · m) per layer; stepping past init_state's max_len sets the caches' overflow flags.
"""

import jax
import jax.numpy as jnp
import ml_collections

from anatomy.attention import (
    causal_mask,
    decoder_layer,
    decoder_layer_step,
    decoder_memory_kv,
    encoder_layer,
    init_cache,
    init_decoder_layer,
    init_encoder_layer,
    padding_mask,
    position_lookup,
    sinusoidal,
)
from anatomy.axes import declare
from anatomy.errors import BadInputError
from anatomy.layers import (
    OUT_AXES,
    dropout,
    init_dense,
    init_embedding,
    init_layer_norm,
    layer_norm,
)
from anatomy.seq2seq import base


def default_config():
    """Hyperparameters (docs/design.md, 'Default sizes': d=128, 2+2 layers, FFN 512)."""
    c = ml_collections.ConfigDict()
    c.d_model = 128  # model width m (embeddings, residual stream)
    c.n_heads = 4  # attention heads h (head dim d = m / h)
    c.d_ff = 512  # FFN inner width
    c.n_encoder_layers = 2  # N encoder layers
    c.n_decoder_layers = 2  # N decoder layers
    c.pre_ln = False  # False: post-LN (paper); True: pre-LN + final LayerNorms
    c.dropout_rate = 0.1  # residual, embedding and FFN dropout, training only
    c.share_embeddings = False  # one table for source, target and output (equal vocabs)
    c.tie_output = True  # output projection = target embedding transposed (+ bias)
    return c


def build(config, src_vocab_size, tgt_vocab_size):
    """The Transformer Translator (see base.Translator)."""
    if config.d_model % config.n_heads:
        raise BadInputError(
            f"transformer: d_model={config.d_model} not divisible by n_heads={config.n_heads}"
        )
    if config.share_embeddings and src_vocab_size != tgt_vocab_size:
        raise BadInputError(
            f"transformer: share_embeddings needs equal vocab sizes, got "
            f"{src_vocab_size} and {tgt_vocab_size}"
        )
    cfg = base.freeze(config)
    m, rate = cfg.d_model, cfg.dropout_rate

    def init(key):
        k_src, k_tgt, k_out, k_enc, k_dec = jax.random.split(key, 5)
        p = {
            "tgt_emb": init_embedding(k_tgt, tgt_vocab_size, m),
            "encoder": [
                init_encoder_layer(k, m, cfg.n_heads, cfg.d_ff)
                for k in jax.random.split(k_enc, cfg.n_encoder_layers)
            ],
            "decoder": [
                init_decoder_layer(k, m, cfg.n_heads, cfg.d_ff)
                for k in jax.random.split(k_dec, cfg.n_decoder_layers)
            ],
            "out_bias": declare(jnp.zeros((tgt_vocab_size,), jnp.float32), ("vocab",)),
        }
        if not cfg.share_embeddings:
            p["src_emb"] = init_embedding(k_src, src_vocab_size, m)
        if not (cfg.tie_output or cfg.share_embeddings):
            p["out"] = init_dense(k_out, m, tgt_vocab_size, False, OUT_AXES)["w"]  # [m, V]
        if cfg.pre_ln:
            p["enc_ln"], p["dec_ln"] = init_layer_norm(m), init_layer_norm(m)
        return p

    def _embed(table, ids, positions, rng):
        x = table[ids] * jnp.sqrt(jnp.float32(m)) + positions  # [b, t, m]
        return dropout(x, rate, rng, rng is None)

    def _logits(params, y):
        w = params["out"] if "out" in params else params["tgt_emb"].T  # [m, V]
        return y @ w + params["out_bias"]

    def _encode(params, src, src_len, rng=None, weights=False):
        rngs = (
            [None] * (cfg.n_encoder_layers + 1)
            if rng is None
            else list(jax.random.split(rng, cfg.n_encoder_layers + 1))
        )
        table = params["tgt_emb"] if cfg.share_embeddings else params["src_emb"]
        x = _embed(table, src, sinusoidal(src.shape[1], m), rngs[0])  # [b, s, m]
        mask = padding_mask(src_len, src.shape[1])  # [b, 1, 1, s]
        self_w = []
        for p_layer, r in zip(params["encoder"], rngs[1:]):
            x, w = encoder_layer(
                p_layer, x, mask, pre_ln=cfg.pre_ln, dropout_rate=rate, rng=r, return_weights=True
            )
            self_w.append(w["self_attn"])
        if cfg.pre_ln:
            x = layer_norm(params["enc_ln"], x)
        return x, mask, self_w

    def encode(params, src, src_len):
        """memory = {'kv': per decoder layer (k, v) [b, s, h, d], 'mask': [b, 1, 1, s] bool}."""
        src, src_len = base.check_src(src, src_len, "transformer")
        x, mask, _ = _encode(params, src, src_len)
        return {
            "kv": tuple(decoder_memory_kv(p_layer, x) for p_layer in params["decoder"]),
            "mask": mask,
        }

    def apply(params, batch, *, rng=None, deterministic=True, return_intermediates=False):
        """Teacher-forced logits [b, t, V]. Intermediates: 'cross_attention' (last layer)
        [b, h, t, s], 'cross_attention_layers' / 'decoder_self_attention_layers' /
        'encoder_self_attention_layers' (tuples over layers of [b, h, q, k])."""
        src, src_len, tgt = base.check_batch(batch, "transformer")
        r_enc, r_dec = base.dropout_keys(rng, 2, deterministic, rate)
        x, src_mask, enc_w = _encode(params, src, src_len.astype(jnp.int32), r_enc)
        n_dec, t_len = cfg.n_decoder_layers, tgt.shape[1]
        rngs = [None] * (n_dec + 1) if r_dec is None else list(jax.random.split(r_dec, n_dec + 1))
        y = _embed(params["tgt_emb"], tgt, sinusoidal(t_len, m), rngs[0])  # [b, t, m]
        self_mask = causal_mask(t_len, t_len)  # [1, 1, t, t]
        cross_w, self_w = [], []
        for p_layer, r in zip(params["decoder"], rngs[1:]):
            y, w = decoder_layer(
                p_layer,
                y,
                x,
                self_mask,
                src_mask,
                pre_ln=cfg.pre_ln,
                dropout_rate=rate,
                rng=r,
                return_weights=True,
            )
            cross_w.append(w["cross_attn"])
            self_w.append(w["self_attn"])
        if cfg.pre_ln:
            y = layer_norm(params["dec_ln"], y)
        inter = {
            "cross_attention": cross_w[-1],
            "cross_attention_layers": tuple(cross_w),
            "decoder_self_attention_layers": tuple(self_w),
            "encoder_self_attention_layers": tuple(enc_w),
        }
        return base.intermediates_or_logits(_logits(params, y), inter, return_intermediates)

    def init_state(params, memory, max_len):
        """Per decoder layer an empty per-row KVCache [b, max_len, h, d] (a tuple).

        Every leaf is batch-leading and truly per row (each row has its own cache length,
        the position of its next token), so states can be reordered or concatenated along
        the batch axis.
        """
        b = memory["mask"].shape[0]
        return tuple(
            init_cache(b, max_len, cfg.n_heads, m // cfg.n_heads, per_row=True)
            for _ in range(cfg.n_decoder_layers)
        )

    def step(params, memory, state, tokens):
        """One target position per row: tokens [b] -> (logits [b, V], caches appended).

        Row r is embedded at its own position, its caches' length (int32 [b]). Past the
        capacity L the cache keeps length L and sets its overflow flag (decode.py raises);
        position L has no encoding (NaN), so the logits are NaN: an overflow cannot pass
        unnoticed.
        """
        pos, cap = state[0].length, state[0].k.shape[1]  # [b] int32, L
        pe = position_lookup(sinusoidal(cap, m), pos)[:, None, :]  # [b, 1, m]; NaN at pos L
        y = _embed(params["tgt_emb"], tokens[:, None], pe, None)  # [b, 1, m]
        caches = []
        for p_layer, cache, kv in zip(params["decoder"], state, memory["kv"]):
            y, cache, _ = decoder_layer_step(
                p_layer, y, cache, kv, memory["mask"], pre_ln=cfg.pre_ln
            )
            caches.append(cache)
        if cfg.pre_ln:
            y = layer_norm(params["dec_ln"], y)
        return _logits(params, y[:, 0]), tuple(caches)

    return base.Translator(
        "transformer", cfg, src_vocab_size, tgt_vocab_size, init, apply, encode, init_state, step
    )
