"""Global attention with input feeding (Luong, Pham & Manning, EMNLP 2015).

    encoder:  h̄_s = f(h̄_{s-1}, E_src x_s)          (unidirectional; final state starts the decoder)
    step t:   h_t = g(h_{t-1}, [E_tgt y_{t-1} ; h̃_{t-1}])         input feeding, h̃_0 = 0
              a_t(s) = softmax_s(score(h_t, h̄_s))                 padding masked
              score: dot h_tᵀh̄_s | general h_tᵀ W_a h̄_s | concat v_aᵀ tanh(W_a [h_t ; h̄_s])
              c_t = Σ_s a_t(s) h̄_s
              h̃_t = tanh(W_c [c_t ; h_t])                        the attentional vector
              p(y_t | y_<t, x) = softmax(W_s h̃_t + b_s)

Unlike Bahdanau, the query is the CURRENT state h_t, and h̃_t is fed to the next step.
Cells come from anatomy.mixers (run by anatomy.scan), scores from anatomy.attention.luong.
"""

import jax
import jax.numpy as jnp
import ml_collections

from anatomy.attention import LUONG_KINDS, init_luong, luong_attention
from anatomy.layers import dense, dropout, init_dense, init_embedding, init_output
from anatomy.mixers import get_cell
from anatomy.scan import run
from anatomy.seq2seq import base

# The fields build() checks (base.check_choices) and their allowed values.
CHOICES = {"cell": ("rnn", "lstm", "gru", "gru_paper"), "score": LUONG_KINDS}


def default_config():
    """Hyperparameters of the Luong translator (sized like rnnsearch's defaults)."""
    c = ml_collections.ConfigDict()
    c.cell = "lstm"  # encoder and decoder cell: rnn / lstm / gru
    c.d_emb = 128  # source and target embedding size
    c.d_hidden = 256  # encoder = decoder hidden size (dot scores need them equal)
    c.score = "general"  # alignment score: dot / general / concat
    c.d_attn = 256  # hidden size of the concat score (unused by dot / general)
    c.dropout_rate = 0.0  # on embeddings and h̃_t before the softmax layer, training only
    return c


def build(config, src_vocab_size, tgt_vocab_size):
    """The Luong Translator (see base.Translator)."""
    base.check_choices("luong", config, CHOICES)
    cfg = base.freeze(config)
    spec = get_cell(cfg.cell)
    h = cfg.d_hidden

    def init(key):
        ks = jax.random.split(key, 7)
        return {
            "src_emb": init_embedding(ks[0], src_vocab_size, cfg.d_emb),
            "tgt_emb": init_embedding(ks[1], tgt_vocab_size, cfg.d_emb),
            "encoder": spec.init(ks[2], cfg.d_emb, h),
            "decoder": spec.init(ks[3], cfg.d_emb + h, h),
            "attn": init_luong(ks[4], cfg.score, h, h, cfg.d_attn),
            "combine": init_dense(ks[5], 2 * h, h, bias=False),  # W_c
            "out": init_output(ks[6], h, tgt_vocab_size),
        }  # W_s

    def _encode(params, src, src_len, rng=None):
        x = dropout(params["src_emb"][src], cfg.dropout_rate, rng, rng is None)  # [B, S, E]
        carry, states = run(spec, params["encoder"], x, lengths=src_len)  # [B, S, H]
        return {"states": states, "mask": base.source_mask(src_len, src.shape[1]), "carry": carry}

    def encode(params, src, src_len):
        """memory = {'states' h̄ [B,S,H], 'mask' [B,S], 'carry' encoder final carry}."""
        src, src_len = base.check_src(src, src_len, "luong")
        return _encode(params, src, src_len)

    def init_state(params, memory, max_len):
        """{'carry': the encoder's final carry, 'feed': h̃_0 = 0 [B, H]}."""
        states = memory["states"]
        return {
            "carry": memory["carry"],
            "feed": jnp.zeros(states.shape[:1] + states.shape[2:], states.dtype),
        }

    def _recur(params, memory, state, emb):
        """emb [B, E] -> (state, (h̃_t [B, H], a_t [B, S]))."""
        carry, h_t = spec.cell(
            params["decoder"], state["carry"], jnp.concatenate([emb, state["feed"]], axis=-1)
        )
        ctx, a = luong_attention(
            params["attn"], h_t, memory["states"], memory["states"], memory["mask"], kind=cfg.score
        )
        h_tilde = jnp.tanh(dense(params["combine"], jnp.concatenate([ctx, h_t], axis=-1)))
        return {"carry": carry, "feed": h_tilde}, (h_tilde, a)

    def apply(params, batch, *, rng=None, deterministic=True, return_intermediates=False):
        """Teacher-forced logits [B, T, V]; intermediates {'alignments' = 'cross_attention'
        [B, T, S], 'attentional' h̃ [B, T, H]}."""
        src, src_len, tgt = base.check_batch(batch, "luong")
        r_enc, r_emb, r_out = base.dropout_keys(rng, 3, deterministic, cfg.dropout_rate)
        memory = _encode(params, src, src_len.astype(jnp.int32), r_enc)
        emb = dropout(params["tgt_emb"][tgt], cfg.dropout_rate, r_emb, r_emb is None)  # [B,T,E]

        h_tilde, a = base.teacher_forced_scan(
            _recur, params, memory, init_state(params, memory, tgt.shape[1]), emb
        )  # [B, T, ·]
        logits = dense(params["out"], dropout(h_tilde, cfg.dropout_rate, r_out, r_out is None))
        inter = {"alignments": a, "cross_attention": a, "attentional": h_tilde}
        return base.intermediates_or_logits(logits, inter, return_intermediates)

    def step(params, memory, state, tokens):
        """One decoder step: tokens [B] -> (logits [B, V], {'carry', 'feed': h̃_t})."""
        state, (h_tilde, _) = _recur(params, memory, state, params["tgt_emb"][tokens])
        return dense(params["out"], h_tilde), state

    return base.Translator(
        "luong", cfg, src_vocab_size, tgt_vocab_size, init, apply, encode, init_state, step
    )
