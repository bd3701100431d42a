"""RNNsearch (Bahdanau, Cho & Bengio, ICLR 2015): a bidirectional encoder and additive attention.

    encoder:   h_j = [→h_j ; ←h_j]  (bidirectional cell over E_src x, within each length)
    keys:      U h_j, computed ONCE per source in encode
    s_0       = tanh(W_init ←h_1)                     (the backward encoder's first state)
    step i:    e_ij = vᵀ tanh(W s_{i-1} + U h_j),  α_ij = softmax_j(e_ij)  (padding masked)
               c_i  = Σ_j α_ij h_j
               s_i  = g(s_{i-1}, [E_tgt y_{i-1} ; c_i])
               t_i  = tanh(W_t [s_i ; c_i ; E_tgt y_{i-1}] + b_t)          (deep output)
               p(y_i | y_<i, x) = softmax(W_o t_i + b_o)

g is a GRU or LSTM from anatomy.recurrence (config.cell; an LSTM starts with c_0 = 0).
The paper's readout is a maxout layer; this one is tanh, otherwise the same inputs.
apply(..., return_intermediates=True) returns the alignments α as [B, T, S].
"""
import jax
import jax.numpy as jnp
import ml_collections

from anatomy.attention import additive_attention, dropout, init_additive, project_keys
from anatomy.recurrence import LSTMState, bidirectional, get_cell
from anatomy.seq2seq import base


def default_config():
    """Hyperparameters (DESIGN.md's 'bi-LSTM 128 encoder + Bahdanau attention, decoder 256')."""
    c = ml_collections.ConfigDict()
    c.cell = "lstm"          # encoder and decoder cell: lstm / gru
    c.d_emb = 128            # source and target embedding size
    c.d_enc = 128            # encoder hidden size per direction (annotations are 2 * d_enc)
    c.d_dec = 256            # decoder hidden size (s_i)
    c.d_attn = 256           # additive attention's hidden size (v, W s, U h live here)
    c.d_readout = 256        # deep-output layer size t_i
    c.dropout_rate = 0.0     # on embeddings and t_i, training only
    return c


def build(config, src_vocab_size, tgt_vocab_size):
    """The RNNsearch Translator (see base.Translator)."""
    if config.cell not in ("lstm", "gru", "gru_paper"):
        raise ValueError(f"rnnsearch: cell must be one of lstm/gru/gru_paper, got {config.cell!r}")
    cfg = base.freeze(config)
    spec = get_cell(cfg.cell)
    d_ann = 2 * cfg.d_enc

    def init(key):
        ks = jax.random.split(key, 9)
        return {"src_emb": base.init_embedding(ks[0], src_vocab_size, cfg.d_emb),
                "tgt_emb": base.init_embedding(ks[1], tgt_vocab_size, cfg.d_emb),
                "enc_fw": spec.init(ks[2], cfg.d_emb, cfg.d_enc),
                "enc_bw": spec.init(ks[3], cfg.d_emb, cfg.d_enc),
                "init": base.init_dense(ks[4], cfg.d_enc, cfg.d_dec),
                "attn": init_additive(ks[5], cfg.d_dec, d_ann, cfg.d_attn),
                "decoder": spec.init(ks[6], cfg.d_emb + d_ann, cfg.d_dec),
                "readout": base.init_dense(ks[7], cfg.d_dec + d_ann + cfg.d_emb, cfg.d_readout),
                "out": base.init_dense(ks[8], cfg.d_readout, tgt_vocab_size)}

    def _encode(params, src, src_len, rng=None):
        x = dropout(params["src_emb"][src], cfg.dropout_rate, rng, rng is None)  # [B, S, E]
        ann, (_, carry_bw) = bidirectional(spec, params["enc_fw"], params["enc_bw"], x,
                                           lengths=src_len)  # ann [B, S, 2*d_enc]
        return {"annotations": ann,
                "keys": project_keys(params["attn"], ann),  # [B, S, A]
                "mask": base.source_mask(src_len, src.shape[1]),  # [B, S]
                "h_bw_first": spec.hidden(carry_bw)}  # [B, d_enc]

    def encode(params, src, src_len):
        """memory = {'annotations' [B,S,2E], 'keys' U h [B,S,A], 'mask' [B,S], 'h_bw_first' [B,E]}."""
        src, src_len = base.check_src(src, src_len, "rnnsearch")
        return _encode(params, src, src_len)

    def init_state(params, memory, max_len):
        """s_0 = tanh(W_init ←h_1) (+ a zero LSTM cell state)."""
        h0 = jnp.tanh(base.dense(params["init"], memory["h_bw_first"]))  # [B, d_dec]
        return LSTMState(h0, jnp.zeros_like(h0)) if cfg.cell == "lstm" else h0

    def _recur(params, memory, carry, emb):
        """emb [B, E] -> (carry, (s_i [B, D], c_i [B, 2E], α_i [B, S]))."""
        ctx, alpha = additive_attention(params["attn"], spec.hidden(carry), memory["keys"],
                                        memory["annotations"], memory["mask"])
        carry, s = spec.cell(params["decoder"], carry, jnp.concatenate([emb, ctx], axis=-1))
        return carry, (s, ctx, alpha)

    def _readout(params, s, ctx, emb, rng=None):
        t = jnp.tanh(base.dense(params["readout"], jnp.concatenate([s, ctx, emb], axis=-1)))
        return base.dense(params["out"], dropout(t, cfg.dropout_rate, rng, rng is None))

    def apply(params, batch, *, rng=None, deterministic=True, return_intermediates=False):
        """Teacher-forced logits [B, T, V]; intermediates {'alignments' = 'cross_attention'
        [B, T, S], 'decoder_states' [B, T, D], 'contexts' [B, T, 2E]}."""
        src, src_len, tgt = base.check_batch(batch, "rnnsearch")
        r_enc, r_emb, r_out = base.dropout_keys(rng, 3, deterministic, cfg.dropout_rate)
        memory = _encode(params, src, src_len.astype(jnp.int32), r_enc)
        emb = dropout(params["tgt_emb"][tgt], cfg.dropout_rate, r_emb, r_emb is None)  # [B,T,E]

        s, ctx, alpha = base.teacher_forced_scan(
            _recur, params, memory, init_state(params, memory, tgt.shape[1]), emb)  # [B, T, ·]
        logits = _readout(params, s, ctx, emb, r_out)
        inter = {"alignments": alpha, "cross_attention": alpha, "decoder_states": s,
                 "contexts": ctx}
        return base.intermediates_or_logits(logits, inter, return_intermediates)

    def step(params, memory, state, tokens):
        """One decoder step: tokens [B] (y_{i-1}) -> (logits [B, V], s_i carry)."""
        emb = params["tgt_emb"][tokens]  # [B, E]
        state, (s, ctx, _) = _recur(params, memory, state, emb)
        return _readout(params, s, ctx, emb), state

    return base.Translator("rnnsearch", cfg, src_vocab_size, tgt_vocab_size, init, apply,
                           encode, init_state, step)
