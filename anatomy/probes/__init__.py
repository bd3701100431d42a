"""Probes: measure the three walls of the chapter.

gradients.py  ||∂L/∂x_t|| over distance, receptive fields, Pascanu's bound γ·σ_max(W_hh),
              clipping
cost.py       XLA cost analysis (FLOPs, bytes) with while-loop trip-count correction;
              serial steps read from the compiled HLO or the jaxpr
hlo.py        an optimised HLO module as data: instructions, bytes, how often each computation runs
op_cost.py    per-op FLOPs / bytes (XLA's rules) × runs: loop bodies counted by their trip counts
collectives.py  every collective of an SPMD program: kind, bytes, replica groups, runs, in a loop
roofline.py   the cost model: Σ max(FLOPs/peak, bytes/bandwidth) + latencies + α + bytes/β
hardware.py   hardware tables: named accelerators (published), this machine's (measured)
timing.py     warm-up + median wall time, process CPU time -> core utilisation
fitting.py    power-law exponents (log-log least squares), growth per doubling, per-step rates,
              where one cost curve overtakes another (crossover)
claims.py     Claim rows, the one verdict vocabulary (HOLDS ... MISSING), the one verdict rule
              (a Range against an Interval over seeds), their one writer
"""

from anatomy.probes.claims import (
    BOOTSTRAP_MIN,
    CODE_CHECK,
    DID_NOT_LEARN,
    FAILS,
    HOLDS,
    LEVEL,
    MIN_SEEDS,
    MISSING,
    NEEDS_ACCELERATOR,
    REPORTED,
    UNDECIDED,
    VERDICTS,
    Claim,
    Interval,
    Power,
    Range,
    beside,
    bootstrap_interval,
    claims_json,
    claims_markdown,
    estimate,
    exact,
    holds,
    judge,
    judged,
    judged_parts,
    power_from,
    seeds_needed,
    t_interval,
    under_load,
    weakest,
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
from anatomy.probes.fitting import crossover, fit_log2, fit_power_law, fit_power_law_2d, fit_rate
from anatomy.probes.gradients import (
    NONLINEARITY_DERIVATIVE_BOUND,
    by_distance,
    clip_by_global_norm,
    global_norm,
    input_grad_norms,
    pascanu_bound,
    random_orthogonal,
    receptive_field,
    scale_to_sigma,
    sigma_max,
    spectral_radius,
)
from anatomy.probes.hardware import ACCELERATORS, Hardware
from anatomy.probes.hlo import Module as HloModule
from anatomy.probes.op_cost import OpCost, op_costs
from anatomy.probes.roofline import predict, predict_text
from anatomy.probes.timing import n_cores, time_fn, timing_stats

__all__ = [
    "FAILS",
    "HOLDS",
    "MISSING",
    "UNDECIDED",
    "DID_NOT_LEARN",
    "NEEDS_ACCELERATOR",
    "CODE_CHECK",
    "BOOTSTRAP_MIN",
    "Power",
    "beside",
    "power_from",
    "seeds_needed",
    "REPORTED",
    "VERDICTS",
    "Claim",
    "claims_json",
    "claims_markdown",
    "holds",
    "LEVEL",
    "MIN_SEEDS",
    "Interval",
    "Range",
    "bootstrap_interval",
    "estimate",
    "exact",
    "judge",
    "judged",
    "judged_parts",
    "t_interval",
    "under_load",
    "weakest",
    "compiled",
    "compiled_sequential_steps",
    "cost_of",
    "hlo_sequential_steps",
    "jaxpr_sequential_steps",
    "scan_cost",
    "while_loops",
    "xla_cost",
    "ACCELERATORS",
    "Hardware",
    "HloModule",
    "OpCost",
    "op_costs",
    "predict",
    "predict_text",
    "crossover",
    "fit_log2",
    "fit_power_law",
    "fit_power_law_2d",
    "fit_rate",
    "NONLINEARITY_DERIVATIVE_BOUND",
    "by_distance",
    "clip_by_global_norm",
    "global_norm",
    "input_grad_norms",
    "pascanu_bound",
    "random_orthogonal",
    "receptive_field",
    "scale_to_sigma",
    "sigma_max",
    "spectral_radius",
    "n_cores",
    "time_fn",
    "timing_stats",
]
