"""scaling's claims, judged by the one verdict rule (anatomy.probes.claims) on what its
results.json holds, and the ranges behind them.

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    scaling/dp_one_allreduce_{lstm,transformer}  data parallel: one gradient all-reduce per step
    scaling/dp_lstm_autodiff_in_loop             where scan's own transpose puts it (reported)
    scaling/tp_transformer_n_independent         tensor parallel Transformer: collectives flat in N
    scaling/tp_transformer_per_layer             ... and 4 all-reduces per layer (Megatron-LM)
    scaling/tp_lstm_in_loop                      tensor parallel LSTM: N·L collectives in its loop
    scaling/serial_{lstm,transformer}            serial steps per training step: 2·N·L and 0
    scaling/tp_translators_in_loop               rnn_vs_attn's translators, tensor parallel
    scaling/model_cpu                            the cost model within MODEL_TOL on this CPU
    scaling/model_cpu_{compute,memory,latency}   ... and the check needs each of those terms
    scaling/speed_ratio_accelerator              LSTM / attention at N = 512: an estimate
    scaling/time_to_loss_cpu                     Transformer / RNNsearch time to a common loss,
                                                 measured where rnn_vs_attn trained them
    scaling/time_to_loss_accelerator             ... and estimated for an accelerator
    scaling/near_linear                          near-linear scaling on thousands of devices
chapter(results), the claims the chapter's report and docs cite:
    scaling/structure     what the scale-out row measures here: every structure claim above
    scaling/speed_ratio   row 5's figure for a GPU: an estimate, with its sensitivity
    scaling/time_to_loss  row 7: measured on the machine that trained the translators
(the rest of the scale-out row, near-linear scaling on thousands of devices, is table()'s
scaling/near_linear: not measured here; its figure is an estimate for 8 devices)

Structure claims are exact counts read from compiled programs, each part judged against its
range and the claim the weakest of its parts. The model's check is an interval over timing
rounds (the worst miss of each round, a t interval on a log scale). Accelerator figures are
estimates, never verdicts: the rule says "needs an accelerator" and the detail carries the
assumptions, the sensitivity to each, and how far the estimate lies from the chapter's range.
"""

from __future__ import annotations

import dataclasses
import math

import ml_collections
import numpy as np

from anatomy.probes.claims import (
    REPORTED,
    UNDECIDED,
    Claim,
    Interval,
    Range,
    estimate,
    exact,
    judge,
    judged,
    t_interval,
    under_load,
    weakest,
)
from experiments.lab.thresholds import SPEEDUP_N, SPEEDUP_RANGE
from experiments.scaling import applied
from experiments.scaling.applied import mid

DP_BYTES_RTOL = 1e-3  # data parallel: Σ all-reduce bytes within (1 + this) × parameter bytes
# (the loss and metrics scalars ride along)
MEGATRON_PER_LAYER = 4  # tensor parallel Transformer: all-reduces per layer and step, 2 forward
# (after attention, after the FFN) + 2 backward (Shoeybi et al. 2019, section 3)
MODEL_TOL = 2.0  # the cost model predicts this CPU when every prediction is within this factor
# of the measured time (max(p/m, m/p) <= this)
ACCELERATOR_TERMS = ("compute", "memory", "latency")  # the terms an accelerator estimate is
# made of (communication only on a mesh): the check must need each
SPEED_RANGE = Range.between(
    *SPEEDUP_RANGE, f"{SPEEDUP_RANGE[0]:g}-{SPEEDUP_RANGE[1]:g}x (the chapter)"
)
TIME_TO_LOSS_RANGE = Range.between(1 / 10, 1 / 4, "1/10-1/4 (the chapter)")  # the Transformer
# reached the RNNs' quality in 1/4 to 1/10 of their training time (Vaswani et al. 2017, Table 2)
NEAR_LINEAR = Range.at_least(0.9, "≥ 0.9 of linear (near-linear, one-sided)")  # speed-up / devices
ZERO = Range.between(0, 0, "0")
EXACT_WHY = "read from the compiled programs"


def _rows(structure, family, mode):
    return [r for r in structure if r["family"] == family and r["mode"] == mode]


def _allreduce_bytes(r):
    return r["collectives"]["by_kind"].get("all-reduce", {}).get("bytes", 0.0)


