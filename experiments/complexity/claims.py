"""complexity's claims, judged on what its results.json holds, with their thresholds.

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    complexity/<layer>/<axis>        a fitted FLOP exponent against theory (experiments/
                                     exponents.py), per layer and axis (N, d; k, window)
    complexity/parallel_work/<name>  a linear recurrence by associative scan does no more work
                                     than by jax.lax.scan beyond a log factor
chapter(results), the rows of the chapter's report, made of those verdicts:
    complexity/per_layer    the LSTM's O(N·d²) and attention's O(N²·d)
    complexity/restricted   sliding-window attention's O(r·N·d)
    complexity/conv         the convolution's O(k·N·d²)
    complexity/linear_work  the linear recurrences' work (every complexity/parallel_work/<name>)
"""

from __future__ import annotations

import math

from anatomy.probes.claims import MISSING, Claim, Range, exact, judge, weakest
from experiments.lab.exponents import EXPONENT_TOL, exponent_claim, exponent_range, exponent_verdict

# each layer's cost in the chapter's notation (the layers complexity/__init__.py measures)
LABELS = {
    "recurrent": "O(N·d²)",
    "attention_core": "O(N²·d)",
    "attention_layer": "O(N²·d + N·d²)",
    "conv": "O(k·N·d²)",
    "windowed_core": "O(r·N·d)",
    "windowed_layer": "O(r·N·d + N·d²)",
}
EXTRA_AXES = (("conv", "k"), ("windowed_core", "window"))  # fitted at fixed N and d


def parallel_work_verdict(scan_exponent, assoc_exponent, ratios, n_grid) -> str:
    """A linear recurrence by associative scan against the same one by jax.lax.scan: the
    parallel form costs no more work, asymptotically, than the sequential one beyond a log
    factor. Both parts are exact counts (XLA FLOPs), judged by the one rule, the weakest
    deciding: the sequential scan's work grows as N^1 (exponent_range(1): else the reference
    is not what it should be), and the assoc/scan FLOP ratio grows no faster than log2 N over
    the grid, ratio[-1]/ratio[0] <= log2 N_max / log2 N_min (one-sided). Whether the log factor
    is spent (assoc_exponent above the scan's) is what the claim allows, said in its detail.
    Non-finite or missing numbers: not measurable (UNDECIDED).
    """
    ok = len(ratios) >= 2 and len(ratios) == len(n_grid) and min(n_grid, default=0) >= 2
    growth = ratios[-1] / ratios[0] if ok and ratios[0] else None
    allowed = Range.at_most(math.log2(n_grid[-1]) / math.log2(n_grid[0])) if ok else None
    parts = [judge(exact(scan_exponent), exponent_range(1.0))[0]]
    parts.append(
        judge(exact(growth), allowed)[0] if ok else judge(exact(None), Range.at_most(0))[0]
    )
    return weakest(parts)


def exponent(results, layer, axis) -> Claim:
    """One fitted FLOP exponent of `layer` along `axis` against its expected value."""
    f = results["fits"][layer][axis]
    theory = f["expected"] if axis in ("N", "d") else 1.0
    return exponent_claim(
        f"complexity/{layer}/{axis}", f"{layer} {LABELS[layer]}", f["exponent"], theory, axis
    )


def parallel_work(results) -> list[Claim]:
    d = results["config"]["d_fixed"]
    out = []
    for name, w in results["parallel_work"].items():
        ns, ratio = w["n"], w["ratio"]
        out.append(
            Claim(
                f"{name} by associative scan: no more work than jax.lax.scan beyond a log factor",
                "FLOPs ∝ N^1 like the scan's; assoc/scan ratio grows ≤ log2 N",
                f"N^{w['assoc_exponent']:.3f} vs scan N^{w['scan_exponent']:.3f}; ratio "
                f"{ratio[0]:.2f} -> {ratio[-1]:.2f} over N = {ns[0]}..{ns[-1]}",
                parallel_work_verdict(w["scan_exponent"], w["assoc_exponent"], ratio, ns),
                f"forward pass at d = {d}; the scan loop-corrected (its body counted N times); "
                + (
                    "the log factor is spent (the parallel exponent above the scan's by more "
                    f"than {EXPONENT_TOL})"
                    if w["assoc_exponent"] - w["scan_exponent"] > EXPONENT_TOL
                    else "the parallel exponent within the tolerance of the scan's"
                ),
                id=f"complexity/parallel_work/{name}",
            )
        )
    return out


