"""scaling's tables, plots and report.md, from what the run recorded (no verdict is made here)."""

from __future__ import annotations

from anatomy.probes.claims import rule_text
from anatomy.tables import markdown_table
from experiments.lab import outputs
from experiments.scaling.claims import MODEL_TOL, miss, rules

ESTIMATE = "Estimates, not measurements: nothing here runs on an accelerator"

MODE_LABEL = {"dp": "data parallel", "tp": "tensor parallel", "single": "one device"}


def collectives_table(structure) -> str:
    rows = []
    for r in structure:
        if r["mode"] == "single":
            continue
        t = r["collectives"]["total"]
        kinds = ", ".join(
            f"{k} {v['executions']:g}" for k, v in sorted(r["collectives"]["by_kind"].items())
        )
        rows.append(
            (
                r["family"],
                MODE_LABEL[r["mode"]],
                r["n"],
                r["layers"] or "—",
                t["executions"],
                t["in_loop_executions"],
                t["bytes"] / 1024,
                r["param_bytes"] / 1024,
                kinds or "none",
            )
        )
    return markdown_table(
        (
            "program",
            "mode",
            "N",
            "L",
            "collectives / step",
            "in a loop",
            "KiB moved / step",
            "parameter KiB",
            "by kind (executions)",
        ),
        rows,
    )


def depth_table(structure) -> str:
    rows = [
        (
            r["family"],
            MODE_LABEL[r["mode"]],
            r["n"],
            r["layers"] or "—",
            r["serial_steps"],
            r.get("critical_path", "—"),
            ", ".join(str(t) for t in r["trip_counts"]) or "none",
            r["profile"]["flops"] / 1e6,
            r["profile"]["bytes"] / 2**20,
            r["xla_loops_once"]["flops"] / 1e6,
            r["profile"]["ops"],
        )
        for r in structure
    ]
    return markdown_table(
        (
            "program",
            "mode",
            "N",
            "L",
            "serial steps",
            "critical path",
            "loop trip counts",
            "MFLOP / step (per device)",
            "MiB / step",
            "XLA's MFLOP (loops once)",
            "ops executed",
        ),
        rows,
    )


def error_table(check_rows) -> str:
    return markdown_table(
        (
            "program",
            "N",
            "measured ms",
            "predicted ms",
            "predicted / measured",
            "fastest: predicted / measured",
            "compute ms",
            "memory ms",
            "latency ms",
            "dominant",
            "ops executed",
        ),
        [
            (
                r["family"],
                r["n"],
                1e3 * r["measured_s"],
                1e3 * r["predicted_s"],
                r["ratio"],
                r["ratio_min"],
                1e3 * r["compute"],
                1e3 * r["memory"],
                1e3 * r["latency"],
                r["dominant"],
                r["ops"],
            )
            for r in check_rows
        ],
    )


def miss_notes(check_rows) -> str:
    """One line per program the model missed by more than MODEL_TOL: the term it predicted to
    dominate, and whether the fastest calls (against the table from the fastest benchmark
    calls) are within MODEL_TOL, i.e. whether the miss is the load's or the model's."""
    lines = []
    for r in check_rows:
        if max(r["ratio"], 1 / r["ratio"]) <= MODEL_TOL:
            continue
        fast = max(r["ratio_min"], 1 / r["ratio_min"]) <= MODEL_TOL
        lines.append(
            f"* {r['family']} N={r['n']}: predicted / measured {r['ratio']:.2f} "
            f"({'over' if r['ratio'] > 1 else 'under'}-predicted), {r['dominant']} predicted "
            f"to dominate; fastest calls {r['ratio_min']:.2f}: "
            + (
                "within the band, so the median's miss comes with the load (the benchmarks "
                "and this program were not slowed alike)"
                if fast
                else "also outside the band: the model misses this program here"
            )
        )
    return "\n".join(lines) or f"Every prediction is within {MODEL_TOL:g}x of the measured time."


