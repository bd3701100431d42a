"""depth's report tables, from what results.json holds (string depth keys, null = NaN)."""

from __future__ import annotations

import numpy as np

from experiments import outputs
from experiments.depth import claims


def _depths(results) -> list[str]:
    return [str(d) for d in results["config"]["depths"]]


def loss_table(results) -> str:
    """Test loss mean ± std over the judged seeds per variant and depth (failed seeds counted),
    and the learning rate each (variant, L) chose."""
    depths = _depths(results)
    u = claims.unigram(results)
    rows = []
    for v in results["variants"].values():
        cells = []
        for d in depths:
            r = v["depths"].get(d)
            if r is None:
                cells.append("—")
                continue
            x = np.array([np.nan if y is None else y for y in r["test_loss"]], np.float64)
            bad = sum(claims.failed(y, u) for y in r["test_loss"])
            fail = f" ({bad}/{x.size} failed)" if bad else ""
            finite = x[np.isfinite(x)]
            mean = f"{finite.mean():.3f} ± {finite.std(ddof=1) if finite.size > 1 else 0:.3f}"
            cells.append(f"{mean if finite.size else 'NaN'}{fail} @ {r['learning_rate']:g}")
        rows.append([v["label"], *cells])
    head = ["variant", *(f"L={d}" for d in depths)]
    data = results["data"]
    return (
        outputs.markdown_table(head, rows)
        + "\n\nEach cell: mean ± std over the judged seeds @ the peak learning rate the grid "
        f"chose. Unigram loss of the same test characters: {u:.3f} nats (a seed within "
        f"{claims.FAIL_MARGIN:g} of it, or NaN, failed); {data['eval_characters']} characters "
        "scored."
    )


def change_table(results) -> str:
    """Δ(L) with its interval, per variant and depth (what the stacks / breaks claims read),
    and pre-LN's gain per layer."""
    depths = _depths(results)
    rows = []
    for name, v in results["variants"].items():
        by = {str(d): f"{iv} vs L={ref}" for d, ref, iv, _ in claims.changes(results, name)}
        rows.append([v["label"], *(by.get(d, "—") for d in depths[1:])])
    head = ["variant", *(f"Δ at L={d}" for d in depths[1:])]
    return (
        outputs.markdown_table(head, rows)
        + "\n\nΔ(L): the loss at L minus that at the shallower depth with the lowest mean "
        "(a failed seed scored at the unigram loss), the mean over the judged seeds and its "
        "95% t interval (paired by seed)."
    )


def grid_table(results) -> str:
    """The learning-rate grid: mean validation loss over the design seeds per rate, per
    variant and depth, and the choice."""
    g = results["lr_grid"]
    rates = g["learning_rates"]
    labels = g.get("labels") or {}
    rows, edge = [], 0
    for name, by_depth in g["valid_loss"].items():
        for d, per_rate in by_depth.items():
            means = [
                float(np.mean([np.nan if x is None else x for x in seeds])) for seeds in per_rate
            ]
            lr = g["chosen"][name][d]
            at_edge = len(rates) > 1 and lr in (min(rates), max(rates))
            edge += at_edge
            rows.append(
                [labels.get(name, name), int(d), *means, f"{lr:g}{' (edge)' if at_edge else ''}"]
            )
    head = ["variant", "L", *(f"lr {r:g}" for r in rates), "chosen"]
    source = g.get("source", "this run")
    made = g.get("made_by") or {}
    where = (
        "this run"
        if source == "this run"
        else f"`{source}` (made by `{g.get('command', '')}` at commit "
        f"{(made.get('commit') or 'unknown')[:7]})"
    )
    return (
        outputs.markdown_table(head, rows)
        + f"\n\nMean validation loss over the design seeds {g['seeds']} ({where}); a diverged "
        "run (NaN) never wins; the lowest mean chooses, the first rate on a tie. The choice "
        f"is at an edge of the grid in {edge} of {len(rows)} cells (edge): there a rate "
        "outside the grid might have done better."
    )


