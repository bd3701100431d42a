"""The linear-recurrence cells as CellSpecs: sru, qrnn (quasi.py), mingru (mingru.py) and
mamba (selective.py), registered beside rnn / lstm / gru so ``get_cell`` and ``scan.run``
take their names.

Their state obeys s_t = a_t ⊙ s_{t-1} + b_t with a_t, b_t read from x_t alone, so besides the
one-step ``cell`` (decoding) each has a ``sequence`` form,
``sequence(params, xs [B, T, D], carry0, *, lengths, parallel) -> (final carry, ys [B, T, H])``,
computed with ``jax.lax.associative_scan`` (parallel=True) or ``jax.lax.scan`` (False);
``scan.run`` hands whole sequences to it. ``from_hidden(params, h0 [B, H])`` is a carry that
starts from an output h0 (a translator's s_0): the state is set to h0 where it has the
output's shape (sru, qrnn, mingru) and to zero where it does not (mamba's [B, H, N]).
"""

import jax.numpy as jnp

from anatomy.recurrence import mingru as mg
from anatomy.recurrence import quasi as q
from anatomy.recurrence import selective as sel
from anatomy.recurrence.cells import CellSpec


def _carry_h(carry):
    return carry.h


def _identity(carry):
    return carry


def _sru_from_hidden(params, h0):
    return q.SRUState(h0, h0)


def _qrnn_from_hidden(params, h0):
    return q.QRNNState(h0, h0, jnp.zeros(h0.shape[:-1] + (params["b"].shape[0],), h0.dtype))


def _mingru_from_hidden(params, h0):
    return h0


LINEAR_CELLS = {
    "sru": CellSpec(
        "sru",
        q.init_sru,
        q.sru_cell,
        q.sru_project,
        q.sru_recur,
        q.sru_zero_carry,
        _carry_h,
        q.sru_sequence,
        _sru_from_hidden,
    ),
    "qrnn": CellSpec(
        "qrnn",
        q.init_qrnn,
        q.qrnn_cell,
        q.qrnn_project,
        q.qrnn_recur,
        q.qrnn_zero_carry,
        _carry_h,
        q.qrnn,
        _qrnn_from_hidden,
    ),
    "mingru": CellSpec(
        "mingru",
        mg.init_mingru,
        mg.mingru_cell,
        mg.mingru_project,
        mg.mingru_recur,
        mg.mingru_zero_carry,
        _identity,
        mg.mingru,
        _mingru_from_hidden,
    ),
    "mamba": CellSpec(
        "mamba",
        sel.init_mamba,
        sel.mamba_cell,
        sel.mamba_project,
        sel.mamba_recur,
        sel.mamba_zero_carry,
        _carry_h,
        sel.mamba,
        sel.mamba_from_hidden,
    ),
}