def of_parts(claim: str, parts, detail: str = "") -> Claim:
    """A claim made of exact parts [(label, value, Range)]: each part judged by the rule,
    the claim's verdict the weakest of theirs; expected / measured list every part."""
    verdicts, expected, measured, reasons = [], [], [], []
    for label, value, rng in parts:
        interval = exact(value, EXACT_WHY)
        verdict, reason = judge(interval, rng)
        verdicts.append(verdict)
        expected.append(f"{label}: {rng}")
        measured.append(f"{label}: {interval}")
        if reason:
            reasons.append(f"{label}: {reason}")
    return Claim(
        claim,
        "; ".join(expected),
        "; ".join(measured),
        weakest(verdicts),
        "; ".join([*reasons, detail] if detail else reasons),
    )


def structure_summary(cfg, structure: list[dict]) -> dict:
    """What the claims need from the structure rows, per family and mode."""
    out = {}
    for family in {r["family"] for r in structure}:
        for mode in ("dp", "tp"):
            rows = _rows(structure, family, mode)
            if not rows:
                continue
            tot = [r["collectives"]["total"] for r in rows]
            out[f"{family}|{mode}"] = {
                "points": [(r["n"], r["layers"]) for r in rows],
                "executions": [t["executions"] for t in tot],
                "in_loop": [t["in_loop_executions"] for t in tot],
                "allreduce_over_params": [_allreduce_bytes(r) / r["param_bytes"] for r in rows],
                "serial_steps": [r["serial_steps"] for r in rows],
                "per_nl": [
                    t["in_loop_executions"] / (r["n"] * max(r["layers"], 1))
                    for t, r in zip(tot, rows)
                ],
                "mean_in_loop_bytes": [
                    (t["bytes"] / t["executions"]) if t["executions"] else 0.0 for t in tot
                ],
            }
    return out


def _per_layer(cfg, rows):
    """Collective executions per step against L at n_fixed: (slope, intercept, largest
    residual of the fitted line), or None with fewer than two L."""
    pts = sorted(
        (r["layers"], r["collectives"]["total"]["executions"])
        for r in rows
        if r["n"] == cfg.n_fixed
    )
    if len(pts) < 2:
        return None
    L, e = np.array(pts, dtype=float).T
    slope, icpt = np.polyfit(L, e, 1)
    return float(slope), float(icpt), float(np.max(np.abs(slope * L + icpt - e)))