def hardware_table(tables: list[dict]) -> str:
    """The figures of each table, then where each comes from (source, measurement or assumption)."""
    rows = [
        (
            t["name"],
            t["matmul_flops"]["bfloat16"] / 1e12,
            t["matmul_flops"]["float32"] / 1e12,
            t["bandwidth"] / 1e9,
            ", ".join(f"{b / 2**20:g} MiB: {r / 1e9:.3g}" for b, r in t.get("caches", ())) or "—",
            t["first_touch_bandwidth"] / 1e9 if t.get("first_touch_bandwidth") else "—",
            t["op_latency"] * 1e6,
            t["loop_latency"] * 1e6,
            t.get("call_latency", 0.0) * 1e6,
            t["link_bandwidth"] / 1e9 if t.get("link_bandwidth") else "—",
            t["collective_latency"] * 1e6 if t.get("collective_latency") else "—",
        )
        for t in tables
    ]
    table = markdown_table(
        (
            "hardware",
            "bf16 TFLOP/s",
            "fp32 TFLOP/s",
            "memory GB/s",
            "cache tiers GB/s",
            "first touch GB/s",
            "op latency µs",
            "loop latency µs",
            "call latency µs",
            "link GB/s",
            "α µs",
        ),
        rows,
    )
    notes = []
    for t in tables:
        notes.append(f"* **{t['name']}**")
        notes += [f"  * {k}: {v}" for k, v in t.get("sources", {}).items()]
        notes += [f"  * {k}: *assumed*: {v}" for k, v in t.get("assumptions", {}).items()]
    return table + "\n\n" + "\n".join(notes)


def terms_table(check_rows) -> str:
    """The model and the model with terms switched off (check.VARIANTS): how many programs
    each predicts within MODEL_TOL, and its worst miss, at the medians."""
    from experiments.scaling.check import VARIANTS

    rows = []
    for label in VARIANTS:
        m = [(miss(_value(r, label), r["measured_s"]), r) for r in check_rows]
        worst, r = max(m, key=lambda x: x[0])
        rows.append(
            (
                label,
                f"{sum(x <= MODEL_TOL for x, _ in m)} of {len(m)}",
                worst,
                f"{r['family']} N={r['n']}",
            )
        )
    return markdown_table(
        ("prediction", f"within {MODEL_TOL:g}x", "worst miss (max(p/m, m/p))", "worst program"),
        rows,
    )


def _value(row, label):
    return row["predicted_s"] if label == "model" else row["variants"][label]


def gpu_programs_table(gpu) -> str:
    """Whether XLA:GPU's programs were compiled (and why not), and each one's kernels, loop
    iterations and bytes beside XLA:CPU's program of the same computation."""
    if not gpu.get("available"):
        return f"Not compiled: {gpu.get('why', '')}. Every estimate counts XLA:CPU's programs."
    rows = []
    for key, p in gpu["programs"].items():
        cpu = p.get("cpu", {})
        rows.append(
            (
                key.replace("|", " N="),
                p["gpu"]["ops"],
                cpu.get("ops", "—"),
                p["gpu"]["loop_iterations"],
                p["gpu"]["bytes"] / 2**20,
                cpu["bytes"] / 2**20 if cpu else "—",
                p["gpu"]["flops"] / 1e9,
            )
        )
    head = (
        f"Compiled for {gpu['target']} by XLA:GPU without a GPU ({gpu['python']}, "
        f"{gpu.get('seconds', 0):.0f} s), never run; XLA:CPU's are the programs timed here "
        "(float32; the estimates re-price them at bf16).\n\n"
    )
    return head + markdown_table(
        (
            "program",
            "kernels (XLA:GPU)",
            "ops (XLA:CPU)",
            "loop iterations",
            "MiB moved (XLA:GPU)",
            "MiB moved (XLA:CPU)",
            "GFLOP",
        ),
        rows,
    )


