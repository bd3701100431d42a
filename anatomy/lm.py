"""Decoder-only language models of every family behind one interface: embed, stack, read out.

Letters: b batch, t positions, m model width, V vocabulary, L layers.

    x_t    = s · E[w_t]                 E [V, m] ~ N(0, 1/m); s = √m for 'attention'
                                        (the Transformer's scale), 1 otherwise
    h      = Stack(x)                   [b, t, m], position t reads positions <= t only
             'attention'  anatomy.attention.decoder_only: L causal blocks with the
                          config's positions (sinusoidal / learned / rope / alibi / none)
                          and norm (post / pre / deepnorm / none; pre-LN adds a final LN)
             'recurrent'  anatomy.stack: L LSTM or GRU layers, GNMT residuals
                          and LayerNorm on each layer's output as the config says
             'mixer'      anatomy.mixers.stack: L pre-LN blocks, each a mixer of the
                          registry (config.mixer: linear_attention, rglru, mlstm,
                          gated_deltanet, mamba2, mingru, mamba, attention) and an MLP when
                          d_ff > 0, a final LN; config.pattern ('RRAR') puts softmax
                          attention (config.attention_config) at the 'A' layers
    logits = h Eᵀ + b (tie_output)  or  h W + b                       [b, t, V]

``build_lm(config, vocab_size) -> LanguageModel``, a NamedTuple of pure functions over a
frozen config (hashable, so a model can be a static argument of jax.jit; ``build_lm_once``
gives one model per distinct config):

    init(key) -> params           {'emb': [V, m], 'stack': ..., 'out_bias': [V]
                                   (+ 'out': [m, V] untied, + 'final_ln' for pre-LN)}
    apply(params, tokens [b, t], *, rng=None, return_intermediates=False)
                                  -> logits [b, t, V] (logits[:, t] predicts tokens[:, t+1]);
                                  intermediates {'layers': (each layer's output [b, t, m])}
    init_state(params, batch, max_len) -> the decoding state: one KVCache per block
                                  (capacity max_len) or one carry per recurrent layer
    step(params, state, tokens [b]) -> (logits [b, V], state): the next position; fed a
                                  sequence token by token it gives apply's logits row by row
    layers(params) -> [layer 1's parameters, ..., layer L's]: the per-layer groups
                                  (gradient norms per layer; embedding and readout excluded)
    hidden(params, tokens, *, rng=None, return_intermediates=False) -> h [b, t, m], the
                                  stack's output after its final LN (pre-LN, mixer)
    readout(params, h [..., m]) -> logits [..., V]: apply = readout ∘ hidden, so a loss
                                  that scores a few positions reads out only those

``token_nll(model, params, tokens)`` is the next-token loss at every position, [b, t - 1]
(the loss per position at lengths L .. 8L of a context-length study); ``state_bytes(model,
params, length)`` the bytes of the state it decodes position `length` with; ``default_config``
gives each family's fields with a comment per field (``default_config('mixer', mixer=NAME)``
the mixer family's, with that mixer's knobs in ``mixer_config``). The model knows no corpus and no
experiment; dropout, when on, needs an rng.
"""

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import ml_collections

from anatomy.attention import check_norm, encoding
from anatomy.attention import decoder_only as attn_stack
from anatomy.axes import declare
from anatomy.errors import BadInputError
from anatomy.layers import dropout, init_embedding, init_layer_norm, init_output, layer_norm
from anatomy.mixers import (
    build_mixer,
    check_knobs,
    get_mixer,
    init_mixer_stack,
    mixer_stack,
    mixer_stack_state,
    mixer_stack_step,
    parse_pattern,
    resolve_path,
)
from anatomy.mixers import default_config as mixer_defaults
from anatomy.stack import check_stack_cell, init_stack, run_stack, stack_step, zero_stack_carry

FAMILIES = ("attention", "recurrent", "mixer")
DEFAULT_MIXER = "mamba2"  # the mixer family's mixer when default_config names none


class LanguageModel(NamedTuple):
    """A decoder-only LM as pure functions (module docstring)."""

    family: str
    config: ml_collections.FrozenConfigDict
    vocab_size: int
    init: Callable
    apply: Callable
    init_state: Callable
    step: Callable
    layers: Callable
    hidden: Callable
    readout: Callable


def check_family(family, field="family"):
    """``family`` if it is one of FAMILIES, else BadInputError naming ``field`` and the choices."""
    if family not in FAMILIES:
        choices = ", ".join(repr(f) for f in FAMILIES)
        raise BadInputError(f"{field} must be one of {choices}; got {family!r}")
    return family


