"""The one rule for a fitted exponent against theory (FLOPs, bytes, memory against N, d, k, r),
shared by the cost experiments (complexity, decode_cost, attention_memory) so that every
exponent claim, and every claim made of them, is judged alike.

    |fitted − theory| <= EXPONENT_TOL          holds
    |fitted − theory| <= EXPONENT_CAVEAT_TOL   holds with a caveat
    otherwise, or not finite                   does not hold
"""

from __future__ import annotations

from anatomy.probes.claims import CAVEAT, FAILS, HOLDS, finite

EXPONENT_TOL = 0.15  # |fitted − theoretical exponent| <= this: holds
EXPONENT_CAVEAT_TOL = 0.30  # ... <= this: holds with a caveat; beyond: does not hold


def exponent_verdict(pairs) -> tuple[str, float]:
    """[(fitted, theory), ...] -> (the verdict of the worst pair, its |fitted − theory|)."""
    if not pairs or not finite(*(x for pair in pairs for x in pair)):
        return FAILS, float("nan")
    dev = max(abs(m - e) for m, e in pairs)
    return (HOLDS if dev <= EXPONENT_TOL else CAVEAT if dev <= EXPONENT_CAVEAT_TOL else FAILS), dev


def rule() -> str:
    """The rule in words, for the report's "How verdicts are decided"."""
    return (
        f"* Exponents: |fitted − theory| ≤ {EXPONENT_TOL} holds, ≤ {EXPONENT_CAVEAT_TOL} holds "
        "with a caveat, else does not hold (a row of several exponents: the worst decides)."
    )
