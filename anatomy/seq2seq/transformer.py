"""The Transformer (Vaswani et al. 2017) from anatomy.attention's layers.

    x   = Dropout(√m · E_src[src] + PE)                 PE: the added positions, if any
    x   = EncoderLayer^N(x, source padding mask)          (+ final LayerNorm if pre-LN)
    y   = Dropout(√m · E_tgt[tgt_in] + PE)
    y   = DecoderLayer^M(y, x, causal mask, padding mask) (+ final LayerNorm if pre-LN)
    logits = y E_tgtᵀ + b  (tie_output)  or  y W_o + b

Letters: b batch, s source / t target positions, m model dim, h heads, d head dim.

config.positions, one encoding for both sides (anatomy.attention.positions):
  'sinusoidal'  (the paper, the default) added to both embeddings;
  'learned'     one trained table per side, config.max_positions rows each (a longer source,
                target or decoding budget is a BadInputError: no row to extrapolate to);
  'rope'        (Su et al. 2021) rotates the queries and keys of the encoder's and the
                decoder's SELF-attention, at config.rope_base and config.rope_scale
                (position interpolation, Chen et al. 2023);
  'alibi'       (Press et al. 2022) biases the self-attention logits by -slope·|i - j|: the
                symmetric form in the bidirectional encoder (a key i - j positions away is
                penalised the same ahead or behind), the paper's causal -slope·(i - j) in
                the decoder (its causal mask removes the keys ahead).
  Cross-attention takes no positions under any encoding: its queries (target) and keys
  (source) live in different sequences, so their distance means nothing; the source keys
  carry their positions from the encoder. 'none' (NoPE) is refused: without positions the
  encoder is permutation-equivariant, so the source would be a bag of words to the decoder,
  and NoPE's case (Kazemnejad et al. 2023) is causal stacks (anatomy.lm's 'attention' family).
config.norm: 'post' (the paper, the default), 'pre' (+ final LayerNorms), 'deepnorm'
(DeepNet, Wang et al. 2022: encoder-decoder constants α, β for N encoder and M decoder
layers, anatomy.attention.layers.deepnorm_constants), 'none' (no LayerNorm); config.residual
False drops the skip connections (attention/layers.py has the equations).

share_embeddings uses ONE table for source, target and output (needs equal vocabularies).
Incremental decoding: encode precomputes each decoder layer's cross-attention k/v
[b, s, h, d] and keeps the source padding mask in the form attention reads it, [b, 1, 1, s];
the state is one per-row KVCache per decoder layer (a tuple), whose length is each row's
position, so a step costs O(t · m) per layer: RoPE rotates the step's query and key at that
position before the key is cached, ALiBi biases the cached slots by their distance to it.
Stepping past init_state's max_len sets the caches' overflow flags and makes the logits NaN.
"""

import jax
import jax.numpy as jnp
import ml_collections

from anatomy import attention as attn
from anatomy.axes import declare
from anatomy.errors import BadInputError
from anatomy.layers import dropout, init_embedding, init_layer_norm, init_output, layer_norm
from anatomy.seq2seq import base

# The fields build() checks (base.check_choices); 'none' is refused with its reason first.
CHOICES = {"norm": attn.NORMS, "positions": tuple(p for p in attn.POSITIONS if p != "none")}


def default_config():
    """Hyperparameters (docs/design.md, 'Default sizes': d=128, 2+2 layers, FFN 512)."""
    c = ml_collections.ConfigDict()
    c.d_model = 128  # model width m (embeddings, residual stream)
    c.n_heads = 4  # attention heads h (head dim d = m / h)
    c.d_ff = 512  # FFN inner width
    c.n_encoder_layers = 2  # N encoder layers
    c.n_decoder_layers = 2  # N decoder layers
    c.norm = "post"  # post (paper) / pre (+ final LayerNorms) / deepnorm / none (NORMS)
    c.residual = True  # the skip connection around every sub-layer (False: none)
    c.positions = "sinusoidal"  # sinusoidal / learned / rope / alibi (module docstring)
    c.rope_base = 10000.0  # RoPE's frequency base (positions='rope'; larger = slower)
    c.rope_scale = 1.0  # RoPE position interpolation: position p rotated as p / rope_scale
    c.max_positions = 256  # rows of each learned position table (positions='learned')
    c.dropout_rate = 0.1  # residual, embedding and FFN dropout, training only
    c.share_embeddings = False  # one table for source, target and output (equal vocabs)
    c.tie_output = True  # output projection = target embedding transposed (+ bias)
    return c


