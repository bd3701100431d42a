"""The cell registry: every recurrent cell as a CellSpec, by name, for ``get_cell`` and
``scan.run``.

    rnn, lstm, gru, gru_paper   the nonlinear cells (cells.py); lstm and gru also have a
                                custom-VJP layer (fused.py), their spec's ``fused``
    sru, qrnn                   linear recurrences (quasi.py)
    mingru                      (mingru.py)
    mamba                       (selective.py)

The linear recurrences' state obeys s_t = a_t ⊙ s_{t-1} + b_t with a_t, b_t read from x_t
alone, so besides the one-step ``cell`` (decoding) each has a ``sequence`` form,
``sequence(params, xs [B, T, D], carry0, *, lengths, parallel) -> (final carry, ys [B, T, H])``,
computed with ``jax.lax.associative_scan`` (parallel=True) or ``jax.lax.scan`` (False);
``scan.run`` hands whole sequences to it. ``from_hidden(params, h0 [B, H])`` is a carry that
starts from an output h0 (a translator's s_0): the state is set to h0 where it has the
output's shape (sru, qrnn, mingru) and to zero where it does not (mamba's [B, H, N]).

A new cell: its functions in a module of its own, named init_X, X_cell, X_project, X_recur,
X_zero_carry (``_spec``'s convention), and one ``_spec`` line below.
This module sits above the cells and fused.py and below scan.py, so nothing imports back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax.numpy as jnp

from anatomy.recurrence import cells as c
from anatomy.recurrence import fused
from anatomy.recurrence import mingru as mg
from anatomy.recurrence import quasi as q
from anatomy.recurrence import selective as sel


@dataclasses.dataclass(frozen=True, kw_only=True)
class CellSpec:
    """Everything the scan runner needs to know about a cell (keyword fields).

    name: registry key.
    init(key, d_in, d_hidden) -> params.
    cell(params, carry, x [B, D]) -> (carry, y [B, H])       (= recur ∘ project).
    project(params, x [..., D]) -> xw [..., G*H]             (hoistable input projection).
    recur(params, carry, xw [B, G*H]) -> (carry, y [B, H]).
    zero_carry(batch, d_hidden, dtype) -> carry.
    hidden(carry) -> h [B, H].
    sequence: None, or for a linear recurrence its whole-sequence form
      (params, xs [B, T, D], carry0, *, lengths, parallel) -> (final carry, ys [B, T, H]).
    from_hidden: None, or (params, h0 [B, H]) -> a carry starting from the output h0.
    fused: None, or the custom-VJP layer (fused.py) that scan.run(vjp="fused") calls:
      (params, xs, *, lengths, carry0, reverse, hoist) -> (final carry, ys [B, T, H]).
    """

    name: str
    init: Callable
    cell: Callable
    project: Callable
    recur: Callable
    zero_carry: Callable
    hidden: Callable
    sequence: Callable | None = None
    from_hidden: Callable | None = None
    fused: Callable | None = None


def _identity(carry):
    return carry


def _carry_h(carry):
    return carry.h


def _sru_from_hidden(params, h0):
    return q.SRUState(h0, h0)


def _qrnn_from_hidden(params, h0):
    return q.QRNNState(h0, h0, jnp.zeros(h0.shape[:-1] + (params["b"].shape[0],), h0.dtype))


def _mingru_from_hidden(params, h0):
    return h0


def _spec(module, name, hidden, *, shares=None, **forms):
    """The CellSpec of ``name`` from ``module``'s functions, named by the cells' convention:
    init_<name>, <name>_cell, <name>_project, <name>_recur, <name>_zero_carry. A variant that
    ``shares`` another cell's init, input projection and zero carry names that cell (gru_paper:
    'gru'). forms: the optional fields (sequence, from_hidden, fused)."""
    base = shares or name
    return CellSpec(
        name=name,
        init=getattr(module, f"init_{base}"),
        cell=getattr(module, f"{name}_cell"),
        project=getattr(module, f"{base}_project"),
        recur=getattr(module, f"{name}_recur"),
        zero_carry=getattr(module, f"{base}_zero_carry"),
        hidden=hidden,
        **forms,
    )


_NONLINEAR = (
    _spec(c, "rnn", _identity),
    _spec(c, "lstm", _carry_h, fused=fused.run_lstm),
    _spec(c, "gru", _identity, fused=fused.run_gru),
    _spec(c, "gru_paper", _identity, shares="gru"),
)

_LINEAR = (
    _spec(q, "sru", _carry_h, sequence=q.sru_sequence, from_hidden=_sru_from_hidden),
    _spec(q, "qrnn", _carry_h, sequence=q.qrnn, from_hidden=_qrnn_from_hidden),
    _spec(mg, "mingru", _identity, sequence=mg.mingru, from_hidden=_mingru_from_hidden),
    _spec(sel, "mamba", _carry_h, sequence=sel.mamba, from_hidden=sel.mamba_from_hidden),
)

CELLS = {s.name: s for s in _NONLINEAR + _LINEAR}  # name -> CellSpec, registration order
LINEAR_CELLS = {s.name: s for s in _LINEAR}  # the linear recurrences (spec.sequence set)
FUSED_CELLS = tuple(s.name for s in CELLS.values() if s.fused is not None)  # ('lstm', 'gru')


def get_cell(name):
    """The CellSpec registered as ``name`` (a key of CELLS: 'rnn', 'lstm', 'gru', 'gru_paper',
    or a linear recurrence: 'sru', 'qrnn', 'mingru', 'mamba').

    A CellSpec passes through unchanged, so functions can take either.
    """
    if isinstance(name, CellSpec):
        return name
    if name not in CELLS:
        raise ValueError(f"unknown cell {name!r}; choose one of {sorted(CELLS)}")
    return CELLS[name]
