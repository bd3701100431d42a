"""Logical axes, declared where parameters are created (maxtext's kernel_axes, for dict pytrees).

Every init_* that creates arrays names each array's logical axes, one per dimension, with
declare() on what it returns:

    from anatomy.axes import declare

    LSTM_AXES = {"w_x": (None, "hidden"), "w_h": (None, "hidden"), "b": ("hidden",)}

    def init_lstm(key, d_in, d_hidden):
        ...
        return declare({"w_x": w_x, "w_h": w_h, "b": b}, LSTM_AXES)   # the same dict back

    def init_dense(key, d_in, d_out, axes=(None, None)):   # a call site names its axes
        return declare({"w": w, "b": b}, {"w": axes, "b": axes[1:]})

    out_bias = declare(jnp.zeros((V,)), ("vocab",))        # a bare array works too

declare() checks (always, traced or not) that every array of `params` has an entry of its
rank in `axes` (entries for arrays absent, e.g. optional biases, are allowed) and returns
`params` itself. An init built only from other inits (a Transformer layer from init_mha,
init_ffn, init_layer_norm) declares nothing: its pieces already did. A model's init needs
no table of its own either; it only declares arrays it creates inline.

trace(init_fn, *args) runs init_fn under jax.eval_shape (no FLOPs, no memory) while
recording each declared array, then reads the axes back by walking the params tree:
the result is a tree with the structure of params whose leaves are tuples of logical axis
names (None = not sharded). An array no declare() saw, e.g. one made by arithmetic on
declared arrays or returned from an inner jit / vmap, raises BadInputError naming its path:
nothing is replicated silently. (Declare the result again where such an array is made.)
Logical axis names map to mesh axes only in config (anatomy.sharding.rules.DEFAULT_RULES).

A leaf: it imports nothing of anatomy but the error type, so every layer can declare its axes
without importing anatomy.sharding (meshes, placement, the sharded steps); the sharding
package reads the declarations back through trace().

Why this design: parameters stay plain dicts of arrays (no boxed leaves for every function
that reads them), the axes sit next to the shapes they describe, and a model composes layers
without repeating their structure in a second tree that could drift from the first.
"""

from __future__ import annotations

import contextvars
from typing import Any

import jax

from anatomy.errors import BadInputError

# id(array) -> (array, axes) while trace() runs; None otherwise (declare only checks then).
_RECORD: contextvars.ContextVar[dict | None] = contextvars.ContextVar("axes_record", default=None)


def is_axes(t) -> bool:
    """True for one leaf of a logical-axes tree: a tuple of axis names (str) or None."""
    return isinstance(t, tuple) and all(e is None or isinstance(e, str) for e in t)


def _is_array(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _where(path) -> str:
    return "".join(f"[{k!r}]" for k in path) or "(the root)"


def declare(params, axes):
    """`params` unchanged, its arrays' logical `axes` checked and (inside trace) recorded.

    params: an array, or nested dicts / lists / tuples of arrays. axes: the same structure
    with an axes tuple per array (dict entries without an array are allowed). BadInputError,
    naming the path, on an array without an entry or whose rank differs from its entry's.
    """
    record = _RECORD.get()

    def walk(node, ax, path):
        if _is_array(node):
            if not is_axes(ax):
                raise BadInputError(
                    f"declare: parameter {_where(path)} of shape {tuple(node.shape)} has no "
                    f"logical axes (got {ax!r}; want a tuple of axis names or None)"
                )
            if len(ax) != node.ndim:
                raise BadInputError(
                    f"declare: parameter {_where(path)} has shape {tuple(node.shape)} but "
                    f"{len(ax)} logical axes {ax}"
                )
            if record is not None:
                record[id(node)] = (node, ax)
        elif isinstance(node, dict):
            if not isinstance(ax, dict):
                raise BadInputError(f"declare: {_where(path)} is a dict, its axes {ax!r} are not")
            for k, v in node.items():
                if k not in ax:
                    raise BadInputError(
                        f"declare: parameter {_where(path + (k,))} has no logical axes "
                        f"(declared: {sorted(map(str, ax))})"
                    )
                walk(v, ax[k], path + (k,))
        elif isinstance(node, (list, tuple)):
            if not isinstance(ax, (list, tuple)) or is_axes(ax) or len(ax) != len(node):
                raise BadInputError(
                    f"declare: {_where(path)} is a sequence of {len(node)}, its axes {ax!r} "
                    "are not one of the same length"
                )
            for i, (v, a) in enumerate(zip(node, ax)):
                walk(v, a, path + (i,))
        else:
            raise BadInputError(f"declare: {_where(path)} is not an array: {type(node).__name__}")

    walk(params, axes, ())
    return params


def _read_back(params, record) -> Any:
    def walk(node, path):
        if isinstance(node, dict):
            return {k: walk(v, path + (k,)) for k, v in node.items()}
        if isinstance(node, (list, tuple)) and not _is_array(node):
            return type(node)(walk(v, path + (i,)) for i, v in enumerate(node))
        hit = record.get(id(node))
        if hit is None or hit[0] is not node:
            shape = tuple(getattr(node, "shape", ()))
            raise BadInputError(
                f"parameter {_where(path)} (shape {shape}) has no declared logical axes: "
                "create it with an init that calls anatomy.axes.declare (see its "
                "module docstring), or declare it where the model makes it"
            )
        return hit[1]

    return walk(params, ())


def trace(init_fn, *args, **kwargs):
    """(axes tree, params shapes) of init_fn(*args, **kwargs), traced with jax.eval_shape.

    The axes tree has the structure of the params with an axes tuple per array; an array
    created without declare() raises BadInputError naming its path.
    """
    out = {}

    def recorded(*a, **kw):
        token = _RECORD.set({})
        try:
            params = init_fn(*a, **kw)
            out["axes"] = _read_back(params, _RECORD.get())
        finally:
            _RECORD.reset(token)
        return params

    shapes = jax.eval_shape(recorded, *args, **kwargs)
    return out["axes"], shapes


def check(axes, params) -> None:
    """BadInputError naming the path unless `axes` has `params`' structure and every axes
    tuple has its array's rank (params may be arrays or jax.ShapeDtypeStructs)."""
    ax_leaves, ax_def = jax.tree_util.tree_flatten(axes, is_leaf=is_axes)
    p_paths, p_def = jax.tree_util.tree_flatten_with_path(params)
    if ax_def != p_def or not all(map(is_axes, ax_leaves)):
        raise BadInputError(
            f"logical axes do not match the parameters' structure:\n  axes   {ax_def}\n"
            f"  params {p_def}"
        )
    for (path, x), ax in zip(p_paths, ax_leaves):
        if len(ax) != len(x.shape):
            raise BadInputError(
                f"parameter {jax.tree_util.keystr(path)} has shape {tuple(x.shape)} but "
                f"logical axes {ax}"
            )
