"""RNNenc: an encoder-decoder without attention (Cho et al. 2014; Sutskever et al. 2014).

The encoder reads the source and keeps only its final state h_S (the state after the
last REAL token: scan.run freezes the carry over padding). The decoder starts from that
state and generates from it alone; this fixed vector is the bottleneck the chapter measures.

    encoder:  h_j = f(h_{j-1}, E_src x_j),            j = 1..S
    decoder:  s_0 = h_S;  s_i = g(s_{i-1}, [E_tgt y_{i-1} (; h_S if feed_context)])
              p(y_i | y_<i, x) = softmax(W_o s_i + b_o)

f, g are cells from anatomy.mixers ('rnn', 'lstm', 'gru', 'gru_paper', or a linear
recurrence 'sru', 'qrnn', 'mingru', 'mamba'; config.cell), with hidden size config.d_hidden.
A linear recurrence runs the encoder and the teacher-forced decoder with
jax.lax.associative_scan and decodes one step at a time with its cell. feed_context=True also concatenates h_S to every decoder
input (Cho et al.'s "c" at every step); reverse_source=True reads the source backwards
within its length (Sutskever et al.'s trick).

A deep encoder (config.n_layers > 1, config.residual, config.layer_norm; 'lstm' or 'gru'):
anatomy.stack's recurrent_stack, layer l reading layer l - 1's outputs (GNMT's residual
from layer 2 on, Wu et al. 2016; LayerNorm on each layer's output), and h_S / the carry the
decoder starts from are the TOP layer's; the decoder stays one layer. params['encoder'] is
then the stack's {'blocks': [...]}; the one-layer plain encoder (the default)
keeps the cell's own parameters there, so its parameters and digits are those of before.

Both scans run on the backend's default recurrent path unless config.hoist / config.vjp say
otherwise (anatomy/mixers/defaults.py: on CPU the per-step projection with the fused VJP, which
made the whole train step 0.53x the time of the hoisted autodiff path; same function,
gradients equal to float rounding, tests/anatomy/mixers/test_defaults.py).
"""

import jax
import jax.numpy as jnp
import ml_collections

from anatomy.layers import dense, dropout, init_embedding, init_output
from anatomy.scan import run
from anatomy.seq2seq import base
from anatomy.stack import apply_stack, init_stack, recurrent_stack

CELLS = ("rnn", "lstm", "gru", "gru_paper", "sru", "qrnn", "mingru", "mamba")  # config.cell
CHOICES = {"cell": CELLS}  # the fields build() checks (base.check_choices)


def default_config():
    """Hyperparameters of RNNenc (docs/design.md, 'Default sizes': LSTM, hidden 256)."""
    c = ml_collections.ConfigDict()
    c.cell = "lstm"  # recurrent cell of encoder and decoder: one of CELLS
    c.d_emb = 128  # source and target embedding size
    c.d_hidden = 256  # encoder and decoder hidden size
    c.feed_context = False  # also feed the encoder's final h to every decoder step (Cho)
    c.reverse_source = False  # read the source backwards within its length (Sutskever)
    c.dropout_rate = 0.0  # on embeddings and the decoder output, training only
    c.emb_init_std = 0.0  # embedding init N(0, std^2); 0 = init_embedding's d_emb^-1/2
    c.n_layers = 1  # encoder layers (anatomy.stack; > 1 needs cell lstm / gru)
    c.residual = False  # GNMT residual around encoder layers 2.. (Wu et al. 2016)
    c.layer_norm = False  # LayerNorm on every encoder layer's output (anatomy/stack.py)
    # The recurrent path (the same function, different speed; anatomy/mixers/defaults.py):
    # None = chosen per backend (CPU: per-step projection and the fused VJP for the LSTM).
    c.hoist = ml_collections.config_dict.placeholder(bool)  # input projection before the scan
    c.vjp = ml_collections.config_dict.placeholder(str)  # "autodiff" / "fused" (scan.run)
    return c


