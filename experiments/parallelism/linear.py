"""parallelism, the linear-recurrence rows: one minGRU (anatomy.mixers.mingru) computed two ways.

    h_t = a_t ⊙ h_{t-1} + b_t      a_t = 1 - z_t, b_t = z_t ⊙ h̃_t (gates from x_t only)

    jax.lax.scan              N serial steps forward + N backward: a loop of 2N trips
    jax.lax.associative_scan  no loop; a tree of combines whose depth grows as log N

experiments/parallelism/__init__.py times both beside the LSTM and attention and reads their
compiled programs; this module builds them, counts their FLOPs and analyses their loop steps and
depth (their claims: experiments/parallelism/claims.py).
"""

import jax.numpy as jnp
import numpy as np

from anatomy import probes
from anatomy.mixers import get_cell
from anatomy.mixers.mingru import init_mingru
from anatomy.scan import run as run_cell


def init(key, cfg):
    """A square minGRU of width cfg.d."""
    return init_mingru(key, cfg.d, cfg.d)


def loss(form):
    def loss(params, x):
        return jnp.sum(run_cell(get_cell("mingru"), params, x, form=form)[1] ** 2)

    return loss


def scan_flops(exe, params, x):
    """FLOPs of one forward+backward pass by jax.lax.scan: 3 × the loop-corrected forward
    cost (XLA counts the loop body once)."""
    z = jnp.ones((x.shape[0], params["w"].shape[1] // 2))  # [B, H]
    fwd = probes.scan_cost(
        lambda p, x: run_cell(get_cell("mingru"), p, x, form="sequential")[1],
        (params, x),
        lambda h, a, b: a * h + b,  # one step: h_t = a_t ⊙ h_{t-1} + b_t
        (z, z, z),
    )
    return 3.0 * fwd["flops"]


def assoc_flops(exe, params, x):
    """FLOPs of one forward+backward pass by associative scan: XLA's count (no loops)."""
    return probes.cost_of(exe)["flops"]


# the same minGRU, its linear recurrence h_t = a_t ⊙ h_{t-1} + b_t computed two ways
LAYERS = {
    "mingru_scan": (loss("sequential"), init, scan_flops),
    "mingru_assoc": (loss("associative"), init, assoc_flops),
}


def analysis(raw):
    """minGRU scan vs associative scan: loop steps per token, depth against N and log2 N."""
    scan, assoc = raw["mingru_scan"], raw["mingru_assoc"]
    ns = np.array([r["n"] for r in scan], float)
    log_fit = probes.fit_log2(ns, [r["depth"] for r in assoc])  # depth = a + b · log2 N
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
        "assoc_depth_per_doubling": log_fit["per_doubling"],
        "assoc_depth_log2_r2": log_fit["r2"],
        "attention_depth_range": [
            min(r["depth"] for r in raw["attention"]),
            max(r["depth"] for r in raw["attention"]),
        ],
        "mingru_scan_over_assoc_time": {
            r["n"]: r["median_s"] / t["median_s"] for r, t in zip(scan, assoc)
        },
    }
