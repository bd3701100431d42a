"""scaling: the chapter's scale-out claim read from compiled programs, and a cost model checked on
this CPU and applied to named accelerators.

    python launch.py --experiment=scaling [--config=experiments/configs/scaling.py:quick]

1. structure.py  an LSTM stack and a Transformer stack (recurrent.py, attention.py; 8d² weights
                 per layer each) and rnn_vs_attn's translators (translators.py), their train
                 steps compiled for 8 fake CPU devices under data and tensor parallelism and read:
                 every collective per step (kind, bytes, in a loop or not), loop trip counts
                 against N and L, FLOPs and bytes (compiled in a subprocess with XLA_FLAGS set,
                 never run)
2. check.py      the cost model (anatomy.probes.roofline) against measured time on this CPU:
                 parallelism's LSTM and attention layers over its N grid, the translators' steps
3. applied.py    the model on named accelerators: LSTM / attention at N = 512, Transformer vs
                 RNNsearch time to the same validation loss, the stacks' scale-out; predicted,
                 not measured, and not made when the model misses here by more than 2x
4. claims.py     every verdict (stable ids, thresholds beside them); report.py the tables and plot

Writes results.json, report.md and scaling.png into the workdir.
"""

from __future__ import annotations

import time

from anatomy.probes import claims_json, hardware
from experiments import outputs, provenance
from experiments.configs import rnn_vs_attn as rva_config
from experiments.scaling import applied, check, claims, report, structure


def run(config, workdir):
    """Read the structure, check the model, apply it; write results.json, report.md, plots."""
    started, t0 = provenance.provenance(), time.time()
    load_before = provenance.load_average()
    for name in (*config.applied.accelerators, config.applied.headline):
        hardware.get(name)  # an unknown accelerator: BadInputError before anything compiles
    pending = structure.start(config, structure.specs(config))  # compiles on the other core
    rva = rva_config.get_config(config.translators.preset or None)
    progs = check.compile_all(config.check, rva)
    structure_rows = structure.collect(pending)  # nothing is timed while it compiles
    checked = check.run(config.check, progs)
    texts = checked.pop("texts")
    load_after = provenance.load_average()

    cfg_a = config.applied
    layer_ns = sorted(n for (f, n) in texts if f == "lstm")
    n_ratio = cfg_a.n_ratio if cfg_a.n_ratio in layer_ns else layer_ns[len(layer_ns) // 2]
    ratios = applied.speed_ratios(cfg_a, texts, layer_ns)
    steps = applied.steps_to_loss(cfg_a)
    ttl = applied.time_to_loss(cfg_a, texts, config.check.length, steps)
    results = {
        "config": config.to_dict(),
        "structure": structure_rows,
        "check": checked,
        "applied": {
            "accelerator_tables": [hardware.get(a).as_dict() for a in cfg_a.accelerators],
            "speed_ratios": ratios,
            "wide_ratios": applied.wide_ratio(cfg_a, config.check, n_ratio),
            "steps_to_loss": steps,
            "time_to_loss": ttl,
            "scale_out": applied.scale_out(cfg_a, structure_rows),
            "used": claims.model_ok(checked["rows"]),
            "n_ratio": n_ratio,
        },
        "load_average_before_after": [x[0] if x else None for x in (load_before, load_after)],
    }
    rows = claims.structure_claims(config, structure_rows)
    rows.append(claims.model_claim(checked["rows"]))
    wide = results["applied"]["wide_ratios"]
    rows += claims.applied_claims(cfg_a, checked["rows"], ratios, ttl, steps, n_ratio, wide)
    results["table"] = [
        dict(c, id=i) for i, c in zip([i for i, _ in rows], claims_json([c for _, c in rows]))
    ]
    results["provenance"] = provenance.run_provenance("scaling", config, started, t0)
    pngs = report.plot(structure_rows, checked["rows"], workdir, config)
    results["plots"] = pngs
    outputs.write_json(workdir, results)
    report.write(workdir, config, results, [c for _, c in rows], pngs)
    return results
