"""Training a language model on labelled positions only: jitted AdamW steps whose loss is the
cross-entropy at the positions a task asks about (MQAR's queries, the copy of a string),
and the argmax there. recall and copy share it.

A batch is (tokens [B, T], Queries): the positions asked about per row, at [B, Q], their
answers [B, Q] and a mask [B, Q] (rows with fewer than Q positions are padded); Zoology's
loss and accuracy read exactly these positions (labels != -100).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments.recall.task import Queries


def count_params(tree):
    return int(sum(np.prod(x.shape) for x in jax.tree_util.tree_leaves(tree)))


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


def logits_at(model, params, tokens, at):
    """The logits [B, Q, V] at positions `at` [B, Q] of `tokens` [B, T]."""
    logits = model.apply(params, tokens)  # [B, T, V]
    return jnp.take_along_axis(logits, at[..., None], axis=1)


def _loss(model, params, tokens, at, answer, mask):
    logits = logits_at(model, params, tokens, at).astype(jnp.float32)  # [B, Q, V]
    ce = optax.softmax_cross_entropy_with_integer_labels(logits, answer)  # [B, Q]
    return jnp.sum(ce * mask) / jnp.maximum(jnp.sum(mask), 1.0)


@functools.cache
def _train_step(model, opt):
    def step(params, state, tokens, at, answer, mask):
        loss, grads = jax.value_and_grad(functools.partial(_loss, model))(
            params, tokens, at, answer, mask
        )
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    return jax.jit(step)


def fit(params, model, batches, opt):
    """AdamW over `batches` (an iterable of (tokens [B, T], Queries)); returns (params,
    [loss per step])."""
    step, state, losses = _train_step(model, opt), opt.init(params), []
    for tokens, q in batches:
        mask = np.asarray(q.mask, np.float32)
        params, state, loss = step(params, state, tokens, q.at, q.answer, mask)
        losses.append(loss)
    return params, [float(x) for x in jax.device_get(losses)]


@functools.cache
def _predict(model):
    def run(params, tokens, at, answer):
        logits = logits_at(model, params, tokens, at).astype(jnp.float32)
        ce = optax.softmax_cross_entropy_with_integer_labels(logits, answer)
        return jnp.argmax(logits, axis=-1), ce

    return jax.jit(run)


def predict(params, model, tokens, q: Queries, chunk):
    """(argmax [R, Q], cross-entropy [R, Q]) at the asked positions of `tokens` [R, T], in
    chunks of `chunk` rows (one compiled shape: the last chunk is padded with row 0)."""
    tokens, at, answer = (np.asarray(x) for x in (tokens, q.at, q.answer))
    rows = tokens.shape[0]
    pad = -rows % chunk
    tokens, at, answer = (
        np.concatenate([x, np.repeat(x[:1], pad, 0)]) for x in (tokens, at, answer)
    )
    run, named, ces = _predict(model), [], []
    for i in range(0, tokens.shape[0], chunk):
        n, c = run(params, tokens[i : i + chunk], at[i : i + chunk], answer[i : i + chunk])
        named.append(n)
        ces.append(c)
    named, ces = jax.device_get((jnp.concatenate(named), jnp.concatenate(ces)))
    return np.asarray(named)[:rows], np.asarray(ces, np.float64)[:rows]
