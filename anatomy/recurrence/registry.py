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

A new cell: its functions in a module of its own, one CellSpec entry below (keyword fields).
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


_NONLINEAR = (
    CellSpec(
        name="rnn",
        init=c.init_rnn,
        cell=c.rnn_cell,
        project=c.rnn_project,
        recur=c.rnn_recur,
        zero_carry=c.rnn_zero_carry,
        hidden=_identity,
    ),
    CellSpec(
        name="lstm",
        init=c.init_lstm,
        cell=c.lstm_cell,
        project=c.lstm_project,
        recur=c.lstm_recur,
        zero_carry=c.lstm_zero_carry,
        hidden=_carry_h,
        fused=fused.run_lstm,
    ),
    CellSpec(
        name="gru",
        init=c.init_gru,
        cell=c.gru_cell,
        project=c.gru_project,
        recur=c.gru_recur,
        zero_carry=c.gru_zero_carry,
        hidden=_identity,
        fused=fused.run_gru,
    ),
    CellSpec(
        name="gru_paper",
        init=c.init_gru,
        cell=c.gru_paper_cell,
        project=c.gru_project,
        recur=c.gru_paper_recur,
        zero_carry=c.gru_zero_carry,
        hidden=_identity,
    ),
)

_LINEAR = (
    CellSpec(
        name="sru",
        init=q.init_sru,
        cell=q.sru_cell,
        project=q.sru_project,
        recur=q.sru_recur,
        zero_carry=q.sru_zero_carry,
        hidden=_carry_h,
        sequence=q.sru_sequence,
        from_hidden=_sru_from_hidden,
    ),
    CellSpec(
        name="qrnn",
        init=q.init_qrnn,
        cell=q.qrnn_cell,
        project=q.qrnn_project,
        recur=q.qrnn_recur,
        zero_carry=q.qrnn_zero_carry,
        hidden=_carry_h,
        sequence=q.qrnn,
        from_hidden=_qrnn_from_hidden,
    ),
    CellSpec(
        name="mingru",
        init=mg.init_mingru,
        cell=mg.mingru_cell,
        project=mg.mingru_project,
        recur=mg.mingru_recur,
        zero_carry=mg.mingru_zero_carry,
        hidden=_identity,
        sequence=mg.mingru,
        from_hidden=_mingru_from_hidden,
    ),
    CellSpec(
        name="mamba",
        init=sel.init_mamba,
        cell=sel.mamba_cell,
        project=sel.mamba_project,
        recur=sel.mamba_recur,
        zero_carry=sel.mamba_zero_carry,
        hidden=_carry_h,
        sequence=sel.mamba,
        from_hidden=sel.mamba_from_hidden,
    ),
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
