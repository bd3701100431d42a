"""crossover's plot (time, memory and serial steps against N) and report tables, read from
results.json as stored. Colours and markers: experiments/lab/style.py's."""

import numpy as np

from anatomy.probes.claims import finite
from anatomy.tables import markdown_table
from experiments.crossover import claims
from experiments.lab import outputs, style

_LINES = {claims.DENSE: "-", claims.CHUNKED: "--"}


def _look(label):
    """ax.plot keywords of a contender: its model's colour and marker (experiments/lab/style.py),
    dashed for a second form of a model ('attention (chunked)', 'rglru (associative)')."""
    return {
        **style.line(label),
        "linestyle": _LINES.get(label, "-" if label in style.PALETTE else "--"),
    }


def _series(ax, results, key, scale=1.0):
    ns = results["lengths"]
    for label, e in results["contenders"].items():
        pts = [(n, v * scale) for n, v in zip(ns, e[key]) if v is not None]
        if not pts:
            continue
        ax.loglog(*zip(*pts), label=label, base=2, **_look(label))


def draw(results, workdir) -> list[str]:
    fig, (a, b, c) = outputs.new_figure(1, 3, figsize=(16, 4.8))
    _series(a, results, "median_s", 1e3)
    ns = results["lengths"]
    title = "time against N"
    if claims.HEADLINE in results["contenders"] and claims.DENSE in results["contenders"]:
        rng, _ = claims.expected_range(results, claims.HEADLINE)
        if rng is not None:  # the range the FLOP counts give, stated before the timing
            a.axvspan(rng.lo, rng.hi, color="gray", alpha=0.12, lw=0)
            title += " (grey: the FLOP counts' range for N*"
        _, interval, _ = claims.crossing(results, claims.HEADLINE)
        if crossing_drawn(interval):  # only a crossing whose interval is finite
            a.axvline(interval.point, color="black", ls=":", lw=1)
            a.axvspan(interval.lo, interval.hi, color="black", alpha=0.15, lw=0)
            title += f"; dotted: {claims.HEADLINE} overtakes, its 95% interval shaded"
        title += ")" if rng is not None else ""
    a.set(xlabel="sequence length N", ylabel="forward + backward (ms, median)", title=title)
    a.legend(fontsize=7)
    _series(b, results, "memory_bytes", 2**-20)
    b.set(xlabel="sequence length N", ylabel="peak memory of the program (MiB)",
          title="memory against N")  # fmt: skip
    ns_arr = np.asarray(ns, float)
    c.loglog(ns_arr, ns_arr, ":", color="gray", lw=1, label="N", base=2)
    for label, e in results["contenders"].items():
        pts = [(n, max(s, 0.5)) for n, s in zip(ns, e["serial_steps"]) if s is not None]
        if pts:
            c.loglog(*zip(*pts), label=label, base=2, **_look(label))
    c.set(xlabel="sequence length N", ylabel="serial steps of the compiled program (0 drawn at ½)",
          title="serial steps against N")  # fmt: skip
    for ax in (a, b, c):
        outputs.grid_ticks(ax, ns)
    return [outputs.save_plot(fig, workdir, "crossover.png")]


def crossing_drawn(interval) -> bool:
    """A crossing is drawn only with a finite interval (a resample without a crossing makes
    it infinite: then there is nothing to draw)."""
    return interval is not None and finite(interval.point, interval.lo, interval.hi)


def _cell(v, fmt):
    return "—" if v is None else fmt(v)


def table(results) -> str:
    ns = results["lengths"]
    header = ["contender", "form"] + [f"N={n}" for n in ns]
    rows = []
    for label, e in results["contenders"].items():
        rows.append([label, e["form"]]
                    + [_cell(v, lambda x: f"{1e3 * x:.3g}") if v is not None
                       else (e["left_out"][i] or "—") for i, v in enumerate(e["median_s"])])  # fmt: skip
    return "Forward + backward, ms: medians over the interleaved rounds.\n\n" + markdown_table(
        header, rows
    )


def memory_table(results) -> str:
    ns = results["lengths"]
    rows = [[label] + [_cell(v, lambda x: f"{x / 2**20:.3g}") for v in e["memory_bytes"]]
            for label, e in results["contenders"].items()]  # fmt: skip
    return (
        "Peak memory of the forward + backward program, MiB (XLA's memory analysis: temp + "
        "output).\n\n" + markdown_table(["contender"] + [f"N={n}" for n in ns], rows)
    )


