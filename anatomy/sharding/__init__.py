"""Scale-out: meshes from config, logical axis rules, NamedShardings, placement.

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

The sharded train / eval steps that glue these to training (shard_train_step,
shard_eval_step, state_shardings, sharded_steps, setup_train, train_kwargs, ensure_placed,
as_global_batch) live beside training, in anatomy.train.sharded; this package imports
nothing of anatomy.train.
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

__all__ = [
    "DEFAULT_RULES",
    "axis_size",
    "batch_sharding",
    "batch_spec",
    "check_batch_divides",
    "declare",
    "default_config",
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
    "shard_batch",
    "tree_specs",
]
