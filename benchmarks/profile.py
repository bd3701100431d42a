"""Where a jitted step's time goes: XLA's own per-op events, grouped by kind.

``profile_step(step, n)`` runs a zero-argument closure (a benchmark's timed unit, which calls
jitted JAX code and blocks) ``n`` times under ``jax.profiler.trace`` and reads back the
Perfetto trace XLA's CPU runtime writes: one event per executed HLO op (thunk), named after
the op (``ynn_fusion.12``, ``copy_bitcast_fusion.3``, ``while.7`` ...). Each event's
*exclusive* time (its duration minus the events nested inside it on the same thread, so a
``while`` loop counts only its own overhead, not its body) is summed per kind:

    matmul        dot / ynn_fusion / onednn / custom-call: the matrix-multiply library calls
    layout copy   copy, transpose, *_copy_*: moving data into another layout, no arithmetic
    loop          while / conditional / call bookkeeping (bodies counted in their own kinds)
    elementwise   every other fusion (loop/input fusions: activations, norms, softmax, Adam)
    runtime       the executor's own events between ops (dispatch, argument handling)

Op time is summed over both worker threads, so it can exceed the wall time per step when
ops run side by side. This explains a ratio; it is not itself a timing to compare.

    python -m benchmarks.profile              # the translator cases, anatomy vs flax
"""

import argparse
import collections
import gzip
import json
import pathlib
import re
import tempfile
import time

import jax
import numpy as np

SECTION = (
    "Where the train steps' time goes (XLA's per-op trace, `benchmarks/profile.py`: exclusive "
    "time per op summed by kind over both worker threads, per step; the traced wall time "
    "includes the profiler's own cost). The matmul ops' own rate is the ceiling of the whole "
    "step's rate at these shapes: the analytic matmul FLOPs over the time of the matmul ops only."
)
KINDS = ("matmul", "layout copy", "elementwise", "loop", "runtime")
_RUNTIME = ("ThunkExecutor", "SlinkyThreadPool", "PjitFunction", "CommonPjRt", "ParseArguments")


def op_kind(name):
    """The kind of one trace event (module doc), or None for a Python/host event."""
    if name.startswith("$") or name.startswith("ThunkExecutor::Execute"):
        return None  # Python frames and the executor's whole-program span
    if name.startswith(_RUNTIME):
        return "runtime"
    base = re.sub(r"[.]\d+$", "", name)
    if base.startswith(("dot", "ynn", "onednn", "custom-call", "custom_call")):
        return "matmul"
    if base.startswith(("while", "conditional", "call")):
        return "loop"
    if base.startswith(("copy", "transpose")) or "_copy" in base or "transpose" in base:
        return "layout copy"
    return "elementwise"


def exclusive_times(events):
    """{event name: exclusive microseconds, ...} and {name: count} over complete ('X') events:
    each event's duration minus its children's on the same thread (nesting by interval)."""
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            by_thread[(e.get("pid"), e.get("tid"))].append(e)
    total, count = collections.Counter(), collections.Counter()
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # [event, child time]
        for e in evs + [None]:
            while stack and (e is None or e["ts"] >= stack[-1][0]["ts"] + stack[-1][0]["dur"]):
                done, child = stack.pop()
                total[done["name"]] += max(done["dur"] - child, 0.0)
                count[done["name"]] += 1
                if stack:
                    stack[-1][1] += done["dur"]
            if e is not None:
                stack.append([e, 0.0])
    return total, count


