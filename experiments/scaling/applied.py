"""The cost model applied to named accelerators (estimates, never measured), and the steps to
a common validation loss read from rnn_vs_attn's results (measured).

* layer estimates  LSTM / self-attention training time (jit(grad) of parallelism's layers) at
                   N = applied.n_ratio on each accelerator, its kernels counted from XLA:GPU's
                   program for that GPU when gpu_programs.py compiled one, else from
                   XLA:CPU's program (check.py's, re-priced at applied.precision)
* sensitivity      each estimate again with one assumption varied: the kernels (the other
                   compiler's program; each recurrent time step as ONE kernel, a fused cell as
                   cuDNN runs it), the latencies (x applied.latency_scales), the achieved
                   share of the published peaks (applied.peak_fractions)
* steps to loss    per seed of rnn_vs_attn's results: a target both models reach before their
                   schedules end, the evaluation bracket in which each reaches it, and the
                   seconds per step each took there (measured: its train_seconds / steps)
* time to loss     per accelerator: the steps ratio × the estimated Transformer / RNNsearch
                   seconds per train step (an estimate, with its sensitivity)
* scale-out        estimated step time of the stacks on one device and on the mesh (dp / tp,
                   structure.py), and the share of it spent in collectives
"""

from __future__ import annotations

import json
import os

import numpy as np

from anatomy.probes import hardware, roofline
from experiments.scaling.gpu_programs import KEY

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _predict(text, hw, precision, fused_loops=False):
    return roofline.predict_text(
        text, hw, precision=precision, with_collectives=False, fused_loops=fused_loops
    )


def _pair(recurrent_text, attention_text, hw, precision, fused=False) -> dict:
    """Estimated seconds of a recurrent and an attention program on `hw`: each one's seconds,
    terms, dominant term and kernels (fused: each recurrent loop iteration one kernel)."""
    r = _predict(recurrent_text, hw, precision, fused_loops=fused)
    a = _predict(attention_text, hw, precision)
    return {
        "recurrent_s": r["seconds"],
        "attention_s": a["seconds"],
        "recurrent_terms": {t: r[t] for t in roofline.TERMS},
        "attention_terms": {t: a[t] for t in roofline.TERMS},
        "recurrent_dominant": r["dominant"],
        "attention_dominant": a["dominant"],
        "recurrent_kernels": r["n_ops"],
        "attention_kernels": a["n_ops"],
    }


def counted(cfg, name: str, cpu_texts: dict, gpu: dict, keys) -> tuple[dict, str, str]:
    """({key: HLO text}, precision to price it at, where it is from) for accelerator `name`:
    XLA:GPU's programs when gpu_programs compiled them for this accelerator (priced as
    compiled), else XLA:CPU's (re-priced at cfg.precision)."""
    texts = gpu.get("texts", {}) if gpu.get("target") == name else {}
    if all(KEY.format(family=f, n=n) in texts for f, n in keys):
        programs = {(f, n): texts[KEY.format(family=f, n=n)] for f, n in keys}
        return programs, None, f"XLA:GPU's programs for {name} ({cfg.precision}, compiled here)"
    programs = {k: cpu_texts[k] for k in keys}
    return programs, cfg.precision, f"XLA:CPU's programs, re-priced at {cfg.precision}"


def estimate_pair(cfg, name, recurrent, attention, cpu_texts, gpu) -> dict:
    """The estimate for accelerator `name` of a (recurrent, attention) pair of programs, keys
    (family, n) of cpu_texts, and its sensitivity: a list of {assumption, value, ...} with
    the pair's seconds under each (module doc), the first the estimate itself."""
    hw = hardware.get(name)
    progs, precision, source = counted(cfg, name, cpu_texts, gpu, (recurrent, attention))
    rec, att = progs[recurrent], progs[attention]
    base = _pair(rec, att, hw, precision)
    variants = [{"assumption": "as assumed", "value": source, **base}]
    if precision is None:  # counted from XLA:GPU: the other count is XLA:CPU's
        cpu = _pair(cpu_texts[recurrent], cpu_texts[attention], hw, cfg.precision)
        variants.append({"assumption": "kernels", "value": "XLA:CPU's programs", **cpu})
    fused = _pair(rec, att, hw, precision, fused=True)
    variants.append(
        {"assumption": "kernels", "value": "one kernel per recurrent time step", **fused}
    )
    for s in cfg.latency_scales:
        scaled = hw.scaled(op_latency=s, loop_latency=s, call_latency=s)
        variants.append(
            {"assumption": "latencies", "value": f"x{s:g}", **_pair(rec, att, scaled, precision)}
        )
    for f in cfg.peak_fractions:
        variants.append(
            {
                "assumption": "achieved share of peak rates",
                "value": f"{f:g}",
                **_pair(rec, att, hw.at_fraction(f), precision),
            }
        )
    return {"accelerator": name, "counted_from": source, **base, "sensitivity": variants}


