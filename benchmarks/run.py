"""Run every benchmark in one process and write BENCHMARKS.md.

    python -m benchmarks.run [--quick] [--out BENCHMARKS.md] [--rounds N]

Order of work: thread counts, machine and load, the matmul rate (the CPU's physical
limit), the equivalence checks (every pair must compute the same thing, or nothing is
timed), which torch kernels ran, the peak memory of one call, then the interleaved timings. Ratios are anatomy's
median time over the other side's: below 1 means anatomy is faster.
"""

import argparse
import re
import shlex
import sys
import time

import torch

from benchmarks import profile, timing
from benchmarks.memory import memory_cases, render_memory

BEGIN, END = "<!-- BEGIN GENERATED: python -m benchmarks.run -->", "<!-- END GENERATED -->"
MODES = (("fwd", "forward"), ("fwdbwd", "fwd+bwd"))
SETTINGS = {  # preset: rounds, seconds per sample, seconds per case and pass, matmul size, tolerance
    "full": {"rounds": 11, "target_s": 0.05, "budget_s": 15.0, "matmul_n": 2048, "tol": 1e-4},
    "quick": {"rounds": 3, "target_s": 0.01, "budget_s": 1.0, "matmul_n": 1024, "tol": 1e-4},
}


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--quick", action="store_true", help="small shapes only, few rounds (< 1 min)")
    ap.add_argument(
        "--out",
        default="BENCHMARKS.md",
        help="markdown file to write ('-' = stdout only); text outside the generated "
        "block of an existing file is kept",
    )
    ap.add_argument("--rounds", type=int, default=None, help="timed rounds per implementation")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--cases",
        choices=("all", "layers", "translators"),
        default="all",
        help="which benchmarks: the layers, the translator-level ones, or both",
    )
    return ap.parse_args(argv)


def check_all(cases, tol):
    """Equivalence of every pair before any timing; raises if any pair differs."""
    from benchmarks.check import check_case

    return [check_case(c, tol) for c in cases]


def torch_paths(cases):
    """{(case index, label, mode): [aten kernels]} for every torch implementation."""
    paths = {}
    for i, case in enumerate(cases):
        for label, impl in case.impls.items():
            if not label.startswith("torch") or "1 thread" in label:
                continue
            for mode, _ in MODES:
                fn = getattr(impl, mode)
                if fn is not None:
                    fn()  # warm
                    paths[(i, label, mode)] = timing.torch_ops(fn)
    return paths


def time_all(cases, rounds, target_s, budget_s, log):
    """{(case index, mode): {label: timing summary}}, each case and mode interleaved."""
    out = {}
    for i, case in enumerate(cases):
        for mode, mode_name in MODES:
            fns = {lb: getattr(im, mode) for lb, im in case.impls.items() if getattr(im, mode)}
            t0 = time.perf_counter()
            out[(i, mode)] = res = timing.time_interleaved(
                fns, rounds=rounds, target_s=target_s, budget_s=budget_s
            )
            log(
                f"  {case.name:24s} {case.shape:34s} {mode_name:8s} "
                + "  ".join(f"{lb}={r['median_s'] * 1e3:.3g}ms" for lb, r in res.items())
                + f"  ({len(next(iter(res.values()))['samples_s'])} rounds, {time.perf_counter() - t0:.0f}s)"
            )
    return out


def _ratio(times, a, b):
    if a in times and b in times:
        return times[a]["median_s"] / times[b]["median_s"]
    return float("nan")


def best_paths(times):
    """(fastest label starting with 'anatomy', its median / the fastest other label's median).

    ("", nan) where either side has no timing."""
    ours = {lb: t["median_s"] for lb, t in times.items() if lb.startswith("anatomy")}
    peers = {lb: t["median_s"] for lb, t in times.items() if not lb.startswith("anatomy")}
    if not ours or not peers:
        return "", float("nan")
    best = min(ours, key=ours.get)
    return best, ours[best] / min(peers.values())


