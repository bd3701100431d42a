"""Training a language model on labelled positions only: jitted AdamW steps whose loss is the
cross-entropy at the positions a task asks about (MQAR's queries, the copy of a string),
and the argmax there. recall and copy share it.

A batch is (tokens [B, T], task.Queries): the asked positions flat, (row, at) [P], their
answers [P] and a mask [P] (a batch padded to a fixed P); Zoology's loss and accuracy read
exactly these positions (labels != -100). Only they are read out: at V = 8,192 the readout
of every position would cost more than the whole stack.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from anatomy.compiling import jit_options
from experiments.recall.task import IGNORE, queries


def state_bytes(model, params, length):
    """Bytes of the state `model` carries to read position `length` one token at a time: its
    decoding state (init_state(params, 1, length): the KV cache of capacity `length` for
    attention, the carries of a recurrence), its floating-point leaves as they are stored (a
    cache's integer fill counter is not content). Shapes only: nothing is computed."""
    state = jax.eval_shape(lambda p: model.init_state(p, 1, int(length)), params)
    leaves = jax.tree_util.tree_leaves(state)
    return int(
        sum(
            np.prod(x.shape) * x.dtype.itemsize
            for x in leaves
            if jnp.issubdtype(x.dtype, jnp.floating)
        )
    )


def optimizer(learning_rate, warmup, steps, weight_decay):
    """Zoology's optimiser, AdamW (weight_decay on every parameter, as torch's AdamW) with a
    cosine decay to 0, after a linear warmup of `warmup` steps, clipped at global norm 1."""
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, learning_rate, max(int(warmup), 1), max(int(steps), int(warmup) + 1), 0.0
    )
    return optax.flatten(
        optax.chain(
            optax.clip_by_global_norm(1.0), optax.adamw(schedule, weight_decay=weight_decay)
        )
    )


def logits_at(model, params, tokens, row, at):
    """The logits [P, V] at (row, at) [P] of `tokens` [B, T]: the readout there only."""
    h = model.hidden(params, tokens)  # [B, T, m]
    return model.readout(params, h[row, at])  # [P, V]


def _ce_sum(model, params, tokens, q):
    """(summed cross-entropy, count) over the asked positions of one batch shape."""
    logits = logits_at(model, params, tokens, q.row, q.at).astype(jnp.float32)  # [P, V]
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, q.answer)  # [P]
    mask = q.mask.astype(jnp.float32)
    return jnp.sum(ce * mask), jnp.sum(mask)


def _loss(model, params, tokens, q):
    """Mean cross-entropy over the asked positions. tokens / q: one batch ([B, T],
    Queries), or a tuple of them, one per length (a mixture of lengths in one step: every
    asked position of every part weighs the same)."""
    if isinstance(tokens, (tuple, list)):
        parts = [_ce_sum(model, params, t, p) for t, p in zip(tokens, q, strict=True)]
        total, count = sum(p[0] for p in parts), sum(p[1] for p in parts)
    else:
        total, count = _ce_sum(model, params, tokens, q)
    return total / jnp.maximum(count, 1.0)


@functools.cache
def _train_step(model, opt, options=()):
    def step(params, state, tokens, q):
        loss, grads = jax.value_and_grad(functools.partial(_loss, model))(params, tokens, q)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    return jax.jit(step, compiler_options=jit_options(options))


def fit(params, model, batches, opt, options=()):
    """AdamW over `batches` (an iterable of (tokens [B, T], Queries), or of (tuple of tokens,
    tuple of Queries): one part per length of a mixture); options:
    anatomy.compiling.compiler_options(...). Returns (params, [loss per step])."""
    step, state, losses = _train_step(model, opt, options), opt.init(params), []
    for tokens, q in batches:
        params, state, loss = step(params, state, tokens, q)
        losses.append(loss)
    return params, [float(x) for x in jax.device_get(losses)]


@functools.cache
def _predict(model, options=()):
    def run(params, tokens, row, at):
        return jnp.argmax(logits_at(model, params, tokens, row, at), axis=-1)

    return jax.jit(run, compiler_options=jit_options(options))


def predict(params, model, tokens, labels, chunk, options=()):
    """The model's argmax [R, T] at the asked positions of `labels` [R, T] (IGNORE elsewhere,
    as the task's readers return theirs), over `tokens` [R, T] in chunks of `chunk` rows
    (one compiled shape: the last chunk is padded with copies of row 0)."""
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
