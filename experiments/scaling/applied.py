"""The cost model applied to named accelerators: predicted, never measured.

* speed ratio   LSTM / self-attention training time (jit(grad) of parallelism's layers) at
                each N, on each accelerator, from the very programs timed here (check.py);
                with the per-op latency scaled (the assumption that dominates the LSTM), and
                with each LSTM time step as ONE kernel (ratio_fused: a fused cell, as cuDNN
                runs it, instead of XLA:CPU's ops per step)
* time to loss  Transformer vs RNNsearch: predicted seconds per train step (check.py's
                programs) × the steps each needs to reach the same validation loss
* scale-out     predicted step time of the stacks on one device and on the mesh (dp / tp,
                structure.py), and the share of it spent in collectives
Precision: applied.precision (bfloat16 compute with float32 master parameters, as
train.compute_dtype='bfloat16'; roofline.py says what that assumes).
"""

from __future__ import annotations

import json
import os

from anatomy.probes import hardware, roofline
from anatomy.train.metrics import read_metrics

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _predict(text, hw, precision, fused_loops=False):
    return roofline.predict_text(
        text, hw, precision=precision, with_collectives=False, fused_loops=fused_loops
    )


def _lstm_over_attention(lstm_text, attention_text, hw, precision):
    """Predicted LSTM and attention seconds, their ratio (ratio_fused: with each LSTM time step
    as one kernel) and each one's dominant term; with the three predictions."""
    lstm = _predict(lstm_text, hw, precision)
    fused = _predict(lstm_text, hw, precision, fused_loops=True)
    attn = _predict(attention_text, hw, precision)
    row = {
        "lstm_s": lstm["seconds"],
        "attention_s": attn["seconds"],
        "ratio": lstm["seconds"] / attn["seconds"],
        "ratio_fused": fused["seconds"] / attn["seconds"],
        "lstm_dominant": lstm["dominant"],
        "attention_dominant": attn["dominant"],
    }
    return row, (lstm, fused, attn)


def speed_ratios(cfg, texts: dict, layer_ns) -> list[dict]:
    """One row per (accelerator, N, latency scale): predicted LSTM and attention seconds,
    their ratio, and each one's dominant term."""
    rows = []
    for name in cfg.accelerators:
        base = hardware.get(name)
        for scale in cfg.latency_scales:
            hw = base.scaled(op_latency=scale, loop_latency=scale)
            for n in layer_ns:
                row, (lstm, fused, attn) = _lstm_over_attention(
                    texts[("lstm", n)], texts[("attention", n)], hw, cfg.precision
                )
                rows.append(
                    {
                        "accelerator": name,
                        "latency_scale": scale,
                        "n": n,
                        **row,
                        "lstm_fused_s": fused["seconds"],
                        "lstm_terms": {t: lstm[t] for t in roofline.TERMS},
                        "attention_terms": {t: attn[t] for t in roofline.TERMS},
                    }
                )
    return rows


def wide_ratio(cfg, check_cfg, n: int) -> list[dict]:
    """The layers' LSTM / attention ratio at width cfg.wide_d and batch cfg.wide_batch, at N = n,
    per accelerator (latencies as published / assumed): compiled from shapes, never run."""
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
        row, _ = _lstm_over_attention(
            texts["lstm"], texts["attention"], hardware.get(name), cfg.precision
        )
        rows.append({"accelerator": name, "d": cfg.wide_d, "batch": cfg.wide_batch, "n": n, **row})
    return rows


def steps_to_loss(cfg) -> dict:
    """Steps Transformer and RNNsearch need to reach the same validation loss, and what they
    were read from.

    The validation curves come from cfg.metrics_workdir (an rnn_vs_attn workdir whose
    <model>/metrics.jsonl hold them) or else from cfg.results (a committed rnn_vs_attn result
    whose models carry 'valid_curve', seed 0's). With curves the target is the higher of the
    two final validation losses (both reach it); each model's step is the first evaluation at
    or below it, linearly interpolated from the evaluation before. A result made before the
    curves were recorded holds final validation losses only: both trained the same steps, so
    the model with the higher final loss needs all of them and the other at most as many: the
    ratio of steps is a bound, not a value (bound='transformer >=' or 'transformer <=').
    """
    names = ("transformer", "rnnsearch")

    def committed():
        path = cfg.results if os.path.isabs(cfg.results) else os.path.join(_ROOT, cfg.results)
        with open(path) as f:
            return json.load(f)["result"]["models"]

    if cfg.metrics_workdir:
        curves = {
            m: [
                (r["step"], r["valid_loss"])
                for r in read_metrics(os.path.join(cfg.metrics_workdir, m))
                if "valid_loss" in r
            ]
            for m in names
        }
        source = f"{cfg.metrics_workdir}/<model>/metrics.jsonl (validation curves)"
    else:
        models = committed()
        curves = {m: [tuple(p) for p in (models[m].get("valid_curve") or [[]])[0]] for m in names}
        source = f"{cfg.results} (validation curves, seed 0)"
    if all(curves.values()):
        target = max(c[-1][1] for c in curves.values())
        steps = {m: _first_step(c, target) for m, c in curves.items()}
        return {
            "source": source,
            "target_loss": target,
            "steps": steps,
            "curves": curves,
            "ratio": steps["transformer"] / steps["rnnsearch"],
            "bound": None,
        }
    models = committed()
    final = {m: models[m]["valid_loss"] for m in names}
    steps = {m: models[m]["steps"] for m in names}
    worse = max(names, key=final.get)
    return {
        "source": f"{cfg.results} (final validation losses only)",
        "target_loss": final[worse],
        "final_loss": final,
        "steps": steps,
        "ratio": steps["transformer"] / steps["rnnsearch"],
        "bound": "transformer >=" if worse == "transformer" else "transformer <=",
    }


def _first_step(curve, target):
    """First step at which a (step, loss) curve reaches `target`, interpolated linearly."""
    prev = None
    for step, loss in curve:
        if loss <= target:
            if prev is None or prev[1] == loss:
                return float(step)
            (s0, l0) = prev
            return float(s0 + (step - s0) * (l0 - target) / (l0 - loss))
        prev = (step, loss)
    return float(curve[-1][0])


def time_to_loss(cfg, texts: dict, length: int, steps: dict) -> list[dict]:
    """Per accelerator: predicted seconds per train step of the Transformer and RNNsearch, and
    predicted time to the common loss: steps × seconds per step (a bound when steps is)."""
    rows = []
    if ("transformer", length) not in texts or ("rnnsearch", length) not in texts:
        return rows
    for name in cfg.accelerators:
        hw = hardware.get(name)
        t = _predict(texts[("transformer", length)], hw, cfg.precision)
        r = _predict(texts[("rnnsearch", length)], hw, cfg.precision)
        rows.append(
            {
                "accelerator": name,
                "transformer_step_s": t["seconds"],
                "rnnsearch_step_s": r["seconds"],
                "step_ratio": t["seconds"] / r["seconds"],
                "time_ratio": steps["ratio"] * t["seconds"] / r["seconds"],
                "bound": steps["bound"],
                "transformer_dominant": t["dominant"],
                "rnnsearch_dominant": r["dominant"],
                "transformer_terms": {k: t[k] for k in roofline.TERMS},
                "rnnsearch_terms": {k: r[k] for k in roofline.TERMS},
            }
        )
    return rows


def scale_out(cfg, structure_rows: list[dict]) -> list[dict]:
    """Predicted step time on one device and on the mesh for each (family, n, layers), per
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
