"""parallelism's plot (parallelism.png) and report.md's tables and prose, every number in
them read from the measurements."""

import numpy as np

from anatomy.tables import markdown_table
from experiments.lab import outputs, style


def plot(cfg, raw, workdir):
    fig, axes = outputs.new_figure(1, 4, figsize=(20, 4.5))
    for ax, key, loglog in zip(
        axes, ("median_s", "steps_hlo", "utilisation", "depth"), (True, False, False, True)
    ):
        outputs.plot_series(ax, raw, key, loglog=loglog)
    panels = (
        (
            "forward+backward wall time (s)",
            f"median of {cfg.repeats}, batch {cfg.batch}, d={cfg.d}",
        ),
        ("serial loop iterations (compiled HLO)", "sequential steps in the program"),
        ("CPU time / (wall × cores)", f"core utilisation ({raw['lstm'][0]['cores']} cores)"),
        (
            "critical path (dependent ops, compiled HLO)",
            "serial depth: scan ∝ N, associative scan ∝ log N",
        ),
    )
    lstm, attn = raw["lstm"], raw["attention"]
    ns = [r["n"] for r in lstm]
    style.reference_slope(axes[0], ns, lstm[0]["median_s"], 1, "reference N^1 (LSTM)")
    style.reference_slope(axes[0], ns, attn[0]["median_s"], 2, "reference N^2 (attention)")
    for ax, (ylabel, title) in zip(axes, panels):
        ax.set(xlabel="N", ylabel=ylabel, title=title)
        ax.title.set_fontsize(9)
    axes[2].set(ylim=(0, 1.05))
    for a in axes:
        a.legend(fontsize=7)
    outputs.grid_ticks(axes[0], cfg.n_grid)
    outputs.grid_ticks(axes[3], cfg.n_grid)
    return outputs.save_plot(fig, workdir, "parallelism.png")


draw = outputs.drawn_by(plot)  # parallelism.png from results.json alone


def _load_note(load, cores) -> str:
    """What the recorded 1-minute load averages (before, after the run) say about the timings."""
    if not load or not all(x is not None and np.isfinite(x) for x in load):
        return "The load average was not recorded."
    busy = max(load) > cores
    return (
        f"1-minute load average before / after this run: {load[0]:.1f} / {load[1]:.1f} on "
        f"{cores} cores: "
        + (
            "above the core count, so other work competed for the cores; utilisation is then "
            "depressed by time spent waiting for a core, not only by serial work."
            if busy
            else "at most the core count."
        )
    )


def sections(config, raw, a) -> list[tuple[str, str]]:
    """report.md's sections after the claims: the measurements, the minGRU's two ways, how it
    was measured."""
    cores = raw["lstm"][0]["cores"]
    n0, ul = a["ratio_n"], a["utilisation_at_ratio_n"]["lstm"]
    table = markdown_table(
        (
            "N",
            "LSTM s",
            "attention s",
            "LSTM/attention",
            "LSTM steps",
            "attention steps",
            "LSTM util.",
            "attention util.",
            "LSTM GFLOP",
            "attention GFLOP",
            "LSTM GFLOP/s",
            "attention GFLOP/s",
        ),
        [
            (
                r["n"],
                r["median_s"],
                t["median_s"],
                r["median_s"] / t["median_s"],
                r["steps_hlo"],
                t["steps_hlo"],
                r["utilisation"],
                t["utilisation"],
                r["flops"] / 1e9,
                t["flops"] / 1e9,
                r["gflops_per_s"],
                t["gflops_per_s"],
            )
            for r, t in zip(raw["lstm"], raw["attention"])
        ],
    )
    linear_table = markdown_table(
        ("N", "scan s", "assoc. s", "scan steps", "assoc. steps")
        + ("scan depth", "assoc. depth", "LSTM depth", "attention depth"),
        [
            (s_["n"], s_["median_s"], a_["median_s"], s_["steps_hlo"], a_["steps_hlo"])
            + (s_["depth"], a_["depth"], ls_["depth"], at_["depth"])
            for s_, a_, ls_, at_ in zip(
                raw["mingru_scan"], raw["mingru_assoc"], raw["lstm"], raw["attention"]
            )
        ],
    )
    notes = (
        f"One LSTM layer (anatomy.mixers.cells, hidden {config.d}) and one multi-head self-attention "
        f"layer (anatomy.attention, d_model {config.d}, {config.n_heads} heads), batch "
        f"{config.batch}; each timed as jit(grad(Σ out²)) with respect to parameters and inputs.\n\n"
        "* **Serial steps** are read from the compiled program, not assumed: the trip counts of "
        "the while loops in the optimised HLO (XLA's `known_trip_count`), multiplied through "
        "nesting, agree with the jaxpr's scan lengths. The LSTM runs N iterations forward and N "
        "backward; attention compiles to no loop over positions.\n"
        "* **Utilisation** = process CPU time / (wall time × cores): the CPU counterpart of the "
        f"chapter's 'one core of sixteen'. On {cores} cores the LSTM leaves "
        f"{100 * (1 - ul):.0f}% of the machine idle at N={n0}.\n"
        "* **FLOPs**: attention's from XLA's count of its gradient program; the LSTM's as 3 × "
        "its loop-corrected forward count (XLA counts loop bodies once). GFLOP/s = FLOPs / "
        "median time: how much of the machine each layer turns into arithmetic.\n"
        f"* **The ratio** was measured on {a['device_kind']} with {cores} cores. The chapter's "
        "5-10x is for GPUs, where a serial step of a small matmul wastes thousands of lanes; "
        "where one [B,d]x[d,4d] step already keeps a core busy, the gap is what the per-step "
        "overhead and the missing parallelism over time cost. Times are medians of "
        f"{config.repeats} calls. {_load_note(a['load_average_before_after'], cores)}\n"
        f"* **minGRU** (anatomy.mixers.mingru, hidden {config.d}): its gates read x only, so "
        "h_t = a_t ⊙ h_{t-1} + b_t is linear and runs either as jax.lax.scan (N steps) or "
        "jax.lax.associative_scan (no loop; log2 N levels). **Depth** is the critical path of "
        "the optimised gradient program: the longest chain of dependent HLO instructions, a "
        "fused chain counted op by op, a loop as trips × its body's path."
    )
    return [
        ("Measurements", table),
        ("minGRU: scan vs associative scan", linear_table),
        ("How it was measured", notes),
    ]
