"""TrainState: everything that changes during training, as one pytree."""
from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


class TrainState(NamedTuple):
    """params: model parameters; opt_state: optax state; step: int32 [] optimiser steps taken.

    The data position and the dropout RNG are functions of `step` (batch k = f(seed, k),
    rng_k = fold_in(key(seed), k)), so this pytree plus the seed is the whole resumable state.
    """
    params: Any
    opt_state: Any
    step: jax.Array


def create_state(params, tx) -> TrainState:
    """A fresh TrainState at step 0 for `params` under optimiser `tx`."""
    return TrainState(params=params, opt_state=tx.init(params), step=jnp.zeros((), jnp.int32))


def as_dict(state: TrainState) -> dict:
    """The state as a plain dict (what the checkpoint stores)."""
    return {"params": state.params, "opt_state": state.opt_state, "step": state.step}


def from_dict(d: dict) -> TrainState:
    """Inverse of as_dict."""
    return TrainState(params=d["params"], opt_state=d["opt_state"], step=d["step"])


def all_finite(tree) -> bool:
    """True when every floating leaf of `tree` is finite (one host sync)."""
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)
              if jnp.issubdtype(jnp.asarray(x).dtype, jnp.inexact)]
    return bool(jnp.all(jnp.stack(leaves))) if leaves else True