def layer_estimates(cfg, cpu_texts: dict, gpu: dict, n: int) -> list[dict]:
    """Per accelerator: LSTM / attention estimated at N = n (estimate_pair), ratio = LSTM /
    attention seconds, under each assumption of its sensitivity too."""
    rows = []
    for name in cfg.accelerators:
        row = estimate_pair(cfg, name, ("lstm", n), ("attention", n), cpu_texts, gpu)
        for v in [row, *row["sensitivity"]]:
            v["ratio"] = v["recurrent_s"] / v["attention_s"]
        rows.append({"n": n, **row})
    return rows


def wide_ratio(cfg, check_cfg, n: int) -> list[dict]:
    """The layers' LSTM / attention estimate at width cfg.wide_d and batch cfg.wide_batch, at
    N = n, per accelerator (XLA:CPU's programs, compiled from shapes, never run)."""
    import jax
    import jax.numpy as jnp

    from experiments.scaling.check import LAYER_FAMILIES

    if not cfg.wide_d:
        return []
    texts = {}
    for name, family in LAYER_FAMILIES.items():
        init, loss = family.layer(cfg.wide_d, check_cfg.n_heads)
        params = jax.eval_shape(init, jax.random.PRNGKey(0))
        x = jax.ShapeDtypeStruct((cfg.wide_batch, n, cfg.wide_d), jnp.float32)
        texts[name] = jax.jit(jax.grad(loss, argnums=(0, 1))).lower(params, x).compile().as_text()
    rows = []
    for name in cfg.accelerators:
        hw = hardware.get(name)
        p = _pair(texts["lstm"], texts["attention"], hw, cfg.precision)
        fused = _pair(texts["lstm"], texts["attention"], hw, cfg.precision, fused=True)
        rows.append(
            {
                "accelerator": name,
                "d": cfg.wide_d,
                "batch": cfg.wide_batch,
                "n": n,
                **p,
                "ratio": p["recurrent_s"] / p["attention_s"],
                "ratio_fused": fused["recurrent_s"] / fused["attention_s"],
            }
        )
    return rows


# ----------------------------------------------------------------- steps to the same loss

MODELS = ("transformer", "rnnsearch")


def _results_path(cfg) -> str:
    """The first of cfg.results that exists (relative to the repository root), else the last."""
    paths = [cfg.results] if isinstance(cfg.results, str) else list(cfg.results)
    paths = [p if os.path.isabs(p) else os.path.join(_ROOT, p) for p in paths]
    return next((p for p in paths if os.path.exists(p)), paths[-1])


def seed_runs(models: dict) -> dict:
    """{model: [per-seed dict(steps, train_seconds, valid_curve)]} of rnn_vs_attn's results
    `models` (its 'seeds' rows; a result without them is one seed)."""
    out = {}
    for m in MODELS:
        rows = models[m].get("seeds") or [dict(models[m], valid_curve=models[m]["valid_curve"][0])]
        out[m] = [
            {
                "steps": float(r["steps"]),
                "train_seconds": float(r["train_seconds"]),
                "valid_curve": [tuple(p) for p in r["valid_curve"]],
            }
            for r in rows
        ]
    return out


def loss_at(curve, step: float) -> float:
    """The validation loss of the first evaluation at or after `step` (the last if none)."""
    return next((loss for s, loss in curve if s >= step), curve[-1][1])


