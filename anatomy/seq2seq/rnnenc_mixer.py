"""RNNenc with a bigger state: an encoder-decoder without attention whose recurrence is a
mixer of anatomy.mixers (a matrix state: mLSTM, gated DeltaNet, Mamba-2, linear attention;
or a vector one: RG-LRU, minGRU).

RNNenc (rnnenc.py) squeezes the source into the encoder's final vector h_S and starts the
decoder from it. Here the same wiring carries a state of any size: the encoder, a stack of L
pre-LN mixer blocks, reads the source and stops at its last real token; the decoder, L blocks
of the same mixer with parameters of their own, starts every layer from the encoder's final
state of that layer and generates from it alone. With a matrix state S [h, d_k, d_v] the
decoder reads the memory by content at every step (its own query q_t: y_t = S_tᵀ q_t, the
mixer's readout) while it keeps writing to it, as RNNenc's decoder reads and updates h. There
is no attention over source positions: the decoder never sees the source except through the
fixed-size state, whose bytes do not grow with the source length (``state_bytes``).

    encoder:  x_j = E_src[s_j];  (H, states) = MixerStack_enc(x, lengths)     j = 1..S
    decoder:  y = MixerStack_dec(E_tgt[t_<i], states0 = states)              [B, T, m]
              p(t_i | t_<i, s) = softmax(W_o LN(y_i) + b_o)

Letters: B batch, S source, T target, m model width, V vocabulary. Config: mixer (any
recurrent mixer of anatomy.mixers), its knobs as fields of their own (n_heads, d_key, d_value,
d_state, expand, conv ...; None keeps the mixer's default), d_model, n_layers (encoder = decoder layers), d_ff (an MLP after each
mixer; 0 = none), dropout_rate, reverse_source (read the source backwards within its length).
"""

import jax
import jax.numpy as jnp
import ml_collections

from anatomy import mixers as mx
from anatomy.errors import BadInputError
from anatomy.layers import (
    dense,
    dropout,
    init_embedding,
    init_layer_norm,
    init_output,
    layer_norm,
)
from anatomy.scan import reverse_padded
from anatomy.seq2seq import base
from anatomy.stack import apply_stack, init_stack, pre_ln_stack, stack_step

KNOBS = tuple(k for k in mx.KNOBS if k != "positions")  # every recurrent mixer's knob names


def default_config():
    """Hyperparameters (the width of the translators' default sizes, docs/design.md)."""
    c = ml_collections.ConfigDict()
    c.mixer = "mlstm"  # the encoder's and decoder's recurrence: a recurrent mixer of anatomy.mixers
    # the mixer's knobs, one field each (anatomy.mixers.KNOBS: n_heads, d_key, d_value, d_state,
    # expand, conv, form ...): None = that mixer's own default; a knob it does not take stays None
    for k in KNOBS:
        c[k] = ml_collections.config_dict.placeholder(type(mx.KNOBS[k][0]))
    c.d_model = 256  # embedding width = residual stream (1.1M-1.9M parameters at 1,000 words)
    c.n_layers = 1  # encoder layers = decoder layers; decoder layer l starts from encoder's l
    c.d_ff = 0  # the MLP after each mixer (0 = none)
    c.dropout_rate = 0.0  # on embeddings and each residual branch, training only
    c.reverse_source = False  # read the source backwards within its length (Sutskever)
    return c


CHOICES = {"mixer": tuple(mx.RECURRENT)}  # the recurrence: a mixer with a fixed state


def _check(cfg):
    if cfg.mixer not in CHOICES["mixer"]:
        why = ": attention has no fixed state to hand on" if cfg.mixer == "attention" else ""
        raise BadInputError(
            f"rnnenc_mixer: mixer must be one of {'/'.join(CHOICES['mixer'])}, "
            f"got {cfg.mixer!r}{why}"
        )
    for name in ("d_model", "n_layers"):
        if not isinstance(cfg[name], int) or cfg[name] < 1:
            raise BadInputError(f"rnnenc_mixer: {name} must be a positive int, got {cfg[name]!r}")
    mx.check_knobs(cfg.mixer, knobs(cfg), "rnnenc_mixer: the knobs of")