def build(config, src_vocab_size, tgt_vocab_size):
    """The RNNenc Translator (see base.Translator)."""
    cfg, spec, hoist, vjp, deep = base.recurrent_build("rnnenc", config, CHOICES)
    d_dec_in = cfg.d_emb + (cfg.d_hidden if cfg.feed_context else 0)
    if deep:
        stack = recurrent_stack(
            cfg.cell, cfg.d_hidden, cfg.n_layers, d_in=cfg.d_emb, residual=cfg.residual,
            layer_norm=cfg.layer_norm, dropout_rate=cfg.dropout_rate, hoist=hoist, vjp=vjp,
        )  # fmt: skip

    def init(key):
        ks = jax.random.split(key, 5)
        std = cfg.emb_init_std or None  # None: d_emb^-1/2
        return {
            "src_emb": init_embedding(ks[0], src_vocab_size, cfg.d_emb, std),
            "tgt_emb": init_embedding(ks[1], tgt_vocab_size, cfg.d_emb, std),
            "encoder": (
                init_stack(ks[2], stack) if deep else spec.init(ks[2], cfg.d_emb, cfg.d_hidden)
            ),
            "decoder": spec.init(ks[3], d_dec_in, cfg.d_hidden),
            "out": init_output(ks[4], cfg.d_hidden, tgt_vocab_size),
        }

    def _encode(params, src, src_len, rng=None):
        x = dropout(params["src_emb"][src], cfg.dropout_rate, rng, rng is None)  # [B, S, E]
        kw = dict(reverse=cfg.reverse_source, hoist=hoist, vjp=vjp)
        if deep:  # the top layer's carry; inter-layer dropout from a key of its own
            r_stack = None if rng is None else jax.random.fold_in(rng, 1)
            _, states = apply_stack(
                params["encoder"], stack, x, lengths=src_len, rng=r_stack,
                reverse=cfg.reverse_source, return_states=True,
            )  # fmt: skip
            carry = states[-1]["mix"]
        else:
            carry, _ = run(spec, params["encoder"], x, lengths=src_len, **kw)
        return {"carry": carry, "context": spec.hidden(carry)}  # context [B, H]

    def encode(params, src, src_len):
        """memory = {'carry': encoder final carry (leaves [B, H]), 'context': h_S [B, H]}."""
        src, src_len = base.check_src(src, src_len, "rnnenc")
        return _encode(params, src, src_len)

    def _inputs(memory, emb):  # emb [B, (T,) E] -> decoder inputs
        if not cfg.feed_context:
            return emb
        ctx = memory["context"]
        if emb.ndim == 3:
            ctx = jnp.broadcast_to(ctx[:, None], emb.shape[:2] + ctx.shape[-1:])  # [B, T, H]
        return jnp.concatenate([emb, ctx], axis=-1)

    def apply(params, batch, *, rng=None, deterministic=True, return_intermediates=False):
        """Teacher-forced logits [B, T, V]; intermediates {'decoder_states': [B, T, H]}."""
        src, src_len, tgt = base.check_batch(batch, "rnnenc")
        r_enc, r_dec, r_out = base.dropout_keys(rng, 3, deterministic, cfg.dropout_rate)
        memory = _encode(params, src, src_len.astype(jnp.int32), r_enc)
        emb = dropout(params["tgt_emb"][tgt], cfg.dropout_rate, r_dec, r_dec is None)  # [B, T, E]
        _, ys = run(
            spec,
            params["decoder"],
            _inputs(memory, emb),
            carry0=memory["carry"],
            hoist=hoist,
            vjp=vjp,
        )
        logits = dense(params["out"], dropout(ys, cfg.dropout_rate, r_out, r_out is None))
        return base.intermediates_or_logits(logits, {"decoder_states": ys}, return_intermediates)

    def init_state(params, memory, max_len):
        """The decoder carry, starting at the encoder's final carry."""
        return memory["carry"]

    def step(params, memory, state, tokens):
        """One decoder step: tokens [B] (previous outputs) -> (logits [B, V], carry)."""
        emb = params["tgt_emb"][tokens]  # [B, E]
        state, h = spec.cell(params["decoder"], state, _inputs(memory, emb))
        return dense(params["out"], h), state

    return base.Translator(
        "rnnenc", cfg, src_vocab_size, tgt_vocab_size, init, apply, encode, init_state, step
    )
