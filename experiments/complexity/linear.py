"""complexity's linear recurrences, minGRU and a Mamba-style selective SSM, each computed two
ways over N at d = d_fixed (``parallel_work``: their work against N):

    jax.lax.scan               O(N·d²): N serial steps, the loop body counted N times
    jax.lax.associative_scan   O(N·d²) up to a log factor: no loop, so XLA's count is complete
"""

import jax
import jax.numpy as jnp

from anatomy import probes
from anatomy.mixers.mamba import D_STATE, init_mamba, mamba
from anatomy.mixers.mingru import init_mingru, mingru

# linear recurrences two ways: name -> (init, layer fn(params, xs, form=...), state
# channels the recurrence runs over for width d: minGRU's H, Mamba's H·N)
SCANS = {
    "mingru": (init_mingru, mingru, lambda d: d),
    "mamba": (init_mamba, mamba, lambda d: d * D_STATE),
}


def linear_scan_cost(cfg, name, n, d, form):
    """FLOPs of one forward pass of a linear-recurrence layer (minGRU, Mamba) over N steps.

    form='sequential': jax.lax.scan, one loop of N trips, corrected as scan_cost does (its
    body, c_t = a_t ⊙ c_{t-1} + b_t over the layer's state channels, counted N times);
    form='associative': jax.lax.associative_scan, which must compile to no loop at all (else
    XLA would undercount it, and this raises).
    """
    init, layer, channels = SCANS[name]
    params = init(jax.random.PRNGKey(cfg.seed), d, d)
    xs = jax.random.normal(jax.random.PRNGKey(cfg.seed + 1), (cfg.batch, n, d), jnp.float32)

    def fn(p, x):
        return layer(p, x, form=form)[1]

    if form == "associative":
        exe = probes.compiled(fn, params, xs)
        loops = probes.while_loops(exe.as_text())
        if loops:
            raise ValueError(f"{name} by associative scan compiled to loops {loops}")
        return {**probes.cost_of(exe), "trip_count": 0}
    c = jnp.ones((cfg.batch, channels(d)))
    out = probes.scan_cost(fn, (params, xs), lambda c, a, b: a * c + b, (c, c, c))
    return {
        "flops": out["flops"],
        "bytes": out["bytes"],
        "flops_uncorrected": out["raw"]["flops"],
        "trip_count": out["trip_count"],
    }


def measure_scans(cfg):
    """{name_scan / name_assoc: {'n': [dict(flops, bytes, n, d) per N]}} at d = d_fixed."""
    raw = {}
    for name in cfg.linear_recurrences:
        for key, form in (("scan", "sequential"), ("assoc", "associative")):
            raw[f"{name}_{key}"] = {
                "n": [
                    dict(linear_scan_cost(cfg, name, n, cfg.d_fixed, form), n=n, d=cfg.d_fixed)
                    for n in cfg.n_grid
                ]
            }
    return raw


def fit_scans(cfg, raw):
    """Work against N of each linear recurrence both ways and the parallel/sequential FLOP
    ratio per N: {name: dict(n, scan_exponent, assoc_exponent, scan_r2, assoc_r2, ratio)}."""
    out = {}
    for name in cfg.linear_recurrences:
        scan, assoc = raw[f"{name}_scan"]["n"], raw[f"{name}_assoc"]["n"]
        ns = [p["n"] for p in scan]
        e_scan = probes.fit_power_law(ns, [p["flops"] for p in scan])
        e_assoc = probes.fit_power_law(ns, [p["flops"] for p in assoc])
        out[name] = {
            "n": ns,
            "scan_exponent": e_scan["exponent"],
            "assoc_exponent": e_assoc["exponent"],
            "scan_r2": e_scan["r2"],
            "assoc_r2": e_assoc["r2"],
            "ratio": [a["flops"] / s_["flops"] for a, s_ in zip(assoc, scan)],
        }
    return out
