"""Logical axes: the models' parameters name them, config maps them to mesh axes.

Each parameter's logical axes are declared by the init that creates it
(anatomy.axes.declare, whose docstring shows how a new init does it) and read
back by tracing the model's init (logical_axes(model.init, key), under jax.eval_shape). A
parameter no init declared is an error naming its path, never silently replicated.

Logical axes: batch, length, embed (model width m / embedding size), heads, head_dim,
mlp (FFN width f, additive-attention width A), hidden (recurrent gate width G*H),
vocab; None = a dimension that is never sharded. DEFAULT_RULES gives data parallelism over
'data' and tensor parallelism over 'model' for attention heads, FFN/attention MLPs and the
recurrent gate matmuls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
from jax.sharding import PartitionSpec

from anatomy import axes as _axes
from anatomy.errors import BadInputError

# (logical axis, mesh axis or None). Config may replace this (config.sharding.rules).
DEFAULT_RULES = (
    ("batch", "data"),
    ("length", None),
    ("embed", None),
    ("heads", "model"),
    ("head_dim", None),
    ("mlp", "model"),
    ("hidden", "model"),
    ("vocab", None),
)


def logical_axes(init_fn, *args) -> Any:
    """A pytree like init_fn(*args)'s params whose leaves are tuples of logical axis names
    (None = unnamed), as the inits declared them; BadInputError naming an undeclared one."""
    return _axes.trace(init_fn, *args)[0]


def rules_dict(rules: Sequence) -> dict:
    """Rules as {logical: mesh axis (str, tuple of str) or None}; ValueError on a malformed pair."""
    out = {}
    for pair in rules:
        if len(pair) != 2 or not isinstance(pair[0], str):
            raise BadInputError(f"sharding rule {pair!r} is not a (logical axis, mesh axis) pair")
        logical, target = pair
        out[logical] = tuple(target) if isinstance(target, (list, tuple)) else target
    return out


def logical_to_spec(
    axes: Sequence, shape: Sequence[int], mesh, rules: Sequence, *, strict: bool = False
) -> PartitionSpec:
    """PartitionSpec for an array of `shape` whose dimensions carry logical `axes`.

    A dimension maps to the mesh axis its rule names (absent / None: not sharded). A mesh
    axis of size 1 or one already used by an earlier dimension is dropped. A dimension the
    mesh axis does not divide is replicated, or a ValueError when `strict` (used for batches).
    """
    table = rules_dict(rules)
    spec, used = [], set()
    for dim, (logical, size) in enumerate(zip(axes, shape)):
        target = table.get(logical) if logical is not None else None
        names = () if target is None else ((target,) if isinstance(target, str) else target)
        for n in names:
            if n not in mesh.shape:
                raise BadInputError(
                    f"rule {logical!r} -> {target!r}: mesh axis {n!r} is not in "
                    f"the mesh {dict(mesh.shape)}"
                )
        names = tuple(n for n in names if mesh.shape[n] > 1 and n not in used)
        n_dev = 1
        for n in names:
            n_dev *= mesh.shape[n]
        if names and size % n_dev:
            if strict:
                raise BadInputError(
                    f"dimension {dim} ({logical!r}) of size {size} does not divide "
                    f"over mesh axis {names} of {n_dev} devices"
                )
            names = ()
        used.update(names)
        spec.append(None if not names else names[0] if len(names) == 1 else names)
    while spec and spec[-1] is None:
        spec.pop()
    return PartitionSpec(*spec)


def param_specs(params, mesh, rules: Sequence = DEFAULT_RULES, *, axes):
    """PartitionSpecs for every leaf of `params` (arrays or ShapeDtypeStructs) from their
    logical `axes` (a tree like params, e.g. logical_axes(model.init, key)) via logical_to_spec.
    BadInputError naming the parameter when axes and params disagree."""
    _axes.check(axes, params)
    return jax.tree.map(
        lambda a, x: logical_to_spec(a, x.shape, mesh, rules), axes, params, is_leaf=_axes.is_axes
    )
