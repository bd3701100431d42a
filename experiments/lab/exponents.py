"""A fitted exponent against theory (FLOPs, bytes, memory against N, d, k, r), through the one
verdict rule (anatomy.probes.claims), shared by the cost experiments (complexity, decode_cost,
attention_memory) so that every exponent claim, and every claim made of them, is judged alike.

The exponents are fitted to counts read from compiled programs (XLA's cost and memory
analysis), which do not vary from run to run: each is an `exact` measurement, and its range is
the theory's exponent ± EXPONENT_TOL, stated before any run.
"""

from __future__ import annotations

from anatomy.probes.claims import Claim, Range, exact, finite, judge, judged, weakest

EXPONENT_TOL = 0.15  # a fitted exponent within this of the theory's matches it


def exponent_range(theory: float) -> Range:
    """The range a cost claim gives its exponent: theory ± EXPONENT_TOL."""
    return Range.around(theory, EXPONENT_TOL, f"{theory:.3g} ± {EXPONENT_TOL:g}")


def exponent_verdict(pairs) -> tuple[str, float]:
    """[(fitted, theory), ...] -> (the weakest verdict of the pairs by the one rule, the worst
    |fitted − theory|; nan when a pair is not finite)."""
    if not pairs:
        return judge(exact(None), exponent_range(0.0))[0], float("nan")
    verdicts = [judge(exact(m), exponent_range(e))[0] for m, e in pairs]
    devs = [abs(float(m) - e) if finite(m) else float("nan") for m, e in pairs]
    return weakest(verdicts), max(devs)


def exponent_claim(cid: str, claim: str, fitted, theory: float, axis: str, detail="") -> Claim:
    """The claim that a count grows as axis^theory, judged on its exact fitted exponent."""
    c = judged(cid, claim, exact(fitted), exponent_range(theory), detail)
    measured = f"{axis}^{float(fitted):.3f}" if finite(fitted) else "not measured"
    return Claim(c.claim, f"{axis}^({c.expected})", measured, c.verdict, c.detail, id=cid)


def rule() -> str:
    """The rule in words, for the report's "How verdicts are decided"."""
    return (
        f"* Exponents: fitted to exact counts of compiled programs; the claim's range is the "
        f"theory's exponent ± {EXPONENT_TOL} (a row of several exponents: the weakest decides)."
    )