def structure_claims(cfg, structure: list[dict]) -> list[tuple[str, Claim]]:
    s = structure_summary(cfg, structure)
    out = []
    for family, label in (("transformer", "Transformer"), ("lstm", "LSTM")):
        dp = s.get(f"{family}|dp")
        if dp is None:
            continue
        ratio = dp["allreduce_over_params"]
        band = Range.between(1, 1 + DP_BYTES_RTOL, f"[1, {1 + DP_BYTES_RTOL:g}]")
        out.append(
            (
                f"dp_one_allreduce_{family}",
                of_parts(
                    f"data parallel {label}: one gradient all-reduce of the parameters per step",
                    [
                        ("all-reduce bytes / parameter bytes, lowest", min(ratio), band),
                        ("highest", max(ratio), band),
                        ("all-reduces in loops", max(dp["in_loop"]), ZERO),
                    ],
                    f"{len(ratio)} programs (N, L) = {dp['points']}",
                ),
            )
        )
    auto = s.get("lstm_autodiff|dp")
    if auto is not None:
        out.append(
            (
                "dp_lstm_autodiff_in_loop",
                Claim(
                    "data parallel LSTM differentiated by jax.lax.scan's own transpose",
                    "reported: where XLA puts the gradient all-reduce",
                    f"{min(auto['per_nl']):.2f}-{max(auto['per_nl']):.2f} all-reduces per time step "
                    f"and layer inside the backward loop; "
                    f"{min(auto['allreduce_over_params']):.1f}-{max(auto['allreduce_over_params']):.1f}x "
                    "the parameter bytes",
                    REPORTED,
                    "the recurrent weight gradient accumulates in the loop carry and is reduced "
                    "every step; anatomy's fused VJP computes it after the loop (one all-reduce)",
                ),
            )
        )
    tf = [r for r in structure if r["family"] == "transformer" and r["mode"] == "tp"]
    if tf:
        at_l = [r for r in tf if r["layers"] == cfg.layers_fixed]
        counts = [r["collectives"]["total"]["executions"] for r in at_l]
        out.append(
            (
                "tp_transformer_n_independent",
                of_parts(
                    "tensor parallel Transformer: the collectives per step do not depend on N",
                    [
                        ("spread of collectives per step over N", max(counts) - min(counts), ZERO),
                        (
                            "collectives in loops",
                            max(r["collectives"]["total"]["in_loop_executions"] for r in tf),
                            ZERO,
                        ),
                    ],
                    f"{sorted(set(counts))} per step over N = {[r['n'] for r in at_l]} "
                    f"(L = {cfg.layers_fixed})",
                ),
            )
        )
        fit = _per_layer(cfg, tf)
        if fit is not None:
            slope, icpt, resid = fit
            out.append(
                (
                    "tp_transformer_per_layer",
                    of_parts(
                        "tensor parallel Transformer: a fixed number of all-reduces per layer "
                        "(Megatron-LM: 2 forward + 2 backward)",
                        [
                            (
                                "collectives added per layer",
                                round(slope, 9),
                                Range.between(MEGATRON_PER_LAYER, MEGATRON_PER_LAYER, "4"),
                            ),
                            ("largest distance from a line in L", round(resid, 9), ZERO),
                        ],
                        f"{slope:.2f}·L {icpt:+.2f} at N = {cfg.n_fixed}"
                        + (
                            "; c = -1: the first layer's input needs no gradient, so its "
                            "backward all-reduce is dropped"
                            if round(icpt) == -1
                            else ""
                        ),
                    ),
                )
            )
    lstm = s.get("lstm|tp")
    if lstm is not None:
        per = lstm["per_nl"]
        out.append(
            (
                "tp_lstm_in_loop",
                of_parts(
                    "tensor parallel LSTM: collectives inside the time loop, N·L of them times "
                    "a constant",
                    [
                        (
                            "in-loop collectives per time step and layer, fewest",
                            min(per),
                            Range.at_least(1),
                        ),
                        ("spread over (N, L)", round(max(per) - min(per), 9), ZERO),
                    ],
                    f"(N, L) = {lstm['points']}; mean "
                    f"{np.mean(lstm['mean_in_loop_bytes']) / 1024:.1f} KiB each",
                ),
            )
        )
    for family, label, per_step in (("lstm", "LSTM", 2), ("transformer", "Transformer", 0)):
        rows = [r for r in structure if r["family"] == family]
        if not rows:
            continue
        per = [r["serial_steps"] / (r["n"] * r["layers"]) for r in rows]
        want = Range.between(per_step, per_step, f"{per_step}")
        out.append(
            (
                f"serial_{family}",
                of_parts(
                    f"{label} stack: serial steps per training step, "
                    + ("2·N·L (forward + backward loop trips)" if per_step else "none"),
                    [("serial steps / (N·L), fewest", min(per), want), ("most", max(per), want)],
                    f"{len(rows)} programs; loop trip counts of the compiled programs "
                    "(known_trip_count), nested loops multiplied",
                ),
            )
        )
    tr = {
        f: [r for r in structure if r["family"] == f and r["mode"] == "tp"]
        for f in ("rnnenc", "rnnsearch", "translator_transformer")
    }
    if all(tr.values()):
        loops = {f: rows[0]["collectives"]["total"]["in_loop_executions"] for f, rows in tr.items()}
        out.append(
            (
                "tp_translators_in_loop",
                of_parts(
                    "tensor parallel translators: the RNNs communicate inside their time loops, "
                    "the Transformer does not",
                    [
                        ("RNNenc in-loop collectives", loops["rnnenc"], Range.at_least(1)),
                        ("RNNsearch", loops["rnnsearch"], Range.at_least(1)),
                        ("Transformer", loops["translator_transformer"], ZERO),
                    ],
                    f"rnn_vs_attn's models, a batch of {tr['rnnenc'][0]['n']}-token sentences",
                ),
            )
        )
    return out


# ------------------------------------------------------------------ the model on this CPU


def miss(predicted, measured):
    """How far a prediction misses: max(p / m, m / p) (1 = exact), elementwise."""
    p, m = np.asarray(predicted, float), np.asarray(measured, float)
    return np.maximum(p / m, m / p)


def _predicted(row, variant: str) -> float:
    return row["predicted_s"] if variant == "model" else row["variants"][variant]


