"""Training and measuring one contender: the fine-tune's optimiser (pre-training and fine-tune
both run anatomy.train.labelled.fit on every next token), the loss at every position, and the
retrieval probe. Every model (Transformer or LSTM) is causal, so the loss at position t
does not depend on how long the sequence runs past t: one pass over sequences of the longest
length gives the loss at every shorter length too (claims.value_loss reads it so).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from anatomy.compiling import jit_options


@functools.cache
def fine_tune_optimizer(learning_rate, warmup):
    """Adam, clipped at global norm 1, linear warmup then constant (a short fine-tune); one
    object per set of arguments (cached), as anatomy.train.labelled.optimizer."""
    w = max(int(warmup), 1)
    schedule = optax.join_schedules(
        [optax.linear_schedule(0.0, learning_rate, w), optax.constant_schedule(learning_rate)], [w]
    )
    return optax.flatten(optax.chain(optax.clip_by_global_norm(1.0), optax.adam(schedule)))


@functools.cache
def _outputs(model, first_value, n_values, options=()):
    """The jitted map tokens [C, N] -> (cross-entropy [C, N-1], the value named [C, N-1])."""

    def run(params, tokens):
        logits = model.apply(params, tokens[:, :-1])  # [C, N-1, vocab]
        ce = optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:])
        values = logits[..., first_value : first_value + n_values]  # [C, N-1, V]: value ids
        return ce, first_value + jnp.argmax(values, axis=-1)

    return jax.jit(run, compiler_options=jit_options(options))


def outputs(params, model, tokens, n_keys, n_values, chunk, options=()):
    """_outputs over `tokens` [R, N] in chunks of `chunk` rows (one compiled shape; the last
    chunk is padded with copies of the first row): (ce [R, N-1], named value [R, N-1])."""
    run = _outputs(model, int(n_keys), int(n_values), options)
    tokens = np.asarray(tokens)
    rows = tokens.shape[0]
    tokens = np.concatenate([tokens, np.repeat(tokens[:1], -rows % chunk, axis=0)])
    ces, named = [], []
    for i in range(0, tokens.shape[0], chunk):
        chunk_tokens = jnp.asarray(tokens[i : i + chunk])
        ce, v = run(params, chunk_tokens)
        ces.append(ce)
        named.append(v)
    ce, v = jax.device_get((jnp.concatenate(ces), jnp.concatenate(named)))
    return np.asarray(ce, np.float64)[:rows], np.asarray(v)[:rows]


def value_positions(n_positions):
    """Indices into a [N-1] per-position array that predict a value (token t odd: t-1 even)."""
    return np.arange(0, n_positions, 2)
