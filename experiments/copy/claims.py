"""copy's claims, judged on what its results.json holds, with their thresholds.

table(results):
    copy/needs_copying      the readers without copying (position only, the string's symbols
                            without their order) stay below the bar at L; the copier reaches it
    copy/attention_within   attention (the first attention contender: RoPE) copies strings of
                            L symbols, the longest it was trained on
    copy/gap/<family>       at L, after the same training at matched parameters, attention
                            copies more often than that fixed-state contender (Jelassi et al.,
                            Figure 2: transformers learn to copy with far less training); only
                            once attention has learned to copy at L (else: did not learn)
    copy/longer             at 2L (beyond training), attention with a length-generalising
                            encoding (results["longer"]: NoPE or Hard-ALiBi heads, Jelassi et
                            al.'s) copies more often than the best fixed state; only once that
                            attention has learned to copy at L (else: did not learn)
    copy/bound              reported, not judged: each fixed state's longest copied length
                            beside its state's bound l* = b / log2 A (Jelassi et al., Theorem
                            2.7). A theorem, and the smallest l* here (thousands of symbols) is
                            far past the longest tested string: no run here could reach it
chapter(results):
    copy/fixed_state_copy   a fixed state copies worse than attention: needs_copying,
                            attention_within and every gap hold (weakest)

A model "copies" a length when its exact-match rate there is at least COPIED. Exact-match
rates are judged by t intervals over per-seed values clipped at [0, 1] (gaps at [-1, 1]).
Every judged claim carries its Power: the design-seed pilot's effect and spread
(results/copy/pilot.json, the 'pilot' preset) against the range's edge, and the seeds used.
"""

from __future__ import annotations

import numpy as np

from anatomy.probes.claims import (
    HOLDS,
    MISSING,
    REPORTED,
    UNDECIDED,
    Claim,
    Range,
    judged,
    power_from,
    t_interval,
    weakest,
)
from experiments.lab import committed
from experiments.lab.twins import needs_ability

# The ranges, stated before any run:
COPIED = 0.9  # "copies strings of length l": exact match >= this at l (one-sided)
MARGIN = 0.2  # "copies more often": attention − the other >= this exact-match rate
ATTENTION = "attention"
PILOT = "results/copy/pilot.json"
# where each range comes from (printed with each claim's power)
COPIED_SOURCE = (
    f"'copies' = exact match ≥ {COPIED:g}, stated before the run: Jelassi et al. 2024 "
    "(Figure 2) read a string as copied when every symbol is right, and their transformers "
    "reach near-perfect string accuracy within the training lengths"
)
MARGIN_SOURCE = (
    f"'copies more often' = a gap of ≥ {MARGIN:g} in exact match, stated before the run: a "
    "fifth of all strings, far beyond the test set's sampling error (128 strings a length: "
    "a standard error ≤ 0.045)"
)


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


def _pilot(pilot):
    """The pilot result to size claims from: the one given, else the committed one."""
    return committed.pilot("copy") if pilot is None else pilot


def _gap(results, a, other, length):
    return [x - y for x, y in zip(_at(results, a, length), _at(results, other, length))]


def _best_fixed(results, length):
    """The fixed-state contender with the highest mean exact match at `length`."""
    return max(_fixed(results), key=lambda m: np.mean(_at(results, m, length)))


def quantities(results) -> dict:
    """{claim id: (values_of, Range, source)} of every judged claim sized from the pilot:
    values_of(r) gives the claim's per-seed values in a results dict r (the run's or the
    pilot's), the Range they are judged against, and where the range comes from."""
    n, a = results["train_max"], _attention(results)
    out = {}
    if a is None or n not in results["lengths"]:
        return out
    out["copy/attention_within"] = (
        lambda r: _at(r, a, n),
        Range.at_least(COPIED, f"exact match ≥ {COPIED:g} at l = L = {n}"),
        COPIED_SOURCE,
    )
    for m in _fixed(results):
        out[f"copy/gap/{m}"] = (
            lambda r, m=m: _gap(r, a, m, n),
            Range.at_least(MARGIN, f"attention − {m} ≥ {MARGIN:g} at l = {n}"),
            MARGIN_SOURCE,
        )
    n2, b = 2 * n, results.get("longer")
    if b in results["contenders"] and _fixed(results) and n2 in results["lengths"]:
        out["copy/longer"] = (
            lambda r: _gap(r, b, _best_fixed(r, n2), n2),
            Range.at_least(MARGIN, f"attention − the best fixed state ≥ {MARGIN:g} at l = {n2}"),
            MARGIN_SOURCE,
        )
    return out


def sizing(pilot, seeds) -> dict:
    """{claim id: Power} of every judged claim at `seeds` judged seeds, from the pilot's
    per-seed values (how the default's seeds were chosen; each claim prints its own)."""
    return {
        cid: power_from(f(pilot), rng, seeds=seeds, source=source, pilot=PILOT)
        for cid, (f, rng, source) in quantities(pilot).items()
    }


