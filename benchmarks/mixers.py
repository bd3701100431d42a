"""Every linear-recurrence mixer in every form against N, beside attention and the LSTM.

    python -m benchmarks.mixers [--quick] [--out BENCHMARKS.md] [--rounds N] [--only NAME]

Writes the block between this script's markers in BENCHMARKS.md (the rest of the file is
left as it is). Order of work, per case (benchmarks/cases_mixers.py): every form's
forward+backward program is sized by XLA first (over MAX_BYTES: left out at that N), every
form is checked against the first one (equal work), then all are timed interleaved
(benchmarks/timing.py), medians. The default form of a mixer on this backend is the one
with the lowest geometric mean time over the lengths, among the forms that ran at every
length (``choose_defaults``); anatomy/mixers/defaults.py records the choice.
"""

import math
import shlex
import sys
import time

import torch

from anatomy import mixers
from benchmarks import timing
from benchmarks.cases_mixers import BENCHED, MAX_BYTES, PRESETS, build_mixer_cases
from benchmarks.protocol import check, time_cases
from benchmarks.report import MACHINE, _table
from benchmarks.run import write_markdown

BEGIN = "<!-- BEGIN GENERATED: python -m benchmarks.mixers -->"
END = "<!-- END GENERATED: python -m benchmarks.mixers -->"
SETTINGS = {  # preset: rounds, seconds per sample, seconds per case, tolerance (rel. L2)
    "full": {"rounds": 7, "target_s": 0.05, "budget_s": 20.0, "tol": 1e-4},
    "quick": {"rounds": 3, "target_s": 0.01, "budget_s": 2.0, "tol": 1e-4},
}