def grad_table(results) -> str:
    """The last layer's gradient norm at init (mean over seeds) per depth, and its exponent
    with its t interval over the init seeds."""
    depths = _depths(results)
    rows = []
    for name, v in results["variants"].items():
        cells = []
        for d in depths:
            r = v["depths"].get(d)
            g = [np.nan if x is None else x for x in r["init_grad_xiong"]] if r else []
            cells.append(float(np.nanmean(g)) if r and np.isfinite(g).any() else "—")
        ratio = claims.bottom_over_top(results, name)
        slope = str(claims.exponent(results, name)) if len(v["depths"]) > 1 else "—"
        rows.append([v["label"], *cells, slope, f"{ratio[1]:.3g}" if ratio else "—"])
    head = ["variant", *(f"L={d}" for d in depths), "exponent a (∝ L^a)", "layer 1 / layer L"]
    return (
        outputs.markdown_table(head, rows)
        + "\n\nTransformer: ‖∂loss/∂W^{2,L}‖, the last block's second FFN weight (Xiong et al. "
        "2020, Theorem 1: exponent 0 post-LN, -1/2 pre-LN); LSTM: the last layer's cell "
        "parameters (no theorem). The exponent: each init seed's log-log slope, with their "
        "t interval over the init seeds. Layer 1 / layer L: the first "
        "layer's gradient norm over the last's, at the deepest L (below 1: the gradient "
        "shrinks on its way down the stack). Every layer's norm is in results.json "
        "(init_grad_layers) and in grad_norms_at_init.png."
    )


def cost_table(results) -> str:
    """Parameters, time per step (reported, not judged) and compile time per variant and L;
    the run's CPU time."""
    depths = _depths(results)
    rows = []
    for v in results["variants"].values():
        for d in depths:
            r = v["depths"].get(d)
            if r is None:
                continue
            rows.append(
                [v["label"], int(d), r["params"], 1e3 * r["seconds_per_step"], r["compile_s"]]
            )
    head = ["variant", "L", "params", "ms per step", "compile s"]
    serial = []
    for family, by_depth in results["serial_steps"].items():
        for d, s in by_depth.items():
            serial.append([family, s["variant"], int(d), s["n"], s["hlo"], s["jaxpr"]])
    return (
        outputs.markdown_table(head, rows)
        + "\n\nms per step: one run (one seed), the median over the seeds; post-LN with and "
        "without warmup share one compiled program, compiled in a second thread while the "
        "previous one trains. Times move with the machine's load: they are reported, never "
        f"judged. {cpu_line(results)}\n\nSerial steps of the forward program (one window of "
        "N characters), read from the compiled HLO and from the jaxpr:\n\n"
        + outputs.markdown_table(["family", "variant", "L", "N", "HLO", "jaxpr"], serial)
    )


def cpu_line(results) -> str:
    """The run's CPU time against its wall time (the load it ran under: its provenance)."""
    cost = results.get("cost") or {}
    if cost.get("cpu_seconds") is None:
        return ""
    return (
        f"The run: {cost['cpu_seconds']:.0f} s of CPU time (every thread) in "
        f"{cost['wall_seconds']:.0f} s of wall time; compiling took "
        f"{cost['compile_seconds']:.0f} s of wall time in its own thread, beside the training."
    )


def sections(results) -> list[tuple[str, str]]:
    return [
        ("Test loss against depth", loss_table(results)),
        ("Change with depth", change_table(results)),
        ("The learning-rate grid", grid_table(results)),
        ("Gradient norms at initialisation", grad_table(results)),
        ("Cost: time per step and serial steps", cost_table(results)),
    ]


def grid_sections(results) -> list[tuple[str, str]]:
    """The grid run's report: its table and what it cost."""
    return [("The learning-rate grid", grid_table(results) + "\n\n" + cpu_line(results))]
