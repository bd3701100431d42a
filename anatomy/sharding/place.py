"""NamedShardings for parameters, optimiser/train state and batches, and placing values.

    axes = logical_axes(model.init, key)               # as the inits declared them (axes.py)
    p_sh = param_shardings(params, mesh, rules, axes=axes)  # tree of NamedSharding like params
    s_sh = mirror_shardings(state, params, p_sh)       # TrainState / optax state: by path + shape
    state = place(state, s_sh)                         # host or device values -> global arrays
    b_sh = batch_sharding(mesh, rules)                 # rows over the data axis
    batch = shard_batch(local_batch, b_sh)             # this process's rows -> global arrays

Works the same with one process or many: placement goes through
jax.make_array_from_callback / make_array_from_process_local_data, never through one device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from anatomy.errors import BadInputError
from anatomy.sharding.rules import DEFAULT_RULES, logical_to_spec, param_specs, rules_dict


def _key_str(k) -> str:
    for attr in ("key", "name", "idx"):
        if hasattr(k, attr):
            return str(getattr(k, attr))
    return str(k)


def _path(path) -> tuple[str, ...]:
    return tuple(_key_str(k) for k in path)


def replicated(mesh) -> NamedSharding:
    """Every device holds the whole value."""
    return NamedSharding(mesh, PartitionSpec())


def param_shardings(params, mesh, rules: Sequence = DEFAULT_RULES, *, axes):
    """A tree like `params` of NamedSharding, from their logical `axes` and `rules`."""
    return jax.tree.map(
        lambda s: NamedSharding(mesh, s),
        param_specs(params, mesh, rules, axes=axes),
        is_leaf=lambda s: isinstance(s, PartitionSpec),
    )


def mirror_shardings(tree, params, params_sh):
    """Shardings for a tree that contains params-shaped leaves (TrainState, optax state).

    A leaf whose path ends with a parameter's path and whose shape equals that parameter's
    takes the parameter's sharding (Adam's mu/nu, the params inside a TrainState); every
    other leaf (step counters, scalars) is replicated.
    """
    flat_p = jax.tree_util.tree_flatten_with_path(params)[0]
    flat_s = jax.tree.leaves(params_sh, is_leaf=lambda s: isinstance(s, NamedSharding))
    table = {_path(p): (tuple(np.shape(x)), s) for (p, x), s in zip(flat_p, flat_s)}
    mesh = flat_s[0].mesh if flat_s else None
    depth = max((len(p) for p in table), default=0)

    def pick(path, x):
        path = _path(path)
        for start in range(max(len(path) - depth, 0), len(path)):
            hit = table.get(path[start:])
            if hit is not None and hit[0] == tuple(np.shape(x)):
                return hit[1]
        return replicated(mesh)

    return jax.tree_util.tree_map_with_path(pick, tree)


def place(tree, shardings):
    """Put every leaf of `tree` (numpy or jax arrays) on the devices of its sharding.

    Each process supplies the FULL value (identical everywhere, e.g. from the same seed) and
    only its addressable shards are copied; works across processes.
    """

    def put(x, s):
        if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            return jax.random.wrap_key_data(
                put(jax.random.key_data(x), s), impl=jax.random.key_impl(x)
            )
        if isinstance(x, jax.Array) and x.is_fully_addressable and s.is_fully_addressable:
            return jax.device_put(x, s)
        host = _host_value(x)
        return jax.make_array_from_callback(host.shape, s, lambda idx: host[idx])

    return jax.tree.map(put, tree, shardings)


def _host_value(x) -> np.ndarray:
    """The full value of `x` as numpy, also when `x` is a jax.Array spanning processes."""
    if not isinstance(x, jax.Array):
        return np.asarray(x)
    if x.is_fully_addressable:
        return np.asarray(jax.device_get(x))
    if x.is_fully_replicated:
        return np.asarray(x.addressable_data(0))
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(x, tiled=True))


def place_state(state, params, mesh, rules: Sequence = DEFAULT_RULES, *, axes):
    """(placed state, its shardings): shard a TrainState-like tree whose params are `params`
    (with logical `axes`, a tree like params)."""
    sh = mirror_shardings(state, params, param_shardings(params, mesh, rules, axes=axes))
    return place(state, sh), sh


def batch_spec(mesh, rules: Sequence = DEFAULT_RULES) -> PartitionSpec:
    """PartitionSpec of a batch leaf: dimension 0 over the mesh axis the 'batch' rule names."""
    target = rules_dict(rules).get("batch")
    if target is not None:
        names = (target,) if isinstance(target, str) else tuple(target)
        for n in names:
            if n not in mesh.shape:
                raise BadInputError(
                    f"rule 'batch' -> {target!r}: mesh axis {n!r} is not in "
                    f"the mesh {dict(mesh.shape)}"
                )
    return PartitionSpec(target)


def batch_sharding(mesh, rules: Sequence = DEFAULT_RULES) -> NamedSharding:
    """NamedSharding for batch leaves ([B, ...] rows split over the data axis)."""
    return NamedSharding(mesh, batch_spec(mesh, rules))


def check_batch_divides(global_batch: int, sharding: NamedSharding) -> None:
    """ValueError unless `global_batch` rows divide evenly over the sharding's batch axis."""
    spec = sharding.spec
    logical = ("batch",)
    rules = (("batch", spec[0] if len(spec) else None),)
    logical_to_spec(logical, (global_batch,), sharding.mesh, rules, strict=True)