def profile_step(step, n=10, warmup=3):
    """Profile ``n`` calls of ``step()`` -> {'wall_ms': per step, 'kinds': {kind: (ms per step,
    ops per step)}, 'top': [(op name, ms per step, calls per step), ...] (10 largest)}."""
    for _ in range(warmup):
        step()
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0  # XLA's op events only: no Python frames
    options.enable_hlo_proto = False
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        with jax.profiler.trace(d, create_perfetto_trace=True, profiler_options=options):
            for _ in range(n):
                step()
        wall = (time.perf_counter() - t0) / n
        (trace,) = pathlib.Path(d).rglob("*.trace.json.gz")
        events = json.load(gzip.open(trace))["traceEvents"]
    total, count = exclusive_times(events)
    kinds = {k: [0.0, 0] for k in KINDS}
    ops = []
    for name, us in total.items():
        kind = op_kind(name)
        if kind is None:
            continue
        kinds[kind][0] += us / n / 1e3
        kinds[kind][1] += count[name] / n
        if kind != "runtime":
            ops.append((name, us / n / 1e3, count[name] / n))
    ops.sort(key=lambda o: -o[1])
    return {
        "wall_ms": wall * 1e3,
        "kinds": {k: (ms, c) for k, (ms, c) in kinds.items()},
        "top": ops[:10],
    }


def kinds_table(rows, peak=None):
    """Markdown: one row per (label, profile, matmul FLOPs or None), the ms per step and op
    count of every kind; with FLOPs, the rate of the matmul ops alone (the most the step
    could reach if everything else took no time) and, given ``peak`` GFLOP/s, its share."""
    head = ["step", "wall ms (traced)", "op ms"] + [f"{k} ms (ops)" for k in KINDS]
    head += ["matmul ops alone, GFLOP/s"] + (["% of peak"] if peak else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, p, flops in rows:
        op_ms = sum(ms for ms, _ in p["kinds"].values())
        cells = [label, f"{p['wall_ms']:.1f}", f"{op_ms:.1f}"]
        cells += [f"{ms:.1f} ({c:.0f})" for ms, c in (p["kinds"][k] for k in KINDS)]
        mm_ms = p["kinds"]["matmul"][0]
        rate = flops / (mm_ms / 1e3) / 1e9 if flops and mm_ms > 0 else None
        cells.append("" if rate is None else f"{rate:.3g}")
        if peak:
            cells.append("" if rate is None else f"{100 * rate / peak:.0f}%")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def profile_step_cases(cases, calls=10):
    """[(label, profile, matmul FLOPs), ...] for the XLA implementations (anatomy, flax) of
    the translator train-step cases (benchmarks/cases_translator.py)."""
    rows = []
    for case in cases:
        if "train" not in case.name:
            continue
        for label, impl in case.impls.items():
            if not label.startswith("torch"):  # torch is not XLA: its kernels are listed apart
                step = impl.passes["step"]
                rows.append(
                    (f"{case.name}, {label}", profile_step(step, calls), case.flops["step"])
                )
    return rows


LAYER_SECTION = (
    "Where the layers' time goes (the same per-op trace as for the train steps, per call), "
    "for the largest shape of each layer benchmark and every XLA implementation: the op count "
    "per call shows how much of a recurrence is per-step work (ops / T) and how much of "
    "attention is tile-by-tile work."
)


def profile_layer_cases(cases, calls=3):
    """[(label, profile, matmul FLOPs), ...]: the largest case of each layer benchmark
    (benchmarks/cases.py), forward and fwd+bwd, every XLA implementation (anatomy*, flax)."""
    last = {}
    for case in cases:
        last[case.name] = case  # cases of one name come in growing size
    rows = []
    for case in last.values():
        for label, impl in case.impls.items():
            if not label.startswith(("anatomy", "flax")):
                continue
            for mode, fn in impl.passes.items():
                p = profile_step(fn, calls, warmup=1)
                rows.append((f"{case.name} {case.shape} {mode}, {label}", p, case.flops[mode]))
    return rows


def main(argv=None):
    from benchmarks.cases_translator import build_translator_cases

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="full", choices=("full", "quick", "tiny"))
    ap.add_argument("--calls", type=int, default=10)
    args = ap.parse_args(argv)
    rows = profile_step_cases(build_translator_cases(args.preset), args.calls)
    print(kinds_table(rows))
    for label, p, _ in rows:
        print(f"\n{label}: largest ops (ms per step, calls per step)")
        for name, ms, c in p["top"]:
            print(f"  {ms:7.2f} ms  {c:5.0f}x  {name}")
    return rows


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
