"""RNNsearch (Bahdanau, Cho & Bengio, ICLR 2015): a bidirectional encoder and additive attention.

    encoder:   h_j = [→h_j ; ←h_j]  (bidirectional cell over E_src x, within each length)
    keys:      U h_j, computed ONCE per source in encode
    s_0       = tanh(W_init ←h_1 + b_init)               (the backward encoder's first state)
    step i:    e_ij = vᵀ tanh(W s_{i-1} + U h_j),  α_ij = softmax_j(e_ij)  (padding masked)
               c_i  = Σ_j α_ij h_j
               s_i  = g(s_{i-1}, [E_tgt y_{i-1} ; c_i])
               t̃_i  = W_t [r_i ; c_i ; E_tgt y_{i-1}] + b_t   r_i = s_i (readout_state='current')
                                                            r_i = s_{i-1}    ('previous')
               t_i  = tanh(t̃_i)                     (readout='tanh', d_readout units)
               t_i  = [max(t̃_{i,2k-1}, t̃_{i,2k})]_k  ('maxout': 2·d_readout -> d_readout)
               p(y_i | y_<i, x) = softmax(W_o t_i + b_o)

g is a GRU or LSTM from anatomy.mixers (config.cell; an LSTM starts with c_0 = 0), or a
linear recurrence ('sru', 'qrnn', 'mingru', 'mamba'; its carry starts from s_0 via the cell's
from_hidden). With a linear recurrence the encoder runs with jax.lax.associative_scan; the
decoder stays serial, since its input c_i depends on s_{i-1} through the attention.

Where this departs from the paper (appendix A.2.2), by default: the paper's readout is
    t̃_i = U_o s_{i-1} + V_o E y_{i-1} + C_o c_i,   t_i = max-out over pairs of t̃_i,
    p(y_i) ∝ exp(y_iᵀ W_o t_i)
i.e. it reads the PREVIOUS state s_{i-1} (the one the attention used) through a maxout
with pool size 2. The defaults read the NEW state s_i through tanh (the headline runs were
measured with these). readout_state='previous', readout='maxout' give the paper's readout
(one W_t on the concatenation = U_o, C_o, V_o side by side); both keep biases b_t, b_o,
which the paper's equations leave out. s_0 = tanh(W_init ←h_1 + b_init) has a bias (zero
at init) where the paper's s_0 = tanh(W_s ←h_1) has none; the cell defaults to an LSTM
where the paper uses its gated unit (cell='gru_paper').
apply(..., return_intermediates=True) returns the alignments α as [B, T, S].

A deep encoder (config.n_layers > 1, config.residual, config.layer_norm; 'lstm' or 'gru'):
anatomy.stack's bidirectional stack, each layer reading both directions of the
layer below as torch's nn.LSTM(bidirectional=True, num_layers=L) (GNMT's residual from layer
2 on, Wu et al. 2016; LayerNorm over each layer's 2·d_enc outputs): the annotations h_j are
the top layer's, and s_0 reads the top layer's backward state ←h_1. params['encoder'] is
then the stack's {'fw', 'bw', 'ln'}; the one-layer plain encoder (the default) keeps
'enc_fw' / 'enc_bw' as before, with the same digits.
"""

import jax
import jax.numpy as jnp
import ml_collections

from anatomy.attention import additive_attention, init_additive
from anatomy.attention.additive import project_keys
from anatomy.layers import dense, dropout, init_dense, init_embedding, init_output
from anatomy.mixers.cells import LSTMState
from anatomy.scan import bidirectional
from anatomy.seq2seq import base
from anatomy.stack import apply_stack, init_stack, recurrent_stack

CELLS = ("lstm", "gru", "gru_paper", "sru", "qrnn", "mingru", "mamba")  # config.cell
# The fields build() checks (base.check_choices) and their allowed values.
CHOICES = {
    "cell": CELLS,
    "readout_state": ("current", "previous"),
    "readout": ("tanh", "maxout"),
}