def table(results) -> list[Claim]:
    per_axis = [exponent(results, layer, axis) for layer in LABELS for axis in ("N", "d")]
    extra = [exponent(results, layer, axis) for layer, axis in EXTRA_AXES]
    return [*per_axis, *extra, *parallel_work(results)]


ND = (("N", "N"), ("d", "d"))  # (fitted axis, its symbol in the chapter's notation)
# the chapter's cost rows: id -> (claim, measured: a template over the layers' fitted
# exponents, {layer: its axes}, where the numbers come from)
COST_ROWS = {
    "complexity/per_layer": (
        "per layer, recurrence costs O(N·d²), self-attention O(N²·d)",
        "fitted FLOPs ∝ {recurrent} (LSTM) vs {attention_core} (attention)",
        {"recurrent": ND, "attention_core": ND},
        "XLA cost analysis (LSTM loop-corrected)",
    ),
    "complexity/restricted": (
        "restricted (sliding-window) self-attention costs O(r·N·d)",
        "sliding-window attention FLOPs ∝ {windowed_core}",
        {"windowed_core": (*ND, ("window", "(2r+1)"))},
        "XLA cost analysis of anatomy.attention.sliding_window_attention (score + value part)",
    ),
    "complexity/conv": (
        "a convolution of width k costs O(k·N·d²)",
        "1-D convolution FLOPs ∝ {conv}",
        {"conv": (*ND, ("k", "k"))},
        "XLA cost analysis of anatomy.conv.conv1d",
    ),
}


def cost_row(results, cid) -> Claim:
    """The chapter's cost row `cid` of COST_ROWS, made of exponent claims: their weakest
    verdict, the worst deviation."""
    claim, template, layers, source = COST_ROWS[cid]
    fits = results["fits"]
    axes = [(layer, axis) for layer, pairs in layers.items() for axis, _ in pairs]
    parts = [exponent(results, layer, axis) for layer, axis in axes]
    _, dev = exponent_verdict([(fits[x][a]["exponent"], fits[x][a]["expected"]) for x, a in axes])
    fitted = {
        layer: "·".join(f"{sym}^{fits[layer][axis]['exponent']:.2f}" for axis, sym in pairs)
        for layer, pairs in layers.items()
    }
    return Claim(
        claim,
        ", ".join(f"{layer} {LABELS[layer]}" for layer in layers),
        template.format(**fitted),
        weakest(c.verdict for c in parts),
        f"{source}; worst exponent off by {dev:.3f}",
        id=cid,
    )


def linear_work(results) -> Claim:
    """The work of every linear recurrence by associative scan: the weakest of them."""
    claim = "a linear recurrence by associative scan does O(N·d²) work, up to a log factor"
    expected = "the work of jax.lax.scan, times at most log N"
    work = results["parallel_work"]
    if not work:
        return Claim(
            claim,
            expected,
            "—",
            MISSING,
            "complexity measured no linear recurrence (config.linear_recurrences)",
            id="complexity/linear_work",
        )
    return Claim(
        claim,
        expected,
        "; ".join(
            f"{m}: N^{w['assoc_exponent']:.2f} (associative) vs N^{w['scan_exponent']:.2f} (scan)"
            for m, w in work.items()
        ),
        weakest(c.verdict for c in parallel_work(results)),
        "XLA FLOPs of the whole layer's forward pass (the scan loop-corrected); assoc/scan "
        "ratio "
        + ", ".join(
            f"{m} {w['ratio'][0]:.2f} -> {w['ratio'][-1]:.2f} over N = {w['n'][0]}..{w['n'][-1]}"
            for m, w in work.items()
        ),
        id="complexity/linear_work",
    )


def chapter(results) -> list[Claim]:
    return [*(cost_row(results, cid) for cid in COST_ROWS), linear_work(results)]


def rules() -> list[str]:
    """How these verdicts are decided, for the report's "How verdicts are decided"."""
    return [
        "* Work of a linear recurrence by associative scan (minGRU, Mamba) against the same "
        f"layer by jax.lax.scan: the scan's FLOPs grow as N^1 (±{EXPONENT_TOL}) and the "
        "parallel/sequential FLOP ratio no faster than log2 N over the grid (one-sided); both "
        "exact, the weaker decides.",
    ]
