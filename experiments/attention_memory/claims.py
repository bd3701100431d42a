"""attention_memory's claims, judged on what its results.json holds, with their thresholds.

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    attention_memory/<impl>/<mode>/h<heads>   the compiled temp memory's exponent in N against
                                              theory (experiments/lab/exponents.py): full N², chunked N
    attention_memory/ratio/<mode>             full / chunked memory at the largest N (reported)
    attention_memory/equal/<mode>             chunked attention computes what full attention does
chapter(results), the row of the chapter's report, made of those verdicts:
    attention_memory/memory   every exponent and both equalities
"""

from __future__ import annotations

from anatomy.probes.claims import REPORTED, Claim, holds, weakest
from experiments.lab.exponents import exponent_claim, exponent_verdict

MODES = ("forward", "forward+backward")
EXPECTED = {"full": (2.0, "O(N²)"), "chunked": (1.0, "O(N)")}  # impl -> exponent in N, cost
CHUNKED_EQUAL_RTOL = 1e-5  # chunked attention equals full attention to this (relative)


def fit_key(impl, mode, heads) -> str:
    """The key of results.json's "fits" for one series: 'full forward+backward h=2'."""
    return f"{impl} {mode} h={heads}"


def series(raw, impl, mode, heads) -> tuple[list, list]:
    """(N, temp bytes) of one implementation, mode and head count, in grid order."""
    pts = [r for r in raw if (r["impl"], r["mode"], r["heads"]) == (impl, mode, heads)]
    return [p["n"] for p in pts], [p["temp"] for p in pts]


def exponents(results) -> list[Claim]:
    out = []
    for impl, (expected, label) in EXPECTED.items():
        for mode in MODES:
            for heads in results["config"]["heads_grid"]:
                f = results["fits"][fit_key(impl, mode, heads)]
                n, temp = series(results["raw"], impl, mode, heads)
                out.append(
                    exponent_claim(
                        f"attention_memory/{impl}/{mode.replace('+', '_')}/h{heads}",
                        f"{impl} attention, {mode}, {heads} head(s): memory {label}",
                        f["exponent"],
                        expected,
                        "N",
                        f"temp bytes {temp[0]:,} -> {temp[-1]:,} over N = {n[0]}..{n[-1]}",
                    )
                )
    return out


def ratios(results) -> list[Claim]:
    cfg, raw = results["config"], results["raw"]
    heads = cfg["heads_grid"][-1]
    out = []
    for mode in MODES:
        full, chunked = (series(raw, impl, mode, heads)[1][-1] for impl in ("full", "chunked"))
        out.append(
            Claim(
                f"at N={cfg['n_grid'][-1]}, {heads} head(s), {mode}: full / chunked memory",
                "ratio",
                f"{full / chunked:.1f}x ({full:,} / {chunked:,} bytes)",
                REPORTED,
                id=f"attention_memory/ratio/{mode.replace('+', '_')}",
            )
        )
    return out


def equal(results) -> list[Claim]:
    check_n = results["config"]["check_n"]
    return [
        Claim(
            f"chunked attention equals full attention ({mode})",
            f"max rel. error ≤ {CHUNKED_EQUAL_RTOL:g}",
            f"{err:.2g} at N={check_n}",
            holds(err <= CHUNKED_EQUAL_RTOL),
            id=f"attention_memory/equal/{mode.replace('+', '_')}",
        )
        for mode, err in results["equality"].items()
    ]


def table(results) -> list[Claim]:
    return [*exponents(results), *ratios(results), *equal(results)]


def memory(results) -> Claim:
    """The chapter's memory row: every exponent and both equalities must hold."""
    cfg, fits, raw = results["config"], results["fits"], results["raw"]
    h, n = cfg["heads_grid"][-1], cfg["n_grid"][-1]
    full = fits[fit_key("full", "forward+backward", h)]["exponent"]
    chunked = fits[fit_key("chunked", "forward+backward", h)]["exponent"]
    pairs = [(f["exponent"], 2.0 if k.startswith("full") else 1.0) for k, f in fits.items()]
    _, dev = exponent_verdict(pairs)
    at_n = {
        x["impl"]: x["temp"]
        for x in raw
        if (x["mode"], x["heads"], x["n"]) == ("forward+backward", h, n)
    }
    worst = max(results["equality"].values())
    return Claim(
        "attention's memory grows as N² with its weights, as N when chunked (online softmax)",
        "full N^2, chunked N^1, the same numbers",
        f"compiled temp memory of attention fwd+bwd ∝ N^{full:.2f} (full) vs N^{chunked:.2f} "
        f"(chunked, online softmax); {at_n['full'] / at_n['chunked']:.0f}x less at N={n}, "
        f"{h} heads",
        weakest(c.verdict for c in [*exponents(results), *equal(results)]),
        f"XLA memory_analysis of the compiled programs, forward and forward+backward; worst "
        f"exponent off by {dev:.3f}; chunked equals full to {worst:.1g} (relative)",
        id="attention_memory/memory",
    )


def chapter(results) -> list[Claim]:
    return [memory(results)]


def rules() -> list[str]:
    """How these verdicts are decided, for the report's "How verdicts are decided"."""
    return [
        f"* Memory: every fitted exponent by the exponent rule, and chunked attention equal to "
        f"full attention within {CHUNKED_EQUAL_RTOL:g} (relative), forward and backward.",
    ]