def default_config(family="attention", mixer=None):
    """The fields of a ``family`` LM ('attention' | 'recurrent' | 'mixer'), a comment per
    field; ``mixer`` (family 'mixer' only): the registry's mixer, its knobs in mixer_config."""
    check_family(family)
    if mixer is not None and family != "mixer":
        raise BadInputError(f"lm: mixer= is for family 'mixer', not {family!r}")
    c = ml_collections.ConfigDict()
    c.family = family  # 'attention' (decoder_only) | 'recurrent' (LSTM / GRU) | 'mixer'
    c.d_model = 128  # embedding width = residual stream (attention) = hidden size (recurrent)
    c.n_layers = 2  # blocks / recurrent layers L
    c.dropout_rate = 0.0  # inside the stack and on the embeddings, training only
    c.tie_output = True  # readout = the embedding transposed (+ bias); False: its own [m, V]
    if family == "attention":
        c.n_heads = 4  # attention heads (head width d_model / n_heads; even for rope)
        c.d_ff = 512  # FFN inner width
        c.norm = "pre"  # post / pre (+ final LayerNorm) / deepnorm / none (attention.NORMS)
        c.residual = True  # skip connections around every sub-layer
        c.positions = "sinusoidal"  # sinusoidal / learned / rope / alibi / none
        c.rope_base = 10000.0  # RoPE frequency base (the NTK-style knob: larger = slower)
        c.rope_scale = 1.0  # RoPE position interpolation: position p rotated as p / scale
        c.max_positions = 1024  # rows of the learned position table (positions='learned')
    elif family == "mixer":
        c.mixer = get_mixer(mixer or DEFAULT_MIXER).name  # anatomy.mixers' registry name
        c.mixer_config = mixer_defaults(c.mixer)  # its knobs (conv, form, heads, d_state ...)
        c.pattern = ""  # one letter per layer, R = the mixer, A = attention; '' = all R
        c.attention_config = mixer_defaults("attention")  # the 'A' layers' knobs
        c.d_ff = 4 * c.d_model  # the MLP after each mixer; 0 = none
    else:
        c.cell = "lstm"  # 'lstm' | 'gru' (anatomy.stack.STACK_CELLS)
        c.residual = False  # GNMT residuals around layers 2.. (Wu et al. 2016)
        c.layer_norm = False  # LayerNorm on every layer's output
    return c