def miss_interval(check_rows, variant: str = "model") -> Interval:
    """The worst miss over the check's programs, per timing round (each program's r-th time
    against the prediction of `variant`), and the t interval of those worst misses over the
    rounds on a log scale (a ratio)."""
    pred = np.array([_predicted(r, variant) for r in check_rows])
    times = np.array([r["times_s"] for r in check_rows], float).T  # [rounds, programs]
    worst = [float(np.max(miss(pred, t))) for t in times]
    return t_interval(worst, over="timing rounds", scale="log")


def _within(check_rows, variant: str = "model") -> int:
    return int(sum(miss(_predicted(r, variant), r["measured_s"]) <= MODEL_TOL for r in check_rows))


def model_claims(check_rows, hw: dict, loads=()) -> list[tuple[str, Claim]]:
    """The cost model's check on this CPU (timed: undecided under load, `loads` the run's
    1-minute load before and after)."""
    loaded = under_load(loads)
    worst = max(check_rows, key=lambda r: miss(r["predicted_s"], r["measured_s"]))
    n = len(check_rows)
    out = [
        (
            "model_cpu",
            judged(
                "",
                "the cost model predicts this CPU's measured times",
                miss_interval(check_rows),
                Range.at_most(
                    MODEL_TOL, f"≤ {MODEL_TOL:g}x (every prediction within a factor {MODEL_TOL:g})"
                ),
                f"the worst miss over {n} programs; at the medians {_within(check_rows)} of {n} "
                f"within {MODEL_TOL:g}x, predicted / measured "
                f"{min(r['ratio'] for r in check_rows):.2f}-{max(r['ratio'] for r in check_rows):.2f}, "
                f"worst {worst['family']} N={worst['n']} ({worst['ratio']:.2f}x)",
                undecided=loaded,
            ),
        )
    ]
    lat = (
        f"fitted here: {hw['op_latency'] * 1e6:.3g} µs per op, {hw['loop_latency'] * 1e6:.3g} µs "
        f"per loop iteration, {hw['call_latency'] * 1e6:.3g} µs per call"
    )
    for term in ACCELERATOR_TERMS:
        variant = f"without {term}"
        rows = [r for r in check_rows if r["dominant"] == term]
        dominated = [f"{r['family']} N={r['n']}" for r in rows]
        with_it = (
            "; with it, predicted / measured "
            f"{_span([r['predicted_s'] / r['measured_s'] for r in rows])} on those"
            if rows
            else ""
        )
        out.append(
            (
                f"model_cpu_{term}",
                judged(
                    "",
                    f"the check exercises the model's {term} term: without it some measured "
                    f"program is missed by more than {MODEL_TOL:g}x",
                    miss_interval(check_rows, variant),
                    Range.at_least(MODEL_TOL, f"≥ {MODEL_TOL:g}x without it (one-sided)"),
                    f"the worst miss without the term; {_within(check_rows, variant)} of {n} "
                    f"within {MODEL_TOL:g}x without it ({_within(check_rows)} with it); it "
                    f"dominates {len(dominated)} programs"
                    + (f" ({', '.join(dominated)})" if dominated else "")
                    + with_it
                    + (f"; {lat}" if term == "latency" else ""),
                    undecided=loaded,
                ),
            )
        )
    return out


# ------------------------------------------------------------------ estimates and time to loss


def _span(values) -> str:
    return f"{min(values):.3g}-{max(values):.3g}" if len(values) > 1 else f"{values[0]:.3g}"


def sensitivity_text(variants, key: str) -> str:
    """'kernels: XLA:CPU's programs 262; latencies x0.2-x2: 60.2-510; ...' per assumption."""
    by = {}
    for v in variants[1:]:
        by.setdefault(v["assumption"], []).append(v)
    parts = []
    for assumption, vs in by.items():
        if assumption == "kernels":
            parts += [f"kernels from {v['value']}: {v[key]:.3g}" for v in vs]
        else:
            values = [v[key] for v in vs]
            parts.append(f"{assumption} {'/'.join(v['value'] for v in vs)}: {_span(values)}")
    return "; ".join(parts)


