"""decode_cost: what generating token N costs, in XLA FLOPs and measured latency, against N.

    rnn        one LSTM step (anatomy.mixers.cells.lstm_cell)                     O(d²)
    kv_cache   one Transformer layer step (self-attention + FFN): project the new
               token, append to a KVCache of N slots, attend over them             O(N·d) + O(d²)
    recompute  the same layer re-run over the whole prefix of N tokens
               (causal mask), keeping the last position                            O(N²·d) + O(N·d²)
    kv_fixed   the KV step with a cache of fixed capacity max(N) holding N tokens:
               XLA's static shapes attend over every slot, so its cost is flat in N
    window     the step with causal sliding-window attention of radius r: a rolling cache
               of r+1 slots (sliding_window.window_append), the last r+1 tokens        O(r·d) + O(d²)

Exponents are fitted on the total per-token FLOPs and on the N-dependent part
(total minus the same program's cost at N = 1, i.e. minus the O(d²) projections/FFN),
which is the part the O(·) claims are about. An exponent of 0 is earned: only a per-token
cost that is the same at every N (claims.flat_in_n) gets it without a fit; a cost that
changes with N is always fitted (n_dependent_fit).

One module per contender family builds its decoders (recurrent.py, attention.py, conv.py:
ConvS2S's GLU block with its K-1 input buffer); claims.py judges the fits (results.json);
plots.py draws them and writes report.md's tables and prose.
"""

import jax
import numpy as np

from anatomy import probes
from experiments.decode_cost import attention, claims, conv, plots, recurrent
from experiments.lab import record
from experiments.lab.progress import Progress

TITLE = "Decode cost per token: RNN step, KV cache, recomputation"  # of report.md


def programs(cfg, n, capacity=None):
    """(fn, args) of each decoder for generating token n (1-based); kv_fixed with a capacity."""
    x_t = jax.random.normal(jax.random.PRNGKey(cfg.seed + 1), (cfg.batch, 1, cfg.d))
    prefix = jax.random.normal(jax.random.PRNGKey(cfg.seed + 3), (cfg.batch, n, cfg.d))
    return {
        **recurrent.programs(cfg, x_t),
        **attention.programs(cfg, n, x_t, prefix, capacity),
        **conv.programs(cfg, x_t, prefix),  # ConvS2S's GLU block
    }


def measure(cfg):
    """{decoder: [dict(n, flops, bytes, median_s, ...)]} plus the cost at N = 1 per decoder."""
    cap = max(cfg.n_grid)
    raw = {k: [] for k in claims.EXPECTED}
    progress = Progress("decode_cost", len(cfg.n_grid) * len(raw))
    for n in cfg.n_grid:
        for name, (fn, args) in programs(cfg, n, capacity=cap).items():
            progress.step(f"{name} at N = {n}: FLOPs, then {cfg.repeats} timed steps")
            exe = probes.compiled(fn, *args)  # one compile: cost analysis, then timing
            cost = probes.cost_of(exe)
            t = probes.time_fn(exe, *args, warmup=cfg.warmup, repeats=cfg.repeats)
            raw[name].append(
                dict(
                    n=n,
                    flops=cost["flops"],
                    bytes=cost["bytes"],
                    median_s=t["median_s"],
                    min_s=t["min_s"],
                )
            )
    base = {
        name: probes.xla_cost(fn, *args)["flops"] for name, (fn, args) in programs(cfg, 1).items()
    }
    return raw, base


def n_dependent_fit(n, flops, per_token, prefix=False):
    """The exponent of the N-dependent part of a per-token cost, earned, never assumed.

    n, flops: the grid and the FLOPs per generated token there; per_token: the same program's
    FLOPs at N = 1 (the O(d²) work per processed token), subtracted once for a step and N
    times for a recomputed prefix (prefix=True). Three cases, in this order:
      * the per-token cost is the same at every N (claims.flat_in_n): exponent 0,
        r² 1, 'basis' 'flat' (nothing depends on N, and that was checked);
      * the excess over per_token is positive at every N: its power law, 'basis' 'excess';
      * otherwise (the cost changes with N but the subtraction leaves a value <= 0): the
        power law of the total, 'basis' 'total', so any growth with N still shows.
    """
    n, flops = np.asarray(n, float), np.asarray(flops, float)
    excess = flops - (n * per_token if prefix else per_token)
    spread = {"max_abs_excess": float(np.max(np.abs(excess)))}
    if claims.flat_in_n(flops):
        return {"exponent": 0.0, "prefactor": 0.0, "r2": 1.0, "basis": "flat", **spread}
    if np.all(excess > 0):
        return {**probes.fit_power_law(n, excess), "basis": "excess", **spread}
    return {**probes.fit_power_law(n, flops), "basis": "total", **spread}


def fits(cfg, raw, base):
    out = {}
    for name, rows in raw.items():
        n = [r["n"] for r in rows]
        flops = np.array([r["flops"] for r in rows])
        # the O(d²) work per processed token, measured at N = 1: once for a step, N times
        # for a recomputed prefix (its projections and FFN run at every position)
        out[name] = {
            "flops_total": probes.fit_power_law(n, flops),
            "latency": probes.fit_power_law(n, [r["median_s"] for r in rows]),
            "flops_n_dependent": n_dependent_fit(
                n, flops, base.get(name, flops[0]), prefix=name == "recompute"
            ),
        }
    return out


def run(config, workdir):
    """Measure, fit, write results.json, decode_cost.png and report.md."""
    started = record.start("decode_cost", config, workdir)
    raw, base = measure(config)
    png = plots.plot(config, raw, workdir)
    f = fits(config, raw, base)
    rnn_d = [{"d": d, "flops": recurrent.step_flops(config, d)} for d in config.d_grid]
    f["rnn_vs_d"] = probes.fit_power_law([r["d"] for r in rnn_d], [r["flops"] for r in rnn_d])
    # the window step's attention part against the window: total minus the r = 0 step
    win0 = attention.window_step_flops(config, 0)
    win_r = [
        {"radius": r, "slots": r + 1, "flops": attention.window_step_flops(config, r)}
        for r in config.window_radius_grid
    ]
    f["window_vs_r"] = probes.fit_power_law(
        [w["slots"] for w in win_r], [w["flops"] - win0 for w in win_r]
    )
    results = {
        "config": config.to_dict(),
        "fits": f,
        "raw": raw,
        "flops_at_n1": base,
        "rnn_vs_d": rnn_d,
        "window_vs_r": win_r,
        "plots": [png],
    }
    return started.finish(results, claims.table, TITLE, plots.sections(config, raw))
