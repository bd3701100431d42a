"""TrainState: everything that changes during training, as one pytree."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


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


def _dtype(x):
    """The dtype of an array leaf, or of a Python / NumPy scalar."""
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


@jax.jit
def _finite(leaves):
    """One reduction over a list of floating arrays -> bool [] (True when all are finite)."""
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]))


def all_finite(tree) -> bool:
    """True when every floating leaf of `tree` is finite.

    One jitted reduction and one host sync: leaves that span several processes take part in
    a single collective computation (eager per-leaf ops would each be one, and deadlock).
    """
    leaves = [x for x in jax.tree.leaves(tree) if jnp.issubdtype(_dtype(x), jnp.inexact)]
    return bool(_finite(leaves)) if leaves else True
