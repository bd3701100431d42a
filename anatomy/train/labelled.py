"""Training a language model (anatomy.lm.LanguageModel) by jitted optimiser steps, one per
batch, whose loss is the cross-entropy at the positions a task labels (MQAR's queries, the
copy of a string: `labelled_loss`) or at every next token (`next_token_loss`); and reading the
trained model out at the labelled positions.

A labelled batch is (tokens [B, T], Queries): the asked positions flat, (row, at) [P], their
answers [P] and a mask [P] (a batch padded to a fixed P), made by `queries` from labels
[B, T] that hold IGNORE wherever nothing is asked (Zoology's loss and accuracy read exactly
the positions where labels != -100). Only those positions are read out: at V = 8,192 the
readout of every position would cost more than the whole stack.

    optimizer(learning_rate, warmup, steps, weight_decay=None, end_value=0.0)
    fit(params, model, batches, opt, options=(), loss=labelled_loss, at=(), on=None)
        -> (params, [loss per step])
    predict(params, model, tokens, labels, chunk, options=())   argmax at the labelled positions
    mean_loss(params, model, held, chunk, options=())           mean cross-entropy there

options: anatomy.compiling.compiler_options(...); the compiled steps are cached by model,
optimiser and options, so equal models share one compiled step across seeds.
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from anatomy import lm
from anatomy.compiling import jit_options
from anatomy.errors import BadInputError

IGNORE = -100  # a label no loss or accuracy reads (Zoology's, and torch's ignore_index)


class Queries(NamedTuple):
    """The asked positions of a batch, flat: row [P], at [P] (position in the row), answer
    [P] (the label there), mask [P] (False on padding, when padded to a fixed size P)."""

    row: np.ndarray
    at: np.ndarray
    answer: np.ndarray
    mask: np.ndarray


def queries(labels, size=None):
    """The asked positions (labels != IGNORE) of `labels` [B, T], row by row, in order;
    padded to `size` entries (repeats of the first, masked out) when given."""
    labels = np.asarray(labels)
    row, at = np.nonzero(labels != IGNORE)
    n = len(row)
    if n == 0:
        raise BadInputError("queries: a batch needs at least one asked position")
    size = n if size is None else int(size)
    if size < n:
        raise BadInputError(f"queries: {n} asked positions do not fit a padded size of {size}")
    pad = size - n
    mask = np.arange(size) < n
    row, at = (
        np.concatenate([row, np.repeat(row[:1], pad)]),
        np.concatenate([at, np.repeat(at[:1], pad)]),
    )
    return Queries(
        row.astype(np.int32), at.astype(np.int32), labels[row, at].astype(np.int32), mask
    )


@functools.cache
def optimizer(learning_rate, warmup, steps, weight_decay=None, end_value=0.0):
    """Clipped at global norm 1, then Adam (weight_decay None) or AdamW (weight_decay on every
    parameter, as torch's AdamW), on a linear warmup of `warmup` steps to learning_rate and a
    cosine decay to end_value at `steps`. One object per set of arguments (cached), so the
    compiled steps keyed by it serve every seed.

    optax.flatten: the update runs on one vector of every parameter (the same arithmetic,
    elementwise), which compiles in ~1 s less per model than over the tree's leaves."""
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, learning_rate, max(int(warmup), 1), max(int(steps), int(warmup) + 1), end_value
    )
    if weight_decay is None:
        direction = optax.adam(schedule)
    else:
        direction = optax.adamw(schedule, weight_decay=weight_decay)
    return optax.flatten(optax.chain(optax.clip_by_global_norm(1.0), direction))


def logits_at(model, params, tokens, row, at):
    """The logits [P, V] at (row, at) [P] of `tokens` [B, T]: the readout there only."""
    h = model.hidden(params, tokens)  # [B, T, m]
    return model.readout(params, h[row, at])  # [P, V]


def _masked_ce(model, params, tokens, row, at, answer, mask):
    """(summed cross-entropy, count) over the positions (row, at) whose mask is set."""
    logits = logits_at(model, params, tokens, row, at).astype(jnp.float32)  # [P, V]
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, answer)  # [P]
    mask = mask.astype(jnp.float32)
    return jnp.sum(ce * mask), jnp.sum(mask)


