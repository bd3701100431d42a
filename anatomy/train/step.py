"""The train and eval steps (pure functions) and the ONE place that wires jit for them.

train_step(state, batch, rng) -> (state, metrics) is pure; `compile_train_step` adds
jax.jit with buffer donation and `compile_eval_step` jax.jit without (both, when given, with
in/out shardings from anatomy.sharding).
Steps retrace once per distinct batch shape, i.e. once per length bucket.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from anatomy.errors import BadInputError
from anatomy.train.losses import sequence_loss
from anatomy.train.state import TrainState

COMPUTE_DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


def cast_floating(tree, dtype):
    """Cast every floating leaf of a pytree to `dtype` (ints untouched)."""
    return jax.tree.map(
        lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree
    )


def _compute_dtype(name: str):
    if name not in COMPUTE_DTYPES:
        raise BadInputError(
            f"Unknown compute_dtype {name!r}; choose one of {sorted(COMPUTE_DTYPES)}"
        )
    return COMPUTE_DTYPES[name]


def make_train_step(
    model,
    tx: optax.GradientTransformation,
    *,
    label_smoothing: float = 0.0,
    compute_dtype: str = "float32",
) -> Callable:
    """A pure train step for a Translator `model` (see anatomy.seq2seq).

    train_step(state: TrainState, batch: dict of [B,S]/[B,T] int32, rng: PRNG key)
        -> (new_state, metrics dict of float32 scalars: loss, nll, accuracy, tokens, grad_norm, lr-free)
    Master parameters stay float32; with compute_dtype='bfloat16' the forward/backward pass
    runs on a bfloat16 copy and the loss in float32.
    """
    dtype = _compute_dtype(compute_dtype)

    def loss_fn(params, batch, rng):
        p = params if dtype == jnp.float32 else cast_floating(params, dtype)
        logits = model.apply(p, batch, rng=rng, deterministic=False)
        return sequence_loss(logits, batch, label_smoothing)

    def train_step(state: TrainState, batch, rng):
        (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params, batch, rng)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = dict(metrics, grad_norm=optax.tree.norm(grads))
        return TrainState(params, opt_state, state.step + 1), metrics

    return train_step


def make_eval_step(model, *, compute_dtype: str = "float32") -> Callable:
    """eval_step(params, batch) -> metrics (unsmoothed loss, accuracy, tokens); deterministic."""
    dtype = _compute_dtype(compute_dtype)

    def eval_step(params, batch):
        p = params if dtype == jnp.float32 else cast_floating(params, dtype)
        logits = model.apply(p, batch, deterministic=True)
        return sequence_loss(logits, batch, 0.0)[1]

    return eval_step


def compile_train_step(
    train_step: Callable, *, donate: bool = True, in_shardings=None, out_shardings=None
) -> Callable:
    """jax.jit the train step: donate the old state's buffers, optionally pin shardings.

    in_shardings / out_shardings follow jax.jit (e.g. NamedSharding trees from
    anatomy.sharding for (state, batch, rng) and (state, metrics)); None leaves them to jit.
    """
    kwargs = {}
    if in_shardings is not None:
        kwargs["in_shardings"] = in_shardings
    if out_shardings is not None:
        kwargs["out_shardings"] = out_shardings
    return jax.jit(train_step, donate_argnums=(0,) if donate else (), **kwargs)


def compile_eval_step(eval_step: Callable, *, in_shardings=None, out_shardings=None) -> Callable:
    """jax.jit the eval step (no donation: params are reused), optionally pinning shardings.

    in_shardings / out_shardings as in compile_train_step, for (params, batch) and metrics.
    """
    kwargs = {}
    if in_shardings is not None:
        kwargs["in_shardings"] = in_shardings
    if out_shardings is not None:
        kwargs["out_shardings"] = out_shardings
    return jax.jit(eval_step, **kwargs)