def render(meta, peak, cases, errors, paths, times, translators=None, memory=None):
    """The generated markdown block (tables only; commentary lives outside it).

    translators: optional markdown of the translator-level section, placed after the
    matmul rate (it needs the peak) and before the layer tables.
    memory: optional {(case index, label, mode): bytes} (benchmarks.memory.measure)."""
    from experiments.common import markdown_table

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
        markdown_table(
            [
                "CPU",
                "cores (JAX/XLA pool)",
                "torch threads",
                "python",
                "jax",
                "jaxlib",
                "flax",
                "torch",
                "numpy",
            ],
            [
                [
                    meta[k]
                    for k in (
                        "cpu",
                        "cores",
                        "torch_threads",
                        "python",
                        "jax",
                        "jaxlib",
                        "flax",
                        "torch",
                        "numpy",
                    )
                ]
            ],
        ),
        "",
        f"Load average (1, 5, 15 min) at start: {meta['load_start']}; at end: {meta['load_end']} "
        f"(on {meta['cores']} cores; above {meta['cores']} means other processes competed for the CPU).",
        "",
        "### The machine's matmul rate (float32, "
        f"[{meta['matmul_n']}, {meta['matmul_n']}] x [{meta['matmul_n']}, {meta['matmul_n']}])",
        "",
        markdown_table(
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
        flops = c.flops_fwd * (3.0 if mode == "fwdbwd" else 1.0)
        rows.append(
            [
                c.name,
                c.shape,
                dict(MODES)[mode],
                a * 1e3,
                _ratio(t, "anatomy", "torch"),
                _ratio(t, "anatomy", "torch 1 thread"),
                _ratio(t, "anatomy", "torch fast path"),
                _ratio(t, "anatomy", "flax"),
                _ratio(t, "anatomy hoist=False", "anatomy"),
                _ratio(t, "anatomy fused VJP", "anatomy"),
                _ratio(t, "anatomy fused VJP", "torch"),
                flops / a / 1e9,
                100.0 * flops / a / 1e9 / peak_best,
                *best_paths(t),
            ]
        )
    parts += [
        "### Ratios (anatomy median time / other median time; < 1 = anatomy faster)",
        "",
        markdown_table(
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

    rows = []
    for (i, mode), t in times.items():
        c = cases[i]
        rows.append(
            [c.name, c.shape, dict(MODES)[mode]]
            + [
                f"{t[lb]['median_s'] * 1e3:.3g} (±{50 * t[lb]['spread']:.0f}%)" if lb in t else ""
                for lb in labels
            ]
        )
    parts += [
        "### Median wall time per call, ms (± half the interquartile range, % of the median)",
        "",
        markdown_table(["benchmark", "shape", "pass"] + labels, rows),
        "",
    ]

    rows = []
    for (i, mode), t in times.items():
        c = cases[i]
        flops = c.flops_fwd * (3.0 if mode == "fwdbwd" else 1.0)
        rows.append(
            [c.name, c.shape, dict(MODES)[mode], f"{flops / 1e9:.3g}"]
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
        markdown_table(["benchmark", "shape", "pass", "GFLOP"] + labels, rows),
        "",
    ]

    if memory:
        parts += render_memory(cases, memory, MODES)

    rows = []
    for c, errs in zip(cases, errors):
        for lb, e in errs.items():
            rows.append(
                [
                    c.name,
                    c.shape,
                    lb,
                    f"{e['out']:.1e}",
                    "—" if e["dx"] is None else f"{e['dx']:.1e}",
                ]
            )
    parts += [
        f"### Equivalence (checked before timing; relative L2 error vs anatomy, tolerance "
        f"{meta['tol']:.0e}, float32 on both sides)",
        "",
        markdown_table(["benchmark", "shape", "implementation", "output", "input gradient"], rows),
        "",
    ]

    rows = [
        [
            cases[i].name,
            cases[i].shape,
            lb,
            dict(MODES)[mode],
            ", ".join(f"`{o}`" for o in ops) or "—",
        ]
        for (i, lb, mode), ops in paths.items()
    ]
    parts += [
        "### Which torch kernels ran (torch.profiler, one call)",
        "",
        markdown_table(["benchmark", "shape", "implementation", "pass", "aten kernels"], rows),
        "",
    ]
    return "\n".join(parts)


def write_markdown(path, block):
    """Replace the generated block of `path` (keeping the text around it), or create the file."""
    block = f"{BEGIN}\n{block}\n{END}"
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    else:
        text = "# Benchmarks\n\n" + block + "\n" + text
    with open(path, "w") as f:
        f.write(text)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    preset = "quick" if args.quick else "full"
    cfg = dict(SETTINGS[preset])
    if args.rounds is not None:
        cfg["rounds"] = args.rounds
    torch.set_num_threads(timing.n_cores())  # the same count XLA's CPU pool uses
    log = lambda s: print(s, flush=True)
    t_start = time.perf_counter()
    meta = timing.machine_info()
    meta.update(
        command=" ".join(["python -m benchmarks.run"] + [shlex.quote(a) for a in argv]),
        load_start=timing.load_average(),
        tol=cfg["tol"],
        matmul_n=cfg["matmul_n"],
    )
    log(
        f"{meta['cpu']}, {meta['cores']} cores, torch threads {meta['torch_threads']}, "
        f"load {meta['load_start']}"
    )

    peak = timing.matmul_rates(cfg["matmul_n"], rounds=max(3, cfg["rounds"] // 2), seed=args.seed)[
        :2
    ]
    log(
        "matmul GFLOP/s (median, best): "
        + ", ".join(f"{k} {v:.3g}, {peak[1][k]:.3g}" for k, v in peak[0].items())
    )

    translators = None
    if args.cases in ("all", "translators"):
        from benchmarks import report_translator as rt
        from benchmarks.cases_translator import build_translator_cases, check_step_case

        t_cases = build_translator_cases(preset, seed=args.seed)
        t_errors = [check_step_case(c, cfg["tol"]) for c in t_cases]
        log(f"translators: equal work checked ({t_errors}); load {timing.load_average()}")
        t_times = rt.time_step_cases(t_cases, cfg["rounds"], cfg["target_s"], cfg["budget_s"], log)
        translators = rt.render_step_cases(
            t_cases, t_errors, t_times, max(peak[1].values()), cfg["tol"]
        )
        log("translators: profiling the XLA train steps (benchmarks/profile.py)")
        rows = profile.profile_step_cases(t_cases, calls=max(3, cfg["rounds"] // 2))
        translators += "\n\n" + profile.SECTION + "\n\n"
        translators += profile.kinds_table(rows, peak=max(peak[1].values()))
    cases, errors, paths, times, memory, layer_profile = [], [], {}, {}, {}, ""
    if args.cases in ("all", "layers"):
        from benchmarks.cases import build_cases

        cases = build_cases(preset, seed=args.seed)
        errors = check_all(cases, cfg["tol"])
        log(
            "equivalence: every pair within tolerance (worst "
            f"{max(max(e['out'], e['dx'] or 0) for errs in errors for e in errs.values()):.1e})"
        )
        paths = torch_paths(cases)
        from benchmarks.memory import measure

        memory = measure(cases, only=memory_cases(cases))
        log(f"peak memory measured: {len(memory)} implementation-passes")
        times = time_all(cases, cfg["rounds"], cfg["target_s"], cfg["budget_s"], log)
        log("layers: profiling the largest case of each (benchmarks/profile.py)")
        layer_profile = profile.kinds_table(
            profile.profile_layer_cases(cases), peak=max(peak[1].values())
        )

    meta.update(load_end=timing.load_average(), wall_s=time.perf_counter() - t_start)
    block = render(meta, peak, cases, errors, paths, times, translators, memory)
    if cases:
        block += (
            f"\n\n### Where the layers' time goes\n\n{profile.LAYER_SECTION}\n\n{layer_profile}\n"
        )
    if args.out == "-":
        print(block)
    else:
        write_markdown(args.out, block)
        log(f"wrote {args.out} ({meta['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