def default_config():
    """Hyperparameters (docs/design.md, 'Default sizes': bi-LSTM 128 + Bahdanau, decoder 256)."""
    c = ml_collections.ConfigDict()
    c.cell = "lstm"  # encoder and decoder cell: one of CELLS
    c.d_emb = 128  # source and target embedding size
    c.d_enc = 128  # encoder hidden size per direction (annotations are 2 * d_enc)
    c.d_dec = 256  # decoder hidden size (s_i)
    c.d_attn = 256  # additive attention's hidden size (v, W s, U h live here)
    c.d_readout = 256  # deep-output layer size t_i
    c.readout_state = "current"  # state in the readout: current (s_i) / previous (s_{i-1}, paper)
    c.readout = "tanh"  # readout nonlinearity: tanh / maxout (paper, pool 2 over 2·d_readout)
    c.dropout_rate = 0.0  # on embeddings and t_i (and between encoder layers), training only
    c.n_layers = 1  # bidirectional encoder layers (anatomy.stack; > 1 needs lstm / gru)
    c.residual = False  # GNMT residual around encoder layers 2.. (Wu et al. 2016)
    c.layer_norm = False  # LayerNorm on every encoder layer's output (over 2 · d_enc)
    # The encoder's recurrent path (the same function, different speed; anatomy/mixers/defaults.py;
    # None = the backend's default). Kept at the hoisted autodiff path: RNNsearch's step is
    # its attentive decoder, and the CPU default path measured a tie on the whole train step
    # (1.01x), so the headline digits stay those of this path.
    field = ml_collections.config_dict.FieldReference  # typed, and None-able
    c.hoist = field(True, field_type=bool)  # input projection before the scan
    c.vjp = field("autodiff", field_type=str)  # "autodiff" / "fused" (scan.run)
    return c


