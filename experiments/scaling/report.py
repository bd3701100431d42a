"""scaling's tables, plots and report.md, from what the run recorded (no verdict is made here)."""

from __future__ import annotations

from experiments import outputs
from experiments.scaling.claims import MODEL_TOL, PREDICTED

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
    return outputs.markdown_table(
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
    return outputs.markdown_table(
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
    return outputs.markdown_table(
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
    table = outputs.markdown_table(
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


def _predicted_table(rows, keys) -> str:
    """The predicted LSTM vs attention times per accelerator, with the rows' `keys` columns
    ({header: key}) after the accelerator's name."""
    return outputs.markdown_table(
        (
            "accelerator",
            *keys,
            "LSTM ms",
            "attention ms",
            "LSTM / attention",
            "... one kernel per LSTM step",
            "LSTM: dominant",
            "attention: dominant",
        ),
        [
            (
                r["accelerator"],
                *(r[k] for k in keys.values()),
                1e3 * r["lstm_s"],
                1e3 * r["attention_s"],
                r["ratio"],
                r["ratio_fused"],
                r["lstm_dominant"],
                r["attention_dominant"],
            )
            for r in rows
        ],
    )


def accelerator_table(ratios, cfg) -> str:
    rows = [r for r in ratios if r["latency_scale"] == 1.0]
    return f"{PREDICTED} ({cfg.precision}).\n\n" + _predicted_table(rows, {"N": "n"})


def sensitivity_table(ratios, n_ratio) -> str:
    rows = [
        (r["accelerator"], r["latency_scale"], r["ratio"], r["ratio_fused"])
        for r in ratios
        if r["n"] == n_ratio
    ]
    return outputs.markdown_table(
        (
            "accelerator",
            "latencies x",
            f"LSTM / attention at N = {n_ratio}",
            "... one kernel per LSTM step",
        ),
        rows,
    )


def wide_table(rows) -> str:
    if not rows:
        return "(none configured)"
    return f"{PREDICTED}; compiled from shapes at this width, never run.\n\n" + _predicted_table(
        rows, {"d": "d", "batch": "batch", "N": "n"}
    )


def time_to_loss_table(ttl, steps) -> str:
    rel = {"transformer >=": "≥ ", "transformer <=": "≤ ", None: ""}[steps["bound"]]
    return outputs.markdown_table(
        (
            "accelerator",
            "Transformer step ms",
            "RNNsearch step ms",
            "per-step ratio",
            "time to loss ratio",
            "Transformer: dominant",
            "RNNsearch: dominant",
        ),
        [
            (
                r["accelerator"],
                1e3 * r["transformer_step_s"],
                1e3 * r["rnnsearch_step_s"],
                r["step_ratio"],
                f"{rel}{r['time_ratio']:.3g}",
                r["transformer_dominant"],
                r["rnnsearch_dominant"],
            )
            for r in ttl
        ],
    )


def scale_out_table(rows) -> str:
    return f"{PREDICTED}.\n\n" + outputs.markdown_table(
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


TITLE = "Scaling: collectives, serial depth and a cost model"


def sections(cfg, results) -> list[tuple[str, str]]:
    """report.md's sections after its Claims (record.finish adds the claims, plots and run)."""
    steps = results["applied"]["steps_to_loss"]
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
        f"* **Accelerators**: {PREDICTED}. The tables below are the published peaks and "
        "bandwidths; latencies and link figures are assumptions, stated beside them; the op "
        "graph is XLA:CPU's (a GPU compiler fuses differently); precision "
        f"{cfg.applied.precision} (bf16 compute, float32 master parameters: half the bytes).\n"
        f"* **Steps to the same validation loss**: from {steps['source']}; target loss "
        f"{steps['target_loss']:.3f}."
        + (
            " Only final losses are recorded there, so the steps ratio is a bound: the model "
            "with the higher final loss needed all its steps, the other at most as many."
            if steps["bound"]
            else ""
        )
    )
    return [
        ("Collectives per training step", collectives_table(results["structure"])),
        ("Serial depth, FLOPs and bytes per step", depth_table(results["structure"])),
        ("The cost model on this CPU: prediction error", error_table(results["check"]["rows"])),
        ("Where the model misses", miss_notes(results["check"]["rows"])),
        ("Hardware tables", hardware_table(hw_tables)),
        (
            "Predicted LSTM / attention training time",
            accelerator_table(results["applied"]["speed_ratios"], cfg.applied),
        ),
        (
            "Sensitivity to the assumed latencies",
            sensitivity_table(results["applied"]["speed_ratios"], results["applied"]["n_ratio"]),
        ),
        ("The same layers at a larger width", wide_table(results["applied"]["wide_ratios"])),
        (
            "Predicted Transformer vs RNNsearch time to the same loss",
            time_to_loss_table(results["applied"]["time_to_loss"], steps),
        ),
        ("Predicted scale-out of the stacks", scale_out_table(results["applied"]["scale_out"])),
        ("How it was measured", notes),
    ]


def _load_note(load) -> str:
    if not load or any(x is None for x in load):
        return "The load average was not recorded."
    return (
        f"1-minute load average before / after: {load[0]:.1f} / {load[1]:.1f} (timings on a "
        "loaded machine are slower and noisier; the benchmarks share the load)."
    )
