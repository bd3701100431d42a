"""scaling's claims, computed once here with stable ids, and the thresholds behind them.

The report prints these rows (results.json "table", each with its "id"); nothing else judges.
Structure claims are exact counts read from compiled programs; the model claim compares
predictions with measurements on this CPU; the accelerator claims are predictions, labelled
so, and are not made at all (NOT_SHOWN) when the model missed here by more than MODEL_TOL.
"""

from __future__ import annotations

import numpy as np

from anatomy.probes.claims import CAVEAT, FAILS, HOLDS, NOT_SHOWN, REPORTED, Claim, holds
from experiments.parallelism.claims import SPEEDUP_N, SPEEDUP_RANGE

DP_BYTES_RTOL = 1e-3  # data parallel: Σ all-reduce bytes within (1 + this) × parameter bytes
# (the loss and metrics scalars ride along)
MEGATRON_PER_LAYER = 4  # tensor parallel Transformer: all-reduces per layer and step, 2 forward
# (after attention, after the FFN) + 2 backward (Shoeybi et al. 2019, section 3)
MODEL_TOL = 2.0  # the cost model is used for accelerators only if every prediction here is within
# this factor of the measured time (max(p/m, m/p) <= this)
TIME_TO_LOSS_RANGE = (1 / 10, 1 / 4)  # the chapter: the Transformer reached its BLEU in 1/4 to
# 1/10 of the RNNs' training time (Vaswani et al. 2017, Table 2)
PREDICTED = "predicted, not measured"


def _rows(structure, family, mode):
    return [r for r in structure if r["family"] == family and r["mode"] == mode]


def _allreduce_bytes(r):
    return r["collectives"]["by_kind"].get("all-reduce", {}).get("bytes", 0.0)


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
    """Collective executions per step against L at n_fixed: (slope, intercept, exact fit)."""
    pts = sorted(
        (r["layers"], r["collectives"]["total"]["executions"])
        for r in rows
        if r["n"] == cfg.n_fixed
    )
    if len(pts) < 2:
        return None, None, False
    L, e = np.array(pts, dtype=float).T
    slope, icpt = np.polyfit(L, e, 1)
    return float(slope), float(icpt), bool(np.allclose(slope * L + icpt, e, atol=1e-6))


