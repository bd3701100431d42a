"""Claims are data: one row type, one verdict vocabulary, one writer.

Every experiment that tests the chapter ends with rows of the same shape,

    Claim(claim, expected, measured, verdict, detail="", id="")

    claim     what the chapter (or the experiment) says, in words: "self-attention: no decay"
    expected  what a measurement should show if it holds: "rate ≈ 1", "N^2"
    measured  what this run measured, formatted: "0.99998/step"
    verdict   one of VERDICTS below (never free text)
    detail    optional: why this verdict, caveats, where the number comes from
    id        a stable name others cite the claim by, "<experiment>/<name>" (the chapter's
              report and the published docs read a verdict by its id, never by its wording)

and writes them once, through `claims_json` (the "table" list of results.json) and
`claims_markdown` (the "Claims" table of report.md). `from_json` reads them back.

Adding a claim to an experiment is one line in its list of claims:

    claims.append(Claim("windowed attention: per-layer FLOPs O(r·N·d)", "r^1",
                        f"r^{got:.3f}", verdict(got, 1.0, tol), id="complexity/windowed_r"))

with `verdict(measured, expected, tol)` for a number within a tolerance, or
`holds(condition)` for a yes/no check. NOT_SHOWN is for a run that cannot test the claim
(a baseline that never learned cannot show a collapse); REPORTED for a number shown beside
the claims but not judged; MISSING for a claim without a measurement.

A claim made of other claims takes their verdicts, never their numbers: `weakest` (every
part must hold) or `held_in_part` (all hold: holds; some: a caveat; none: does not hold).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

HOLDS = "holds"
CAVEAT = "holds with a caveat"
FAILS = "does not hold here"
NOT_SHOWN = "not shown by this run"  # measured, but the run cannot test the claim
REPORTED = "reported, not judged"  # a number shown for reference, no claim judged on it
MISSING = "not measured"
VERDICTS = (HOLDS, CAVEAT, FAILS, NOT_SHOWN, REPORTED, MISSING)

COLUMNS = ("claim", "expected", "measured", "verdict")


@dataclasses.dataclass(frozen=True)
class Claim:
    """One judged claim: claim, expected, measured, verdict (one of VERDICTS), detail.

    Build one per claim, collect them in a list, and hand the list to `claims_json` (for
    results.json) and `claims_markdown` (for report.md); nothing else formats claims.
    A verdict outside VERDICTS raises ValueError naming the claim.
    """

    claim: str
    expected: str
    measured: str
    verdict: str
    detail: str = ""
    id: str = ""  # "<experiment>/<name>": what a report row or a published block cites

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(
                f"claim {self.claim!r}: verdict {self.verdict!r} is not one of {VERDICTS}"
            )

    def as_dict(self) -> dict:
        """{id (when it has one), claim, expected, measured, verdict, detail}."""
        fields = dataclasses.asdict(self)
        cid = fields.pop("id")
        return {"id": cid, **fields} if cid else fields


def finite(*xs) -> bool:
    """Every x a finite number (None, a string, NaN or inf is not)."""
    try:
        return all(x is not None and math.isfinite(float(x)) for x in xs)
    except (TypeError, ValueError):
        return False


def verdict(measured, expected, tol) -> str:
    """HOLDS if |measured − expected| <= tol, else FAILS (FAILS too for a non-finite value)."""
    if not finite(measured):
        return FAILS
    return HOLDS if abs(float(measured) - expected) <= tol else FAILS


def holds(condition) -> str:
    """HOLDS if the yes/no check `condition` is true, else FAILS."""
    return HOLDS if bool(condition) else FAILS


def claims_json(claims: Iterable[Claim]) -> list[dict]:
    """The rows of results.json's "table": one dict per claim (id, claim, expected, measured,
    verdict, detail)."""
    return [c.as_dict() for c in claims]


def from_json(rows: Sequence[dict]) -> list[Claim]:
    """claims_json's rows read back as Claims (a row without detail or id gets '')."""
    return [
        Claim(**{k: r[k] for k in COLUMNS}, detail=r.get("detail", ""), id=r.get("id", ""))
        for r in rows
    ]


def by_id(claims: Iterable[Claim]) -> dict[str, Claim]:
    """{id: claim}; ValueError naming the claim when one has no id or two share one."""
    out = {}
    for c in claims:
        if not c.id or c.id in out:
            why = "has no id" if not c.id else f"shares id {c.id!r} with another claim"
            raise ValueError(f"claim {c.claim!r} {why}")
        out[c.id] = c
    return out


# how weak each verdict is when claims are combined: the first one present wins
_WEAKEST_FIRST = (FAILS, MISSING, NOT_SHOWN, CAVEAT, HOLDS, REPORTED)


def weakest(verdicts: Iterable[str]) -> str:
    """One verdict for claims that must all hold: the weakest of theirs (FAILS, then
    MISSING, NOT_SHOWN, CAVEAT, HOLDS); MISSING for none at all."""
    present = set(verdicts)
    return next((v for v in _WEAKEST_FIRST if v in present), MISSING)


def held_in_part(verdicts: Iterable[str]) -> str:
    """One verdict for a claim made of parts that each say something: HOLDS when every part
    holds, CAVEAT when some do, FAILS when none does (or there are none)."""
    held = [v == HOLDS for v in verdicts]
    return HOLDS if held and all(held) else CAVEAT if any(held) else FAILS


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def claims_markdown(
    claims: Sequence[Claim],
    *,
    header: Sequence[str] = COLUMNS,
    extra: dict[str, Sequence[str]] | None = None,
    details: bool = True,
) -> str:
    """The claims as a GitHub-markdown table: claim | expected | measured | **verdict**.

    header: the four column titles (e.g. the report's own wording); extra: more columns,
    {title: one cell per claim}; details: a last 'detail' column when any claim has one.
    """
    claims = list(claims)
    extra = dict(extra or {})
    for title, cells in extra.items():
        if len(cells) != len(claims):
            raise ValueError(
                f"claims_markdown: column {title!r} has {len(cells)} cells for {len(claims)} claims"
            )
    if len(header) != len(COLUMNS):
        raise ValueError(f"claims_markdown: header needs {len(COLUMNS)} titles, got {header!r}")
    details = details and any(c.detail for c in claims)
    titles = list(header) + list(extra) + (["detail"] if details else [])
    lines = ["| " + " | ".join(titles) + " |", "|" + "---|" * len(titles)]
    for i, c in enumerate(claims):
        cells = [c.claim, c.expected, c.measured, f"**{c.verdict}**"]
        cells += [extra[t][i] for t in extra] + ([c.detail or "—"] if details else [])
        lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    return "\n".join(lines)


def count(claims: Iterable[Claim]) -> dict[str, int]:
    """{verdict: how many claims have it}, in VERDICTS order, verdicts with none left out."""
    claims = list(claims)
    tally = {v: sum(c.verdict == v for c in claims) for v in VERDICTS}
    return {v: n for v, n in tally.items() if n}


def summary(claims: Iterable[Claim]) -> str:
    """'3 holds, 1 does not hold here': the tally in words."""
    return ", ".join(f"{n} {v}" for v, n in count(claims).items()) or "no claims"
