"""report's linear-recurrence rows (minGRU, Mamba; SRU/QRNN's idea): parallel depth, work, recall.

Each entry of ROWS is (name, RNN claim, second claim, sources, plot prefixes, measure) for
report_rows.RowSpec; a measure function reads the walls' results.json (keys listed in
report_sources.REQUIRED) and returns (measured, verdict, why), the verdict from
experiments/thresholds.py.
"""

from __future__ import annotations

from anatomy.probes.claims import CAVEAT, FAILS, HOLDS, MISSING, NOT_SHOWN
from experiments.thresholds import (
    linear_recall_verdict,
    log_depth_verdict,
    parallel_work_verdict,
    well_above_chance,
)


def _linear_parallel(r):
    a = r["parallelism"]["analysis"]
    e = a["depth_exponent"]
    v = log_depth_verdict(
        a["mingru_scan_steps_per_token"],
        a["mingru_assoc_max_steps"],
        a["assoc_depth_log2_r2"],
        e["mingru_assoc"],
    )
    return (
        f"minGRU loop steps {a['mingru_scan_steps_per_token']:.2f}·N (jax.lax.scan) vs "
        f"{a['mingru_assoc_max_steps']} (associative scan); compiled depth N^{e['mingru_scan']:.2f}"
        f" vs +{a['assoc_depth_per_doubling']:.0f} ops per doubling of N (N^{e['mingru_assoc']:.2f})",
        v,
        "depth = critical path of the optimised gradient HLO (anatomy.probes.depth); "
        f"a + b·log2 N fits the associative scan's with R² {a['assoc_depth_log2_r2']:.3f}",
    )


def _linear_work(r):
    """Work against N of minGRU / Mamba by associative scan beside jax.lax.scan (complexity's
    parallel_work), judged again here from the numbers; the worst model decides."""
    work = r["complexity"]["parallel_work"]
    if not work:
        return "—", MISSING, "complexity measured no linear recurrence (config.linear_recurrences)"
    verdicts = {
        m: parallel_work_verdict(w["scan_exponent"], w["assoc_exponent"], w["ratio"], w["n"])
        for m, w in work.items()
    }
    v = next((x for x in (FAILS, CAVEAT) if x in verdicts.values()), HOLDS)
    return (
        "; ".join(
            f"{m}: N^{w['assoc_exponent']:.2f} (associative) vs N^{w['scan_exponent']:.2f} (scan)"
            for m, w in work.items()
        ),
        v,
        "XLA FLOPs of the whole layer's forward pass (the scan loop-corrected); assoc/scan "
        "ratio "
        + ", ".join(
            f"{m} {w['ratio'][0]:.2f} -> {w['ratio'][-1]:.2f} over N = {w['n'][0]}..{w['n'][-1]}"
            for m, w in work.items()
        ),
    )


def _linear_recall(r):
    lr = r["long_range"]
    models, ks, chance = lr["models"], lr["k_grid"], lr["chance"]
    linear = [m for m in ("mingru", "mamba") if m in models]
    if "lstm" not in models or not linear:
        return "—", MISSING, "needs lstm and mingru / mamba in long_range's models"
    reach = [k for k in ks if well_above_chance(models["lstm"]["accuracy"][ks.index(k)], chance)]
    k = max(reach, default=max(ks))
    acc = {m: models[m]["accuracy"][ks.index(k)] for m in ["lstm"] + linear}
    verdicts = {linear_recall_verdict(acc[m], acc["lstm"], reach) for m in linear}
    v = next((x for x in (NOT_SHOWN, FAILS) if x in verdicts), HOLDS)
    return (
        f"recall of x(t−{k}): " + ", ".join(f"{m} {a:.2f}" for m, a in acc.items()),
        v,
        f"at the farthest k where the lstm is well above chance (k={k})"
        if reach
        else f"the lstm is well above chance (1/V = {chance:.2f}) at no k: nothing to match",
    )


ROWS = (
    (
        "parallel training of a linear recurrence (SRU/QRNN, minGRU, Mamba)",
        "N serial steps with jax.lax.scan",
        "— (the same recurrence by associative scan: no loop, O(log N) depth)",
        ("parallelism",),
        ("parallelism",),
        _linear_parallel,
    ),
    (
        "work of a linear recurrence by associative scan (minGRU, Mamba)",
        "O(N·d²) with jax.lax.scan",
        "— (the same recurrence by associative scan: O(N·d²) work up to a log factor)",
        ("complexity",),
        ("complexity",),
        _linear_work,
    ),
    (
        "long-range recall of a linear recurrence (minGRU, Mamba)",
        "gated RNNs (LSTM) reach some distance",
        "— (a linear recurrence matches the LSTM: Feng et al. 2024, Gu & Dao 2023)",
        ("long_range",),
        ("long_range",),
        _linear_recall,
    ),
)