def knobs(config):
    """{knob: value} of the knob fields that are set (not None): the mixer's overrides."""
    return {k: config[k] for k in KNOBS if config[k] is not None}


def build(config, src_vocab_size, tgt_vocab_size):
    """The RNNenc-with-a-mixer Translator (base.Translator)."""
    config = ml_collections.ConfigDict(config)
    _check(config)
    cfg = ml_collections.FrozenConfigDict(config)
    m, rate = cfg.d_model, cfg.dropout_rate
    mixer = mx.build_mixer(cfg.mixer, m, **knobs(cfg))
    stack = pre_ln_stack((mixer,) * cfg.n_layers, cfg.d_ff, rate)

    def init(key):
        ks = jax.random.split(key, 5)
        return {
            "src_emb": init_embedding(ks[0], src_vocab_size, m),
            "tgt_emb": init_embedding(ks[1], tgt_vocab_size, m),
            "encoder": init_stack(ks[2], stack),
            "decoder": init_stack(ks[3], stack),
            "final_ln": init_layer_norm(m),
            "out": init_output(ks[4], m, tgt_vocab_size),
        }

    def _encode(params, src, src_len, rng=None):
        r_emb, r_stack = (None, None) if rng is None else jax.random.split(rng)
        x = dropout(params["src_emb"][src], rate, r_emb, r_emb is None)  # [B, S, m]
        if cfg.reverse_source:
            x = reverse_padded(x, src_len)
        _, states = apply_stack(
            params["encoder"], stack, x, lengths=src_len, return_states=True, rng=r_stack
        )
        return {"states": states}

    def encode(params, src, src_len):
        """memory = {'states': the encoder's final state per layer}: all the decoder gets."""
        src, src_len = base.check_src(src, src_len, "rnnenc_mixer")
        return _encode(params, src, src_len)

    def _logits(params, y, rng=None):
        return dense(params["out"], dropout(layer_norm(params["final_ln"], y), rate, rng,
                                            rng is None))  # fmt: skip

    def apply(params, batch, *, rng=None, deterministic=True, return_intermediates=False):
        """Teacher-forced logits [B, T, V]; intermediates {'decoder_states': [B, T, m]}."""
        src, src_len, tgt = base.check_batch(batch, "rnnenc_mixer")
        r_enc, r_dec, r_out = base.dropout_keys(rng, 3, deterministic, rate)
        memory = _encode(params, src, src_len.astype(jnp.int32), r_enc)
        r_emb, r_stack = (None, None) if r_dec is None else jax.random.split(r_dec)
        x = dropout(params["tgt_emb"][tgt], rate, r_emb, r_emb is None)  # [B, T, m]
        y = apply_stack(params["decoder"], stack, x, states=memory["states"], rng=r_stack)
        logits = _logits(params, y, r_out)
        return base.intermediates_or_logits(logits, {"decoder_states": y}, return_intermediates)

    def init_state(params, memory, max_len):
        """The decoder's state: every layer starts from the encoder's final state."""
        return list(memory["states"])

    def step(params, memory, state, tokens):
        """One decoder step: tokens [B] -> (logits [B, V], the new per-layer states)."""
        y, state = stack_step(params["decoder"], stack, state, params["tgt_emb"][tokens])
        return _logits(params, y), state

    return base.Translator(
        "rnnenc_mixer", cfg, src_vocab_size, tgt_vocab_size, init, apply, encode, init_state,
        step,
    )  # fmt: skip


def state_bytes(config, batch=1):
    """Bytes of what the encoder hands the decoder for `batch` sentences: every layer's final
    state (its matrix or vector and its short conv's buffer), whatever the source length."""
    c = ml_collections.ConfigDict(config)
    mixer = mx.build_mixer(c.mixer, c.d_model, **knobs(c))
    return int(c.n_layers) * mixer.state_bytes(batch=batch)