def flops_table(results) -> str:
    """Each program's FLOP count (probes.op_cost) and the rate it ran at (FLOPs / median s)."""
    ns = results["lengths"]
    rows = []
    for label, e in results["contenders"].items():
        flops = e.get("flops") or [None] * len(ns)
        rows.append([label]
                    + [_cell(f, lambda x: f"{x / 1e6:.3g}") for f in flops]
                    + [_cell(f / t if f and t else None, lambda x: f"{x / 1e9:.2g}")
                       for f, t in zip(flops, e["median_s"])])  # fmt: skip
    header = ["contender"] + [f"N={n} MFLOP" for n in ns] + [f"N={n} GFLOP/s" for n in ns]
    lines = []
    for m in results["contenders"]:
        if m in (claims.DENSE, claims.CHUNKED, "lstm") or "(" in m:
            continue
        rng, nf = claims.expected_range(results, m)
        ratio = claims.rate_ratio(results, m)
        lines.append(
            f"* {m}: "
            + (f"N_f = {nf:.0f}, expected N* in [{rng.lo:.0f}, {rng.hi:.0f}]" if rng else nf)
            + (f"; ρ = {ratio[1]:.2g} at N = {ratio[0]}" if ratio else "")
        )
    return (
        "The FLOP count of each forward + backward program (probes.op_cost over its optimised "
        "HLO, every loop body as often as it runs; a call out of XLA counts 0) and "
        "the rate it ran at. N_f: where dense attention's count first exceeds the recurrence's; "
        "the expected N* is N_f times the rate ratio ρ (attention's FLOP rate over the "
        f"recurrence's) in [{claims.RATE_BAND[0]:g}, {claims.RATE_BAND[1]:g}] (claims.py).\n\n"
        + markdown_table(header, rows)
        + "\n\n"
        + "\n".join(lines)
    )


def steps_table(results) -> str:
    ns = results["lengths"]
    header = ["contender"] + [f"N={n}: loops" for n in ns] + [f"N={n}: critical path" for n in ns]
    rows = [[label] + [_cell(s, str) for s in e["serial_steps"]]
            + [_cell(s, str) for s in e["critical_path"]]
            for label, e in results["contenders"].items()]  # fmt: skip
    return (
        "Serial loop iterations of the forward + backward program (trip counts of its while "
        "loops, multiplied through nesting) and its critical path (probes.depth).\n\n"
        + markdown_table(header, rows)
    )


def anchor(results) -> str:
    rows = [[n, fa, gdn] for n, (fa, gdn) in claims.FLA_TABLE.items()]
    return (
        "flash-linear-attention's README, GB200, forward + backward (ms): a published "
        "accelerator figure, an estimate for that machine, never a verdict here.\n\n"
        + markdown_table(["N", "FlashAttention-2", "Gated DeltaNet"], rows)
        + f"\n\nRead from it: a crossover near N = {claims.FLA_CROSSOVER}."
    )


def _loads(results):
    got = results.get("others_cores") or []
    return ", ".join(f"N={n}: {'—' if v is None else f'{v:.2f}'}"
                     for n, v in zip(results["lengths"], got)) or "not recorded"  # fmt: skip


def notes(results) -> str:
    c = results["config"]
    return (
        f"Cases: benchmarks/cases_mixers.py (mixer_case, lstm_case) at batch {c['batch']}, width "
        f"{c['d_model']}, the benchmark's knobs per mixer, no short conv, no torch twin; each recurrent mixer "
        "in its default form on this backend (anatomy/mixers/defaults.py). Timing: "
        f"benchmarks/timing.py, every contender interleaved, {c['rounds']} rounds per N, a "
        f"sample at least {c['target_s']} s; the interval on N* is a bootstrap over those "
        "rounds from 8 of them (both contenders' rounds resampled together; a resample without "
        "a crossing is censored beyond the lengths), below 8 each round's own crossing and their "
        "t interval on a log scale. Other processes' load while each N was timed (cores "
        f"busy, from /proc/stat): {_loads(results)}. Peak memory: XLA's memory "
        "analysis (temp + output) of the program timed; a program over "
        f"{results['max_bytes'] / 2**30:.0f} GiB is not run. Timings are load-dependent: "
        "the load is in the provenance below."
    )
