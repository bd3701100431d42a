"""The generated block of BENCHMARKS.md: tables only (commentary lives outside the block).

    render(...)              machine, matmul rate, the translator section, the layer tables
    render_translators(...)  a whole train step and greedy decoding, and their equal work

Every table is read from what benchmarks/protocol.py returns: timings {(case index, pass):
{label: summary}} (time_cases) and errors [{label: {quantity: error}}] (check).
"""

from benchmarks.memory import render_memory

PASSES = {"fwd": "forward", "fwdbwd": "fwd+bwd"}  # a layer's passes, as the tables name them
MACHINE = (  # (column, meta key)
    ("CPU", "cpu"),
    ("cores (JAX/XLA pool)", "cores"),
    ("torch threads", "torch_threads"),
    ("python", "python"),
    ("jax", "jax"),
    ("jaxlib", "jaxlib"),
    ("flax", "flax"),
    ("torch", "torch"),
    ("numpy", "numpy"),
)


def _table(header, rows):
    from anatomy.tables import markdown_table

    return markdown_table(header, rows)


def _ms(r):
    """A timing summary as 'median ms (± half the interquartile range, % of the median)'."""
    return f"{r['median_s'] * 1e3:.3g} (±{50 * r['spread']:.0f}%)"


def _error_cell(quantity, e):
    if e is None:
        return "—"
    return f"{e:.0%}" if quantity == "tokens" else f"{e:.1e}"


def equal_work_table(cases, errors, columns):
    """One row per case and implementation; columns: (quantity, header) pairs."""
    rows = [
        [c.name, c.shape, lb] + [_error_cell(q, e.get(q)) for q, _ in columns]
        for c, errs in zip(cases, errors)
        for lb, e in errs.items()
    ]
    return _table(["benchmark", "shape", "implementation"] + [h for _, h in columns], rows)


def _ratio(times, a, b):
    if a in times and b in times:
        return times[a]["median_s"] / times[b]["median_s"]
    return float("nan")


def best_paths(times):
    """(fastest label starting with 'anatomy', its median / the fastest other label's median).

    ("", nan) where either side has no timing."""
    ours = {lb: t["median_s"] for lb, t in times.items() if lb.startswith("anatomy")}
    others = {lb: t["median_s"] for lb, t in times.items() if not lb.startswith("anatomy")}
    if not ours or not others:
        return "", float("nan")
    best = min(ours, key=ours.get)
    return best, ours[best] / min(others.values())


def _own_tolerances(cases, tol):
    """', for <case> <shape> <its tolerance>' for every case whose own tolerance is larger."""
    own = [f"{c.name} {c.shape}: {c.tol:.0e}" for c in cases if (c.tol or 0.0) > tol]
    return "".join(f"; {o}" for o in own)


def render_translators(cases, errors, times, peak_best, tol):
    """The markdown of the translator-level section (tables only)."""
    rows = []
    for i, case in enumerate(cases):
        t = times[(i, "step")]
        a, flops = t["anatomy"]["median_s"], case.flops.get("step")
        for lb, r in t.items():
            s = r["median_s"]
            rate = "" if flops is None else flops / s / 1e9
            rows.append(
                [
                    case.name,
                    case.shape,
                    lb + (f" ({case.impls[lb].note})" if case.impls[lb].note else ""),
                    _ms(r),
                    case.tokens / s,
                    a / s,
                    rate,
                    "" if flops is None else f"{100 * rate / peak_best:.0f}%",
                ]
            )
    head = ["benchmark", "shape", "implementation", "ms per call (± IQR/2)", "tokens/s"]
    head += ["anatomy / this", "GFLOP/s", "% of peak"]
    columns = (("loss", "loss"), ("grads", "gradients"), ("tokens", "tokens differing"))
    return "\n".join(
        [
            "### Translators: a whole training step, greedy decoding",
            "",
            "Training: one optimiser step (forward, label-smoothed loss, backward, Adam update) "
            "on one padded batch; tokens = real target tokens. Decoding: greedy, a fixed number "
            "of tokens per row (eos banned), tokens = batch x tokens. `anatomy / this` < 1 = "
            "anatomy faster; for decoding it is the KV cache's time over recomputing the prefix.",
            "",
            _table(head, rows),
            "",
            f"Equal work, checked before timing (relative error vs anatomy from the same initial "
            f"weights, tolerance {tol:.0e}{_own_tolerances(cases, tol)}; decoded tokens must be "
            "identical):",
            "",
            equal_work_table(cases, errors, columns),
            "",
        ]
    )


