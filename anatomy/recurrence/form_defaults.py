"""Which form each linear-recurrence mixer runs by default, per backend, and why.

Every form of a mixer computes the same function (tests/test_mixers.py holds each to a
float64 sequential twin, values and gradients); the forms differ only in speed and memory,
so the default is to be a measurement: ``python -m benchmarks.mixers`` (BENCHMARKS.md, "Linear
recurrences: forms against N"), forward + backward at N = 256 .. 16K, records it. That run
has not been recorded yet (BENCHMARKS.md says so): the table below is the reasoning that
follows, to be replaced by the run's choice. A backend without an entry takes the CPU's.

    vector states (rglru, mingru, mamba)   'sequential': one elementwise update per step;
                   the scan is memory-bound and the associative scan does ~2 log T times the
                   memory traffic (recurrentgemma's scan.py makes the same choice on CPU and GPU)
    matrix states (linear_attention, mlstm, mamba2, gated_deltanet)   'chunked': dense
                   matmuls inside each chunk, a state stored per chunk instead of per step
"""

import jax

from anatomy.errors import BadInputError

DEFAULTS = {  # backend -> {mixer: form}
    "cpu": {
        "linear_attention": "chunked",
        "rglru": "sequential",
        "mlstm": "chunked",
        "gated_deltanet": "chunked",
        "mamba2": "chunked",
        "mingru": "sequential",
        "mamba": "sequential",
    },
}


def default_form(name, backend=None):
    """The default form of mixer ``name`` on ``backend`` (None: jax.default_backend())."""
    backend = backend or jax.default_backend()
    table = DEFAULTS.get(backend, DEFAULTS["cpu"])
    if name not in table:
        raise BadInputError(f"no default form for mixer {name!r}; known: {sorted(table)}")
    return table[name]
