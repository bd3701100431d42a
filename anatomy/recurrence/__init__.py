"""Recurrences: cells (params, carry, x) -> (carry, y) and one scan runner over time.

cells.py  rnn / lstm / gru (reset after or before) cells, inits, zero carries
registry.py  the cell registry: every cell as a CellSpec by name (get_cell), the linear
          recurrences among them ('sru', 'qrnn', 'mingru', 'mamba') and the fused paths
scan.py   run (lengths, reverse, hoisted input projection, fused VJP), bidirectional;
          sequences.py reverse_padded and the runners' input checks
fused.py  the custom-VJP LSTM and GRU (one matmul per backward step)
path_defaults.py  which path (hoist, vjp) a translator runs by default, per backend
quasi.py  SRU / QRNN-style linear recurrences via jax.lax.associative_scan; SRU, QRNN cells
mingru.py minGRU (Feng et al. 2024): gates from x only, a linear recurrence
selective.py  a Mamba-style selective state-space layer (Gu & Dao 2023), simplified
stack.py  deep LSTM / GRU stacks: n_layers, GNMT residuals, LayerNorm on each layer's output;
          one step at a time (stack_step) and bidirectional (torch's bidirectional num_layers)

Imports only anatomy.layers / anatomy.axes below it (tests/test_layering.py).

This namespace holds what a user composes: the cell registry (CELLS, LINEAR_CELLS,
FUSED_CELLS, CellSpec, get_cell), each cell's init and one-step form (init_lstm, lstm_cell,
...; gru_paper_cell shares init_gru) and its state type, the linear recurrences' sequence forms
(sru, qrnn, mingru, mamba; linear_recurrence, quasi_recurrence), the runners (run,
bidirectional, reverse_padded, path_defaults) and the stacks. A cell's hoisted steps (X_project,
X_recur, X_zero_carry) come from its CellSpec (get_cell(name).recur, ...) or its module.
"""

from anatomy.recurrence import path_defaults  # per-backend default paths (hoist, vjp)
from anatomy.recurrence.cells import (
    LSTMState,
    gru_cell,
    gru_paper_cell,
    init_gru,
    init_lstm,
    init_rnn,
    lstm_cell,
    rnn_cell,
)
from anatomy.recurrence.mingru import init_mingru, mingru, mingru_cell
from anatomy.recurrence.quasi import (
    QRNNState,
    SRUState,
    init_qrnn,
    init_sru,
    linear_recurrence,
    qrnn,
    qrnn_cell,
    quasi_recurrence,
    sru,
    sru_cell,
)
from anatomy.recurrence.registry import CELLS, FUSED_CELLS, LINEAR_CELLS, CellSpec, get_cell
from anatomy.recurrence.scan import bidirectional, run
from anatomy.recurrence.selective import MambaState, init_mamba, mamba, mamba_cell
from anatomy.recurrence.sequences import reverse_padded
from anatomy.recurrence.stack import (
    STACK_CELLS,
    check_stack_cell,
    init_stack,
    run_stack,
    stack_step,
    zero_stack_carry,
)

__all__ = [
    # the registry
    "CELLS",
    "FUSED_CELLS",
    "LINEAR_CELLS",
    "CellSpec",
    "get_cell",
    # cells: init, one step, state
    "init_rnn",
    "rnn_cell",
    "init_lstm",
    "lstm_cell",
    "LSTMState",
    "init_gru",
    "gru_cell",
    "gru_paper_cell",
    # linear recurrences
    "linear_recurrence",
    "quasi_recurrence",
    "init_sru",
    "sru",
    "sru_cell",
    "SRUState",
    "init_qrnn",
    "qrnn",
    "qrnn_cell",
    "QRNNState",
    "init_mingru",
    "mingru",
    "mingru_cell",
    "init_mamba",
    "mamba",
    "mamba_cell",
    "MambaState",
    # runners
    "run",
    "bidirectional",
    "reverse_padded",
    "path_defaults",
    # stacks
    "STACK_CELLS",
    "check_stack_cell",
    "init_stack",
    "run_stack",
    "stack_step",
    "zero_stack_carry",
]
