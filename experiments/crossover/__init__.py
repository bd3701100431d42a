"""crossover: the third wall today. Where do the parallel-trainable recurrences overtake
softmax attention in training cost, and how many serial steps does each compiled program take?

Per N of cfg.lengths, one interleaved timing (benchmarks/timing.py) of forward + backward
('fwdbwd': the gradients of <y, g> w.r.t. the input and every parameter) of:

    attention (dense), attention (chunked)   anatomy.mixers' softmax attention, both forms
    <mixer>                                  every recurrent mixer of cfg.mixers in its
                                             default form on this backend
    <mixer> (<form>)                         cfg.extra_forms: another form of a mixer (the
                                             associative scan: no loop, log depth)
    lstm                                     the LSTM layer on the translators' CPU path

each built by the mixer benchmark's own cases (benchmarks/cases_mixers.py, without their
torch twins: this experiment imports no torch), so the shapes, weights and knobs are the
benchmark's. Per contender and N: the median and every round's time, the compiled program's
FLOP count (probes.op_cost over its optimised HLO, every loop body counted as often as it
runs: XLA's own cost analysis counts it once) and peak memory (XLA's memory analysis), its
serial steps (the trip counts of its while loops, probes.hlo_sequential_steps) and critical
path (probes.hlo_critical_path). A program over the benchmark's MAX_BYTES is left out at that
N. The claims (claims.py) read where each recurrence's time curve crosses attention's
(probes.crossover), with its interval over the timing rounds, against the range the
two programs' FLOP counts give it.

Gated DeltaNet's chunked form once timed 0.03-8.6 s a call for the same work: its triangular
solve ran in LAPACK (scipy's OpenBLAS) with its own threads beside XLA's. It is now matmuls
inside XLA (anatomy/mixers/gated_deltanet.py: unit_lower_inverse);
experiments/crossover/GATED_DELTANET.md has the measurements (experiments/crossover/gdn_probe.py re-makes them).
"""

import os
import time

import numpy as np

from anatomy import probes
from anatomy.mixers.defaults import default_form
from anatomy.probes import op_cost
from anatomy.probes.depth import hlo_critical_path
from benchmarks import timing
from benchmarks.cases_mixers import MAX_BYTES, lstm_case, mixer_case
from experiments.crossover import claims, plots
from experiments.lab import provenance, record
from experiments.lab.progress import Progress


def _cpu_seconds():
    """(every core's busy seconds since boot from /proc/stat, this process's CPU seconds,
    wall seconds), or None where the OS has no /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    t = os.times()
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK"), t.user + t.system, time.monotonic()


def others_cores(before, after):
    """The cores other processes kept busy between two _cpu_seconds() readings (all busy
    time less this process's, over the wall time between them); None without /proc/stat."""
    if before is None or after is None or after[2] <= before[2]:
        return None
    busy, ours = after[0] - before[0], after[1] - before[1]
    return max(0.0, (busy - ours) / (after[2] - before[2]))


NAME = "crossover"
TITLE = "Throughput crossover: recurrences against attention, forward + backward, this CPU"
DENSE, CHUNKED = "attention (dense)", "attention (chunked)"


def contenders(cfg, n, rng):
    """({label: the fwdbwd Impl}, {label: why left out}, {label: form}) at length n."""
    impls, left, forms = {}, {}, {}
    case, _, out = mixer_case(
        "attention", cfg.batch, n, cfg.d_model, rng, ("dense", "chunked"), twin=False
    )
    for form, label in (("dense", DENSE), ("chunked", CHUNKED)):
        if form in case.impls:
            impls[label], forms[label] = case.impls[form], form
        else:
            left[label] = out.get(form, "not built")
    for name in cfg.mixers:
        form = default_form(name)
        case, _, out = mixer_case(name, cfg.batch, n, cfg.d_model, rng, (form,), twin=False)
        forms[name] = form
        if form in case.impls:
            impls[name] = case.impls[form]
        else:
            left[name] = out.get(form, "not built")
    for extra in cfg.extra_forms:
        name, form = extra.split(":")
        label = f"{name} ({form})"
        case, _, out = mixer_case(name, cfg.batch, n, cfg.d_model, rng, (form,), twin=False)
        forms[label] = form
        if form in case.impls:
            impls[label] = case.impls[form]
        else:
            left[label] = out.get(form, "not built")
    if cfg.lstm:
        impls["lstm"] = lstm_case(cfg.batch, n, cfg.d_model, rng, twin=False).impls["anatomy"]
        forms["lstm"] = "sequential (fused VJP)"
    return impls, left, forms


def measure(cfg):
    """{label: {form, median_s [N], rounds_s [N][round], flops [N], memory_bytes [N],
    serial_steps [N], critical_path [N]}} with None where a contender was left out at N."""
    rng = np.random.default_rng(cfg.seed)
    ns = [int(n) for n in cfg.lengths]
    out, others = {}, []
    progress = Progress(NAME, len(ns))
    for i, n in enumerate(ns):
        progress.step(f"N = {n}: every contender's forward+backward, {int(cfg.rounds)} rounds")
        impls, left, forms = contenders(cfg, n, rng)
        before = _cpu_seconds()
        times = timing.time_interleaved(
            {label: im.passes["fwdbwd"] for label, im in impls.items()},
            rounds=int(cfg.rounds), target_s=float(cfg.target_s),
        )  # fmt: skip
        others.append(others_cores(before, _cpu_seconds()))
        for label in [*impls, *left]:
            row = out.setdefault(label, {
                "form": forms.get(label), "median_s": [None] * len(ns),
                "rounds_s": [None] * len(ns), "flops": [None] * len(ns),
                "memory_bytes": [None] * len(ns),
                "serial_steps": [None] * len(ns), "critical_path": [None] * len(ns),
                "left_out": [None] * len(ns),
            })  # fmt: skip
            if label in left:
                row["left_out"][i] = left[label]
                continue
            im = impls[label]
            text = im.hlo("fwdbwd")
            row["median_s"][i] = times[label]["median_s"]
            row["rounds_s"][i] = list(times[label]["samples_s"])
            row["flops"][i] = float(op_cost.profile(text)["flops"])  # loop trips counted
            row["memory_bytes"][i] = int(im.memory("fwdbwd"))
            row["serial_steps"][i] = int(probes.hlo_sequential_steps(text))
            row["critical_path"][i] = int(hlo_critical_path(text))
    return out, others


def run(config, workdir):
    """Measure, write results.json, the plot, report.md."""
    started = record.start(NAME, config, workdir)
    before = provenance.load_average()
    contenders_, others = measure(config)
    after = provenance.load_average()
    results = {
        "config": config.to_dict(),
        "lengths": [int(n) for n in config.lengths],
        "max_bytes": MAX_BYTES,
        # cores other processes kept busy while each N was timed (None: no /proc/stat)
        "others_cores": others,
        # the 1-minute load before and after the timings (claims: under_load), and the cores
        "load_before_after": [x[0] if x else None for x in (before, after)],
        "cores": timing.n_cores(),
        "contenders": contenders_,
    }
    return started.finish_drawn(
        results,
        plots.draw,
        claims,
        TITLE,
        lambda plain: [
            ("Forward + backward time against N", plots.table(plain)),
            ("FLOP counts, rates and the expected crossing", plots.flops_table(plain)),
            ("Peak memory against N", plots.memory_table(plain)),
            ("Serial steps of each compiled program", plots.steps_table(plain)),
            ("The published anchor (an accelerator, not this machine)", plots.anchor(plain)),
            ("How it was measured", plots.notes(plain)),
        ],
    )
