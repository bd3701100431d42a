"""Logical axes: the models' parameters name them, config maps them to mesh axes.

Parameters are plain nested dicts, so their logical axes come from ONE table below, keyed on
what holds the leaf (recognised by the dict's keys, e.g. a dict with 'w_x' and 'w_h' is a
recurrent cell) plus the leaf's name, with the leaf's rank as a shape check. Anything the
table does not name, or whose rank differs, is replicated.

Logical axes: batch, length, embed (model width m / embedding size), heads, head_dim,
mlp (FFN width f, additive-attention width A), hidden (recurrent gate width G*H),
vocab. DEFAULT_RULES gives data parallelism over 'data' and tensor parallelism over 'model'
for attention heads, FFN/attention MLPs and the recurrent gate matmuls.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import jax
from jax.sharding import PartitionSpec

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

# What kind of module a dict of parameters is, from its keys (first match wins).
MODULE_KINDS = (
    ("recurrent", {"w_x", "w_h"}),  # anatomy.recurrence cells (rnn/lstm/gru)
    ("multihead", {"w_q", "w_k", "w_v", "w_o"}),  # anatomy.attention.init_mha
    ("ffn", {"w1", "w2"}),  # anatomy.attention.init_ffn
    ("additive", {"w_q", "w_k", "v"}),  # Bahdanau: W s, U h, v
    ("luong_concat", {"w", "v"}),  # Luong 'concat': v^T tanh(W [s; h])
    ("layer_norm", {"scale", "bias"}),
)
# A 2-D leaf whose name ends in 'emb' or 'embedding' is a token embedding [V, m].
EMBEDDING = re.compile(r"(^|_)(emb|embed|embedding)$")
# A dense {'w', 'b'} stored under one of these names projects to the vocabulary.
OUTPUT_NAMES = ("out", "output", "logits", "proj_out")

# (module kind, leaf name) -> logical axes, one per dimension (rank is checked).
PARAM_AXES = {
    ("embedding", "*"): ("vocab", "embed"),  # [V, m]
    ("output", "w"): ("embed", "vocab"),  # [d, V]
    ("output", "b"): ("vocab",),  # [V]
    (None, "out"): ("embed", "vocab"),  # a bare output matrix [m, V]
    (None, "out_bias"): ("vocab",),  # [V]
    ("multihead", "w_q"): ("embed", "heads", "head_dim"),  # [m, h, d]
    ("multihead", "w_k"): ("embed", "heads", "head_dim"),
    ("multihead", "w_v"): ("embed", "heads", "head_dim"),
    ("multihead", "b_q"): ("heads", "head_dim"),  # [h, d]
    ("multihead", "b_k"): ("heads", "head_dim"),
    ("multihead", "b_v"): ("heads", "head_dim"),
    ("multihead", "w_o"): ("heads", "head_dim", "embed"),  # [h, d, m]
    ("multihead", "b_o"): ("embed",),  # [m]
    ("ffn", "w1"): ("embed", "mlp"),  # [m, f]
    ("ffn", "b1"): ("mlp",),  # [f]
    ("ffn", "w2"): ("mlp", "embed"),  # [f, m]
    ("ffn", "b2"): ("embed",),  # [m]
    ("recurrent", "w_x"): (None, "hidden"),  # [d_in, G*H]
    ("recurrent", "w_h"): (None, "hidden"),  # [H, G*H]
    ("recurrent", "b"): ("hidden",),  # [G*H]
    ("recurrent", "b_x"): ("hidden",),  # GRU [3H]
    ("recurrent", "b_h"): ("hidden",),  # GRU [3H]
    ("additive", "w_q"): (None, "mlp"),  # [Dq, A]
    ("additive", "w_k"): (None, "mlp"),  # [Dk, A]
    ("additive", "v"): ("mlp",),  # [A]
    ("luong_concat", "w"): (None, "mlp"),  # [Dq+Dk, A]
    ("luong_concat", "v"): ("mlp",),  # [A]
    ("layer_norm", "scale"): ("embed",),
    ("layer_norm", "bias"): ("embed",),
}


def module_kind(node: dict, name: str) -> str | None:
    """The kind of parameter dict `node` (stored under key `name`), or None if unknown."""
    keys = set(node)
    if name in OUTPUT_NAMES and "w" in keys and keys <= {"w", "b"}:
        return "output"
    for kind, needed in MODULE_KINDS:
        if needed <= keys:
            return kind
    return None


def _leaf_axes(kind: str | None, name: str, ndim: int):
    """Logical axes of one leaf, or None (replicated) when the table has no matching row."""
    axes = PARAM_AXES.get((kind, name))
    if kind is None and ndim == 2 and EMBEDDING.search(name):
        axes = PARAM_AXES[("embedding", "*")]
    return axes if axes is not None and len(axes) == ndim else None


def logical_axes(params) -> Any:
    """A pytree like `params` whose leaves are tuples of logical axis names (None = unnamed).

    Unknown leaves get (None,) * ndim, i.e. replicated. Walks nested dicts, lists and tuples.
    """

    def walk(node, name, kind):
        if isinstance(node, dict):
            sub = module_kind(node, name)
            return {k: walk(v, str(k), sub) for k, v in node.items()}
        if isinstance(node, (list, tuple)) and not hasattr(node, "shape"):
            return type(node)(walk(v, name, kind) for v in node)
        ndim = len(getattr(node, "shape", ()))
        return _leaf_axes(kind, name, ndim) or (None,) * ndim

    return walk(params, "", None)


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


def param_specs(params, mesh, rules: Sequence = DEFAULT_RULES):
    """PartitionSpecs for every leaf of `params` (logical_axes + logical_to_spec)."""
    axes = logical_axes(params)
    return jax.tree.map(
        lambda a, x: logical_to_spec(a, x.shape, mesh, rules),
        axes,
        params,
        is_leaf=lambda t: isinstance(t, tuple) and all(e is None or isinstance(e, str) for e in t),
    )