def structure_claims(cfg, structure: list[dict]) -> list[tuple[str, Claim]]:
    s = structure_summary(cfg, structure)
    out = []
    for family, label in (("transformer", "Transformer"), ("lstm", "LSTM")):
        dp = s.get(f"{family}|dp")
        if dp is None:
            continue
        ratio = dp["allreduce_over_params"]
        ok = max(dp["in_loop"]) == 0 and all(1.0 <= x <= 1.0 + DP_BYTES_RTOL for x in ratio)
        out.append(
            (
                f"dp_one_allreduce_{family}",
                Claim(
                    f"data parallel {label}: one gradient all-reduce of the parameters per step",
                    f"all-reduce bytes = parameter bytes (within {DP_BYTES_RTOL:g}), none in a loop",
                    f"{min(ratio):.4f}-{max(ratio):.4f}x the parameter bytes; "
                    f"{max(dp['executions']):g} all-reduce(s), {max(dp['in_loop']):g} in loops",
                    holds(ok),
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
        counts = sorted({r["collectives"]["total"]["executions"] for r in at_l})
        in_loop = max(r["collectives"]["total"]["in_loop_executions"] for r in tf)
        out.append(
            (
                "tp_transformer_n_independent",
                Claim(
                    "tensor parallel Transformer: the collectives per step do not depend on N",
                    "the same count at every N, none inside a loop",
                    f"{counts} per step over N = {[r['n'] for r in at_l]} (L = {cfg.layers_fixed}); "
                    f"{in_loop:g} in loops",
                    holds(len(counts) == 1 and in_loop == 0),
                ),
            )
        )
        slope, icpt, exact = _per_layer(cfg, tf)
        if slope is not None:
            verdict = (
                HOLDS
                if exact and round(slope) == MEGATRON_PER_LAYER
                else CAVEAT
                if exact
                else FAILS
            )
            out.append(
                (
                    "tp_transformer_per_layer",
                    Claim(
                        "tensor parallel Transformer: a fixed number of all-reduces per layer "
                        "(Megatron-LM: 2 forward + 2 backward)",
                        f"{MEGATRON_PER_LAYER}·L + c",
                        f"{slope:.2f}·L {icpt:+.2f} (N = {cfg.n_fixed})"
                        + ("" if exact else ", not linear in L"),
                        verdict,
                        "c = -1: the first layer's input needs no gradient, so its backward "
                        "all-reduce is dropped"
                        if exact and round(icpt) == -1
                        else "",
                    ),
                )
            )
    lstm = s.get("lstm|tp")
    if lstm is not None:
        per = lstm["per_nl"]
        ok = min(per) >= 1 and np.allclose(per, per[0], rtol=1e-9)
        out.append(
            (
                "tp_lstm_in_loop",
                Claim(
                    "tensor parallel LSTM: collectives inside the time loop, N·L of them times a constant",
                    "in-loop collectives / (N·L) the same at every (N, L), ≥ 1",
                    f"{min(per):.2f}-{max(per):.2f} per time step and layer over (N, L) = {lstm['points']}; "
                    f"mean {np.mean(lstm['mean_in_loop_bytes']) / 1024:.1f} KiB each",
                    holds(ok),
                ),
            )
        )
    for family, label, per_step in (("lstm", "LSTM", 2), ("transformer", "Transformer", 0)):
        rows = [r for r in structure if r["family"] == family]
        if not rows:
            continue
        per = [r["serial_steps"] / (r["n"] * r["layers"]) for r in rows]
        out.append(
            (
                f"serial_{family}",
                Claim(
                    f"{label} stack: serial steps per training step",
                    f"{per_step}·N·L (forward + backward loop trips)" if per_step else "0",
                    f"{min(per):g}-{max(per):g}·N·L over {len(rows)} programs",
                    holds(all(p == per_step for p in per)),
                    "loop trip counts of the compiled programs (known_trip_count), nested loops "
                    "multiplied",
                ),
            )
        )
    tr = {
        f: [r for r in structure if r["family"] == f and r["mode"] == "tp"]
        for f in ("rnnenc", "rnnsearch", "translator_transformer")
    }
    if all(tr.values()):
        loops = {f: rows[0]["collectives"]["total"]["in_loop_executions"] for f, rows in tr.items()}
        rnn_ok = loops["rnnenc"] > 0 and loops["rnnsearch"] > 0
        out.append(
            (
                "tp_translators_in_loop",
                Claim(
                    "tensor parallel translators: the RNNs communicate inside their time loops, "
                    "the Transformer does not",
                    "in-loop collectives > 0 for RNNenc and RNNsearch, 0 for the Transformer",
                    ", ".join(f"{f} {v:g}" for f, v in loops.items()) + " per step",
                    holds(rnn_ok and loops["translator_transformer"] == 0),
                    f"rnn_vs_attn's models, a batch of {tr['rnnenc'][0]['n']}-token sentences",
                ),
            )
        )
    return out


def model_ok(check_rows) -> bool:
    """The cost model is fit for the accelerator rows: every prediction within MODEL_TOL."""
    return all(max(r["ratio"], 1 / r["ratio"]) <= MODEL_TOL for r in check_rows)


def model_claim(check_rows) -> tuple[str, Claim]:
    miss = [max(r["ratio"], 1 / r["ratio"]) for r in check_rows]
    worst = check_rows[int(np.argmax(miss))]
    within = sum(m <= MODEL_TOL for m in miss)
    return (
        "model_cpu",
        Claim(
            "the cost model predicts this CPU's measured times",
            f"every prediction within {MODEL_TOL:g}x of the measured time",
            f"{within} of {len(miss)} within {MODEL_TOL:g}x; predicted/measured "
            f"{min(r['ratio'] for r in check_rows):.2f}-{max(r['ratio'] for r in check_rows):.2f}; "
            f"worst {worst['family']} N={worst['n']} ({worst['ratio']:.2f}x)",
            holds(within == len(miss)),
            "if it fails, the accelerator rows below are not made (not shown by this run)",
        ),
    )


def applied_claims(
    cfg, check_rows, ratios, ttl, steps, n_ratio, wide=()
) -> list[tuple[str, Claim]]:
    ok = model_ok(check_rows)
    head = cfg.headline
    out = []
    row = next(
        (
            r
            for r in ratios
            if r["accelerator"] == head and r["latency_scale"] == 1.0 and r["n"] == n_ratio
        ),
        None,
    )
    if row is not None:
        others = [r["ratio"] for r in ratios if r["accelerator"] == head and r["n"] == n_ratio]
        lo, hi = SPEEDUP_RANGE
        agrees = row["ratio"] >= lo
        w = next((r for r in wide if r["accelerator"] == head), None)
        wide_note = (
            f"; at width {w['d']}, batch {w['batch']}: {w['ratio']:.1f}x ({w['ratio_fused']:.1f}x "
            "fused)"
            if w
            else ""
        )
        verdict = NOT_SHOWN if not ok else (CAVEAT if agrees else FAILS)
        out.append(
            (
                "speed_ratio_accelerator",
                Claim(
                    f"attention trains {lo:g}-{hi:g}x faster than an LSTM at N = {SPEEDUP_N} on a GPU",
                    f"LSTM / attention time ≥ {lo:g} ({head}, {cfg.precision})",
                    f"{PREDICTED}: {row['ratio']:.1f}x at N = {n_ratio} "
                    f"({min(others):.1f}-{max(others):.1f}x with latencies x{min(cfg.latency_scales):g}-"
                    f"{max(cfg.latency_scales):g})",
                    verdict,
                    f"LSTM: {row['lstm_dominant']} dominates; attention: "
                    f"{row['attention_dominant']}; with one kernel per LSTM time step (a fused "
                    f"cell) {row['ratio_fused']:.1f}x{wide_note}; the prediction agrees with the "
                    f"chapter when ≥ {lo:g}x (faster is stronger), the caveat: it is a prediction",
                ),
            )
        )
    trow = next((r for r in ttl if r["accelerator"] == head), None)
    if trow is not None:
        lo, hi = TIME_TO_LOSS_RANGE
        bound = trow["bound"]
        value = trow["time_ratio"]
        if bound == "transformer >=":
            agrees = None if value <= hi else False  # a lower bound above 1/4 contradicts
        elif bound == "transformer <=":
            agrees = True if value <= hi else None
        else:
            agrees = value <= hi
        verdict = NOT_SHOWN if not ok or agrees is None else (CAVEAT if agrees else FAILS)
        rel = {"transformer >=": "≥ ", "transformer <=": "≤ ", None: ""}[bound]
        out.append(
            (
                "time_to_loss_accelerator",
                Claim(
                    "the Transformer reaches the RNNs' quality in 1/4-1/10 of their training time",
                    f"Transformer / RNNsearch time to the same validation loss ≤ {hi:g} ({head})",
                    f"{PREDICTED}: {rel}{value:.2f} (steps {steps['steps']['transformer']:g} vs "
                    f"{steps['steps']['rnnsearch']:g} to loss {steps['target_loss']:.3f}; per step "
                    f"{trow['step_ratio']:.2f}x)",
                    verdict,
                    f"steps from {steps['source']}; Transformer step: {trow['transformer_dominant']} "
                    f"dominates, RNNsearch step: {trow['rnnsearch_dominant']}",
                ),
            )
        )
    return out
