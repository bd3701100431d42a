"""depth's report tables, from what results.json holds (string depth keys, null = NaN)."""

from __future__ import annotations

import numpy as np

from anatomy.probes.claims import power_from, seeds_needed
from anatomy.tables import markdown_table
from experiments.depth import claims


def _depths(results) -> list[str]:
    return sorted({d for v in results["variants"].values() for d in v["depths"]}, key=int)


def loss_table(results) -> str:
    """Loss on the run's split, mean ± std over the seeds per variant and depth (failed seeds
    counted), and the learning rate each cell trained at."""
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
            x = np.array([np.nan if y is None else y for y in r["loss"]], np.float64)
            bad = sum(claims.failed(y, u) for y in r["loss"])
            fail = f" ({bad}/{x.size} failed)" if bad else ""
            finite = x[np.isfinite(x)]
            mean = f"{finite.mean():.3f} ± {finite.std(ddof=1) if finite.size > 1 else 0:.3f}"
            cells.append(f"{mean if finite.size else 'NaN'}{fail} @ {r['learning_rate']:g}")
        rows.append([v["label"], *cells])
    head = ["variant", *(f"L={d}" for d in depths)]
    data = results["data"]
    return (
        markdown_table(head, rows)
        + f"\n\nEach cell: mean ± std over the seeds {results['seeds']} on the {results['split']} "
        f"windows @ the peak learning rate it trained at. Unigram loss of the same characters: "
        f"{u:.3f} nats (a seed within {claims.FAIL_MARGIN:g} of it, or NaN, failed); "
        f"{data['eval_characters']} characters scored."
    )


def change_table(results) -> str:
    """Δ(L) with its interval, per variant and depth, and pre-LN's gain per doubling."""
    rows = []
    for name, v in results["variants"].items():
        d = claims.depths_of(results, name)
        if len(d) < 2:
            continue
        for j, n_layers in enumerate(d[1:], start=1):
            ref = d[claims._ref(results, name, j)]
            delta = probes_t(claims.delta(name, n_layers)(results))
            gain = (
                probes_t(claims.gain(name, d[j - 1], n_layers)(results))
                if n_layers == 2 * d[j - 1]
                else "—"
            )
            rows.append([v["label"], n_layers, f"{delta} vs L={ref}", f"{gain}"])
    if not rows:
        return "One depth per variant: nothing to compare."
    return (
        markdown_table(["variant", "L", "Δ(L)", "g(L/2→L)"], rows)
        + "\n\nΔ(L): the loss at L minus that at the shallower depth with the lowest mean; "
        "g(L/2→L): the gain of the doubling that reaches L (a failed seed scored at the "
        "unigram loss); the mean over the seeds and its 95% t interval (paired by seed)."
    )


def probes_t(values) -> str:
    return str(claims.t_interval(values))


def grid_table(results) -> str:
    """The learning-rate grid: mean validation loss over the design seeds per rate, per
    variant and depth, and the choice (marked when at an edge of the grid)."""
    g = results["lr_grid"]
    rates = g["learning_rates"]
    labels = g.get("labels") or {}
    if not any(g["valid_loss"].values()):  # the rates written into the config
        rows = [
            [labels.get(n, n), ", ".join(f"L={d} {lr:g}" for d, lr in by.items())]
            for n, by in g["chosen"].items()
        ]
        return (
            markdown_table(["variant", "chosen peak rate"], rows)
            + f"\n\nFrom {g['source']}: the choice of the committed grid "
            "(results/depth/lr_grid.json), on the design seed and the validation windows, over "
            f"the rates {', '.join(f'{r:g}' for r in rates)}. Variants that train at another's "
            "rate (post-LN without warmup and DeepNorm: post-LN + warmup's) say so in the loss "
            "table's rates."
        )
    tried = g.get("tried") or {n: {d: list(rates) for d in by} for n, by in g["valid_loss"].items()}
    columns = sorted({r for by in tried.values() for rs in by.values() for r in rs})
    rows, edge = [], 0
    for name, by_depth in g["valid_loss"].items():
        for d, per_rate in by_depth.items():
            means = {
                r: float(np.mean([np.nan if x is None else x for x in seeds]))
                for r, seeds in zip(tried[name][d], per_rate)
            }
            lr = g["chosen"][name][d]
            at_edge = len(means) > 1 and lr in (min(means), max(means))
            edge += at_edge
            rows.append(
                [
                    labels.get(name, name),
                    int(d),
                    *(means.get(r, "—") for r in columns),
                    f"{lr:g}{' (edge)' if at_edge else ''}",
                ]
            )
    head = ["variant", "L", *(f"lr {r:g}" for r in columns), "chosen"]
    extend = g.get("extend", 0)
    return (
        markdown_table(head, rows)
        + f"\n\nValidation loss, mean over the design seeds {g['seeds']}, of the base grid "
        f"{', '.join(f'{r:g}' for r in rates)}"
        + (
            f" and, where a cell's best rate sat at an edge of what it had tried, the next rate "
            f"of the 1-3-10 ladder past it (up to {extend} more, — where not tried)"
            if extend
            else ""
        )
        + "; a diverged run (NaN) never wins; the lowest mean chooses, the first rate on a "
        f"tie. The choice is at an edge of what its cell tried in {edge} of {len(rows)} cells "
        "(edge): there a rate outside might have done better."
    )


