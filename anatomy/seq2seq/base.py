"""What every translator shares: the Translator interface, special tokens, checks.
(The small layers, dense and embedding, are anatomy.layers'.)

A Translator is a NamedTuple of pure functions closing over a static (frozen) config, so
it is hashable and can be a static argument of jax.jit (anatomy/decode.py relies on that).
Parameters are plain nested dicts of float32 arrays.
"""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import ml_collections

from anatomy.errors import BadInputError
from anatomy.mixers import CellSpec, get_cell, resolve_path
from anatomy.stack import check_stack_cell
from anatomy.tokens import BOS, EOS, PAD, UNK  # noqa: F401  (re-exported)


class Translator(NamedTuple):
    """A sequence-to-sequence model as pure functions (B batch, S source, T target, V vocab).

    name: registry name ('rnnenc', 'rnnsearch', 'luong', 'transformer').
    config: the model's hyperparameters (ml_collections.FrozenConfigDict).
    src_vocab_size, tgt_vocab_size: ints.
    init(key) -> params.
    apply(params, batch, *, rng=None, deterministic=True, return_intermediates=False)
        -> logits [B, T, V] teacher-forced on batch['tgt_in'] (source padding masked),
           or (logits, intermediates dict) when return_intermediates.
    encode(params, src [B, S] int32, src_len [B]) -> memory (pytree, leaves batch-leading).
    init_state(params, memory, max_len) -> decoder state (pytree, leaves batch-leading).
    step(params, memory, state, tokens [B] int32) -> (logits [B, V], state).
    """

    name: str
    config: ml_collections.FrozenConfigDict
    src_vocab_size: int
    tgt_vocab_size: int
    init: Callable
    apply: Callable
    encode: Callable
    init_state: Callable
    step: Callable


def check_choices(name, config, choices):
    """BadInputError unless every `config[field]` is one of `choices[field]`.

    name: the model ('rnnsearch'); choices: {field: tuple of allowed values}, a model module's
    CHOICES, which build() passes here so that every model checks its choices one way:
        "rnnsearch: cell must be one of lstm/gru/..., got 'tcn'"
    """
    for field, allowed in choices.items():
        if config[field] not in allowed:
            raise BadInputError(
                f"{name}: {field} must be one of {'/'.join(map(str, allowed))}, "
                f"got {config[field]!r}"
            )


def deep_encoder(name, config):
    """Whether a recurrent translator's encoder is a stack (config.n_layers > 1 or
    config.layer_norm; anatomy.stack) rather than its one plain layer (whose
    parameters and digits stay those of the one-layer model). BadInputError, naming the
    model and field, for n_layers < 1 or a stack of a cell other than 'lstm' / 'gru'."""
    n = config.n_layers
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise BadInputError(f"{name}: n_layers must be a positive integer, got {n!r}")
    for flag in ("residual", "layer_norm"):
        if not isinstance(config[flag], bool):
            raise BadInputError(f"{name}: {flag} must be True or False, got {config[flag]!r}")
    deep = n > 1 or config.layer_norm
    if deep:
        check_stack_cell(config.cell, f"{name}: cell")
    return deep


class RecurrentBuild(NamedTuple):
    """What a recurrent translator's build() starts from (see recurrent_build)."""

    cfg: ml_collections.FrozenConfigDict  # the checked config, frozen
    spec: CellSpec  # its cell (mixers.get_cell)
    hoist: bool  # the recurrent path (mixers.resolve_path)
    vjp: str
    deep: bool  # the encoder is a stack (deep_encoder)


def recurrent_build(name, config, choices):
    """A recurrent translator's config checked (check_choices, deep_encoder) and frozen, its
    cell and its recurrent path: a RecurrentBuild."""
    check_choices(name, config, choices)
    cfg = freeze(config)
    spec = get_cell(cfg.cell)
    hoist, vjp = resolve_path(cfg.cell, cfg.hoist, cfg.vjp, where=name)
    return RecurrentBuild(cfg, spec, hoist, vjp, deep_encoder(name, cfg))


def source_mask(src_len, s_len):
    """[B, S] bool, True at real (non-padding) source positions."""
    return jnp.arange(s_len)[None, :] < jnp.asarray(src_len)[:, None]


def check_batch(batch, name):
    """Raise ValueError unless batch holds src [B,S], src_len [B], tgt_in [B,T] that agree."""
    missing = [k for k in ("src", "src_len", "tgt_in") if k not in batch]
    if missing:
        raise ValueError(f"{name}.apply: batch lacks {missing}; it has {sorted(batch)}")
    src, src_len, tgt = (jnp.asarray(batch[k]) for k in ("src", "src_len", "tgt_in"))
    if (
        src.ndim != 2
        or tgt.ndim != 2
        or src_len.shape != (src.shape[0],)
        or tgt.shape[0] != src.shape[0]
    ):
        raise ValueError(
            f"{name}.apply: want src [B,S], src_len [B], tgt_in [B,T]; got "
            f"{src.shape}, {src_len.shape}, {tgt.shape}"
        )
    return src, src_len, tgt


def check_src(src, src_len, name):
    """Validate encode's inputs: src [B, S] ints, src_len [B]."""
    src, src_len = jnp.asarray(src), jnp.asarray(src_len)
    if src.ndim != 2 or src_len.shape != (src.shape[0],):
        raise ValueError(
            f"{name}.encode: want src [B,S], src_len [B]; got {src.shape}, {src_len.shape}"
        )
    return src, src_len.astype(jnp.int32)


def freeze(config):
    """A hashable FrozenConfigDict of a ConfigDict (or dict)."""
    return ml_collections.FrozenConfigDict(config)


def intermediates_or_logits(logits, inter, return_intermediates):
    """apply's return convention."""
    return (logits, inter) if return_intermediates else logits


def dropout_keys(rng, n, deterministic, rate):
    """n PRNG keys for dropout sites, or n Nones (= no dropout) when deterministic or rate 0.

    Raises ValueError when dropout is on (deterministic=False, rate > 0) but rng is None.
    """
    if deterministic or rate == 0.0:
        return [None] * n
    if rng is None:
        raise ValueError("apply(deterministic=False) with dropout_rate > 0 needs an rng key")
    return list(jax.random.split(rng, n))


def teacher_forced_scan(recur, params, memory, state0, emb):
    """Run a decoder's one-step `recur(params, memory, state, emb_t) -> (state, outs)` over
    every target position with jax.lax.scan (teacher forcing), the same function `step` uses.

    emb [B, T, E] batch-major; returns `outs` with each leaf batch-major [B, T, ...].
    """

    def body(state, emb_t):
        return recur(params, memory, state, emb_t)

    _, outs = jax.lax.scan(body, state0, jnp.swapaxes(emb, 0, 1))  # scan over time: [T, B, E]
    return jax.tree_util.tree_map(lambda o: jnp.swapaxes(o, 0, 1), outs)  # [B, T, ...]
