"""Two claim shapes several experiments share (recall, copy, crossover): a task that needs an
ability (docs/design.md: the readers without it cannot reach the bar, the one with it can), and a
chapter claim made of parts (the weakest of their verdicts).

Each returns an anatomy.probes.claims.Claim judged by the one rule; the thresholds stay in
the experiment's claims.py, beside the verdict that uses them.
"""

from __future__ import annotations

from anatomy.probes.claims import Claim, Range, exact, judge, weakest


def needs_ability(cid, claim, expected, without, with_, bar, names=("without", "with")):
    """The task needs the ability: the best reader without it (`without`, a deterministic
    score) stays at most `bar`, the reader with it (`with_`) reaches at least `bar`."""
    parts = [
        judge(exact(without, "the readers are deterministic"), Range.at_most(bar)),
        judge(exact(with_, "the reader is deterministic"), Range.at_least(bar)),
    ]
    return Claim(
        claim,
        expected,
        f"best {names[0]} {without:.3f}; {names[1]} {with_:.3f}",
        weakest(v for v, _ in parts),
        "; ".join(w for _, w in parts if w),
        id=cid,
    )


def composite(cid, claim, parts):
    """A claim made of `parts` (Claims): the weakest of their verdicts; measured lists each
    part's verdict, detail each part's measured text."""
    return Claim(
        claim,
        "every part holds (weakest)",
        "; ".join(f"{p.id.split('/', 1)[1]}: {p.verdict}" for p in parts),
        weakest(p.verdict for p in parts),
        "; ".join(f"{p.id}: {p.measured}" for p in parts),
        id=cid,
    )