def estimates_table(rows, ratio_key, ratio_title, names=("LSTM", "attention")) -> str:
    """One estimate per accelerator: where its kernels are counted from, each program's
    estimated ms, kernels and dominant term, and the ratio."""
    rec, att = names
    return f"{ESTIMATE}.\n\n" + markdown_table(
        (
            "accelerator",
            "kernels counted from",
            f"{rec} ms",
            f"{rec} kernels",
            f"{rec}: latency share",
            f"{att} ms",
            f"{att} kernels",
            f"{att}: dominant",
            ratio_title,
        ),
        [
            (
                r["accelerator"],
                r["counted_from"],
                1e3 * r["recurrent_s"],
                r["recurrent_kernels"],
                f"{r['recurrent_terms']['latency'] / r['recurrent_s']:.1%}",
                1e3 * r["attention_s"],
                r["attention_kernels"],
                r["attention_dominant"],
                r[ratio_key],
            )
            for r in rows
        ],
    )


def sensitivity_table(rows, headline, ratio_key, ratio_title) -> str:
    """The headline accelerator's estimate with one assumption varied at a time."""
    row = next((r for r in rows if r["accelerator"] == headline), None)
    if row is None:
        return "(no estimate)"
    return markdown_table(
        ("assumption", "value", ratio_title, "recurrent: latency share"),
        [
            (
                v["assumption"],
                v["value"],
                v[ratio_key],
                f"{v['recurrent_terms']['latency'] / v['recurrent_s']:.1%}",
            )
            for v in row["sensitivity"]
        ],
    )


def wide_table(rows) -> str:
    if not rows:
        return "(none configured)"
    return f"{ESTIMATE}; XLA:CPU's programs compiled from shapes at this width, never run.\n\n" + (
        markdown_table(
            (
                "accelerator",
                "d",
                "batch",
                "N",
                "LSTM ms",
                "attention ms",
                "LSTM / attention",
                "... one kernel per LSTM step",
            ),
            [
                (
                    r["accelerator"],
                    r["d"],
                    r["batch"],
                    r["n"],
                    1e3 * r["recurrent_s"],
                    1e3 * r["attention_s"],
                    r["ratio"],
                    r["ratio_fused"],
                )
                for r in rows
            ],
        )
    )


def steps_table(steps) -> str:
    """Per seed: the target, each model's bracket of steps to it, its seconds per step and the
    Transformer / RNNsearch ratios of steps and time (brackets)."""

    def br(b):
        return f"({b[0]:g}, {b[1]:g}]" if b else "never"

    def pair(x):
        return f"[{x[0]:.3g}, {x[1] if x[1] is not None else float('inf'):.3g}]" if x else "—"

    return markdown_table(
        (
            "seed",
            "target loss",
            "Transformer steps",
            "RNNsearch steps",
            "Transformer ms / step",
            "RNNsearch ms / step",
            "steps ratio",
            "time ratio",
        ),
        [
            (
                i,
                s["target_loss"],
                br(s["steps"]["transformer"]),
                br(s["steps"]["rnnsearch"]),
                1e3 * s["seconds_per_step"]["transformer"],
                1e3 * s["seconds_per_step"]["rnnsearch"],
                pair(s.get("steps_ratio")),
                pair(s.get("time_ratio")),
            )
            for i, s in enumerate(steps["seeds"])
        ],
    )


def scale_out_table(rows) -> str:
    return f"{ESTIMATE}.\n\n" + markdown_table(
        (
            "program",
            "mode",
            "N",
            "L",
            "accelerator",
            "one device ms",
            "8 devices ms",
            "speed-up",
            "collectives share",
            "dominant",
        ),
        [
            (
                r["family"],
                MODE_LABEL[r["mode"]],
                r["n"],
                r["layers"] or "—",
                r["accelerator"],
                1e3 * r["one_device_s"],
                1e3 * r["mesh_s"],
                r["speedup"],
                r["communication_share"],
                r["dominant"],
            )
            for r in rows
        ],
    )