def grad_table(results) -> str:
    """Each variant's gradient at init at its deepest L: the first layer's over the last's."""
    rows = []
    for name, v in results["variants"].items():
        d = claims.depths_of(results, name)
        if d[-1] < 2:
            continue
        ratio = claims.bottom_over_top(results, name)
        last = v["depths"][str(d[-1])]["init_grad_xiong"]
        rows.append(
            [v["label"], d[-1], float(np.nanmean(np.array(last, float))), f"{ratio[1]:.3g}"]
        )
    if not rows:
        return "One layer only: no gradient down a stack."
    return (
        markdown_table(["variant", "L", "‖g‖ of the last layer's W", "layer 1 / layer L"], rows)
        + "\n\nAt the first step of the judged seeds (mean over seeds). Transformer: the last "
        "block's second FFN weight W^{2,L}; LSTM: the last layer's parameters. Layer 1 / "
        "layer L below 1: the gradient shrinks on its way down the stack. Every layer's norm "
        "is in results.json (init_grad_layers) and in grad_norms_at_init.png."
    )


def xiong_table(results) -> str:
    """‖∂loss/∂W^{2,L}‖ at init per depth (mean over seeds) and each variant's exponent."""
    got = results["xiong"]
    depths = sorted({int(d) for by in got.values() for d in by})
    rows = []
    for name, by in got.items():
        cells = [
            float(np.nanmean(np.array(by[str(d)], float))) if str(d) in by else "—" for d in depths
        ]
        a = claims.slopes(results, name)
        label = results.get("xiong_detail", {}).get("labels", {}).get(name, name)
        rows.append([label, *cells, str(claims.t_interval(a)) if a is not None else "—"])
    n = len(next(iter(next(iter(got.values())).values())))
    return (
        markdown_table(["variant", *(f"L={d}" for d in depths), "exponent a (∝ L^a)"], rows)
        + f"\n\n‖∂loss/∂W^(2,L)‖ at initialisation, the last block's second FFN weight, on "
        f"each seed's first training batch, mean over {n} seeds (Xiong et al. 2020, Theorem 1: "
        "exponent 0 post-LN, -1/2 pre-LN). The exponent: each seed's least-squares slope of "
        "log ‖g‖ on log L, the mean over seeds and its 95% t interval."
    )


def cost_table(results) -> str:
    """Parameters, time per step (reported, not judged) and compile time per variant and L;
    the run's CPU time; the serial steps of the forward program."""
    rows = []
    for v in results["variants"].values():
        for d, r in sorted(v["depths"].items(), key=lambda t: int(t[0])):
            rows.append(
                [v["label"], int(d), r["params"], 1e3 * r["seconds_per_step"], r["compile_s"]]
            )
    head = ["variant", "L", "params", "ms per step", "compile s"]
    serial = []
    for family, by_depth in (results.get("serial_steps") or {}).items():
        for d, s in by_depth.items():
            serial.append([family, s["variant"], int(d), s["n"], s["hlo"], s["jaxpr"]])
    return (
        markdown_table(head, rows)
        + "\n\nms per step: one run's wall time over its steps (scoring included), the median "
        "over the seeds; two runs share the cores at a time, and post-LN with and without "
        "warmup share one compiled program, compiled in another thread while the previous one "
        "trains. Times move with the machine's load: they are reported, never judged. "
        f"{cpu_line(results)}\n\nSerial steps of the forward program (one window of N "
        "characters), read from the compiled HLO and from the jaxpr:\n\n"
        + markdown_table(["family", "variant", "L", "N", "HLO", "jaxpr"], serial)
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


def sizing_table(results) -> str:
    """Every judged claim's parts on these (design-seed) results: the effect, its spread over
    the seeds, the margin to the range's nearest edge and the seeds a t interval needs to
    clear it (anatomy.probes.claims.seeds_needed)."""
    rows = []
    for cid, (parts_of, disjunction) in claims.SIZED.items():
        for part in parts_of(results):
            values = part.values(results)
            if values is None:
                continue
            p = power_from(values, part.rng, seeds=len(values), source="", pilot="")
            need = seeds_needed(p.spread, p.margin) if np.isfinite(p.spread) else None
            inside = part.rng.lo <= p.effect <= part.rng.hi
            rows.append(
                [
                    cid.split("/")[1] + (" (any part)" if disjunction else ""),
                    part.label,
                    str(part.rng),
                    p.effect,
                    p.spread,
                    p.margin,
                    "inside" if inside else "outside",
                    "—" if need is None else need,
                ]
            )
    head = ["claim", "part", "range", "effect", "spread", "margin", "effect", "seeds needed"]
    return (
        markdown_table(head, rows)
        + f"\n\nOn the design seeds {results.get('seeds', [])} (validation windows) and "
        f"{(results.get('xiong_detail') or {}).get('seeds', [])} (gradients at init). Seeds "
        "needed: the fewest n whose 95% t half-width at this spread is below the margin (— : "
        "none up to 64, or no spread); a claim of all its parts needs the most any part needs, "
        "a claim of any one part (some depth breaks) the fewest."
    )


def sections(results) -> list[tuple[str, str]]:
    out = []
    if "variants" in results:
        out += [
            ("Loss against depth", loss_table(results)),
            ("Change with depth", change_table(results)),
            ("The learning rates", grid_table(results)),
            ("Gradient norms at initialisation down the stack", grad_table(results)),
        ]
    if results.get("xiong"):
        out.append(("Xiong et al.'s gradient at initialisation against L", xiong_table(results)))
    if "variants" in results:
        out.append(("Cost: time per step and serial steps", cost_table(results)))
    else:
        out.append(("Cost", cpu_line(results)))
    return out


def pilot_sections(results) -> list[tuple[str, str]]:
    """The pilot's report: what sizes each judged claim, then its measurements."""
    return [
        ("Sizing: every judged claim on the design seeds", sizing_table(results)),
        *sections(results),
    ]


def grid_sections(results) -> list[tuple[str, str]]:
    """The grid run's report: its table and what it cost."""
    return [("The learning-rate grid", grid_table(results) + "\n\n" + cpu_line(results))]
