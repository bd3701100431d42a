"""The scan engines: how a recurrence is run over time, whatever the recurrence.

linear.py     the one linear recurrence h_t = a_t ⊙ h_{t-1} + b_t (vector or matrix state,
              diagonal or matrix transition, an outer-product write k vᵀ and a readout hᵀq)
              in three forms proven equal, 'sequential', 'associative' and 'chunked'
              (``linear_scan(..., form=)``), plus the quadratic (attention-like) form
              (``quadratic``); FORMS, CHUNK, check_form
runner.py     ``run``: a cell, given as its CellSpec (anatomy.mixers.get_cell), over a batch
              of sequences with jax.lax.scan: lengths, reverse, the hoisted input projection,
              the cell's own sequence form (a linear recurrence's, ``form=``) or its fused
              backward (``vjp='fused'``); ``bidirectional``
fused.py      the fused backward of a gated cell's scan (one matmul per backward step): an
              engine a cell feeds with its elementwise update (a FusedCell); the LSTM's and
              the GRU's (run_lstm, run_gru) are theirs, in anatomy/mixers/cells.py, since what
              they feed it is the cell's own formula
sequences.py  reverse_padded (each sequence reversed within its length) and the runners'
              input checks

Nothing here knows a particular mixer: the runner reads what it needs from the CellSpec it
is handed, and each mixer (anatomy.mixers) builds its sequence form on linear.py. Imports
only anatomy.errors below it (tests/test_layering.py).
"""

from anatomy.scan.fused import FusedCell, run_fused
from anatomy.scan.linear import CHUNK, FORMS, check_form, linear_scan, quadratic
from anatomy.scan.runner import bidirectional, run
from anatomy.scan.sequences import reverse_padded

__all__ = [
    "CHUNK",
    "FusedCell",
    "run_fused",
    "FORMS",
    "check_form",
    "linear_scan",
    "quadratic",
    "run",
    "bidirectional",
    "reverse_padded",
]
