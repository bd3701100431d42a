"""scaling: the chapter's scale-out claim read from compiled programs, and a cost model checked on
this CPU and applied to named accelerators.

    python launch.py --experiment=scaling [--config=experiments/configs/scaling.py:quick]

1. structure.py     an LSTM stack and a Transformer stack (recurrent.py, attention.py; 8d²
                    weights per layer each) and rnn_vs_attn's translators (translators.py), their
                    train steps compiled for 8 fake CPU devices under data and tensor
                    parallelism and read: every collective per step (kind, bytes, in a loop or
                    not), loop trip counts against N and L, FLOPs and bytes (compiled in a
                    subprocess with XLA_FLAGS set, never run)
2. gpu_programs.py  the layers at N = applied.n_ratio and two translators' steps compiled by
                    XLA:GPU for applied.gpu_target without a GPU (in a Python with the CUDA
                    plugin; without one, the report says why)
3. check.py         the cost model (anatomy.probes.roofline) against measured time on this CPU:
                    parallelism's LSTM and attention layers over its N grid, the LSTM at a tiny
                    width (latency-bound), the translators' steps; every prediction also made
                    with each term of the model switched off
4. applied.py       the model on named accelerators (estimates, with their sensitivity): LSTM /
                    attention at N = 512, Transformer vs RNNsearch per step; the steps each
                    translator needed to a common validation loss (rnn_vs_attn's results, per
                    seed); the stacks' scale-out
5. claims.py        every verdict by the one rule (stable ids, ranges beside them); report.py
                    the tables and plot

Writes results.json, report.md and scaling.png into the workdir.
"""

from __future__ import annotations

from anatomy.probes import hardware
from experiments.configs import rnn_vs_attn as rva_config
from experiments.lab import provenance, record
from experiments.scaling import applied, check, claims, gpu_programs, report, structure


def run(config, workdir):
    """Read the structure, check the model, apply it; write results.json, report.md, plots."""
    started = record.start("scaling", config, workdir)
    load_before = provenance.load_average()
    for name in (*config.applied.accelerators, config.applied.headline):
        hardware.get(name)  # an unknown accelerator: BadInputError before anything compiles
    pending = structure.start(config, structure.specs(config))  # compiles on the other core
    gpu_pending = gpu_programs.start(config)  # ... and, with the CUDA plugin, for a GPU
    rva = rva_config.get_config(config.translators.preset or None)
    progs = check.compile_all(config.check, rva)
    structure_rows = structure.collect(pending)  # nothing is timed while they compile
    gpu = gpu_programs.collect(gpu_pending)
    checked = check.run(config.check, progs)
    texts = checked.pop("texts")
    load_after = provenance.load_average()

    cfg_a = config.applied
    layer_ns = sorted(n for (f, n) in texts if f == "lstm")
    n_ratio = cfg_a.n_ratio if cfg_a.n_ratio in layer_ns else layer_ns[len(layer_ns) // 2]
    steps = applied.steps_to_loss(cfg_a)
    results = {
        "config": config.to_dict(),
        "structure": structure_rows,
        "check": checked,
        "applied": {
            "accelerator_tables": [hardware.get(a).as_dict() for a in cfg_a.accelerators],
            "gpu_programs": gpu_programs.summary(gpu, texts),
            "layer_estimates": applied.layer_estimates(cfg_a, texts, gpu, n_ratio),
            "wide_ratios": applied.wide_ratio(cfg_a, config.check, n_ratio),
            "steps_to_loss": steps,
            "time_to_loss": applied.time_to_loss(cfg_a, texts, gpu, config.check.length, steps),
            "scale_out": applied.scale_out(cfg_a, structure_rows),
            "n_ratio": n_ratio,
        },
        "load_average_before_after": [x[0] if x else None for x in (load_before, load_after)],
    }
    results["plots"] = report.draw(record.stored(results), workdir)  # from results.json alone
    return started.finish(results, claims.table, report.TITLE, report.sections(config, results))