def far_text(values, rng: Range) -> str:
    """Where an estimate and its variants lie against the claimed range, in words: a ratio far
    outside it in either direction is a finding, not agreement."""
    lo, hi = min(values), max(values)
    one = len(values) == 1
    what = "the estimate lies" if one else "every variant lies"
    if lo > rng.hi:
        return (
            f"{what} above the claimed range ({lo:.3g}{'' if one else ' at the lowest'}, "
            f"{lo / rng.hi:.3g}x its upper edge): the model disagrees with the chapter's figure"
        )
    if hi < rng.lo:
        return (
            f"{what} below the claimed range ({hi:.3g}{'' if one else ' at the highest'}, "
            f"{rng.lo / hi:.3g}x under its lower edge): the model disagrees with the chapter's "
            "figure"
        )
    if len(values) == 1:
        return "the estimate lies inside the claimed range"
    return f"the variants span {lo:.3g}-{hi:.3g}, across the claimed range"


def _estimate_why(row, hw_name: str) -> str:
    return (
        f"kernels and bytes from {row['counted_from']}; {hw_name}'s published peak rates "
        "taken as achieved; its per-kernel, per-loop-iteration and per-call latencies assumed "
        "(hardware.py); nothing run on it"
    )


def speed_ratio_claim(cfg, rows) -> tuple[str, Claim] | None:
    row = next((r for r in rows if r["accelerator"] == cfg.headline), None)
    if row is None:
        return None
    values = [v["ratio"] for v in row["sensitivity"]]
    terms = row["recurrent_terms"]
    share = terms["latency"] / row["recurrent_s"]
    return (
        "speed_ratio_accelerator",
        judged(
            "",
            f"attention trains {SPEEDUP_RANGE[0]:g}-{SPEEDUP_RANGE[1]:g}x faster than an LSTM "
            f"at N = {SPEEDUP_N} on a GPU: "
            f"LSTM / attention training time ({cfg.headline}, {cfg.precision})",
            estimate(row["ratio"], _estimate_why(row, cfg.headline)),
            SPEED_RANGE,
            f"N = {row['n']}; LSTM {row['recurrent_kernels']:,.0f} kernels, latency "
            f"{share:.1%} of its estimated time; attention {row['attention_kernels']:,.0f} "
            f"kernels, {row['attention_dominant']} dominates; sensitivity: "
            f"{sensitivity_text(row['sensitivity'], 'ratio')}; {far_text(values, SPEED_RANGE)}",
        ),
    )


def _time_bounds(seeds):
    """(point, lo, hi, n) of the seeds' time-ratio brackets, on a log scale (a ratio): the
    geometric mean of their middles, the lower edge of the t interval of their lower ends and
    the upper edge of that of their upper ends (no interval with one seed)."""
    brackets = [
        [s["time_ratio"][0], math.inf if s["time_ratio"][1] is None else s["time_ratio"][1]]
        for s in seeds
        if "time_ratio" in s
    ]
    if not brackets:
        return math.nan, math.nan, math.nan, 0
    point = float(np.exp(np.mean([np.log(mid(b)) for b in brackets])))
    lows, highs = zip(*brackets)
    lo = t_interval(lows, scale="log").lo if min(lows) > 0 else math.nan
    hi = t_interval(highs, scale="log").hi if all(map(math.isfinite, highs)) else math.inf
    return point, lo, hi, len(brackets)


def _now(cfg, a):
    """(steps_to_loss, time_to_loss rows) judged now: the steps to the common loss read from
    rnn_vs_attn's committed result (cfg.results: its three-seed run first) when it is there,
    so a re-made rnn_vs_attn result is judged without re-making this experiment; each
    accelerator row's time ratio is that steps ratio × the row's own estimated step ratio.
    Without the file, what this run stored."""
    try:
        steps = applied.steps_to_loss(cfg)
    except (OSError, KeyError, ValueError):
        return a["steps_to_loss"], a["time_to_loss"]
    ratios = [mid(s["steps_ratio"]) for s in steps["seeds"] if "steps_ratio" in s]
    if not ratios:
        return steps, a["time_to_loss"]
    steps_ratio = float(np.exp(np.mean(np.log(ratios))))
    rows = []
    for row in a["time_to_loss"]:
        row = dict(row, steps_ratio=steps_ratio, time_ratio=steps_ratio * row["step_ratio"])
        row["sensitivity"] = [
            dict(v, time_ratio=steps_ratio * v["step_ratio"]) for v in row["sensitivity"]
        ]
        rows.append(row)
    return steps, rows