def parse_args(argv):
    ap = timing.argument_parser("python -m benchmarks.mixers", __doc__, "two short lengths")
    ap.add_argument("--out", default="BENCHMARKS.md", help="markdown file ('-' = stdout)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help="only the mixers whose name contains this")
    return ap.parse_args(argv)


PEER_LABELS = ("torch",)  # implementations that are not forms of ours: never a default


def choose_defaults(table):
    """{mixer: (form, {form: geometric mean ms})}: table {(mixer, n): {form: median s}}; the
    forms that ran at every length compete (a peer's label never does), the lowest
    geometric mean wins."""
    by_mixer = {}
    for (name, n), times in table.items():
        forms = {f: t for f, t in times.items() if f not in PEER_LABELS}
        by_mixer.setdefault(name, {})[n] = forms
    out = {}
    for name, per_n in by_mixer.items():
        everywhere = set.intersection(*(set(t) for t in per_n.values()))
        gmean = {
            f: 1e3 * math.exp(sum(math.log(t[f]) for t in per_n.values()) / len(per_n))
            for f in everywhere
        }
        out[name] = (min(gmean, key=gmean.get) if gmean else None, gmean)
    return out


def _ratio(table, key, label, other_key, other):
    """table[key][label] / table[other_key][other] as text, '—' where either did not run."""
    a, b = table.get(key, {}).get(label), table.get(other_key, {}).get(other)
    return "—" if a is None or b is None else f"{a / b:.2f}"


def render(meta, lengths, table, left_out, errors, defaults):
    """The generated block: machine, times per mixer and form against N, equal work, choice."""
    ns = sorted(lengths)
    rows = []
    for name in dict.fromkeys(k[0] for k in table):
        forms = list(dict.fromkeys(f for n in ns for f in table.get((name, n), {})))
        forms += [f for n in ns for f in left_out.get((name, n), {}) if f not in forms]
        for form in forms:
            cells = []
            for n in ns:
                t = table.get((name, n), {}).get(form)
                cells.append(
                    f"{t * 1e3:.3g}"
                    if t is not None
                    else left_out.get((name, n), {}).get(form, "—")
                )
            mark = " (default)" if defaults.get(name, (None,))[0] == form else ""
            rows.append([name, form + mark] + cells)
    worst = max((e for errs in errors for x in errs.values() for e in x.values() if e), default=0)
    ratios = []
    for name, (form, _) in defaults.items():
        for other, ref in (
            ("sequential", name),
            ("torch", name),
            ("dense", "attention"),
            ("chunked", "attention"),
        ):
            cells = [_ratio(table, (name, n), form, (ref, n), other) for n in ns]
            if other == form and ref == name:
                continue
            if any(c != "—" for c in cells):
                what = f"attention {other}" if ref == "attention" else other
                ratios.append([name, f"{form} / {what}"] + cells)
    lstm = [_ratio(table, ("lstm", n), "anatomy", ("lstm", n), "torch") for n in ns]
    ratios.append(["lstm", "anatomy / torch"] + lstm)
    return "\n".join(
        [
            f"Command: `{meta['command']}`  ",
            f"Date: {meta['date']}; wall time of the run {meta['wall_s']:.0f} s.",
            "",
            _table([h for h, _ in MACHINE], [[meta[k] for _, k in MACHINE]]),
            "",
            f"Load average (1, 5, 15 min) at start: {meta['load_start']}; at end: "
            f"{meta['load_end']} (on {meta['cores']} cores).",
            "",
            f"Forward + backward, ms per call (median of interleaved rounds), {meta['shape']}; "
            f"'over memory': XLA's forward+backward program would exceed "
            f"{MAX_BYTES / 2**30:.0f} GiB; 'differs': the equal-work check failed, nothing "
            "of that case was timed. Equal work: every form against the first that ran, "
            f"worst relative error {worst:.1e} (output and input gradient).",
            "",
            _table(["mixer", "form"] + [f"N={n}" for n in ns], rows),
            "",
            "Ratios of medians (< 1: the first is faster); the mixer's default form against "
            "its sequential form, its torch twin (written from the paper, "
            "benchmarks/peers_mixers.py) and softmax attention at the same N:",
            "",
            _table(["mixer", "ratio"] + [f"N={n}" for n in ns], ratios),
            "",
            "Default form on this backend (lowest geometric mean over N among the forms that "
            "ran at every N; geometric means in ms):",
            "",
            _table(
                ["mixer", "default", "geometric means"],
                [
                    [name, f, ", ".join(f"{k} {v:.3g}" for k, v in sorted(g.items()))]
                    for name, (f, g) in defaults.items()
                ],
            ),
        ]
    )


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    preset = "quick" if args.quick else "full"
    cfg = dict(SETTINGS[preset])
    if args.rounds is not None:
        cfg["rounds"] = args.rounds
    torch.set_num_threads(timing.n_cores())
    log = lambda s: print(s, flush=True)
    t0 = time.perf_counter()
    meta = timing.machine_info()
    batch, lengths, width = PRESETS[preset]
    meta.update(
        command=" ".join(["python -m benchmarks.mixers"] + [shlex.quote(a) for a in argv]),
        load_start=timing.load_average(),
        cores=timing.n_cores(),
        shape=f"batch {batch}, width m = {width}",
    )
    log(f"{meta['cpu']}, {meta['cores']} cores, load {meta['load_start']}")
    table, left_out, errors = {}, {}, []
    names = [n for n in BENCHED if args.only in n]
    for case, reference, out in build_mixer_cases(preset, seed=args.seed, names=names):
        n = int(case.shape.split("N=")[1].split()[0])
        try:
            errors.append(check(case, cfg["tol"], reference=reference))
        except AssertionError as e:  # recorded and shown, the rest of the sweep still runs
            log(f"NOT TIMED: {e}")
            left_out[(case.name, n)] = {f: "differs" for f in case.impls}
            continue
        res = time_cases([case], cfg["rounds"], cfg["target_s"], cfg["budget_s"], log)
        table[(case.name, n)] = {lb: r["median_s"] for lb, r in res[(0, "fwdbwd")].items()}
        left_out[(case.name, n)] = out
    # softmax attention keeps its dense default (chunked is an option: docs/design.md)
    defaults = choose_defaults({k: v for k, v in table.items() if k[0] in mixers.LINEAR})
    meta.update(load_end=timing.load_average(), wall_s=time.perf_counter() - t0)
    block = render(meta, lengths, table, left_out, errors, defaults)
    if args.out == "-":
        print(block)
    else:
        write_markdown(args.out, block, BEGIN, END, heading=SECTION)
        log(f"wrote {args.out} ({meta['wall_s']:.0f} s)")
    return 0


SECTION = "## Linear recurrences: every form against N"  # BENCHMARKS.md's heading

if __name__ == "__main__":
    sys.exit(main())
