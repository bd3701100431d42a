"""Probes: measure the three walls of the chapter.

gradients.py  ||∂L/∂x_t|| over distance, Pascanu's bound γ·σ_max(W_hh), clipping
cost.py       XLA cost analysis (FLOPs, bytes) with while-loop trip-count correction;
              serial steps read from the compiled HLO or the jaxpr
timing.py     warm-up + median wall time, process CPU time -> core utilisation
fitting.py    power-law exponents (log-log least squares), per-step rates
claims.py     Claim rows, the one verdict vocabulary (HOLDS ... MISSING), their one writer
"""

from anatomy.probes.claims import (
    CAVEAT,
    FAILS,
    HOLDS,
    MISSING,
    NOT_SHOWN,
    REPORTED,
    VERDICTS,
    Claim,
    claims_json,
    claims_markdown,
    holds,
    verdict,
)
from anatomy.probes.cost import (
    compiled,
    compiled_sequential_steps,
    cost_of,
    hlo_sequential_steps,
    jaxpr_sequential_steps,
    scan_cost,
    while_loops,
    xla_cost,
)
from anatomy.probes.fitting import fit_power_law, fit_power_law_2d, fit_rate
from anatomy.probes.gradients import (
    NONLINEARITY_DERIVATIVE_BOUND,
    by_distance,
    clip_by_global_norm,
    global_norm,
    input_grad_norms,
    pascanu_bound,
    random_orthogonal,
    scale_to_sigma,
    sigma_max,
    spectral_radius,
)
from anatomy.probes.timing import n_cores, time_fn, timing_stats

__all__ = [
    "CAVEAT",
    "FAILS",
    "HOLDS",
    "MISSING",
    "NOT_SHOWN",
    "REPORTED",
    "VERDICTS",
    "Claim",
    "claims_json",
    "claims_markdown",
    "holds",
    "compiled",
    "compiled_sequential_steps",
    "cost_of",
    "hlo_sequential_steps",
    "jaxpr_sequential_steps",
    "scan_cost",
    "while_loops",
    "xla_cost",
    "fit_power_law",
    "fit_power_law_2d",
    "fit_rate",
    "verdict",
    "NONLINEARITY_DERIVATIVE_BOUND",
    "by_distance",
    "clip_by_global_norm",
    "global_norm",
    "input_grad_norms",
    "pascanu_bound",
    "random_orthogonal",
    "scale_to_sigma",
    "sigma_max",
    "spectral_radius",
    "n_cores",
    "time_fn",
    "timing_stats",
]
