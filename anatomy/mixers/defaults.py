"""What runs unless a config says otherwise, per backend: one table, each row with its reason
and its source.

Two kinds of choice change speed and memory, never the function computed:

    form   how a sequence mixer of anatomy.mixers runs its recurrence: 'sequential'
           (jax.lax.scan, T serial steps), 'associative' (jax.lax.associative_scan, O(log T)
           depth), 'chunked' (dense products inside chunks of C positions, a state per chunk),
           'quadratic' (the masked T x T form: SSD's, linear attention's, and mLSTM's, which
           xLSTM calls its parallel form); a nonlinear cell (rnn, lstm, gru) has the one form
           'sequential'; each mixer's test_<mixer>_twin.py in tests/anatomy/mixers/ holds every
           form to a float64 sequential twin, values and gradients.
    path   how a translator's cell runs (anatomy.scan.run): hoist, the input projection as
           ONE [B·T, D] x [D, G·H] matmul before the scan (True) or inside each step (False);
           vjp, "autodiff" (JAX differentiates the scan) or "fused" (anatomy/scan/fused.py's
           custom VJP: one matmul per backward step, the weight gradients as one matmul over
           all steps); tests/anatomy/mixers/test_defaults.py holds every path to the hoisted
           autodiff one. anatomy.mixers.resolve_path fills a config's None from here.

A row is (backend, kind, name, choice, source, reason); '*' as the name is every other mixer or
cell of that kind, '*' as the backend every backend without a row of its own. A row's source
says whether a run chose it (measured: the command and where its numbers are) or an argument
did (reasoned: what a run would have to show). A backend with no form rows takes the CPU's.
"""

from typing import NamedTuple

import jax

from anatomy.errors import BadInputError

MEASURED_PATHS = "measured: `python -m benchmarks.run` (BENCHMARKS.md, the translators' steps)"
MEASURED_FORMS = (
    "measured: `python -m benchmarks.mixers` (BENCHMARKS.md, 'Linear recurrences: forms "
    "against N'; forward + backward, batch 1, width 64, N = 256 .. 16K, idle): the lowest "
    "geometric mean over N"
)
# geometric means over N in ms, from that block; what each choice rests on
FORM_REASONS = {
    "linear_attention": "chunked 9.51 < sequential 12.9 < associative 91.3; " + "{matrix}",
    "mlstm": "chunked 16.8 < sequential 22.5 < associative 74.8; " + "{matrix}",
    "gated_deltanet": "chunked 31.1 < sequential 63.5 < associative 125; " + "{matrix}",
    "mamba2": "chunked 21.2 < sequential 35.9 < associative 94.6; " + "{matrix}",
    "rglru": "associative 6.07 < sequential 6.67; " + "{vector}",
    "mingru": "associative 2.91 < sequential 2.96, a tie within the rounds' spread; " + "{vector}",
    "mamba": "associative 136 < sequential 157 (chunked over memory at 4K); " + "{vector}",
}
VECTOR_STATE = (
    "a vector state: the sequential scan is as fast or faster up to N = 4K, the associative "
    "scan's log depth wins at 16K and carries the mean (the chunked form does C times the "
    "state's work)"
)
MATRIX_STATE = "a matrix state: dense matmuls inside each chunk, a state per chunk, not per step"
MATRIX = ("linear_attention", "mlstm", "gated_deltanet", "mamba2")
NONLINEAR = ("rnn", "lstm", "gru")  # one form: no associative operator composes their steps
FUSED = ("lstm", "gru")  # the cells with a custom-VJP layer (their CellSpec's fused)


def _form(name, choice):
    kind = {"matrix": MATRIX_STATE, "vector": VECTOR_STATE}
    return Row("cpu", "form", name, choice, MEASURED_FORMS, FORM_REASONS[name].format(**kind))


class Row(NamedTuple):
    backend: str  # jax.default_backend()'s name, or '*'
    kind: str  # 'form' or 'path'
    name: str  # a mixer (form) or a cell (path), or '*'
    choice: object  # a form's name, or {'hoist': bool, 'vjp': 'autodiff' | 'fused'}
    source: str  # 'measured: ...' or 'reasoned: ...'
    reason: str


TABLE = (
    *(_form(name, "chunked") for name in MATRIX),
    *(_form(name, "associative") for name in ("rglru", "mingru", "mamba")),
    Row(
        "cpu",
        "form",
        "hgrn2",
        "sequential",
        "reasoned: not yet measured by `python -m benchmarks.mixers`",
        "a decay per key: its associative and chunked forms form every state [t, h, e, v] "
        "(the chunked readout path needs one decay per head), the sequential form one at a time",
    ),  # fmt: skip
    *(
        Row(
            "cpu",
            "form",
            name,
            "sequential",
            "reasoned: the only form a nonlinear recurrence has",
            "its next state needs the previous one through a nonlinearity: no associative "
            "operator composes two steps, so neither the associative nor the chunked form exists",
        )  # fmt: skip
        for name in NONLINEAR
    ),
    *(
        Row(
            "cpu",
            "path",
            cell,
            {"hoist": False, "vjp": "fused"},
            MEASURED_PATHS,
            "on 2 CPU cores the per-step projection was faster than the hoisted one, and the "
            "fused VJP faster again (the RNNenc train step 0.53x; the GRU layer's fwd+bwd "
            "0.67-0.9x of the hoisted autodiff path)",
        )  # fmt: skip
        for cell in FUSED
    ),
    Row(
        "cpu",
        "path",
        "*",
        {"hoist": False, "vjp": "autodiff"},
        MEASURED_PATHS,
        "the per-step projection, as for the cells that have a fused VJP (this cell has none)",
    ),  # fmt: skip
    Row(
        "*",
        "path",
        "*",
        {"hoist": True, "vjp": "autodiff"},
        "reasoned: not measured here (no accelerator was at hand)",
        "one large matmul is what accelerators are built for",
    ),  # fmt: skip
)


def row(kind, name, backend=None) -> Row:
    """The row that decides `kind` ('form' or 'path') for mixer or cell `name` on `backend`
    (None: jax.default_backend()): the most specific of (backend, name), (backend, '*'),
    ('*', name), ('*', '*'); a form on a backend without form rows is the CPU's."""
    if kind not in ("form", "path"):
        raise BadInputError(f"defaults: kind must be 'form' or 'path', got {kind!r}")
    backend = backend or jax.default_backend()
    rows = [r for r in TABLE if r.kind == kind]
    if kind == "form" and not any(r.backend == backend for r in rows):
        backend = "cpu"
    for b, n in ((backend, name), (backend, "*"), ("*", name), ("*", "*")):
        for r in rows:
            if (r.backend, r.name) == (b, n):
                return r
    known = sorted({r.name for r in rows if r.name != "*"})
    raise BadInputError(f"no default {kind} for {name!r}; known: {known}")


def default_form(name, backend=None):
    """The default form of mixer `name` on `backend` (None: jax.default_backend())."""
    return row("form", name, backend).choice


def default_path(cell, backend=None):
    """{'hoist': bool, 'vjp': 'autodiff' | 'fused'} for `cell` (a name) on `backend`
    (None: jax.default_backend())."""
    return dict(row("path", cell, backend).choice)
