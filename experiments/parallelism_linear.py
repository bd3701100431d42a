"""parallelism, the linear-recurrence rows: one minGRU (anatomy.recurrence.mingru) computed two ways.

    h_t = a_t ⊙ h_{t-1} + b_t      a_t = 1 - z_t, b_t = z_t ⊙ h̃_t (gates from x_t only)

    jax.lax.scan              N serial steps forward + N backward: a loop of 2N trips
    jax.lax.associative_scan  no loop; a tree of combines whose depth grows as log N

experiments/parallelism.py times both beside the LSTM and attention and reads their compiled
programs; this module holds their loss, the analysis of loop steps and depth, and the claims.
"""

import jax.numpy as jnp
import numpy as np

from anatomy import probes
from anatomy.recurrence import init_mingru
from anatomy.recurrence import run as run_cell
from experiments.thresholds import (
    DEPTH_EXPONENT_TOL,
    LOG_DEPTH_EXPONENT,
    LOG_DEPTH_R2,
    STEPS_EXACT_TOL,
)


def init(key, cfg):
    """A square minGRU of width cfg.d."""
    return init_mingru(key, cfg.d, cfg.d)


def loss(parallel):
    def loss(params, x):
        return jnp.sum(run_cell("mingru", params, x, parallel=parallel)[1] ** 2)

    return loss


def analysis(raw):
    """minGRU scan vs associative scan: loop steps per token, depth against N and log2 N."""
    scan, assoc = raw["mingru_scan"], raw["mingru_assoc"]
    ns = np.array([r["n"] for r in scan], float)
    d_assoc = np.array([r["depth"] for r in assoc], float)
    slope, icpt = np.polyfit(np.log2(ns), d_assoc, 1)  # depth = icpt + slope · log2 N
    resid = d_assoc - (icpt + slope * np.log2(ns))
    r2 = 1.0 - float(np.sum(resid**2) / max(np.sum((d_assoc - d_assoc.mean()) ** 2), 1e-12))
    return {
        "mingru_scan_steps_per_token": float(np.polyfit(ns, [r["steps_hlo"] for r in scan], 1)[0]),
        "mingru_assoc_max_steps": max(r["steps_hlo"] for r in assoc),
        "depth_per_token": {
            k: float(np.polyfit(ns, [r["depth"] for r in raw[k]], 1)[0])
            for k in ("lstm", "mingru_scan")
        },
        "depth_exponent": {
            k: probes.fit_power_law(ns, [r["depth"] for r in raw[k]])["exponent"]
            for k in ("mingru_scan", "mingru_assoc")
        },
        "assoc_depth_per_doubling": float(slope),
        "assoc_depth_log2_r2": r2,
        "attention_depth_range": [
            min(r["depth"] for r in raw["attention"]),
            max(r["depth"] for r in raw["attention"]),
        ],
        "mingru_scan_over_assoc_time": {
            r["n"]: r["median_s"] / t["median_s"] for r, t in zip(scan, assoc)
        },
    }


def claims(a, raw, cores):
    """The claims about the minGRU's two computations (scan, associative scan)."""
    e_scan, e_assoc = a["depth_exponent"]["mingru_scan"], a["depth_exponent"]["mingru_assoc"]
    r2, per_doubling = a["assoc_depth_log2_r2"], a["assoc_depth_per_doubling"]
    n_max = max(r["n"] for r in raw["mingru_scan"])
    ratio = a["mingru_scan_over_assoc_time"][n_max]
    return [
        probes.Claim(
            "minGRU with jax.lax.scan: N serial steps (forward) + N (backward)",
            "2 steps per token",
            f"{a['mingru_scan_steps_per_token']:.3f} per token",
            probes.verdict(a["mingru_scan_steps_per_token"], 2.0, STEPS_EXACT_TOL),
        ),
        probes.Claim(
            "minGRU with jax.lax.associative_scan: no serial loop over positions",
            "0",
            str(a["mingru_assoc_max_steps"]),
            probes.holds(a["mingru_assoc_max_steps"] == 0),
        ),
        probes.Claim(
            "associative scan: serial depth grows as log N",
            f"depth ≈ a + b·log2 N (R² ≥ {LOG_DEPTH_R2}, ≤ N^{LOG_DEPTH_EXPONENT})",
            f"+{per_doubling:.0f} ops per doubling of N (R² {r2:.3f}), N^{e_assoc:.2f}",
            probes.holds(r2 >= LOG_DEPTH_R2 and e_assoc <= LOG_DEPTH_EXPONENT),
            "depth = critical path of the optimised HLO of grad (anatomy.probes.depth)",
        ),
        probes.Claim(
            "scan: serial depth grows linearly in N",
            "N^1",
            f"N^{e_scan:.2f} ({a['depth_per_token']['mingru_scan']:.1f} ops per token)",
            probes.verdict(e_scan, 1.0, DEPTH_EXPONENT_TOL),
        ),
        probes.Claim(
            f"minGRU time, jax.lax.scan over associative scan (N={n_max})",
            "> 1 where the hardware runs the log N levels' work in parallel",
            f"{ratio:.2f}x on {cores} cores ({a.get('device_kind') or 'device not recorded'})",
            probes.REPORTED,
            "its work against the scan's is measured by complexity (parallel_work)",
        ),
    ]
