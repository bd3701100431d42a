"""Device meshes from config: named axes, `-1` fills with the remaining devices.

    config.mesh_shape = (-1, 1)              # data x model; -1 = every device left over
    config.mesh_axes = ('data', 'model')
    mesh = mesh_from_config(config)          # jax.sharding.Mesh over jax.devices()

A mesh that does not fit the device count is a ValueError here, before anything compiles.
Axes are `AxisType.Auto`: shardings come from the jit's in/out shardings and XLA's
propagation (the models are plain einsum code, not written for explicit sharding).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import ml_collections
from jax.sharding import AxisType, Mesh

from anatomy.errors import BadInputError
from anatomy.sharding.rules import DEFAULT_RULES


def default_config() -> ml_collections.ConfigDict:
    """The `config.sharding` block (a comment per field)."""
    c = ml_collections.ConfigDict()
    c.mesh_shape = (-1, 1)  # devices per mesh axis; one -1 takes every device left over
    c.mesh_axes = ("data", "model")  # names of the mesh axes, in order
    c.rules = DEFAULT_RULES  # (logical axis, mesh axis or None) pairs; see rules.py
    return c


def resolve_shape(shape: Sequence[int], n_devices: int) -> tuple[int, ...]:
    """Fill one `-1` in `shape` so that the product is `n_devices`; ValueError if it cannot fit.

    resolve_shape((-1, 2), 8) -> (4, 2);  resolve_shape((4, 4), 8) -> ValueError.
    """
    shape = tuple(int(s) for s in shape)
    if any(s == 0 or s < -1 for s in shape):
        raise BadInputError(f"mesh shape {shape}: every entry must be a positive int or -1")
    if shape.count(-1) > 1:
        raise BadInputError(f"mesh shape {shape}: at most one -1 (fill) entry")
    fixed = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if n_devices % fixed:
            raise BadInputError(
                f"mesh shape {shape} does not fit {n_devices} devices: "
                f"{n_devices} is not divisible by {fixed}"
            )
        shape = tuple(n_devices // fixed if s == -1 else s for s in shape)
    if math.prod(shape) != n_devices:
        raise BadInputError(
            f"mesh shape {shape} needs {math.prod(shape)} devices, but {n_devices} are available"
        )
    return shape


def make_mesh(
    shape: Sequence[int], axes: Sequence[str] = ("data", "model"), devices: Sequence | None = None
) -> Mesh:
    """A Mesh of `shape` (one -1 allowed) named `axes`, over `devices` (default: all, every process).

    Uses jax.make_mesh, which orders devices for the hardware's topology (rings on TPU).
    """
    axes = tuple(axes)
    if len(set(axes)) != len(axes) or not all(isinstance(a, str) and a for a in axes):
        raise BadInputError(f"mesh axes must be distinct non-empty names, got {axes}")
    if len(shape) != len(axes):
        raise BadInputError(f"mesh shape {tuple(shape)} and axes {axes} differ in length")
    devices = list(jax.devices() if devices is None else devices)
    shape = resolve_shape(shape, len(devices))
    return jax.make_mesh(shape, axes, axis_types=(AxisType.Auto,) * len(axes), devices=devices)


def mesh_from_config(config, devices: Sequence | None = None) -> Mesh:
    """make_mesh(config.mesh_shape, config.mesh_axes, devices) for a `default_config()`-like block."""
    return make_mesh(tuple(config.mesh_shape), tuple(config.mesh_axes), devices)


def axis_size(mesh: Mesh, axis: str | Sequence[str] | None) -> int:
    """Devices along a mesh axis (or the product over a tuple of axes); 1 for None."""
    if axis is None:
        return 1
    names = (axis,) if isinstance(axis, str) else tuple(axis)
    for a in names:
        if a not in mesh.shape:
            raise BadInputError(f"mesh axis {a!r} is not in the mesh {dict(mesh.shape)}")
    return math.prod(mesh.shape[a] for a in names)
