"""Which recurrent path a translator runs unless its config says otherwise, per backend.

``scan.run`` has two switches that change speed, not the function computed:
    hoist   the input projection as ONE [B·T, D] x [D, G·H] matmul before the scan (True),
            or inside each step (False)
    vjp     "autodiff" (JAX differentiates the scan) or "fused" (fused.py's custom VJP: one
            matmul per backward step, the weight gradients as one matmul over all steps)
Both give the same values; gradients agree up to float rounding (tests/test_recurrence_fast.py).
The defaults are chosen by measurement (BENCHMARKS.md, `python -m benchmarks.run`):
    cpu     hoist=False, and vjp="fused" for the cells that have it (registry.FUSED_CELLS):
            on 2 CPU cores the per-step projection was faster than the hoisted one for the
            LSTM and the GRU, and the fused VJP faster again (the RNNenc train step 0.53x; the
            GRU layer's fwd+bwd 0.67-0.9x of the hoisted autodiff path)
    other   hoist=True, vjp="autodiff": not measured here (no accelerator was at hand); one
            large matmul is what accelerators are built for, so they keep the hoisted path.
A linear-recurrence cell (sru, qrnn, mingru, mamba) runs its own sequence form and ignores both.
"""

import jax

from anatomy.errors import BadInputError
from anatomy.recurrence.registry import FUSED_CELLS


def default_path(cell, backend=None):
    """{'hoist': bool, 'vjp': 'autodiff' | 'fused'} for ``cell`` (a name) on ``backend``
    (None = jax.default_backend())."""
    backend = jax.default_backend() if backend is None else backend
    if backend == "cpu":
        return {"hoist": False, "vjp": "fused" if cell in FUSED_CELLS else "autodiff"}
    return {"hoist": True, "vjp": "autodiff"}


def resolve(cell, hoist=None, vjp=None, backend=None, where="recurrence"):
    """(hoist, vjp): the given values, with None filled in from default_path. A vjp that is
    not "autodiff" / "fused", or "fused" for a cell without that path, is a BadInputError
    naming ``where`` (e.g. the model whose config asked for it)."""
    if vjp is not None and vjp not in ("autodiff", "fused"):
        raise BadInputError(f"{where}: vjp must be 'autodiff', 'fused' or None, got {vjp!r}")
    if vjp == "fused" and cell not in FUSED_CELLS:
        raise BadInputError(
            f"{where}: vjp='fused' exists for the cells {FUSED_CELLS}, not cell={cell!r}"
        )
    path = default_path(cell, backend)
    return (path["hoist"] if hoist is None else bool(hoist)), (path["vjp"] if vjp is None else vjp)