def build(config, src_vocab_size, tgt_vocab_size):
    """The RNNsearch Translator (see base.Translator)."""
    cfg, spec, hoist, vjp, deep = base.recurrent_build("rnnsearch", config, CHOICES)
    pool = 2 if cfg.readout == "maxout" else 1  # t̃_i has pool · d_readout units
    d_ann = 2 * cfg.d_enc
    if deep:
        stack = recurrent_stack(
            cfg.cell, cfg.d_enc, cfg.n_layers, d_in=cfg.d_emb, residual=cfg.residual,
            layer_norm=cfg.layer_norm, bidirectional=True, dropout_rate=cfg.dropout_rate,
            hoist=hoist, vjp=vjp,
        )  # fmt: skip

    def init(key):
        ks = jax.random.split(key, 9)
        if deep:  # layer 1 from ks[2] (a stack draws its own layers' keys from it)
            enc = {"encoder": init_stack(ks[2], stack)}
        else:
            enc = {
                "enc_fw": spec.init(ks[2], cfg.d_emb, cfg.d_enc),
                "enc_bw": spec.init(ks[3], cfg.d_emb, cfg.d_enc),
            }
        return {
            "src_emb": init_embedding(ks[0], src_vocab_size, cfg.d_emb),
            "tgt_emb": init_embedding(ks[1], tgt_vocab_size, cfg.d_emb),
            **enc,
            "init": init_dense(ks[4], cfg.d_enc, cfg.d_dec),
            "attn": init_additive(ks[5], cfg.d_dec, d_ann, cfg.d_attn),
            "decoder": spec.init(ks[6], cfg.d_emb + d_ann, cfg.d_dec),
            "readout": init_dense(ks[7], cfg.d_dec + d_ann + cfg.d_emb, pool * cfg.d_readout),
            "out": init_output(ks[8], cfg.d_readout, tgt_vocab_size),
        }

    def _encode(params, src, src_len, rng=None):
        x = dropout(params["src_emb"][src], cfg.dropout_rate, rng, rng is None)  # [B, S, E]
        if deep:  # the top layer's annotations and backward state
            r_stack = None if rng is None else jax.random.fold_in(rng, 1)
            ann, states = apply_stack(
                params["encoder"], stack, x, lengths=src_len, rng=r_stack, return_states=True
            )
            carry_bw = states[-1][1]
        else:
            ann, (_, carry_bw) = bidirectional(
                spec, params["enc_fw"], params["enc_bw"], x, lengths=src_len, hoist=hoist, vjp=vjp
            )  # ann [B, S, 2*d_enc]
        return {
            "annotations": ann,
            "keys": project_keys(params["attn"], ann),  # [B, S, A]
            "mask": base.source_mask(src_len, src.shape[1]),  # [B, S]
            "h_bw_first": spec.hidden(carry_bw),
        }  # [B, d_enc]

    def encode(params, src, src_len):
        """memory = {'annotations' [B,S,2E], 'keys' U h [B,S,A], 'mask' [B,S], 'h_bw_first' [B,E]}."""
        src, src_len = base.check_src(src, src_len, "rnnsearch")
        return _encode(params, src, src_len)

    def init_state(params, memory, max_len):
        """s_0 = tanh(W_init ←h_1 + b_init) (+ a zero LSTM cell state)."""
        h0 = jnp.tanh(dense(params["init"], memory["h_bw_first"]))  # [B, d_dec]
        if spec.from_hidden is not None:  # a linear recurrence (its CellSpec)
            return spec.from_hidden(params["decoder"], h0)
        return LSTMState(h0, jnp.zeros_like(h0)) if cfg.cell == "lstm" else h0

    def _recur(params, memory, carry, emb):
        """emb [B, E] -> (carry, (s_i [B, D], c_i [B, 2E], α_i [B, S], r_i [B, D])),
        r_i the state the readout reads (s_i or s_{i-1}, config.readout_state)."""
        s_prev = spec.hidden(carry)  # [B, D]
        ctx, alpha = additive_attention(
            params["attn"], s_prev, memory["keys"], memory["annotations"], memory["mask"]
        )
        carry, s = spec.cell(params["decoder"], carry, jnp.concatenate([emb, ctx], axis=-1))
        return carry, (s, ctx, alpha, s if cfg.readout_state == "current" else s_prev)

    def _readout(params, r, ctx, emb, rng=None):
        """r, ctx, emb [..., ·] -> logits [..., V] (the module doc's t̃_i, t_i, W_o t_i + b_o)."""
        t = dense(params["readout"], jnp.concatenate([r, ctx, emb], axis=-1))  # t̃_i
        if cfg.readout == "maxout":  # [..., 2·d_readout] -> [..., d_readout]: pairs (2k-1, 2k)
            t = jnp.max(t.reshape(t.shape[:-1] + (cfg.d_readout, 2)), axis=-1)
        else:
            t = jnp.tanh(t)  # [..., d_readout]
        return dense(params["out"], dropout(t, cfg.dropout_rate, rng, rng is None))

    def apply(params, batch, *, rng=None, deterministic=True, return_intermediates=False):
        """Teacher-forced logits [B, T, V]; intermediates {'alignments' = 'cross_attention'
        [B, T, S], 'decoder_states' [B, T, D], 'contexts' [B, T, 2E]}."""
        src, src_len, tgt = base.check_batch(batch, "rnnsearch")
        r_enc, r_emb, r_out = base.dropout_keys(rng, 3, deterministic, cfg.dropout_rate)
        memory = _encode(params, src, src_len.astype(jnp.int32), r_enc)
        emb = dropout(params["tgt_emb"][tgt], cfg.dropout_rate, r_emb, r_emb is None)  # [B,T,E]

        s, ctx, alpha, r = base.teacher_forced_scan(
            _recur, params, memory, init_state(params, memory, tgt.shape[1]), emb
        )  # [B, T, ·]
        logits = _readout(params, r, ctx, emb, r_out)
        inter = {
            "alignments": alpha,
            "cross_attention": alpha,
            "decoder_states": s,
            "contexts": ctx,
        }
        return base.intermediates_or_logits(logits, inter, return_intermediates)

    def step(params, memory, state, tokens):
        """One decoder step: tokens [B] (y_{i-1}) -> (logits [B, V], s_i carry)."""
        emb = params["tgt_emb"][tokens]  # [B, E]
        state, (_, ctx, _, r) = _recur(params, memory, state, emb)
        return _readout(params, r, ctx, emb), state

    return base.Translator(
        "rnnsearch", cfg, src_vocab_size, tgt_vocab_size, init, apply, encode, init_state, step
    )
