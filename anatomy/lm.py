"""Decoder-only language models of either family behind one interface: embed, stack, read out.

Letters: b batch, t positions, m model width, V vocabulary, L layers.

    x_t    = s · E[w_t]                 E [V, m] ~ N(0, 1/m); s = √m for 'attention'
                                        (the Transformer's scale), 1 for 'recurrent'
    h      = Stack(x)                   [b, t, m], position t reads positions <= t only
             'attention'  anatomy.attention.decoder_only: L causal blocks with the
                          config's positions (sinusoidal / learned / rope / alibi / none)
                          and norm (post / pre / deepnorm / none; pre-LN adds a final LN)
             'recurrent'  anatomy.recurrence.stack: L LSTM or GRU layers, GNMT residuals
                          and LayerNorm on each layer's output as the config says
    logits = h Eᵀ + b (tie_output)  or  h W + b                       [b, t, V]

``build_lm(config, vocab_size) -> LanguageModel``, a NamedTuple of pure functions over a
frozen config (hashable, so a model can be a static argument of jax.jit):

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

``token_nll(model, params, tokens)`` is the next-token loss at every position, [b, t - 1]
(the loss per position at lengths L .. 8L of a context-length study); ``default_config``
gives each family's fields with a comment per field. The model knows no corpus and no
experiment; dropout, when on, needs an rng.
"""

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
from anatomy.recurrence import (
    check_stack_cell,
    init_stack,
    path_defaults,
    run_stack,
    stack_step,
    zero_stack_carry,
)

FAMILIES = ("attention", "recurrent")


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


def check_family(family, field="family"):
    """``family`` if it is one of FAMILIES, else BadInputError naming ``field`` and the choices."""
    if family not in FAMILIES:
        choices = ", ".join(repr(f) for f in FAMILIES)
        raise BadInputError(f"{field} must be one of {choices}; got {family!r}")
    return family


def default_config(family="attention"):
    """The fields of a ``family`` LM ('attention' | 'recurrent'), a comment per field."""
    check_family(family)
    c = ml_collections.ConfigDict()
    c.family = family  # 'attention' (decoder_only blocks) | 'recurrent' (an LSTM / GRU stack)
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
    else:
        c.cell = "lstm"  # 'lstm' | 'gru' (recurrence.STACK_CELLS)
        c.residual = False  # GNMT residuals around layers 2.. (Wu et al. 2016)
        c.layer_norm = False  # LayerNorm on every layer's output
    return c


def _check(config, vocab_size):
    check_family(config.get("family"), "lm: family")
    unknown = sorted(set(config.keys()) - set(default_config(config.family).keys()))
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
    else:
        check_stack_cell(config.cell, "lm: cell")


def build_lm(config, vocab_size):
    """The LanguageModel of ``config`` (a default_config(family), possibly edited) over a
    vocabulary of ``vocab_size`` ids. Unknown fields and choices are BadInputErrors."""
    config = ml_collections.ConfigDict(config)
    _check(config, vocab_size)
    cfg = ml_collections.FrozenConfigDict(config)
    m, n, rate = cfg.d_model, cfg.n_layers, cfg.dropout_rate
    attention = cfg.family == "attention"
    if attention:
        stack_kw = dict(
            norm=cfg.norm,
            residual=cfg.residual,
            positions=cfg.positions,
            rope_base=cfg.rope_base,
            rope_scale=cfg.rope_scale,
        )
        final_ln = cfg.norm == "pre"
    else:
        hoist, vjp = path_defaults.resolve(cfg.cell, where="lm")
        final_ln = False
    scale = jnp.sqrt(jnp.float32(m)) if attention else jnp.float32(1.0)

    def init(key):
        k_emb, k_stack, k_out = jax.random.split(key, 3)
        if attention:
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

    def _readout(params, h):
        if final_ln:
            h = layer_norm(params["final_ln"], h)
        w = params["out"] if "out" in params else params["emb"].T  # [m, V]
        return h @ w + params["out_bias"]

    def apply(params, tokens, *, rng=None, return_intermediates=False):
        tokens = jnp.asarray(tokens)
        if tokens.ndim != 2:
            raise BadInputError(f"lm.apply: tokens must be [b, t], got shape {tokens.shape}")
        r_emb, r_stack = (None, None) if rng is None or rate == 0.0 else jax.random.split(rng)
        x = dropout(params["emb"][tokens] * scale, rate, r_emb, r_emb is None)  # [b, t, m]
        if attention:
            h, outs = attn_stack.decoder_only(
                params["stack"], x, dropout_rate=rate, rng=r_stack, return_layers=True, **stack_kw
            )
        else:
            _, h, outs = run_stack(
                params["stack"], x, cell=cfg.cell, residual=cfg.residual, dropout_rate=rate,
                rng=r_stack, hoist=hoist, vjp=vjp, return_intermediates=True,
            )  # fmt: skip
        logits = _readout(params, h)
        return (logits, {"layers": tuple(outs)}) if return_intermediates else logits

    def init_state(params, batch, max_len):
        if attention:
            return attn_stack.init_decoder_only_cache(params["stack"], batch, max_len)
        return zero_stack_carry(params["stack"], batch, cell=cfg.cell)

    def step(params, state, tokens):
        x_t = params["emb"][jnp.asarray(tokens)] * scale  # [b, m]
        if attention:
            h, state = attn_stack.decoder_only_step(
                params["stack"], x_t[:, None], state, **stack_kw
            )
            h = h[:, 0]
        else:
            state, h = stack_step(params["stack"], state, x_t, cell=cfg.cell, residual=cfg.residual)
        return _readout(params, h), state

    def layers(params):
        stack = params["stack"]
        if attention:
            return list(stack["layers"])
        norms = stack.get("ln")
        return [
            {"cell": p} if norms is None else {"cell": p, "ln": norms[i]}
            for i, p in enumerate(stack["layers"])
        ]

    return LanguageModel(cfg.family, cfg, vocab_size, init, apply, init_state, step, layers)


def token_nll(model, params, tokens):
    """-log p(tokens[:, t+1] | tokens[:, :t+1]) for every position t, [b, t - 1] float32."""
    logits = model.apply(params, tokens)[:, :-1].astype(jnp.float32)  # [b, t-1, V]
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, jnp.asarray(tokens)[:, 1:, None], axis=-1)[..., 0]
