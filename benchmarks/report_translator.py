"""Timing and tables of the translator-level cases (benchmarks/cases_translator.py).

Same discipline as the layer cases: the equal-work check first (check_step_case), then all
implementations of a case interleaved in rounds (timing.time_interleaved), medians.
"""

import time

from benchmarks import timing


def time_step_cases(cases, rounds, target_s, budget_s, log):
    """[{label: timing summary}] per case, every implementation's step() interleaved."""
    out = []
    for case in cases:
        t0 = time.perf_counter()
        res = timing.time_interleaved(
            {lb: im.step for lb, im in case.impls.items()},
            rounds=rounds,
            target_s=target_s,
            budget_s=budget_s,
        )
        out.append(res)
        log(
            f"  {case.name:24s} {case.shape:50s} "
            + "  ".join(f"{lb}={r['median_s'] * 1e3:.3g}ms" for lb, r in res.items())
            + f"  ({len(next(iter(res.values()))['samples_s'])} rounds, "
            f"{time.perf_counter() - t0:.0f}s)"
        )
    return out


def render_step_cases(cases, errors, times, peak_best, tol):
    """The markdown of the translator-level section (tables only)."""
    from experiments.common import markdown_table

    rows = []
    for case, t in zip(cases, times):
        a = t["anatomy"]["median_s"]
        for lb, r in t.items():
            s = r["median_s"]
            rate = "" if case.flops is None else case.flops / s / 1e9
            rows.append(
                [
                    case.name,
                    case.shape,
                    lb + (f" ({case.impls[lb].note})" if case.impls[lb].note else ""),
                    f"{s * 1e3:.3g} (±{50 * r['spread']:.0f}%)",
                    case.tokens / s,
                    a / s,
                    rate,
                    "" if case.flops is None else f"{100 * rate / peak_best:.0f}%",
                ]
            )
    parts = [
        "### Translators: a whole training step, greedy decoding",
        "",
        "Training: one optimiser step (forward, label-smoothed loss, backward, Adam update) on "
        "one padded batch; tokens = real target tokens. Decoding: greedy, a fixed number of "
        "tokens per row (eos banned), tokens = batch x tokens. `anatomy / this` < 1 = anatomy "
        "faster; for decoding it is the KV cache's time over recomputing the prefix.",
        "",
        markdown_table(
            [
                "benchmark",
                "shape",
                "implementation",
                "ms per call (± IQR/2)",
                "tokens/s",
                "anatomy / this",
                "GFLOP/s",
                "% of peak",
            ],
            rows,
        ),
        "",
    ]
    rows = []
    for case, errs in zip(cases, errors):
        for lb, e in errs.items():
            rows.append(
                [
                    case.name,
                    case.shape,
                    lb,
                    f"{e['loss']:.1e}" if "loss" in e else "—",
                    f"{e['grads']:.1e}" if "grads" in e else "—",
                    f"{e['tokens']:.0%}" if "tokens" in e else "—",
                ]
            )
    parts += [
        f"Equal work, checked before timing (relative error vs anatomy from the same initial "
        f"weights, tolerance {tol:.0e}; decoded tokens must be identical):",
        "",
        markdown_table(
            ["benchmark", "shape", "implementation", "loss", "gradients", "tokens differing"], rows
        ),
        "",
    ]
    return "\n".join(parts)
