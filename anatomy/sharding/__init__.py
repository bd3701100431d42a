"""Scale-out: meshes from config, logical axis rules, NamedShardings, sharded jitted steps.

Public API
    default_config() -> ConfigDict: mesh_shape (one -1 fills), mesh_axes, rules
    make_mesh(shape, axes=('data','model'), devices=None) -> Mesh   (ValueError if it does not fit)
    mesh_from_config(config) -> Mesh ; resolve_shape(shape, n_devices) ; axis_size(mesh, axis)
    DEFAULT_RULES: (logical axis, mesh axis) pairs
    declare(params, axes) -> params: how an init names its parameters' logical axes (axes.py)
    logical_axes(init_fn, *args) -> tree of logical-axis tuples, as the inits declared them
    logical_to_spec(axes, shape, mesh, rules)
    param_specs / param_shardings(params, mesh, rules, axes=) -> PartitionSpec / NamedSharding
    mirror_shardings(tree, params, params_shardings): TrainState / optax state by path + shape
    place(tree, shardings) ; place_state(state, params, mesh, rules, axes=) -> (state, shardings)
    batch_sharding(mesh, rules) ; shard_batch(local_rows, sharding, global_batch=None)
    row_slice(sharding, global_batch, process=None) -> (start, stop) rows a process loads
    shard_train_step(train_step, mesh, state_shardings, batch_sharding, donate=True)
    shard_eval_step(eval_step, mesh, params_shardings, batch_sharding)
    state_shardings(model, tx, mesh, rules) -> (TrainState shardings, params shardings)
    sharded_steps(model, tx, mesh, rules) -> (train_step, eval_step, state shardings)
    setup_train(model, tx, mesh, rules, key=...) -> (state, train_step, eval_step)
    train_kwargs(model, train_config, sharding_config) -> {'train_step', 'state_shardings'} for
        anatomy.train.train(model, batches, config.train, workdir, **kwargs)
"""

from anatomy.axes import declare
from anatomy.sharding.mesh import (
    axis_size,
    default_config,
    make_mesh,
    mesh_from_config,
    resolve_shape,
)
from anatomy.sharding.place import (
    batch_sharding,
    batch_spec,
    check_batch_divides,
    mirror_shardings,
    param_shardings,
    place,
    place_state,
    replicated,
    row_slice,
    shard_batch,
    tree_specs,
)
from anatomy.sharding.rules import (
    DEFAULT_RULES,
    logical_axes,
    logical_to_spec,
    param_specs,
)
from anatomy.sharding.steps import (
    as_global_batch,
    ensure_placed,
    setup_train,
    shard_eval_step,
    shard_train_step,
    sharded_steps,
    state_shardings,
    train_kwargs,
)

__all__ = [
    "DEFAULT_RULES",
    "as_global_batch",
    "axis_size",
    "batch_sharding",
    "batch_spec",
    "check_batch_divides",
    "declare",
    "default_config",
    "ensure_placed",
    "logical_axes",
    "logical_to_spec",
    "make_mesh",
    "mesh_from_config",
    "mirror_shardings",
    "param_shardings",
    "param_specs",
    "place",
    "place_state",
    "replicated",
    "resolve_shape",
    "row_slice",
    "setup_train",
    "shard_batch",
    "shard_eval_step",
    "shard_train_step",
    "sharded_steps",
    "state_shardings",
    "train_kwargs",
    "tree_specs",
]