def shard_batch(batch: dict, sharding: NamedSharding, global_batch: int | None = None) -> dict:
    """Global jax.Arrays from this process's rows of a batch (every leaf [B_local, ...]).

    With one process the local rows are the whole batch. `global_batch` defaults to
    B_local * (number of processes the data axis spans). A global batch that does not
    divide over the data axis is a ValueError, raised before anything compiles.
    """
    leaves = jax.tree.leaves(batch)
    if not leaves:
        return batch
    local_b = int(np.shape(leaves[0])[0])
    if global_batch is None:
        global_batch = local_b * data_processes(sharding)
    check_batch_divides(global_batch, sharding)

    def make(x):
        x = np.asarray(x)
        if x.shape[:1] != (local_b,):
            raise ValueError(f"batch leaves disagree on the batch size: {x.shape} vs {local_b}")
        return jax.make_array_from_process_local_data(sharding, x, (global_batch,) + x.shape[1:])

    return jax.tree.map(make, batch)


def data_processes(sharding: NamedSharding) -> int:
    """How many distinct row blocks the processes hold (1 when the data axis stays in one process)."""
    rows = sharding.mesh.size  # divides over any of its axes
    spans = {row_slice(sharding, rows, p) for p in range(jax.process_count())}
    return len(spans)


def row_slice(
    sharding: NamedSharding, global_batch: int, process: int | None = None
) -> tuple[int, int]:
    """(start, stop): the rows of a global batch that `process` (default: this one) must load."""
    process = jax.process_index() if process is None else process
    rows = [
        idx[0]
        for d, idx in sharding.devices_indices_map((global_batch,)).items()
        if d.process_index == process
    ]
    starts = [r.start or 0 for r in rows]
    stops = [global_batch if r.stop is None else r.stop for r in rows]
    start, stop = min(starts), max(stops)
    covered = sum(b - a for a, b in sorted(set(zip(starts, stops))))
    if covered != stop - start:
        raise ValueError(
            f"process {process}'s rows of the batch are not contiguous: "
            f"{sorted(set(zip(starts, stops)))}"
        )
    return start, stop


def tree_specs(tree) -> Any:
    """The PartitionSpec of every jax.Array leaf of `tree` (for tests and logging)."""
    return jax.tree.map(lambda x: x.sharding.spec, tree)