def bracket(curve, target: float):
    """(after, by): the model reaches `target` after step `after` (the evaluation before, 0 for
    the first) and by step `by` (the first evaluation at or below it); None if it never does.
    The evaluation grid is the precision: nothing is interpolated."""
    prev = 0.0
    for step, loss in curve:
        if loss <= target:
            return float(prev), float(step)
        prev = step
    return None


def steps_to_loss(cfg) -> dict:
    """Per seed of rnn_vs_attn's results (cfg.results): the target (the higher of the two
    models' validation losses at cfg.target_fraction of their schedules), each model's bracket
    of steps to it, its seconds per step (train_seconds / steps, measured on the machine that
    trained it), and the ratios Transformer / RNNsearch of steps and of time as [lo, hi]
    brackets (lo: the Transformer at the start of its bracket, RNNsearch at the end)."""
    path = _results_path(cfg)
    with open(path) as f:
        runs = seed_runs(json.load(f)["result"]["models"])
    seeds = []
    for t, r in zip(runs["transformer"], runs["rnnsearch"]):
        target = max(loss_at(x["valid_curve"], cfg.target_fraction * x["steps"]) for x in (t, r))
        bt, br = bracket(t["valid_curve"], target), bracket(r["valid_curve"], target)
        per_step = {m: x["train_seconds"] / x["steps"] for m, x in zip(MODELS, (t, r))}
        row = {"target_loss": target, "steps": {"transformer": bt, "rnnsearch": br}}
        row["seconds_per_step"] = per_step
        if bt and br:
            steps = [bt[0] / br[1], bt[1] / br[0] if br[0] else float("inf")]
            row["steps_ratio"] = steps
            row["time_ratio"] = [s * per_step["transformer"] / per_step["rnnsearch"] for s in steps]
        seeds.append(row)
    return {
        "source": os.path.relpath(path, _ROOT),
        "target_fraction": cfg.target_fraction,
        "seeds": seeds,
    }


def mid(bounds) -> float:
    """The geometric middle of a [lo, hi] bracket of positive ratios (lo 0: hi / 2)."""
    lo, hi = bounds
    return float(np.sqrt(lo * hi)) if lo > 0 and np.isfinite(hi) else float(hi) / 2


def time_to_loss(cfg, cpu_texts: dict, gpu: dict, length: int, steps: dict) -> list[dict]:
    """Per accelerator: the estimated Transformer / RNNsearch seconds per train step (with its
    sensitivity, estimate_pair) and time to the common loss: the seeds' mean steps ratio (the
    middle of each bracket) × that step ratio."""
    keys = [("transformer", length), ("rnnsearch", length)]
    ratios = [mid(s["steps_ratio"]) for s in steps["seeds"] if "steps_ratio" in s]
    if any(k not in cpu_texts for k in keys) or not ratios:
        return []
    steps_ratio = float(np.mean(ratios))
    rows = []
    for name in cfg.accelerators:
        row = estimate_pair(cfg, name, keys[1], keys[0], cpu_texts, gpu)
        for v in [row, *row["sensitivity"]]:
            v["step_ratio"] = v["attention_s"] / v["recurrent_s"]
            v["time_ratio"] = steps_ratio * v["step_ratio"]
        rows.append({"length": length, "steps_ratio": steps_ratio, **row})
    return rows


def scale_out(cfg, structure_rows: list[dict]) -> list[dict]:
    """Estimated step time on one device and on the mesh for each (family, n, layers), per
    accelerator at cfg.precision: speed-up = one device / mesh, and the collectives' share."""
    single = {
        (r["family"], r["n"], r["layers"]): r for r in structure_rows if r["mode"] == "single"
    }
    out = []
    for r in structure_rows:
        one = single.get((r["family"], r["n"], r["layers"]))
        if r["mode"] == "single" or one is None:
            continue
        for name in cfg.accelerators:
            key = f"{name}|{cfg.precision}"
            p, p1 = r["predictions"][key], one["predictions"][key]
            out.append(
                {
                    "family": r["family"],
                    "mode": r["mode"],
                    "n": r["n"],
                    "layers": r["layers"],
                    "accelerator": name,
                    "one_device_s": p1["seconds"],
                    "mesh_s": p["seconds"],
                    "speedup": p1["seconds"] / p["seconds"],
                    "communication_share": p["communication"] / p["seconds"],
                    "dominant": p["dominant"],
                }
            )
    return out