def plot(structure, check_rows, workdir, cfg) -> list[str]:
    """collectives.png (executions per step against N, tp and dp, each stack) and
    prediction.png (predicted against measured on this CPU, the 2x band)."""
    fig, axes = outputs.new_figure(1, 2, figsize=(12, 4.5))
    for family in sorted({r["family"] for r in structure}):
        for mode, style in (("tp", "o-"), ("dp", "s--")):
            rows = sorted(
                (
                    r
                    for r in structure
                    if r["family"] == family
                    and r["mode"] == mode
                    and r["layers"] in (cfg.layers_fixed, 0)
                ),
                key=lambda r: r["n"],
            )
            if len(rows) > 1:
                axes[0].loglog(
                    [r["n"] for r in rows],
                    [max(r["collectives"]["total"]["executions"], 0.5) for r in rows],
                    style,
                    label=f"{family}, {MODE_LABEL[mode]}",
                )
    axes[0].set(
        xlabel="N",
        ylabel="collectives executed per training step",
        title=f"{cfg.devices} devices, L = {cfg.layers_fixed} (read from the compiled programs)",
    )
    axes[0].legend(fontsize=8)
    outputs.grid_ticks(
        axes[0], sorted({r["n"] for r in structure if r["layers"] == cfg.layers_fixed})
    )
    ax = axes[1]
    meas = [1e3 * r["measured_s"] for r in check_rows]
    pred = [1e3 * r["predicted_s"] for r in check_rows]
    for kind, marker in (("layer", "o"), ("translator", "^")):
        for fam in sorted({r["family"] for r in check_rows if r["kind"] == kind}):
            pts = [(m, p) for m, p, r in zip(meas, pred, check_rows) if r["family"] == fam]
            ax.loglog(*zip(*pts), marker, label=fam)
    lo, hi = min(meas + pred) / 1.5, max(meas + pred) * 1.5
    ax.loglog([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.fill_between(
        [lo, hi], [lo / MODEL_TOL, hi / MODEL_TOL], [lo * MODEL_TOL, hi * MODEL_TOL], color="0.9"
    )
    ax.set(
        xlabel="measured ms (this CPU, median)",
        ylabel="predicted ms (cost model)",
        title=f"the model on this CPU (band: {MODEL_TOL:g}x)",
    )
    ax.legend(fontsize=8)
    return [outputs.save_plot(fig, workdir, "scaling.png")]


def draw(results, workdir) -> list[str]:
    """scaling.png from results.json alone (what the docs' PLOTS call): plot() of its structure
    and check rows under its config."""
    import ml_collections

    cfg = ml_collections.ConfigDict(results["config"])
    return plot(results["structure"], results["check"]["rows"], workdir, cfg)


TITLE = "Scaling: collectives, serial depth and a cost model"


def sections(cfg, results) -> list[tuple[str, str]]:
    """report.md's sections after its Claims (record.finish adds the claims, plots and run)."""
    a = results["applied"]
    steps, head = a["steps_to_loss"], cfg.applied.headline
    hw_tables = [results["check"]["hardware"]] + results["applied"]["accelerator_tables"]
    bench = results["check"]["benchmarks"]
    notes = (
        f"* **Structure** (sections 2-3): every training step (Adam) compiled with anatomy's "
        f"shardings for {cfg.devices} fake CPU devices (data × model = {cfg.devices} × 1: data "
        f"parallel; 1 × {cfg.devices}: tensor parallel, heads / FFN / recurrent gate columns over "
        "'model') and read from the optimised per-device HLO: every collective with its kind, "
        "bytes and replica groups, and how often it runs (a collective inside a while body runs "
        "once per trip, nested loops multiplied). These programs are compiled, never timed: wall "
        "time on fake devices says nothing about speed.\n"
        f"* **Stacks**: an LSTM stack (hidden d = {cfg.d}) and a post-LN Transformer encoder stack "
        f"(d = {cfg.d}, {cfg.n_heads} heads, FFN 2d): both 8d² weights per layer; batch "
        f"{cfg.batch} × N × d, mean squared error against a target. The LSTM uses anatomy's fused "
        "VJP (weight gradients after the backward loop); 'lstm_autodiff' is the same stack "
        "through jax.lax.scan's own transpose.\n"
        "* **The cost model** (anatomy.probes.roofline): Σ over executed ops of max(FLOPs / peak, "
        "bytes / bandwidth) + ops × op latency + loop iterations × loop latency + Σ collectives "
        "(α + wire bytes / link bandwidth); per op, not XLA's whole-program totals (a roofline "
        "bounds each kernel, and the count of kernels is itself a term); op FLOPs / bytes follow "
        "XLA's HloCostAnalysis rules and reproduce its totals when loops are counted once.\n"
        f"* **This machine** was measured in the same run, its micro-benchmarks interleaved "
        f"with the programs ({cfg.check.rounds} rounds, medians; in each round every program "
        f"and benchmark first runs {cfg.check.get('run_in', 0)} untimed call(s) of itself, as one "
        "train step follows another): matmul "
        f"{bench['matmul'] / 1e9:.1f} GFLOP/s, memory {bench['bandwidth'] / 1e9:.2f} GB/s, "
        + ", ".join(
            f"{k.replace('_', ' level ')} {v / 1e9:.1f} GB/s"
            for k, v in bench.items()
            if k.startswith("cache_")
        )
        + f", first touch {(bench.get('first_touch') or 0) / 1e9:.2f} GB/s, op latency "
        f"{results['check']['hardware']['op_latency'] * 1e6:.2f} µs, loop latency "
        f"{results['check']['hardware']['loop_latency'] * 1e6:.2f} µs. "
        f"{_load_note(results['load_average_before_after'])}\n"
        f"* **Accelerators**: estimates, never measurements. Rates are the published peaks, "
        "taken as achieved; latencies and link figures are assumptions, stated beside them. The "
        "kernels and bytes are counted from "
        + (
            f"XLA:GPU's programs for {a['gpu_programs']['target']} where they were compiled "
            "(deviceless, section 'Programs compiled for a GPU'), else from XLA:CPU's; "
            if a["gpu_programs"].get("available")
            else "XLA:CPU's programs (no GPU program was compiled: "
            f"{a['gpu_programs'].get('why', '')}); "
        )
        + f"precision {cfg.applied.precision} (bf16 compute, float32 master parameters). Each "
        "estimate is printed again with one assumption varied (kernels, latencies, achieved "
        "share of peak).\n"
        f"* **Steps to a common validation loss**: from {steps['source']}, per seed: the target "
        f"is the higher of the two models' validation losses at "
        f"{steps['target_fraction']:.0%} of their schedules, reached by both before their "
        "schedules end; each model's steps to it are the bracket between two evaluations (the "
        "grid is the precision, nothing interpolated), its time the steps × its seconds per "
        "step in that run (train_seconds / steps, on the machine that trained it)."
    )
    return [
        ("How verdicts are decided", rule_text() + "\n\n" + "\n".join(rules())),
        ("Collectives per training step", collectives_table(results["structure"])),
        ("Serial depth, FLOPs and bytes per step", depth_table(results["structure"])),
        ("The cost model on this CPU: prediction error", error_table(results["check"]["rows"])),
        ("The cost model's terms, on and off", terms_table(results["check"]["rows"])),
        ("Where the model misses", miss_notes(results["check"]["rows"])),
        ("Hardware tables", hardware_table(hw_tables)),
        ("Programs compiled for a GPU", gpu_programs_table(a["gpu_programs"])),
        (
            f"Estimated LSTM / attention training time at N = {a['n_ratio']}",
            estimates_table(a["layer_estimates"], "ratio", "LSTM / attention"),
        ),
        (
            f"Sensitivity of the LSTM / attention estimate ({head})",
            sensitivity_table(a["layer_estimates"], head, "ratio", "LSTM / attention"),
        ),
        ("The same layers at a larger width", wide_table(a["wide_ratios"])),
        ("Steps to a common validation loss (measured)", steps_table(steps)),
        (
            "Estimated Transformer / RNNsearch time per step and to the common loss",
            estimates_table(
                a["time_to_loss"], "time_ratio", "time to loss ratio", ("RNNsearch", "Transformer")
            ),
        ),
        (
            f"Sensitivity of the time-to-loss estimate ({head})",
            sensitivity_table(a["time_to_loss"], head, "time_ratio", "time to loss ratio"),
        ),
        ("Estimated scale-out of the stacks", scale_out_table(a["scale_out"])),
        ("How it was measured", notes),
    ]


def _load_note(load) -> str:
    if not load or any(x is None for x in load):
        return "The load average was not recorded."
    return (
        f"1-minute load average before / after: {load[0]:.1f} / {load[1]:.1f} (timings on a "
        "loaded machine are slower and noisier; the benchmarks share the load)."
    )