def _judge(results, cid, claim, pilot, bounds, detail="", precondition=None) -> Claim:
    """The claim `cid` of quantities(results) by the one rule, its power from the pilot."""
    spec = quantities(results).get(cid)
    if spec is None:
        rng = "—"
        return Claim(claim, rng, "—", MISSING, id=cid)
    values_of, rng, source = spec
    values = values_of(results)
    power = None
    if pilot:
        try:
            power = power_from(values_of(pilot), rng, seeds=len(values), source=source,
                               pilot=PILOT)  # fmt: skip
        except (KeyError, ValueError, TypeError):  # the pilot lacks what the claim reads
            power = None
    return judged(cid, claim, t_interval(values, bounds=bounds), rng, detail,
                  precondition=precondition, power=power)  # fmt: skip


def _learned(results, name):
    """(ok, why): contender `name` copies at L (mean exact match ≥ COPIED): the precondition of
    every claim that compares it."""
    n = results["train_max"]
    x = float(np.mean(_at(results, name, n)))
    return x >= COPIED, (
        f"{name} did not learn to copy within the training lengths: exact match {x:.3f} at "
        f"l = L = {n}, below {COPIED:g}"
    )


def needs_copying(results) -> Claim:
    cid, claim = "copy/needs_copying", "copying needs copying: no reader without it gets there"
    r, n = results["readers"], results["train_max"]
    if n not in results["lengths"]:
        return Claim(claim, "—", "—", MISSING, f"L = {n} is not a tested length", id=cid)
    i = results["lengths"].index(n)
    expected = (
        f"at l = L = {n}: position-only and bag readers ≤ {COPIED:g}; the copier ≥ {COPIED:g}"
    )
    without = max(r["position"][i], r["bag"][i])
    return needs_ability(cid, claim, expected, without, r["copy"][i], COPIED,
                         ("without copying", "copier"))  # fmt: skip


def attention_within(results, pilot=None) -> Claim:
    claim = "attention copies strings as long as it was trained on"
    a = _attention(results)
    return _judge(results, "copy/attention_within", claim, _pilot(pilot), (0, 1), a or "")


def gap(results, name, pilot=None) -> Claim:
    claim = f"at l = L, attention copies more often than {name} (matched parameters)"
    cid, a = f"copy/gap/{name}", _attention(results)
    if a is None:
        return _judge(results, cid, claim, None, (-1, 1))
    shortest = results["lengths"][0]
    short = float(np.mean(_at(results, name, shortest)))
    detail = f"{name} at the shortest length l = {shortest}: {short:.3f}"
    return _judge(results, cid, claim, _pilot(pilot), (-1, 1), detail, _learned(results, a))


def longer(results, pilot=None) -> Claim:
    cid = "copy/longer"
    claim = (
        "beyond the training lengths, attention with a length-generalising encoding (NoPE or "
        "Hard-ALiBi heads) copies more often than any fixed state"
    )
    if cid not in quantities(results):
        return _judge(results, cid, claim, None, (-1, 1))
    a, n2 = results["longer"], 2 * results["train_max"]
    detail = f"{a} against the best fixed state at l = {n2}, {_best_fixed(results, n2)}"
    return _judge(results, cid, claim, _pilot(pilot), (-1, 1), detail, _learned(results, a))


def bound(results) -> Claim:
    cid = "copy/bound"
    claim = "no fixed-state model copies past its state's bound l* = b / log2 A"
    fixed = _fixed(results)
    if not fixed:
        return Claim(claim, "—", "—", MISSING, id=cid)
    c, lengths = results["contenders"], results["lengths"]
    measured = "; ".join(
        f"{m}: {longest_copied(c[m], lengths)} of l* = {c[m]['bound']:,.0f}" for m in fixed
    )
    low = min(c[m]["bound"] for m in fixed)
    why = (
        f"a theorem (Jelassi et al. 2024, Theorem 2.7), shown beside the table, not judged: "
        f"the smallest bound here, l* = {low:,.0f}, lies "
        + (f"past the longest tested length {max(lengths)}, so no run here could reach it"
           if low > max(lengths) else f"within the tested lengths (up to {max(lengths)})")
    )  # fmt: skip
    return Claim(claim, "longest copied ≤ l* (a theorem)", measured, REPORTED, why, id=cid)


def table(results, pilot=None) -> list[Claim]:
    pilot = _pilot(pilot)
    return [
        needs_copying(results),
        attention_within(results, pilot),
        *[gap(results, m, pilot) for m in _fixed(results)],
        longer(results, pilot),
        bound(results),
    ]


def chapter(results, pilot=None) -> list[Claim]:
    by = {c.id: c for c in table(results, pilot)}
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
            "; ".join(f"{p.id}: {p.verdict}" + (f" ({p.detail})" if p.verdict != HOLDS
                                                and p.detail else "") for p in parts),
            id="copy/fixed_state_copy",
        )
    ]  # fmt: skip


def rules() -> list[str]:
    """How these verdicts are decided, for the report's "How verdicts are decided"."""
    return [
        f"* copy: a model copies strings of length l when its exact-match rate there is ≥ "
        f"{COPIED:g} (a t interval over seeds, clipped at [0, 1]); 'copies more often' is "
        f"attention − the other ≥ {MARGIN:g} per seed (clipped at [-1, 1]), judged only once "
        "that attention copies at L (else: did not learn); the readers without copying must "
        "stay below the bar at L (exact); the state bound l* is reported, not judged.",
    ]