def time_to_loss_claims(cfg, steps, ttl) -> list[tuple[str, Claim]]:
    seeds = steps["seeds"]
    point, lo, hi, n = _time_bounds(seeds)
    s0 = seeds[0]

    def bracket(b):
        return f"({b[0]:g}, {b[1]:g}]" if b else "never"

    per_seed = ", ".join(
        f"[{s['time_ratio'][0]:.3g}, {s['time_ratio'][1] or math.inf:.3g}]"
        for s in seeds
        if "time_ratio" in s
    )
    out = [
        (
            "time_to_loss_cpu",
            judged(
                "",
                "the Transformer reaches RNNsearch's validation loss in 1/4-1/10 of its training "
                "time (Transformer / RNNsearch time to a common loss, on the CPU that trained them)",
                Interval(point, lo, hi, n, "seeds", "t", scale="log"),
                TIME_TO_LOSS_RANGE,
                f"from {steps['source']}: the target is the higher of the two validation losses "
                f"at {steps['target_fraction']:.0%} of their schedules (seed 0: "
                f"{s0['target_loss']:.3g}; Transformer reached it in "
                f"{bracket(s0['steps']['transformer'])} steps, RNNsearch in "
                f"{bracket(s0['steps']['rnnsearch'])}: the evaluation grid, nothing "
                f"interpolated); seconds per step measured in those runs (seed 0: Transformer "
                f"{s0['seconds_per_step']['transformer'] * 1e3:.3g} ms, RNNsearch "
                f"{s0['seconds_per_step']['rnnsearch'] * 1e3:.3g} ms); per seed, the time ratio "
                f"lies in {per_seed}; the interval: the t interval (log scale) of the brackets' "
                "lower ends to that of their upper ends",
            ),
        )
    ]
    row = next((r for r in ttl if r["accelerator"] == cfg.headline), None)
    if row is not None:
        values = [v["time_ratio"] for v in row["sensitivity"]]
        out.append(
            (
                "time_to_loss_accelerator",
                judged(
                    "",
                    "the Transformer reaches RNNsearch's validation loss in 1/4-1/10 of its "
                    f"training time on a GPU ({cfg.headline}, {cfg.precision})",
                    estimate(row["time_ratio"], _estimate_why(row, cfg.headline)),
                    TIME_TO_LOSS_RANGE,
                    f"the seeds' steps ratio {row['steps_ratio']:.3g} (the middles of their "
                    f"brackets) × the estimated seconds per train step, Transformer / RNNsearch "
                    f"{row['step_ratio']:.3g} (Transformer: {row['attention_dominant']} "
                    f"dominates, {row['attention_kernels']:,.0f} kernels; RNNsearch: "
                    f"{row['recurrent_dominant']}, {row['recurrent_kernels']:,.0f} kernels); "
                    f"sensitivity: {sensitivity_text(row['sensitivity'], 'time_ratio')}; "
                    f"{far_text(values, TIME_TO_LOSS_RANGE)}",
                ),
            )
        )
    return out


def near_linear_claim(cfg, results) -> tuple[str, Claim]:
    """Near-linear scaling across thousands of accelerators: nothing here runs on more than
    one device; the estimate printed is the 8-device data parallel Transformer's."""
    devices = cfg.devices
    row = next(
        (
            r
            for r in results["applied"]["scale_out"]
            if r["family"] == "transformer"
            and r["mode"] == "dp"
            and r["accelerator"] == cfg.applied.headline
            and r["n"] == cfg.n_fixed
            and r["layers"] == cfg.layers_fixed
        ),
        None,
    )
    value = row["speedup"] / devices if row else None
    return (
        "near_linear",
        judged(
            "",
            "the Transformer's training scales near-linearly across thousands of accelerators "
            "(speed-up / devices)",
            estimate(
                value,
                f"the cost model's α-β figure for {devices} {cfg.applied.headline}s "
                "(data parallel, collectives' latency and link rate assumed); nothing here runs "
                f"on more than one device, and no program is compiled for more than {devices}",
            ),
            NEAR_LINEAR,
            (f"{far_text([value], NEAR_LINEAR)}; " if value is not None else "")
            + "what this run measures of the scale-out row is its structure "
            "(scaling/structure): the Transformer's communication per step does not grow with N "
            "and stays out of its time loop, the LSTM's sits inside its loop, N·L times",
        ),
    )


# ------------------------------------------------------------------ tables


def _config(results) -> ml_collections.ConfigDict:
    return ml_collections.ConfigDict(results["config"])


