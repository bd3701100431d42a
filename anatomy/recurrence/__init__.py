"""Recurrences: cells (params, carry, x) -> (carry, y) and one scan runner over time.

cells.py  rnn / lstm / gru (reset after or before) cells, inits, zero carries
scan.py   run over a cell's CellSpec (lengths, reverse, hoisted input projection, fused VJP),
          bidirectional; sequences.py reverse_padded and the runners' input checks
fused.py  the custom-VJP LSTM and GRU (one matmul per backward step)
defaults.py  what runs unless a config says otherwise, per backend: a mixer's form, a
          translator cell's path (hoist, vjp); one table, each row with its reason and source
linear_scan.py  the one linear recurrence h_t = a_t ⊙ h_{t-1} + b_t (vector or matrix state,
          diagonal or matrix transition, an outer-product write k vᵀ and a readout hᵀq), in
          three forms proven equal: sequential, associative, chunked; the quadratic form
quasi.py  SRU / QRNN-style linear recurrences over it; SRU, QRNN cells
mingru.py minGRU (Feng et al. 2024): gates from x only, a linear recurrence
selective.py  a Mamba-style selective state-space layer (Gu & Dao 2023), simplified
linear_attention.py, rglru.py, mlstm.py, deltanet.py, ssd.py  the mixers of the modern
          recurrences (Katharopoulos et al. 2020; Griffin's RG-LRU; xLSTM's mLSTM; gated
          DeltaNet; Mamba-2's SSD): each X(params, x, state, *, form) -> (y, state), X_step,
          X_zero_state, init_X (anatomy.mixers names them and adds the short conv)
heads.py  the per-head projections they share

Every recurrence is registered once, by name, in anatomy.mixers (its MixerSpec, with the cell
part, a CellSpec, for those that are also cells: get_cell(name) is what run takes).
Imports only anatomy.layers / anatomy.axes below it (tests/test_layering.py).

This namespace holds what a user composes: each cell's init and one-step form (init_lstm,
lstm_cell, ...; gru_paper_cell shares init_gru) and its state type, the linear recurrences'
sequence forms (sru, qrnn, mingru, mamba; linear_scan, linear_recurrence, quasi_recurrence),
the mixers' functions (linear_attention, rglru, mlstm, gated_deltanet, mamba2: init, sequence
form, step, zero state, state type) and the runners (run, bidirectional, reverse_padded,
defaults). A cell's hoisted steps (X_project, X_recur, X_zero_carry) come from its CellSpec
(get_cell(name).recur, ...) or its module.
"""

from anatomy.recurrence import defaults  # per-backend default forms and paths
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
from anatomy.recurrence.defaults import default_form
from anatomy.recurrence.deltanet import (
    DeltaNetState,
    gated_deltanet,
    gated_deltanet_step,
    gated_deltanet_zero_state,
    init_gated_deltanet,
)
from anatomy.recurrence.linear_attention import (
    LinearAttentionState,
    init_linear_attention,
    linear_attention,
    linear_attention_step,
    linear_attention_zero_state,
)
from anatomy.recurrence.mingru import init_mingru, mingru, mingru_cell
from anatomy.recurrence.mlstm import MLSTMState, init_mlstm, mlstm, mlstm_step, mlstm_zero_state
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
from anatomy.recurrence.rglru import RGLRUState, init_rglru, rglru, rglru_step, rglru_zero_state
from anatomy.recurrence.selective import MambaState, init_mamba, mamba, mamba_cell
from anatomy.recurrence.ssd import SSDState, init_mamba2, mamba2, mamba2_step, mamba2_zero_state
from anatomy.scan.linear import FORMS, linear_scan, quadratic
from anatomy.scan.runner import bidirectional, run
from anatomy.scan.sequences import reverse_padded

__all__ = [
    # cells: init, one step, state
    "init_rnn",
    "rnn_cell",
    "init_lstm",
    "lstm_cell",
    "LSTMState",
    "init_gru",
    "gru_cell",
    "gru_paper_cell",
    # linear recurrences: the one entry point and its forms
    "FORMS",
    "linear_scan",
    "quadratic",
    "default_form",
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
    # the modern recurrences' mixers
    "init_linear_attention",
    "linear_attention",
    "linear_attention_step",
    "linear_attention_zero_state",
    "LinearAttentionState",
    "init_rglru",
    "rglru",
    "rglru_step",
    "rglru_zero_state",
    "RGLRUState",
    "init_mlstm",
    "mlstm",
    "mlstm_step",
    "mlstm_zero_state",
    "MLSTMState",
    "init_gated_deltanet",
    "gated_deltanet",
    "gated_deltanet_step",
    "gated_deltanet_zero_state",
    "DeltaNetState",
    "init_mamba2",
    "mamba2",
    "mamba2_step",
    "mamba2_zero_state",
    "SSDState",
    # runners
    "run",
    "bidirectional",
    "reverse_padded",
    "defaults",
]
