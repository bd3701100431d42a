"""Decoder-only language models of every family behind one interface: embed, stack, read out.

Letters: b batch, t positions, m model width, V vocabulary, L layers.

    x_t    = s · E[w_t]                 E [V, m] ~ N(0, 1/m); s = √m for 'attention'
                                        (the Transformer's scale), 1 otherwise
    x_t   += PE(t)                      sinusoidal or learned positions ('attention' only)
    h      = Stack(x)                   [b, t, m], anatomy.stack's one residual stack, position
                                        t reads positions <= t only; each family is a preset
                                        of its options (``preset``):
             'attention'  L attention mixers (RoPE / ALiBi inside), the config's norm (post
                          / pre / deepnorm / none; pre-LN adds a final LN) and residual, FFN
             'recurrent'  L LSTM or GRU mixers, GNMT residuals and LayerNorm on each
                          layer's output as the config says
             'mixer'      L pre-LN blocks, each a mixer of the registry (config.mixer:
                          linear_attention, rglru, mlstm, gated_deltanet, mamba2, mingru,
                          mamba, attention) and an MLP when d_ff > 0, a final LN;
                          config.pattern ('RRAR') puts softmax attention
                          (config.attention_config) at the 'A' layers
    logits = h Eᵀ + b (tie_output)  or  h W + b                       [b, t, V]

``build_lm(config, vocab_size) -> LanguageModel``, a NamedTuple of pure functions over a
frozen config (hashable, so a model can be a static argument of jax.jit; ``build_lm_once``
gives one model per distinct config):

    init(key) -> params           {'emb': [V, m], 'stack': {'blocks': [...]}, 'out_bias': [V]
                                   (+ 'out': [m, V] untied, + 'final_ln' for pre-LN,
                                   + 'positions': {'table'} for learned positions)}
    apply(params, tokens [b, t], *, rng=None, return_intermediates=False)
                                  -> logits [b, t, V] (logits[:, t] predicts tokens[:, t+1]);
                                  intermediates {'layers': (each layer's output [b, t, m])}
    init_state(params, batch, max_len) -> the decoding state: one per layer (a KVCache of
                                  capacity max_len for attention, a carry for a recurrence)
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
from anatomy.axes import declare
from anatomy.errors import BadInputError
from anatomy.layers import dropout, init_embedding, init_layer_norm, init_output, layer_norm
from anatomy.mixers import build_mixer, check_knobs, get_mixer
from anatomy.mixers import default_config as mixer_defaults
from anatomy.stack import (
    Stack,
    apply_stack,
    check_stack_cell,
    init_stack,
    init_stack_state,
    make_stack,
    parse_pattern,
    pre_ln_stack,
    recurrent_stack,
    stack_step,
)

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
    c.family = family  # 'attention' (Transformer) | 'recurrent' (LSTM / GRU) | 'mixer'
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


class Preset(NamedTuple):
    """What a family sets around the one stack: the stack, the embedding's scale and added
    positions (an Encoding, or None), and whether a final LN follows the stack."""

    stack: Stack
    scale: float
    positions: object
    final_ln: bool


def preset(cfg):
    """The family's stack options (anatomy.stack) and embedding, from its config:

    'attention'  attention mixers (RoPE / ALiBi inside them; sinusoidal / learned positions
                 added to the embedding, scaled by √m), norm and residual as configured,
                 the FFN, torch's dropout ('transformer'), keys 'split', a final LN when pre-LN
    'recurrent'  LSTM / GRU mixers, norm 'output' with layer_norm (else 'none'), residual
                 'from2' (GNMT) with residual, dropout 'between' layers, keys 'layer'
    'mixer'      the pattern's mixers, pre-LN, residual around both sub-layers, the MLP when
                 d_ff > 0, dropout on the 'branches', keys 'block', a final LN
    """
    m, n, rate = cfg.d_model, cfg.n_layers, cfg.dropout_rate
    if cfg.family == "attention":
        enc = encoding(cfg.positions, cfg.rope_base, cfg.rope_scale)
        inside = enc.kind if enc.kind in ("rope", "alibi") else "none"
        mixer = build_mixer(
            "attention", m, n_heads=cfg.n_heads, positions=inside, rope_base=enc.rope_base,
            rope_scale=enc.rope_scale,
        )  # fmt: skip
        stack = make_stack(
            (mixer,) * n, norm=cfg.norm, residual="all" if cfg.residual else "none",
            d_ff=cfg.d_ff, dropout="transformer", dropout_rate=rate, keys="split",
        )  # fmt: skip
        added = enc if enc.kind in ("sinusoidal", "learned") else None
        return Preset(stack, float(m) ** 0.5, added, cfg.norm == "pre")
    if cfg.family == "recurrent":
        stack = recurrent_stack(
            cfg.cell, m, n, residual=cfg.residual, layer_norm=cfg.layer_norm, dropout_rate=rate
        )
        return Preset(stack, 1.0, None, False)
    return Preset(pre_ln_stack(_mixers(cfg), cfg.d_ff, rate), 1.0, None, True)


def build_lm(config, vocab_size):
    """The LanguageModel of ``config`` (a default_config(family), possibly edited) over a
    vocabulary of ``vocab_size`` ids. Unknown fields and choices are BadInputErrors."""
    config = ml_collections.ConfigDict(config)
    _check(config, vocab_size)
    cfg = ml_collections.FrozenConfigDict(config)
    m, rate = cfg.d_model, cfg.dropout_rate
    stack, scale, added, final_ln = preset(cfg)
    scale = jnp.sqrt(jnp.float32(m)) if scale != 1.0 else jnp.float32(1.0)

    def init(key):
        k_emb, k_stack, k_out = jax.random.split(key, 3)
        p = {
            "emb": init_embedding(k_emb, vocab_size, m),
            "stack": init_stack(k_stack, stack),
            "out_bias": declare(jnp.zeros((vocab_size,), jnp.float32), ("vocab",)),
        }
        if added is not None and added.kind == "learned":  # its key: the stack's, folded
            n = len(stack.mixers)
            p["positions"] = added.init_table(jax.random.fold_in(k_stack, n), cfg.max_positions, m)
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
        if added is not None:
            x = x + added.added(x.shape[1], m, params.get("positions"))
        h, outs = apply_stack(params["stack"], stack, x, rng=r_stack, return_layers=True)
        h = _final(params, h)
        return (h, {"layers": tuple(outs)}) if return_intermediates else h

    def apply(params, tokens, *, rng=None, return_intermediates=False):
        out = hidden(params, tokens, rng=rng, return_intermediates=return_intermediates)
        if return_intermediates:
            return readout(params, out[0]), out[1]
        return readout(params, out)

    def init_state(params, batch, max_len):
        return init_stack_state(params["stack"], stack, batch, max_len)

    def step(params, state, tokens):
        x_t = params["emb"][jnp.asarray(tokens)] * scale  # [b, m]
        if added is not None:  # at the next position: the KV caches' fill, of their capacity
            cache = state[0]["mix"]
            pos = jnp.broadcast_to(cache.length, (x_t.shape[0],))  # [b]
            rows = added.added_at(pos, cache.k.shape[1], m, params.get("positions"))  # [b, m]
            x_t = (x_t[:, None] + rows[:, None])[:, 0]
        h, state = stack_step(params["stack"], stack, state, x_t)
        return readout(params, _final(params, h)), state

    def layers(params):
        return list(params["stack"]["blocks"])

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
