"""complexity: Vaswani et al.'s Table 1 per-layer costs, measured from XLA's cost analysis.

For each layer, FLOPs of one forward pass from ``jax.jit(f).lower(...).compile()
.cost_analysis()`` over a grid of N (at fixed d) and of d (at fixed N), then exponents
fitted by least squares in log-log space against the theory:

    recurrent (LSTM, via anatomy.scan.run)    O(N·d²)
    self-attention, score+value part                O(N²·d)
    self-attention, whole layer (with projections)  O(N²·d + N·d²): the formula's own slope on the grid
    convolution, width k                            O(k·N·d²)
    windowed attention, 2r+1 keys, score+value      O(r·N·d)
    minGRU / Mamba-style SSM, jax.lax.scan          O(N·d²): N serial steps (loop-corrected)
    the same layers by jax.lax.associative_scan     O(N·d²) up to a log factor: no loop
                                                    (``parallel_work``: work against N only)

XLA counts a while-loop body once, not trip-count times; the recurrent layer is therefore
corrected with ``anatomy.probes.scan_cost`` (trip count read from the compiled HLO) and the
uncorrected numbers are kept in results.json to show the undercount.

One module per contender family builds and costs its layers (recurrent.py, attention.py,
conv.py, linear.py); claims.py judges the fits (results.json) against the theory; plots.py
draws them and writes report.md's prose.
"""

import numpy as np

from anatomy import probes
from experiments.complexity import attention, claims, conv, linear, plots, recurrent
from experiments.lab import record
from experiments.lab.progress import Progress

# layer -> (cost function, expected exponent along N, along d; None: the formula's own slope)
LAYERS = {
    "recurrent": (recurrent.recurrent_cost, 1.0, 2.0),
    "attention_core": (attention.attention_core_cost, 2.0, 1.0),
    "attention_layer": (attention.attention_layer_cost, None, None),
    "conv": (conv.conv_cost, 1.0, 2.0),
    "windowed_core": (attention.windowed_core_cost, 1.0, 1.0),
    "windowed_layer": (attention.windowed_layer_cost, None, None),
}

TITLE = "Per-layer complexity from XLA's cost analysis"  # of report.md


def measure(cfg, progress=None):
    """Every layer along the N grid and the d grid: {layer: {'n': [...], 'd': [...]}}."""
    say = progress.step if progress else lambda what: None
    raw = {}
    for layer, (fn, *_rest) in LAYERS.items():
        say(f"{layer} along N = {list(cfg.n_grid)} and d = {list(cfg.d_grid)}")
        along_n = [dict(fn(cfg, n, cfg.d_fixed), n=n, d=cfg.d_fixed) for n in cfg.n_grid]
        along_d = [dict(fn(cfg, cfg.n_fixed, d), n=cfg.n_fixed, d=d) for d in cfg.d_grid]
        raw[layer] = {"n": along_n, "d": along_d}
    say(f"conv along k = {list(cfg.kernel_grid)}, windowed core along r = {list(cfg.radius_grid)}")
    raw["conv"]["k"] = [
        dict(conv.conv_cost(cfg, cfg.n_fixed, cfg.d_fixed, k), k=k) for k in cfg.kernel_grid
    ]
    raw["windowed_core"]["r"] = [
        dict(attention.windowed_core_cost(cfg, cfg.n_fixed, cfg.d_fixed, r), r=r, window=2 * r + 1)
        for r in cfg.radius_grid
    ]
    return raw


def fit_all(cfg, raw):
    """Fitted exponents (FLOPs and bytes) and their expected values, per layer and axis."""
    fits = {}
    for layer, (_, exp_n, exp_d) in LAYERS.items():
        fits[layer] = {}
        for axis, key, expected in (("N", "n", exp_n), ("d", "d", exp_d)):
            pts = raw[layer][key]
            x = [p[key] for p in pts]
            f = probes.fit_power_law(x, [p["flops"] for p in pts])
            if expected is None:  # two-term layer: the formula's own slope on this grid
                fx = attention.formula_flops(
                    layer, x if key == "n" else cfg.n_fixed, x if key == "d" else cfg.d_fixed, cfg
                )
                expected = probes.fit_power_law(x, np.broadcast_to(fx, (len(x),)))["exponent"]
            f["expected"] = expected
            f["bytes_exponent"] = probes.fit_power_law(x, [p["bytes"] for p in pts])["exponent"]
            fits[layer][axis] = f
    for layer, key, xkey in (("conv", "k", "k"), ("windowed_core", "r", "window")):
        pts = raw[layer][key]
        f = probes.fit_power_law([p[xkey] for p in pts], [p["flops"] for p in pts])
        f["expected"] = 1.0
        fits[layer][xkey] = f
    unc = raw["recurrent"]["n"]
    fits["recurrent_uncorrected"] = probes.fit_power_law(
        [p["n"] for p in unc], [p["flops_uncorrected"] for p in unc]
    )
    return fits


def run(config, workdir):
    """Measure, fit, write results.json, complexity.png and report.md; returns the results."""
    started = record.start("complexity", config, workdir)
    progress = Progress("complexity", len(LAYERS) + 2)
    raw = measure(config, progress)
    fits = fit_all(config, raw)
    progress.step(f"linear recurrences {list(config.linear_recurrences)}, scan and associative")
    raw.update(linear.measure_scans(config))
    work = linear.fit_scans(config, raw)
    png = plots.plot(config, raw, workdir, list(LAYERS))
    results = {
        "config": config.to_dict(),
        "fits": fits,
        "parallel_work": work,
        "raw": raw,
        "plots": [png],
    }
    return started.finish(
        results, claims.table, TITLE, [("How it was measured", plots.notes(config, fits))]
    )