def build(config, src_vocab_size, tgt_vocab_size):
    """The Transformer Translator (see base.Translator)."""
    if config.positions == "none":
        raise BadInputError(
            "transformer: positions='none' is for causal stacks only: without positions the "
            "encoder is permutation-equivariant (the source a bag of words); choose one of "
            f"{'/'.join(CHOICES['positions'])}"
        )
    base.check_choices("transformer", config, CHOICES)
    if config.d_model % config.n_heads:
        raise BadInputError(
            f"transformer: d_model={config.d_model} not divisible by n_heads={config.n_heads}"
        )
    if config.positions == "rope" and (config.d_model // config.n_heads) % 2:
        raise BadInputError(
            f"transformer: positions='rope' needs an even head width, got "
            f"d_model / n_heads = {config.d_model // config.n_heads}"
        )
    if config.share_embeddings and src_vocab_size != tgt_vocab_size:
        raise BadInputError(
            f"transformer: share_embeddings needs equal vocab sizes, got "
            f"{src_vocab_size} and {tgt_vocab_size}"
        )
    attn.check_norm(config.norm, config.residual, "transformer: norm")
    enc = attn.encoding(config.positions, config.rope_base, config.rope_scale)
    cfg = base.freeze(config)
    m, rate, h = cfg.d_model, cfg.dropout_rate, cfg.n_heads
    n_enc, n_dec = cfg.n_encoder_layers, cfg.n_decoder_layers
    # DeepNet's (α, β) per side; (1, 1) leaves every other norm as it is
    consts = attn.deepnorm_constants(n_enc, n_dec) if cfg.norm == "deepnorm" else {}
    a_enc, b_enc = consts.get("encoder", (1.0, 1.0))
    a_dec, b_dec = consts.get("decoder", (1.0, 1.0))
    # The layers' fixed options; a call adds its positions (rotary, bias) and dropout key.
    wiring = dict(norm=cfg.norm, residual=cfg.residual)
    enc_kw = dict(wiring, alpha=a_enc, dropout_rate=rate, return_weights=True)  # encoder_layer
    step_kw = dict(wiring, alpha=a_dec)  # decoder_layer_step
    dec_kw = dict(step_kw, dropout_rate=rate, return_weights=True)  # decoder_layer

    def init(key):
        k_src, k_tgt, k_out, k_enc, k_dec = jax.random.split(key, 5)
        p = {
            "tgt_emb": init_embedding(k_tgt, tgt_vocab_size, m),
            "encoder": [
                attn.init_encoder_layer(k, m, h, cfg.d_ff, beta=b_enc, norm=cfg.norm)
                for k in jax.random.split(k_enc, n_enc)
            ],
            "decoder": [
                attn.init_decoder_layer(k, m, h, cfg.d_ff, beta=b_dec, norm=cfg.norm)
                for k in jax.random.split(k_dec, n_dec)
            ],
            "out_bias": declare(jnp.zeros((tgt_vocab_size,), jnp.float32), ("vocab",)),
        }
        if not cfg.share_embeddings:
            p["src_emb"] = init_embedding(k_src, src_vocab_size, m)
        if not (cfg.tie_output or cfg.share_embeddings):
            p["out"] = init_output(k_out, m, tgt_vocab_size, bias=False)["w"]  # [m, V]
        if cfg.norm == "pre":
            p["enc_ln"], p["dec_ln"] = init_layer_norm(m), init_layer_norm(m)
        if enc.kind == "learned":  # keys beside the five above, so the rest stays as it was
            k_sp, k_tp = jax.random.split(jax.random.fold_in(key, 5))
            p["src_pos"] = enc.init_table(k_sp, cfg.max_positions, m)
            p["tgt_pos"] = enc.init_table(k_tp, cfg.max_positions, m)
        return p

    def _embed(table, ids, positions, rng):
        x = table[ids] * jnp.sqrt(jnp.float32(m))  # [b, t, m]
        if positions is not None:
            x = x + positions
        return dropout(x, rate, rng, rng is None)

    def _logits(params, y):
        w = params["out"] if "out" in params else params["tgt_emb"].T  # [m, V]
        return y @ w + params["out_bias"]

    def _encode(params, src, src_len, rng=None, weights=False):
        rngs = [None] * (n_enc + 1) if rng is None else list(jax.random.split(rng, n_enc + 1))
        table = params["tgt_emb"] if cfg.share_embeddings else params["src_emb"]
        s_len = src.shape[1]
        x = _embed(table, src, enc.added(s_len, m, params.get("src_pos")), rngs[0])  # [b, s, m]
        mask = attn.padding_mask(src_len, s_len)  # [b, 1, 1, s]
        pos = jnp.arange(s_len)
        rotary, bias = enc.attention(h, pos, pos)  # ALiBi: the symmetric -slope·|i - j|
        self_w = []
        for p_layer, r in zip(params["encoder"], rngs[1:]):
            x, w = attn.encoder_layer(p_layer, x, mask, rotary=rotary, bias=bias, rng=r, **enc_kw)
            self_w.append(w["self_attn"])
        if cfg.norm == "pre":
            x = layer_norm(params["enc_ln"], x)
        return x, mask, self_w

    def encode(params, src, src_len):
        """memory = {'kv': per decoder layer (k, v) [b, s, h, d], 'mask': [b, 1, 1, s] bool}."""
        src, src_len = base.check_src(src, src_len, "transformer")
        x, mask, _ = _encode(params, src, src_len)
        return {
            "kv": tuple(attn.decoder_memory_kv(p_layer, x) for p_layer in params["decoder"]),
            "mask": mask,
        }

    def apply(params, batch, *, rng=None, deterministic=True, return_intermediates=False):
        """Teacher-forced logits [b, t, V]. Intermediates: 'cross_attention' (last layer)
        [b, h, t, s], 'cross_attention_layers' / 'decoder_self_attention_layers' /
        'encoder_self_attention_layers' (tuples over layers of [b, h, q, k])."""
        src, src_len, tgt = base.check_batch(batch, "transformer")
        r_enc, r_dec = base.dropout_keys(rng, 2, deterministic, rate)
        x, src_mask, enc_w = _encode(params, src, src_len.astype(jnp.int32), r_enc)
        t_len = tgt.shape[1]
        rngs = [None] * (n_dec + 1) if r_dec is None else list(jax.random.split(r_dec, n_dec + 1))
        added = enc.added(t_len, m, params.get("tgt_pos"))
        y = _embed(params["tgt_emb"], tgt, added, rngs[0])  # [b, t, m]
        self_mask = attn.causal_mask(t_len, t_len)  # [1, 1, t, t]
        pos = jnp.arange(t_len)
        rotary, bias = enc.attention(h, pos, pos)  # ALiBi: causal -slope·(i - j) under the mask
        cross_w, self_w = [], []
        for p_layer, r in zip(params["decoder"], rngs[1:]):
            y, w = attn.decoder_layer(
                p_layer, y, x, self_mask, src_mask, rotary=rotary, bias=bias, rng=r, **dec_kw
            )
            cross_w.append(w["cross_attn"])
            self_w.append(w["self_attn"])
        if cfg.norm == "pre":
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
        the batch axis. With learned positions, max_len > max_positions is a BadInputError.
        """
        if enc.kind == "learned":
            enc.added_at(jnp.zeros((1,), jnp.int32), int(max_len), m, params["tgt_pos"])
        b = memory["mask"].shape[0]
        return tuple(attn.init_cache(b, max_len, h, m // h, per_row=True) for _ in range(n_dec))

    def step(params, memory, state, tokens):
        """One target position per row: tokens [b] -> (logits [b, V], caches appended).

        Row r is embedded at its own position, its caches' length (int32 [b]). Past the
        capacity L the cache keeps length L and sets its overflow flag (decode.py raises);
        the logits of an overflowed row are NaN (an added encoding has no row at L; RoPE and
        ALiBi rows are set to NaN), so an overflow cannot pass unnoticed.
        """
        pos, cap = state[0].length, state[0].k.shape[1]  # [b] int32, L
        pe = enc.added_at(pos, cap, m, params.get("tgt_pos"))  # [b, m]; NaN at pos L
        y = _embed(params["tgt_emb"], tokens[:, None], None if pe is None else pe[:, None], None)
        rotary, bias = enc.step_attention(h, pos, cap)
        caches = []
        for p_layer, cache, kv in zip(params["decoder"], state, memory["kv"]):
            y, cache, _ = attn.decoder_layer_step(
                p_layer, y, cache, kv, memory["mask"], rotary=rotary, bias=bias, **step_kw
            )
            caches.append(cache)
        if cfg.norm == "pre":
            y = layer_norm(params["dec_ln"], y)
        logits = _logits(params, y[:, 0])
        if pe is None:  # no table to run off: an overflowed row's logits are NaN explicitly
            logits = jnp.where(caches[0].overflow[:, None], jnp.nan, logits)
        return logits, tuple(caches)

    return base.Translator(
        "transformer", cfg, src_vocab_size, tgt_vocab_size, init, apply, encode, init_state, step
    )
