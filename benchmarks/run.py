"""Run every benchmark in one process and write BENCHMARKS.md.

    python -m benchmarks.run [--quick] [--out BENCHMARKS.md] [--rounds N]
    python -m benchmarks.run --cases translators --only "Transformer train" --out -

Order of work: thread counts, machine and load, the matmul rate (the CPU's physical
limit), the equivalence checks (every pair must compute the same thing, or nothing is
timed), which torch kernels ran, the peak memory of one call, then the interleaved timings. Ratios are anatomy's
median time over the other side's: below 1 means anatomy is faster.
"""

import re
import shlex
import sys
import time

import torch

from benchmarks import profile, report, timing
from benchmarks.memory import measure, memory_cases
from benchmarks.protocol import check, time_cases

BEGIN, END = "<!-- BEGIN GENERATED: python -m benchmarks.run -->", "<!-- END GENERATED -->"
SETTINGS = {  # preset: rounds, seconds per sample, seconds per case and pass, matmul size, tolerance
    "full": {"rounds": 11, "target_s": 0.05, "budget_s": 15.0, "matmul_n": 2048, "tol": 1e-4},
    "quick": {"rounds": 3, "target_s": 0.01, "budget_s": 1.0, "matmul_n": 1024, "tol": 1e-4},
}


def parse_args(argv):
    ap = timing.argument_parser(
        "python -m benchmarks.run", __doc__, "small shapes only, few rounds (< 1 min)"
    )
    ap.add_argument(
        "--out",
        default="BENCHMARKS.md",
        help="markdown file to write ('-' = stdout only); text outside the generated "
        "block of an existing file is kept",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--cases",
        choices=("all", "layers", "translators"),
        default="all",
        help="which benchmarks: the layers, the translator-level ones, or both",
    )
    ap.add_argument(
        "--only",
        default="",
        help="run only the cases whose name contains this text (e.g. 'Transformer train')",
    )
    ap.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="seconds per case and pass before rounds are cut (never below 3 rounds)",
    )
    return ap.parse_args(argv)


def torch_paths(cases):
    """{(case index, label, pass): [aten kernels]} for every torch implementation."""
    paths = {}
    for i, case in enumerate(cases):
        for label, impl in case.impls.items():
            if not label.startswith("torch") or "1 thread" in label:
                continue
            for mode, fn in impl.passes.items():
                fn()  # warm
                paths[(i, label, mode)] = timing.torch_ops(fn)
    return paths


def write_markdown(path, block, begin=BEGIN, end=END, heading=None):
    """Replace the generated block between ``begin`` and ``end`` in `path` (keeping the text
    around it), or create it: at the top of a new file, or (with a ``heading``: another
    script's section) at the end of an existing one under that heading."""
    block = f"{begin}\n{block}\n{end}"
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    if begin in text and end in text:
        text = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    elif heading and text:
        text = text.rstrip("\n") + f"\n\n{heading}\n\n{block}\n"
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
    if args.budget_s is not None:
        cfg["budget_s"] = args.budget_s
    chosen = lambda cases: [c for c in cases if args.only in c.name]
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

    timed = lambda cs: time_cases(cs, cfg["rounds"], cfg["target_s"], cfg["budget_s"], log)
    translators = None
    if args.cases in ("all", "translators"):
        from benchmarks.cases_translator import build_translator_cases

        t_cases = chosen(build_translator_cases(preset, seed=args.seed))
        t_errors = [check(c, cfg["tol"]) for c in t_cases]
        log(f"translators: equal work checked ({t_errors}); load {timing.load_average()}")
        translators = report.render_translators(
            t_cases, t_errors, timed(t_cases), max(peak[1].values()), cfg["tol"]
        )
        log("translators: profiling the XLA train steps (benchmarks/profile.py)")
        rows = profile.profile_step_cases(t_cases, calls=max(3, cfg["rounds"] // 2))
        translators += "\n\n" + profile.SECTION + "\n\n"
        translators += profile.kinds_table(rows, peak=max(peak[1].values()))
    cases, errors, paths, times, memory, layer_profile = [], [], {}, {}, {}, ""
    if args.cases in ("all", "layers"):
        from benchmarks.cases import build_cases

        cases = chosen(build_cases(preset, seed=args.seed))
        errors = [check(c, cfg["tol"]) for c in cases]  # every pair, before any timing
        log(
            "equivalence: every pair within tolerance (worst "
            f"{max(max(e['out'], e['dx'] or 0) for errs in errors for e in errs.values()):.1e})"
        )
        paths = torch_paths(cases)
        memory = measure(cases, only=memory_cases(cases))
        log(f"peak memory measured: {len(memory)} implementation-passes")
        times = timed(cases)
        log("layers: profiling the largest case of each (benchmarks/profile.py)")
        layer_profile = profile.kinds_table(
            profile.profile_layer_cases(cases), peak=max(peak[1].values())
        )

    meta.update(load_end=timing.load_average(), wall_s=time.perf_counter() - t_start)
    block = report.render(meta, peak, cases, errors, paths, times, translators, memory)
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