def render(meta, peak, cases, errors, paths, times, translators=None, memory=None):
    """The generated markdown block (tables only; commentary lives outside it).

    translators: optional markdown of the translator-level section, placed after the
    matmul rate (it needs the peak) and before the layer tables.
    memory: optional {(case index, label, pass): bytes} (benchmarks.memory.measure)."""
    labels = []
    for c in cases:
        labels += [lb for lb in c.impls if lb not in labels]
    peak_median, peak_fastest = peak
    peak_best = max(peak_fastest.values())
    parts = [
        f"Command: `{meta['command']}`  ",
        f"Date: {meta['date']}; wall time of the run {meta['wall_s']:.0f} s.",
        "",
        "### Machine",
        "",
        _table([h for h, _ in MACHINE], [[meta[k] for _, k in MACHINE]]),
        "",
        f"Load average (1, 5, 15 min) at start: {meta['load_start']}; at end: {meta['load_end']} "
        f"(on {meta['cores']} cores; above {meta['cores']} means other processes competed for the CPU).",
        "",
        "### The machine's matmul rate (float32, "
        f"[{meta['matmul_n']}, {meta['matmul_n']}] x [{meta['matmul_n']}, {meta['matmul_n']}])",
        "",
        _table(
            ["library", "GFLOP/s (median call)", "GFLOP/s (fastest call)"],
            [[k, v, peak_fastest[k]] for k, v in peak_median.items()],
        ),
        "",
        f"Peak used below: {peak_best:.3g} GFLOP/s, the fastest call of any library (under load "
        "the median underestimates what the cores can do).",
        "",
    ]
    if translators:
        parts += [translators, ""]
    if not cases:
        return "\n".join(parts)

    rows = []
    for (i, mode), t in times.items():
        c, a = cases[i], t["anatomy"]["median_s"]
        flops = c.flops[mode]
        rows.append(
            [c.name, c.shape, PASSES[mode], a * 1e3]
            + [
                _ratio(t, x, y)
                for x, y in (
                    ("anatomy", "torch"),
                    ("anatomy", "torch 1 thread"),
                    ("anatomy", "torch fast path"),
                    ("anatomy", "flax"),
                    ("anatomy hoist=False", "anatomy"),
                    ("anatomy fused VJP", "anatomy"),
                    ("anatomy fused VJP", "torch"),
                )
            ]
            + [flops / a / 1e9, 100.0 * flops / a / 1e9 / peak_best, *best_paths(t)]
        )
    parts += [
        "### Ratios (anatomy median time / other median time; < 1 = anatomy faster)",
        "",
        _table(
            [
                "benchmark",
                "shape",
                "pass",
                "anatomy ms",
                "/ torch",
                "/ torch 1 thread",
                "/ torch fast path",
                "/ flax",
                "hoist=False / hoist=True",
                "fused VJP / hoist=True",
                "fused VJP / torch",
                "anatomy GFLOP/s",
                "% of peak",
                "fastest anatomy path",
                "fastest anatomy / fastest peer",
            ],
            rows,
        ),
        "",
    ]

    rows = [
        [cases[i].name, cases[i].shape, PASSES[mode]]
        + [_ms(t[lb]) if lb in t else "" for lb in labels]
        for (i, mode), t in times.items()
    ]
    parts += [
        "### Median wall time per call, ms (± half the interquartile range, % of the median)",
        "",
        _table(["benchmark", "shape", "pass"] + labels, rows),
        "",
    ]

    rows = []
    for (i, mode), t in times.items():
        c = cases[i]
        flops = c.flops[mode]
        rows.append(
            [c.name, c.shape, PASSES[mode], f"{flops / 1e9:.3g}"]
            + [
                f"{flops / t[lb]['median_s'] / 1e9:.3g} ({100 * flops / t[lb]['median_s'] / 1e9 / peak_best:.0f}%)"
                if lb in t
                else ""
                for lb in labels
            ]
        )
    parts += [
        "### Achieved GFLOP/s (% of the measured matmul peak); FLOPs counted analytically "
        "(matmuls only, fwd+bwd = 3 x fwd)",
        "",
        _table(["benchmark", "shape", "pass", "GFLOP"] + labels, rows),
        "",
    ]

    if memory:
        parts += render_memory(cases, memory, tuple(PASSES.items()))

    parts += [
        f"### Equivalence (checked before timing; relative L2 error vs anatomy, tolerance "
        f"{meta['tol']:.0e}, float32 on both sides)",
        "",
        equal_work_table(cases, errors, (("out", "output"), ("dx", "input gradient"))),
        "",
    ]

    rows = [
        [cases[i].name, cases[i].shape, lb, PASSES[mode], ", ".join(f"`{o}`" for o in ops) or "—"]
        for (i, lb, mode), ops in paths.items()
    ]
    parts += [
        "### Which torch kernels ran (torch.profiler, one call)",
        "",
        _table(["benchmark", "shape", "implementation", "pass", "aten kernels"], rows),
        "",
    ]
    return "\n".join(parts)