def labelled_loss(model, params, tokens, q):
    """Mean cross-entropy over the asked positions. tokens / q: one batch ([B, T],
    Queries), or a tuple of them, one per length (a mixture of lengths in one step: every
    asked position of every part weighs the same)."""
    if isinstance(tokens, (tuple, list)):
        parts = [
            _masked_ce(model, params, t, p.row, p.at, p.answer, p.mask)
            for t, p in zip(tokens, q, strict=True)
        ]
        total, count = sum(p[0] for p in parts), sum(p[1] for p in parts)
    else:
        total, count = _masked_ce(model, params, tokens, q.row, q.at, q.answer, q.mask)
    return total / jnp.maximum(count, 1.0)


def next_token_loss(model, params, tokens):
    """Mean cross-entropy of every next token of tokens [B, T] (every position labelled)."""
    return jnp.mean(lm.token_nll(model, params, tokens))


@functools.cache
def _train_step(loss, model, opt, options=()):
    def step(params, state, *batch):
        value, grads = jax.value_and_grad(functools.partial(loss, model))(params, *batch)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, value

    return jax.jit(step, compiler_options=jit_options(options))


def fit(params, model, batches, opt, options=(), loss=labelled_loss, at=(), on=None):
    """`opt` over `batches`, each a tuple of the arguments `loss(model, params, *batch)` takes
    after the parameters: (tokens [B, T], Queries), or (tuple of tokens, tuple of Queries) for
    a mixture of lengths, for labelled_loss; (tokens [B, T],) for next_token_loss.
    on(step, params) after each step number in `at` (1 is the first step: a point of a curve
    along the training). Returns (params, [loss per step])."""
    step, state, losses = _train_step(loss, model, opt, options), opt.init(params), []
    at = {int(s) for s in at}
    for i, batch in enumerate(batches, 1):
        params, state, value = step(params, state, *batch)
        losses.append(value)
        if i in at:
            on(i, params)
    return params, [float(x) for x in jax.device_get(losses)]


@functools.cache
def _predict(model, options=()):
    def run(params, tokens, row, at):
        return jnp.argmax(logits_at(model, params, tokens, row, at), axis=-1)

    return jax.jit(run, compiler_options=jit_options(options))


def predict(params, model, tokens, labels, chunk, options=()):
    """The model's argmax [R, T] at the asked positions of `labels` [R, T] (IGNORE elsewhere),
    over `tokens` [R, T] in chunks of `chunk` rows (one compiled shape: the last chunk is
    padded with copies of row 0)."""
    tokens, labels = np.asarray(tokens), np.asarray(labels)
    rows = tokens.shape[0]
    pad = -rows % chunk
    tokens = np.concatenate([tokens, np.repeat(tokens[:1], pad, 0)])
    labels = np.concatenate([labels, np.repeat(labels[:1], pad, 0)])
    size = chunk * int((labels != IGNORE).sum(1).max())  # one padded size for every chunk
    run, out = _predict(model, options), np.full(labels.shape, IGNORE, np.int64)
    for i in range(0, tokens.shape[0], chunk):
        q = queries(labels[i : i + chunk], size)
        named = np.asarray(run(params, tokens[i : i + chunk], q.row, q.at))
        out[i + q.row[q.mask], q.at[q.mask]] = named[q.mask]
    return out[:rows]


@functools.cache
def _loss_sums(model, options=()):
    def run(params, tokens, row, at, answer, mask):
        return _masked_ce(model, params, tokens, row, at, answer, mask)

    return jax.jit(run, compiler_options=jit_options(options))


def mean_loss(params, model, held, chunk, options=()):
    """The mean cross-entropy (nats) over every labelled position of `held`, an iterable of
    (tokens [R, T], labels [R, T]), each read in chunks of `chunk` rows (the last one as it
    is: no padding)."""
    run, total, count = _loss_sums(model, options), 0.0, 0.0
    for tokens, labels in held:
        tokens, labels = np.asarray(tokens), np.asarray(labels)
        size = chunk * int((labels != IGNORE).sum(1).max())
        for i in range(0, tokens.shape[0], chunk):
            q = queries(labels[i : i + chunk], size)
            ce, n = run(params, tokens[i : i + chunk], q.row, q.at, q.answer,
                        q.mask.astype(np.float32))  # fmt: skip
            total, count = total + float(ce), count + float(n)
    return total / count
