"""Recurrences: cells (params, carry, x) -> (carry, y) and one scan runner over time.

cells.py  rnn / lstm / gru (reset after or before) cells, inits, zero carries, get_cell
scan.py   run (lengths, reverse, hoisted input projection), bidirectional
quasi.py  SRU / QRNN-style linear recurrences via jax.lax.associative_scan
"""

from anatomy.recurrence.cells import (
    CELLS,
    CellSpec,
    LSTMState,
    get_cell,
    gru_cell,
    gru_paper_cell,
    gru_paper_recur,
    gru_project,
    gru_recur,
    gru_zero_carry,
    init_gru,
    init_lstm,
    init_rnn,
    lstm_cell,
    lstm_project,
    lstm_recur,
    lstm_zero_carry,
    rnn_cell,
    rnn_project,
    rnn_recur,
    rnn_zero_carry,
)
from anatomy.recurrence.quasi import (
    init_sru,
    linear_recurrence,
    linear_recurrence_sequential,
    quasi_recurrence,
    sru,
)
from anatomy.recurrence.scan import bidirectional, reverse_padded, run

__all__ = [
    "CELLS",
    "CellSpec",
    "LSTMState",
    "get_cell",
    "init_rnn",
    "rnn_cell",
    "rnn_project",
    "rnn_recur",
    "rnn_zero_carry",
    "init_lstm",
    "lstm_cell",
    "lstm_project",
    "lstm_recur",
    "lstm_zero_carry",
    "init_gru",
    "gru_cell",
    "gru_paper_cell",
    "gru_project",
    "gru_recur",
    "gru_paper_recur",
    "gru_zero_carry",
    "run",
    "bidirectional",
    "reverse_padded",
    "linear_recurrence",
    "linear_recurrence_sequential",
    "quasi_recurrence",
    "init_sru",
    "sru",
]