def _named(pairs) -> list[Claim]:
    return [dataclasses.replace(c, id=f"scaling/{name}") for name, c in pairs if c is not None]


def table(results) -> list[Claim]:
    """Every claim of the run, judged from its results.json."""
    cfg, checked, a = _config(results), results["check"]["rows"], results["applied"]
    pairs = structure_claims(cfg, results["structure"])
    pairs += model_claims(
        checked, results["check"]["hardware"], results.get("load_average_before_after") or ()
    )
    pairs.append(speed_ratio_claim(cfg.applied, a["layer_estimates"]))
    pairs += time_to_loss_claims(cfg.applied, *_now(cfg.applied, a))
    pairs.append(near_linear_claim(cfg, results))
    return _named(p for p in pairs if p is not None)


STRUCTURE_IDS = (  # the structure claims the chapter's scale-out row measures, each to hold
    "dp_one_allreduce_lstm",
    "dp_one_allreduce_transformer",
    "tp_transformer_n_independent",
    "tp_transformer_per_layer",
    "tp_lstm_in_loop",
    "serial_lstm",
    "serial_transformer",
)


def chapter(results) -> list[Claim]:
    """The scale-out row's measured structure and its unmeasured rest, row 5's estimate and
    row 7's measurement, each from table()'s verdicts."""
    judged_ = {c.id.split("/", 1)[1]: c for c in table(results)}
    parts = [judged_[i] for i in STRUCTURE_IDS if i in judged_]
    missing = [i for i in STRUCTURE_IDS if i not in judged_]
    out = [
        Claim(
            "what the scale-out row measures here: the Transformer's training communicates a "
            "fixed amount per layer, independent of N, outside any loop; an RNN's "
            "tensor-parallel step communicates inside its time loop, N·L times",
            "every part of scaling/" + ", scaling/".join(STRUCTURE_IDS) + " in its range",
            "; ".join(f"{c.claim.split(':')[0]}: {c.measured}" for c in parts[2:5])
            + ("; not in this run: " + ", ".join(missing) if missing else ""),
            weakest([c.verdict for c in parts] + ([UNDECIDED] if missing else [])),
            "exact counts read from the programs compiled for "
            f"{_config(results).devices} fake devices (never timed)",
            id="scaling/structure",
        )
    ]
    for src, dst in (
        ("speed_ratio_accelerator", "speed_ratio"),
        ("time_to_loss_cpu", "time_to_loss"),
    ):
        if src in judged_:
            out.append(dataclasses.replace(judged_[src], id=f"scaling/{dst}"))
    return out


def rules() -> list[str]:
    """How these verdicts are decided, for the report's "How verdicts are decided"."""
    return [
        "* Scale-out structure: exact counts from the programs compiled for fake devices, "
        f"each part against its range (data parallel: all-reduce bytes within {DP_BYTES_RTOL:g} "
        "of the parameter bytes, none in a loop; tensor parallel: the Transformer's collectives "
        f"the same at every N, {MEGATRON_PER_LAYER} more per layer, none in a loop; the LSTM's "
        "in-loop collectives the same multiple (≥ 1) of N·L everywhere; serial steps 2·N·L and "
        "0); a claim is the weakest of its parts. Near-linear scaling on thousands of devices "
        "is not measured here: its figure is an estimate.",
        f"* The cost model on this CPU: the worst miss max(p/m, m/p) over the check's programs, "
        f"per timing round, its t interval over the rounds (log scale), within {MODEL_TOL:g}x; "
        "each term an "
        f"accelerator estimate is made of ({', '.join(ACCELERATOR_TERMS)}) must be needed: "
        f"without it the worst miss must exceed {MODEL_TOL:g}x.",
        f"* Accelerator figures are estimates (they need an accelerator, whatever their value), "
        f"printed with their assumptions, their sensitivity to each and where they lie against "
        f"the chapter's range ({SPEED_RANGE} at N = {SPEEDUP_N}; {TIME_TO_LOSS_RANGE} for the "
        "time to a common loss).",
        f"* Time to a common loss, measured: per seed, the steps each model needed (the "
        f"evaluation bracket) × its measured seconds per step, Transformer / RNNsearch; the "
        f"interval runs from the t interval of the brackets' lower ends to that of their upper "
        f"ends, against {TIME_TO_LOSS_RANGE}.",
    ]