def _check(config, vocab_size):
    check_family(config.get("family"), "lm: family")
    unknown = sorted(set(config.keys()) - set(default_config(config.family).keys()))
    if config.family == "mixer":
        get_mixer(config.get("mixer"))  # an unknown name: one line listing the mixers
        check_knobs(config.mixer, config.mixer_config.keys(), "lm: mixer_config of")
        check_knobs("attention", config.attention_config.keys(), "lm: attention_config of")
        parse_pattern(config.pattern, config.n_layers)
    if unknown:
        raise BadInputError(f"lm ({config.family}): unknown config fields {unknown}")
    if not isinstance(vocab_size, int) or vocab_size < 2:
        raise BadInputError(f"lm: vocab_size must be an int >= 2, got {vocab_size!r}")
    for name in ("d_model", "n_layers"):
        if not isinstance(config[name], int) or config[name] < 1:
            raise BadInputError(f"lm: {name} must be a positive integer, got {config[name]!r}")
    if config.family == "attention":
        check_norm(config.norm, config.residual, "lm: norm")
        enc = encoding(config.positions, config.rope_base, config.rope_scale)
        if config.d_model % config.n_heads:
            raise BadInputError(
                f"lm: d_model={config.d_model} not divisible by n_heads={config.n_heads}"
            )
        if enc.kind == "rope" and (config.d_model // config.n_heads) % 2:
            raise BadInputError("lm: positions='rope' needs an even head width d_model / n_heads")
    elif config.family == "recurrent":
        check_stack_cell(config.cell, "lm: cell")


def _mixers(cfg):
    """The built Mixer of every layer (a tuple, by the pattern)."""
    built = {
        "R": build_mixer(cfg.mixer, cfg.d_model, **cfg.mixer_config),
        "A": build_mixer("attention", cfg.d_model, **cfg.attention_config),
    }
    return tuple(built[letter] for letter in parse_pattern(cfg.pattern, cfg.n_layers))


def build_lm(config, vocab_size):
    """The LanguageModel of ``config`` (a default_config(family), possibly edited) over a
    vocabulary of ``vocab_size`` ids. Unknown fields and choices are BadInputErrors."""
    config = ml_collections.ConfigDict(config)
    _check(config, vocab_size)
    cfg = ml_collections.FrozenConfigDict(config)
    m, n, rate = cfg.d_model, cfg.n_layers, cfg.dropout_rate
    attention, mixed = cfg.family == "attention", cfg.family == "mixer"
    if mixed:
        mixers = _mixers(cfg)
        final_ln = True
    elif attention:
        stack_kw = dict(
            norm=cfg.norm,
            residual=cfg.residual,
            positions=cfg.positions,
            rope_base=cfg.rope_base,
            rope_scale=cfg.rope_scale,
        )
        final_ln = cfg.norm == "pre"
    else:
        hoist, vjp = resolve_path(cfg.cell, where="lm")
        final_ln = False
    scale = jnp.sqrt(jnp.float32(m)) if attention else jnp.float32(1.0)

    def init(key):
        k_emb, k_stack, k_out = jax.random.split(key, 3)
        if mixed:
            stack = init_mixer_stack(k_stack, mixers, m, cfg.d_ff)
        elif attention:
            stack = attn_stack.init_decoder_only(
                k_stack, n, m, cfg.n_heads, cfg.d_ff, norm=cfg.norm, positions=cfg.positions,
                max_positions=cfg.max_positions,
            )  # fmt: skip
        else:
            stack = init_stack(k_stack, cfg.cell, m, m, n, cfg.residual, cfg.layer_norm)
        p = {
            "emb": init_embedding(k_emb, vocab_size, m),
            "stack": stack,
            "out_bias": declare(jnp.zeros((vocab_size,), jnp.float32), ("vocab",)),
        }
        if not cfg.tie_output:
            p["out"] = init_output(k_out, m, vocab_size, bias=False)["w"]  # [m, V]
        if final_ln:
            p["final_ln"] = init_layer_norm(m)
        return p

    def _final(params, h):
        return layer_norm(params["final_ln"], h) if final_ln else h

    def readout(params, h):
        w = params["out"] if "out" in params else params["emb"].T  # [m, V]
        return h @ w + params["out_bias"]

    def hidden(params, tokens, *, rng=None, return_intermediates=False):
        tokens = jnp.asarray(tokens)
        if tokens.ndim != 2:
            raise BadInputError(f"lm.apply: tokens must be [b, t], got shape {tokens.shape}")
        r_emb, r_stack = (None, None) if rng is None or rate == 0.0 else jax.random.split(rng)
        x = dropout(params["emb"][tokens] * scale, rate, r_emb, r_emb is None)  # [b, t, m]
        if mixed:
            h, outs = mixer_stack(
                params["stack"], mixers, x, dropout_rate=rate, rng=r_stack, return_layers=True
            )
        elif attention:
            h, outs = attn_stack.decoder_only(
                params["stack"], x, dropout_rate=rate, rng=r_stack, return_layers=True, **stack_kw
            )
        else:
            _, h, outs = run_stack(
                params["stack"], x, cell=cfg.cell, residual=cfg.residual, dropout_rate=rate,
                rng=r_stack, hoist=hoist, vjp=vjp, return_intermediates=True,
            )  # fmt: skip
        h = _final(params, h)
        return (h, {"layers": tuple(outs)}) if return_intermediates else h

    def apply(params, tokens, *, rng=None, return_intermediates=False):
        out = hidden(params, tokens, rng=rng, return_intermediates=return_intermediates)
        if return_intermediates:
            return readout(params, out[0]), out[1]
        return readout(params, out)

    def init_state(params, batch, max_len):
        if mixed:
            return mixer_stack_state(params["stack"], mixers, batch, max_len)
        if attention:
            return attn_stack.init_decoder_only_cache(params["stack"], batch, max_len)
        return zero_stack_carry(params["stack"], batch, cell=cfg.cell)

    def step(params, state, tokens):
        x_t = params["emb"][jnp.asarray(tokens)] * scale  # [b, m]
        if mixed:
            h, state = mixer_stack_step(params["stack"], mixers, state, x_t)
        elif attention:
            h, state = attn_stack.decoder_only_step(
                params["stack"], x_t[:, None], state, **stack_kw
            )
            h = h[:, 0]
        else:
            state, h = stack_step(params["stack"], state, x_t, cell=cfg.cell, residual=cfg.residual)
        return readout(params, _final(params, h)), state

    def layers(params):
        stack = params["stack"]
        if mixed:
            return list(stack["blocks"])
        if attention:
            return list(stack["layers"])
        norms = stack.get("ln")
        return [
            {"cell": p} if norms is None else {"cell": p, "ln": norms[i]}
            for i, p in enumerate(stack["layers"])
        ]

    return LanguageModel(
        cfg.family, cfg, vocab_size, init, apply, init_state, step, layers, hidden, readout
    )


def build_lm_once(config, vocab_size):
    """build_lm, one LanguageModel per distinct config and vocabulary: jit caches what it
    compiles by the model, so the runs of equal configs (every seed) share it."""
    return _build_lm_frozen(ml_collections.FrozenConfigDict(config), int(vocab_size))


@functools.cache
def _build_lm_frozen(config, vocab_size):
    return build_lm(config, vocab_size)


def token_nll(model, params, tokens):
    """-log p(tokens[:, t+1] | tokens[:, :t+1]) for every position t, [b, t - 1] float32."""
    logits = model.apply(params, tokens)[:, :-1].astype(jnp.float32)  # [b, t-1, V]
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, jnp.asarray(tokens)[:, 1:, None], axis=-1)[..., 0]


def state_bytes(model, params, length):
    """Bytes of the state `model` carries to read position `length` one token at a time: its
    decoding state (init_state(params, 1, length): the KV cache of capacity `length` for
    attention, the carries of a recurrence), its floating-point leaves as they are stored (a
    cache's integer fill counter is not content). Shapes only: nothing is computed."""
    state = jax.eval_shape(lambda p: model.init_state(p, 1, int(length)), params)
    leaves = jax.tree_util.tree_leaves(state)
    return int(
        sum(x.size * x.dtype.itemsize for x in leaves if jnp.issubdtype(x.dtype, jnp.floating))
    )
