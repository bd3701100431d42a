"""parallelism: an LSTM layer against a self-attention layer, forward + backward, against N
(recurrent.py, attention.py, with chunked attention's loop over key blocks); a minGRU (a
linear recurrence) computed with jax.lax.scan and jax.lax.associative_scan (linear.py); and a
stack of GLU convolutions (conv.py: no loop, but a receptive field of 1 + L·(K-1) positions).
Their claims, judged on results.json: claims.py; the plot and report.md's prose: plots.py.

Per N: median wall time of jit(grad(loss)) (warm-up first, block_until_ready), the number of
serial loop iterations in the compiled program (``known_trip_count`` of its while loops in
the optimised HLO, multiplied through nesting; cross-checked against the jaxpr's scan
lengths), its serial depth (the critical path of the optimised HLO, probes.depth:
N·c for a scan, about c·log N for an associative scan, flat for attention), and how busy
the cores were (process CPU time / (wall · cores)).
"""

import jax
import numpy as np

from anatomy import probes
from anatomy.probes.depth import hlo_critical_path
from experiments.lab import provenance, record
from experiments.lab.progress import Progress
from experiments.parallelism import attention, claims, conv, linear, plots, recurrent

# every layer measured, in the order results.json lists them: name -> (loss, init, flops)
LAYERS = {**recurrent.LAYERS, **attention.LAYERS, **linear.LAYERS, **conv.LAYERS}

TITLE = "Parallelism: serial steps, wall time and busy cores"  # of report.md


def measure(cfg):
    """{layer: [dict(n, steps_hlo, steps_jaxpr, median_s, utilisation, ...) per N]}."""
    out = {}
    key = jax.random.PRNGKey(cfg.seed)
    progress = Progress("parallelism", len(LAYERS) * len(cfg.n_grid))
    for name, (loss, init, count_flops) in LAYERS.items():
        params = init(key, cfg)
        grad = jax.grad(loss, argnums=(0, 1))
        rows = []
        for n in cfg.n_grid:
            progress.step(f"{name} at N = {n}: compile, read the HLO, {cfg.repeats} timed calls")
            x = jax.random.normal(jax.random.PRNGKey(cfg.seed + n), (cfg.batch, n, cfg.d))
            exe = probes.compiled(grad, params, x)  # one compile: read its HLO, then time it
            hlo_steps = probes.hlo_sequential_steps(exe.as_text())
            depth = hlo_critical_path(exe.as_text())
            jaxpr_steps = probes.jaxpr_sequential_steps(grad, params, x)
            t = probes.time_fn(exe, params, x, warmup=cfg.warmup, repeats=cfg.repeats)
            flops = count_flops(exe, params, x)
            rows.append(
                dict(
                    n=n,
                    steps_hlo=hlo_steps,
                    steps_jaxpr=jaxpr_steps,
                    depth=depth,
                    flops=flops,
                    gflops_per_s=flops / t["median_s"] / 1e9,
                    **t,
                )
            )
        out[name] = rows
    return out


def analyse(cfg, raw):
    lstm, attn = raw["lstm"], raw["attention"]
    ns = [r["n"] for r in lstm]
    steps_slope = float(np.polyfit(ns, [r["steps_hlo"] for r in lstm], 1)[0])
    at = {r["n"]: r for r in attn}
    ls = {r["n"]: r for r in lstm}
    n0 = cfg.n_ratio if cfg.n_ratio in at else ns[len(ns) // 2]
    return {
        "lstm_steps_per_token": steps_slope,
        "attention_max_steps": max(r["steps_hlo"] for r in attn),
        "time_exponent": {
            k: probes.fit_power_law([r["n"] for r in v], [r["median_s"] for r in v])
            for k, v in raw.items()
        },
        "ratio_n": n0,
        "ratio_lstm_over_attention": ls[n0]["median_s"] / at[n0]["median_s"],
        "utilisation_at_ratio_n": {
            "lstm": ls[n0]["utilisation"],
            "attention": at[n0]["utilisation"],
        },
        "ratio_by_n": {r["n"]: ls[r["n"]]["median_s"] / r["median_s"] for r in attn},
        **linear.analysis(raw),
        **conv.analysis(cfg, raw),
    }


def run(config, workdir):
    """Measure, analyse, write results.json, parallelism.png and report.md."""
    started = record.start("parallelism", config, workdir)
    load_before = provenance.load_average()
    raw = measure(config)
    chunked = attention.chunked_steps(config)
    a = analyse(config, raw)
    load_after = provenance.load_average()
    a["load_average_before_after"] = [x[0] if x else None for x in (load_before, load_after)]
    a["device_kind"] = provenance.device_kind()
    png = plots.plot(config, raw, workdir)
    results = {
        "config": config.to_dict(),
        "analysis": a,
        "raw": raw,
        "chunked_attention_steps": chunked,
        "plots": [png],
    }
    sections = plots.sections(config, raw, a)
    return started.finish(results, claims.table, TITLE, sections)
