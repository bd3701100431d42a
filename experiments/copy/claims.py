"""copy's claims, judged on what its results.json holds, with their thresholds.

table(results):
    copy/needs_copying      the readers without copying (position only, the string's symbols
                            without their order) stay below the bar at L; the copier reaches it
    copy/attention_within   attention copies strings of L symbols (in the training range)
    copy/gap/<family>       at L, after the same training at matched parameters, attention
                            copies more often than that fixed-state family (Jelassi et al.,
                            Figure 2: transformers learn to copy with far less training)
    copy/longer             at 2L (beyond training), attention copies more often than the
                            best fixed-state family (their Figure 3: length generalisation)
    copy/bound              every fixed-state model's longest copied length sits at or under
                            its state's bound l* = b / log2 A (the information limit; a check,
                            exact)
chapter(results):
    copy/fixed_state_copy   a fixed state copies worse than attention: needs_copying,
                            attention_within and every gap hold (weakest)

A model "copies" a length when its exact-match rate there is at least COPIED. The attention
contenders are the family 'attention' (the best of them per seed is not taken: each is its
own contender; the first listed is the one the claims read).
"""

from __future__ import annotations

import numpy as np

from anatomy.probes.claims import (
    MISSING,
    UNDECIDED,
    Claim,
    Range,
    exact,
    judge,
    judged,
    t_interval,
    weakest,
)
from experiments.twins import needs_ability

# The ranges, stated before any run:
COPIED = 0.9  # "copies strings of length l": exact match >= this at l (one-sided)
MARGIN = 0.2  # "copies more often": attention − the other >= this exact-match rate
ATTENTION = "attention"


def _fixed(results):
    """Contender names whose state does not grow with the string (bound is not None)."""
    return [m for m, e in results["contenders"].items() if e["bound"] is not None]


def _attention(results):
    names = [m for m, e in results["contenders"].items() if e["family"] == ATTENTION]
    return names[0] if names else None


def _at(results, name, length):
    """[seed] exact match of contender `name` at string length `length`."""
    return results["contenders"][name]["exact"][results["lengths"].index(length)]


def longest_copied(entry, lengths):
    """The longest tested length whose mean exact match is >= COPIED (0: none)."""
    ok = [n for n, x in zip(lengths, entry["exact"]) if np.mean(x) >= COPIED]
    return max(ok) if ok else 0


def needs_copying(results) -> Claim:
    cid, claim = "copy/needs_copying", "copying needs copying: no reader without it gets there"
    r, n = results["readers"], results["train_max"]
    if n not in results["lengths"]:
        return Claim(claim, "—", "—", MISSING, f"L = {n} is not a tested length", id=cid)
    i = results["lengths"].index(n)
    expected = (
        f"at l = L = {n}: position-only and bag readers < {COPIED:g}; the copier ≥ {COPIED:g}"
    )
    without = max(r["position"][i], r["bag"][i])
    return needs_ability(cid, claim, expected, without, r["copy"][i], COPIED,
                         ("without copying", "copier"))  # fmt: skip


def attention_within(results) -> Claim:
    cid, claim = "copy/attention_within", "attention copies strings as long as it was trained on"
    a, n = _attention(results), results["train_max"]
    rng = Range.at_least(COPIED, f"exact match ≥ {COPIED:g} at l = L = {n}")
    if a is None or n not in results["lengths"]:
        return Claim(claim, str(rng), "—", MISSING, id=cid)
    return judged(cid, claim, t_interval(_at(results, a, n), bounds=(0.0, 1.0)), rng, a)


def _gap(results, a, other, length):
    return [x - y for x, y in zip(_at(results, a, length), _at(results, other, length))]


def gap(results, name) -> Claim:
    n = results["train_max"]
    cid = f"copy/gap/{name}"
    claim = f"at l = L, attention copies more often than {name} (matched parameters)"
    rng = Range.at_least(MARGIN, f"attention − {name} ≥ {MARGIN:g} at l = {n}")
    a = _attention(results)
    if a is None:
        return Claim(claim, str(rng), "—", MISSING, id=cid)
    return judged(cid, claim, t_interval(_gap(results, a, name, n), bounds=(-1.0, 1.0)), rng)


def longer(results) -> Claim:
    cid = "copy/longer"
    claim = "beyond the training lengths, attention copies more often than any fixed state"
    n2 = 2 * results["train_max"]
    rng = Range.at_least(MARGIN, f"attention − the best fixed state ≥ {MARGIN:g} at l = {n2}")
    a, fixed = _attention(results), _fixed(results)
    if a is None or not fixed or n2 not in results["lengths"]:
        return Claim(claim, str(rng), "—", MISSING, id=cid)
    best = max(fixed, key=lambda m: np.mean(_at(results, m, n2)))
    gaps = t_interval(_gap(results, a, best, n2), bounds=(-1.0, 1.0))
    return judged(cid, claim, gaps, rng, f"best: {best}")


def bound(results) -> Claim:
    cid = "copy/bound"
    claim = "no fixed-state model copies past its state's bound l* = b / log2 A"
    fixed = _fixed(results)
    if not fixed:
        return Claim(claim, "—", "—", MISSING, id=cid)
    c, lengths = results["contenders"], results["lengths"]
    ratios = {m: longest_copied(c[m], lengths) / c[m]["bound"] for m in fixed}
    worst = max(ratios, key=ratios.get)
    verdict, why = judge(exact(ratios[worst], "read from the exact-match table"),
                         Range.at_most(1.0, "longest copied / l* ≤ 1"))  # fmt: skip
    measured = "; ".join(
        f"{m}: {longest_copied(c[m], lengths)} of l* = {c[m]['bound']:.0f}" for m in fixed
    )
    return Claim(claim, "longest copied / l* ≤ 1", measured, verdict, why, id=cid)


def table(results) -> list[Claim]:
    return [
        needs_copying(results),
        attention_within(results),
        *[gap(results, m) for m in _fixed(results)],
        longer(results),
        bound(results),
    ]


def chapter(results) -> list[Claim]:
    by = {c.id: c for c in table(results)}
    parts = [by["copy/needs_copying"], by["copy/attention_within"]]
    parts += [c for i, c in by.items() if i.startswith("copy/gap/")]
    verdict = weakest(p.verdict for p in parts)
    if not any(i.startswith("copy/gap/") for i in by):
        verdict = UNDECIDED if verdict != MISSING else verdict
    return [
        Claim(
            "a fixed state copies worse than attention at matched parameters",
            "the task needs copying, attention copies at L, every fixed state falls behind",
            "; ".join(f"{p.id.split('/', 1)[1]}: {p.measured}" for p in parts),
            verdict,
            "; ".join(f"{p.id}: {p.verdict}" for p in parts),
            id="copy/fixed_state_copy",
        )
    ]


def rules() -> list[str]:
    """How these verdicts are decided, for the report's "How verdicts are decided"."""
    return [
        f"* copy: a model copies strings of length l when its exact-match rate there is ≥ "
        f"{COPIED:g} (over seeds); 'copies more often' is attention − the other ≥ {MARGIN:g} "
        "per seed; the readers without copying must stay below the bar at L (exact).",
    ]
