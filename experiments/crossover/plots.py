"""crossover's plot (time, memory and serial steps against N) and report tables, read from
results.json as stored. Colours and markers: recall.plots.style."""

import numpy as np

from experiments import outputs
from experiments.crossover import claims
from experiments.recall.plots import style

_LINES = {claims.DENSE: "-", claims.CHUNKED: "--"}


def _family(label):
    return "attention" if label.startswith("attention") else label


def _series(ax, results, key, scale=1.0):
    ns = results["lengths"]
    for label, e in results["contenders"].items():
        pts = [(n, v * scale) for n, v in zip(ns, e[key]) if v is not None]
        if not pts:
            continue
        colour, marker = style(_family(label))
        ax.loglog(*zip(*pts), _LINES.get(label, "-"), color=colour, marker=marker, label=label,
                  base=2)  # fmt: skip


def draw(results, workdir) -> list[str]:
    fig, (a, b, c) = outputs.new_figure(1, 3, figsize=(16, 4.8))
    _series(a, results, "median_s", 1e3)
    ns = results["lengths"]
    point, _, _ = claims.crossing(results, claims.HEADLINE) if len(ns) > 1 else (None, None, None)
    if point:
        a.axvline(point, color="gray", ls=":", lw=1)
    a.set(xlabel="sequence length N", ylabel="forward + backward (ms, median)",
          title=f"time against N (dotted: {claims.HEADLINE} overtakes dense attention)")  # fmt: skip
    a.legend(fontsize=7)
    _series(b, results, "memory_bytes", 2**-20)
    b.set(xlabel="sequence length N", ylabel="peak memory of the program (MiB)",
          title="memory against N")  # fmt: skip
    ns_arr = np.asarray(ns, float)
    c.loglog(ns_arr, ns_arr, ":", color="gray", lw=1, label="N", base=2)
    for label, e in results["contenders"].items():
        pts = [(n, max(s, 0.5)) for n, s in zip(ns, e["serial_steps"]) if s is not None]
        if pts:
            colour, marker = style(_family(label))
            c.loglog(*zip(*pts), _LINES.get(label, "-"), color=colour, marker=marker,
                     label=label, base=2)  # fmt: skip
    c.set(xlabel="sequence length N", ylabel="serial steps of the compiled program (0 drawn at ½)",
          title="serial steps against N")  # fmt: skip
    for ax in (a, b, c):
        outputs.grid_ticks(ax, ns)
    return [outputs.save_plot(fig, workdir, "crossover.png")]


def _cell(v, fmt):
    return "—" if v is None else fmt(v)


def table(results) -> str:
    ns = results["lengths"]
    header = ["contender", "form"] + [f"N={n} ms" for n in ns] + [f"N={n} MiB" for n in ns]
    rows = []
    for label, e in results["contenders"].items():
        rows.append([label, e["form"]]
                    + [_cell(v, lambda x: f"{1e3 * x:.3g}") if v is not None
                       else (e["left_out"][i] or "—") for i, v in enumerate(e["median_s"])]
                    + [_cell(v, lambda x: f"{x / 2**20:.3g}") for v in e["memory_bytes"]])  # fmt: skip
    return "Medians over the interleaved rounds.\n\n" + outputs.markdown_table(header, rows)


def steps_table(results) -> str:
    ns = results["lengths"]
    header = ["contender"] + [f"N={n}: loops" for n in ns] + [f"N={n}: critical path" for n in ns]
    rows = [[label] + [_cell(s, str) for s in e["serial_steps"]]
            + [_cell(s, str) for s in e["critical_path"]]
            for label, e in results["contenders"].items()]  # fmt: skip
    return (
        "Serial loop iterations of the forward + backward program (trip counts of its while "
        "loops, multiplied through nesting) and its critical path (probes.depth).\n\n"
        + outputs.markdown_table(header, rows)
    )


def anchor(results) -> str:
    rows = [[n, fa, gdn] for n, (fa, gdn) in claims.FLA_TABLE.items()]
    return (
        "flash-linear-attention's README, GB200, forward + backward (ms): a published "
        "accelerator figure, an estimate for that machine, never a verdict here.\n\n"
        + outputs.markdown_table(["N", "FlashAttention-2", "Gated DeltaNet"], rows)
        + f"\n\nRead from it: a crossover near N = {claims.FLA_CROSSOVER}."
    )


def notes(results) -> str:
    c = results["config"]
    return (
        f"Cases: benchmarks/cases_mixers.py (mixer_case, lstm_case) at batch {c['batch']}, width "
        f"{c['d_model']}, the benchmark's knobs per mixer, no short conv; each recurrent mixer "
        "in its default form on this backend (anatomy/recurrence/form_defaults.py). Timing: "
        f"benchmarks/timing.py, every contender interleaved, {c['rounds']} rounds per N, a "
        f"sample at least {c['target_s']} s; the interval on N* is over those rounds (a "
        "bootstrap from 8 rounds, each round's own crossing below). Peak memory: XLA's memory "
        "analysis (temp + output) of the program timed; a program over "
        f"{results['max_bytes'] / 2**30:.0f} GiB is not run. Timings are load-dependent: "
        "the load is in the provenance below."
    )
