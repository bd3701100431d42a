"""Sharded training: train / eval steps jitted with in/out shardings and donation, under
jax.set_mesh, and what anatomy.train.train needs to run sharded (train_kwargs).

    step = shard_train_step(train_step, mesh, state_sh, batch_sh)
    state, metrics = step(state, local_batch, rng)    # local_batch: numpy rows of this process

The jits themselves are anatomy.train.step.compile_train_step / compile_eval_step (the ONE place
that wires jit and donation); this module only supplies shardings and turns host batches into
global arrays. It sits beside the training code it glues to anatomy.sharding (meshes, rules,
placement), which therefore never imports anatomy.train.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax

from anatomy.axes import trace
from anatomy.sharding.mesh import default_config, mesh_from_config
from anatomy.sharding.place import (
    batch_sharding,
    mirror_shardings,
    param_shardings,
    place,
    replicated,
    shard_batch,
)
from anatomy.sharding.rules import DEFAULT_RULES
from anatomy.train.optim import make_optimizer
from anatomy.train.state import create_state
from anatomy.train.step import (
    compile_eval_step,
    compile_train_step,
    make_eval_step,
    make_train_step,
)


def shard_train_step(
    train_step: Callable,
    mesh,
    state_shardings,
    batch_sharding_,
    *,
    donate: bool = True,
    global_batch: int | None = None,
) -> Callable:
    """Wrap a pure train_step(state, batch, rng) -> (state, metrics) for `mesh`.

    Returns step(state, batch, rng) -> (state, metrics): state must already be placed with
    `state_shardings` (see place / place_state; its buffers are donated); `batch` is a dict of
    host arrays holding THIS process's rows (all rows with one process), or of global
    jax.Arrays; rng and metrics are replicated. The batch size is checked against the data
    axis before the first compilation. `.jitted` is the underlying jax.jit function.
    """
    rep = replicated(mesh)
    jitted = compile_train_step(
        train_step,
        donate=donate,
        in_shardings=(state_shardings, batch_sharding_, rep),
        out_shardings=(state_shardings, rep),
    )

    def step(state, batch, rng):
        batch = as_global_batch(batch, batch_sharding_, global_batch)
        state = ensure_placed(state, state_shardings)
        rng = ensure_placed(rng, rep)
        with jax.set_mesh(mesh):
            return jitted(state, batch, rng)

    step.jitted = jitted
    return step


def shard_eval_step(
    eval_step: Callable, mesh, params_shardings, batch_sharding_, *, global_batch: int | None = None
) -> Callable:
    """Wrap eval_step(params, batch) -> metrics: params sharded, batch rows over data, no donation."""
    jitted = compile_eval_step(
        eval_step, in_shardings=(params_shardings, batch_sharding_), out_shardings=replicated(mesh)
    )

    def step(params, batch):
        batch = as_global_batch(batch, batch_sharding_, global_batch)
        params = ensure_placed(params, params_shardings)
        with jax.set_mesh(mesh):
            return jitted(params, batch)

    step.jitted = jitted
    return step


def ensure_placed(tree, shardings):
    """`tree` unchanged when every leaf already has its sharding, else place(tree, shardings).

    Lets the unsharded training loop (create_state, checkpoint restore) hand its state to a
    sharded step: the first call moves it, later calls find it in place.
    """
    if isinstance(shardings, jax.sharding.Sharding):
        shardings = jax.tree.map(lambda _: shardings, tree)
    leaves = jax.tree.leaves(tree)
    targets = jax.tree.leaves(shardings, is_leaf=lambda s: isinstance(s, jax.sharding.Sharding))
    if all(isinstance(x, jax.Array) and x.sharding == s for x, s in zip(leaves, targets)):
        return tree
    return place(tree, shardings)


def as_global_batch(batch: dict, sharding, global_batch: int | None = None) -> dict:
    """Leave global jax.Arrays alone; turn host rows into global arrays with shard_batch."""
    leaves = jax.tree.leaves(batch)
    if leaves and all(isinstance(x, jax.Array) and x.sharding == sharding for x in leaves):
        return batch
    return shard_batch(jax.tree.map(lambda x: jax.device_get(x), batch), sharding, global_batch)


def state_shardings(model, tx, mesh, rules: Sequence = DEFAULT_RULES):
    """(TrainState shardings, params shardings) from shapes alone (jax.eval_shape, no init);
    the parameters' logical axes are those model.init's layers declare (axes.trace)."""
    axes, _ = trace(model.init, jax.random.key(0))
    shapes = jax.eval_shape(lambda k: create_state(model.init(k), tx), jax.random.key(0))
    p_sh = param_shardings(shapes.params, mesh, rules, axes=axes)
    return mirror_shardings(shapes, shapes.params, p_sh), p_sh


def sharded_steps(
    model,
    tx,
    mesh,
    rules: Sequence = DEFAULT_RULES,
    *,
    label_smoothing: float = 0.0,
    compute_dtype: str = "float32",
    global_batch: int | None = None,
):
    """(train_step, eval_step, state_shardings) for a Translator `model` and optax `tx`.

    train_step(state, rows, rng) -> (state, metrics) and eval_step(params, rows) -> metrics
    accept an unplaced state / params (moved on the first call, see ensure_placed) and this
    process's rows of each batch as numpy.
    """
    s_sh, p_sh = state_shardings(model, tx, mesh, rules)
    b_sh = batch_sharding(mesh, rules)
    step = shard_train_step(
        make_train_step(model, tx, label_smoothing=label_smoothing, compute_dtype=compute_dtype),
        mesh,
        s_sh,
        b_sh,
        global_batch=global_batch,
    )
    eval_step = shard_eval_step(
        make_eval_step(model, compute_dtype=compute_dtype),
        mesh,
        p_sh,
        b_sh,
        global_batch=global_batch,
    )
    return step, eval_step, s_sh


def setup_train(
    model,
    tx,
    mesh,
    rules: Sequence = DEFAULT_RULES,
    *,
    key,
    params=None,
    label_smoothing: float = 0.0,
    compute_dtype: str = "float32",
    global_batch: int | None = None,
):
    """Everything a sharded run needs, for a Translator `model` and optax `tx`.

    Returns (state, train_step, eval_step): state a TrainState born sharded (params from
    model.init(key) inside one jit, or `params` when given), the steps from sharded_steps.
    """
    step, eval_step, s_sh = sharded_steps(
        model,
        tx,
        mesh,
        rules,
        label_smoothing=label_smoothing,
        compute_dtype=compute_dtype,
        global_batch=global_batch,
    )
    make = (
        (lambda k: create_state(model.init(k), tx))
        if params is None
        else (lambda p: create_state(p, tx))
    )
    with jax.set_mesh(mesh):
        state = jax.jit(make, out_shardings=s_sh)(key if params is None else params)
    return state, step, eval_step


def train_kwargs(
    model, train_config, sharding_config=None, *, global_batch: int | None = None
) -> dict:
    """Keyword arguments that make anatomy.train.train run sharded:

        train(model, batches, config.train, workdir,
              **sharded.train_kwargs(model, config.train, config.sharding))

    -> {'train_step': the sharded step, 'state_shardings': the TrainState's shardings}.
    train() builds a fresh TrainState as usual and the step moves it onto the mesh on the first
    call; a resumed state is restored by orbax straight into state_shardings, whatever mesh
    wrote the checkpoint (elastic resume). Every state it returns (and every checkpoint) is
    sharded. The mesh comes from `sharding_config` (default_config() when
    None: every device on the data axis). With several processes, also wrap `batches` with
    anatomy.distributed.local_batches so each process feeds only its rows.
    """
    cfg = default_config() if sharding_config is None else sharding_config
    step, _, s_sh = sharded_steps(
        model,
        make_optimizer(train_config),
        mesh_from_config(cfg),
        tuple(cfg.rules),
        label_smoothing=train_config.label_smoothing,
        compute_dtype=train_config.compute_dtype,
        global_batch=global_batch,
    )
    return {"train_step": step, "state_shardings": s_sh}
