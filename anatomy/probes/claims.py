"""Claims are data: one row type, one verdict vocabulary, one verdict rule, one writer.

Every experiment that tests the chapter ends with rows of the same shape,

    Claim(claim, expected, measured, verdict, detail="", id="", caveat="")

    claim     what the chapter (or the experiment) says, in words: "self-attention: no decay"
    expected  the range the claim gives its quantity, stated before the run: "[5, 10]"
    measured  what this run measured, with its interval: "7.1 [6.2, 8.0] (95% t, 3 seeds)"
    verdict   one of VERDICTS below (never free text), given by the one rule
    detail    optional: why this verdict, where the number comes from
    id        a stable name others cite the claim by, "<experiment>/<name>" (the chapter's
              report and the published docs read a verdict by its id, never by its wording)
    caveat    the named reason a claim that holds carries a caveat (CAVEAT needs one)

and writes them once, through `claims_json` (the "table" list of results.json) and
`claims_markdown` (the "Claims" table of report.md). `from_json` reads them back.

**The one verdict rule** (`judge`). A claim states its quantity and the `Range` the chapter
or the paper gives it (two-sided, `Range.between(5, 10)`; a point with a tolerance stated
before the run, `Range.around(0, 0.15)`; or one-sided, `Range.at_least` / `at_most`, said so).
The measurement is an `Interval`: over seeds (`t_interval`, a two-sided LEVEL t interval of
the mean; `bootstrap_interval` for a statistic of several seeds, such as a fitted slope),
`exact` for a deterministic measurement with no spread (a FLOP count, a serial-step count, a
collective's bytes), `estimate` for a prediction. Then

    the interval lies inside the range         HOLDS
    the interval lies outside the range        FAILS ("does not hold here")
    the interval straddles an edge             NOT_SHOWN (the reason names the edge)
    fewer than MIN_SEEDS values, a non-finite  NOT_SHOWN (the reason says which)
    value, or an estimate

`judged(cid, claim, interval, range)` makes the Claim. "Holds with a caveat" is never what the
rule gives: a claim carries CAVEAT only with a named reason (`caveat=`), and a claim made of
parts is the weakest of its parts (`weakest`), never a caveat by combination.

A yes/no check of a deterministic measurement (a program has no loop; a count equals L·N) is
`holds(condition)`. NOT_SHOWN is for a run that cannot test the claim (a baseline that never
learned cannot show a collapse); REPORTED for a number shown beside the claims but not judged;
MISSING for a claim without a measurement.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

import numpy as np
from scipy import stats as scipy_stats

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
    caveat: str = ""  # the named reason a claim that holds carries a caveat (CAVEAT only)

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(
                f"claim {self.claim!r}: verdict {self.verdict!r} is not one of {VERDICTS}"
            )
        if self.caveat and self.verdict != CAVEAT:
            raise ValueError(f"claim {self.claim!r}: verdict {self.verdict!r} is not a caveat")

    def as_dict(self) -> dict:
        """{id (when it has one), claim, expected, measured, verdict, detail, caveat (when
        it has one)}."""
        fields = dataclasses.asdict(self)
        cid = fields.pop("id")
        if not fields["caveat"]:
            del fields["caveat"]
        return {"id": cid, **fields} if cid else fields


def finite(*xs) -> bool:
    """Every x a finite number (None, a string, NaN or inf is not)."""
    try:
        return all(x is not None and math.isfinite(float(x)) for x in xs)
    except (TypeError, ValueError):
        return False


def holds(condition) -> str:
    """HOLDS if the yes/no check `condition` of a deterministic measurement is true, else
    FAILS (a check of a quantity that varies over seeds goes through `judge`)."""
    return HOLDS if bool(condition) else FAILS


# ------------------------------------------------------------------ the one verdict rule

LEVEL = 0.95  # every interval in the project: two-sided, at this level
MIN_SEEDS = 3  # an interval over fewer values than this judges nothing


def _count(n: int, over: str) -> str:
    """'1 seed', '3 seeds'."""
    return f"{n} {over[:-1] if n == 1 and over.endswith('s') else over}"


def _num(x: float) -> str:
    return "-inf" if x == -math.inf else "inf" if x == math.inf else f"{x:.4g}"


@dataclasses.dataclass(frozen=True)
class Range:
    """The range a claim gives its quantity, stated before the run: [lo, hi], inclusive;
    lo = -inf or hi = inf for a one-sided claim. text: how the claim says it ('5-10x')."""

    lo: float = -math.inf
    hi: float = math.inf
    text: str = ""

    def __post_init__(self):
        lo, hi = float(self.lo), float(self.hi)
        if math.isnan(lo) or math.isnan(hi) or lo > hi or (lo == -math.inf and hi == math.inf):
            raise ValueError(f"Range: [{self.lo}, {self.hi}] bounds nothing")

    @classmethod
    def between(cls, lo, hi, text=""):
        """Two-sided: lo <= quantity <= hi."""
        return cls(float(lo), float(hi), text or f"[{_num(lo)}, {_num(hi)}]")

    @classmethod
    def around(cls, center, tol, text=""):
        """A point with a tolerance stated before the run: |quantity − center| <= tol."""
        return cls(center - tol, center + tol, text or f"{_num(center)} ± {_num(tol)}")

    @classmethod
    def at_least(cls, lo, text=""):
        """One-sided: quantity >= lo."""
        return cls(float(lo), math.inf, text or f"≥ {_num(lo)} (one-sided)")

    @classmethod
    def at_most(cls, hi, text=""):
        """One-sided: quantity <= hi."""
        return cls(-math.inf, float(hi), text or f"≤ {_num(hi)} (one-sided)")

    def __str__(self) -> str:
        return self.text or f"[{_num(self.lo)}, {_num(self.hi)}]"


@dataclasses.dataclass(frozen=True)
class Interval:
    """What a run measured: a point and its interval [lo, hi] over n values (`over`: 'seeds',
    'timing rounds'), by `method`: 't' or 'bootstrap' (a LEVEL interval), 'exact' (a
    deterministic measurement: lo = hi = point), 'estimate' (a prediction, never judged)."""

    point: float
    lo: float
    hi: float
    n: int = 1
    over: str = "seeds"
    method: str = "t"
    why: str = ""  # for 'exact' and 'estimate': what makes it so

    def __str__(self) -> str:
        p = _num(self.point)
        if self.method == "exact":
            return p
        if self.method == "estimate":
            return f"{p} (an estimate)"
        if self.n < 2 or not finite(self.lo, self.hi):
            return f"{p} ({_count(self.n, self.over)})"
        return (
            f"{p} [{_num(self.lo)}, {_num(self.hi)}] "
            f"({LEVEL:.0%} {self.method}, {_count(self.n, self.over)})"
        )

    def as_dict(self) -> dict:
        """The interval as results.json holds it (non-finite bounds as None)."""
        d = dataclasses.asdict(self)
        return {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()
        }


def _floats(values) -> np.ndarray:
    arr = np.array([np.nan if v is None else float(v) for v in values], np.float64)
    return arr


def t_interval(values, over: str = "seeds") -> Interval:
    """The mean of `values` and its two-sided LEVEL t interval, mean ± t·s/√n (n − 1 degrees
    of freedom). A non-finite value (a diverged seed) makes the interval non-finite: the rule
    then says the quantity was not measurable. One value: lo = hi = nan."""
    arr = _floats(values)
    n = int(arr.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, over)
    mean = float(arr.mean())
    if n < 2 or not np.all(np.isfinite(arr)):
        return Interval(mean, math.nan, math.nan, n, over)
    half = float(scipy_stats.t.ppf(0.5 + LEVEL / 2, n - 1) * arr.std(ddof=1) / math.sqrt(n))
    return Interval(mean, mean - half, mean + half, n, over)


def bootstrap_interval(
    samples, statistic, *, over: str = "seeds", n_boot: int = 2000, seed: int = 0
) -> Interval:
    """statistic(samples) and its percentile bootstrap interval at LEVEL: `samples` resampled
    with replacement along its first axis (one row per seed), `n_boot` times, from a fixed
    `seed` (the same digits every run). For a statistic of several seeds at once, such as a
    slope fitted to per-seed measurements."""
    arr = np.asarray(samples, np.float64)
    n = int(arr.shape[0])
    point = float(statistic(arr))
    if n < 2 or not np.all(np.isfinite(arr)):
        return Interval(point, math.nan, math.nan, n, over, "bootstrap")
    rng = np.random.default_rng(seed)
    draws = np.array([statistic(arr[rng.integers(0, n, n)]) for _ in range(n_boot)])
    lo, hi = np.quantile(draws, [0.5 - LEVEL / 2, 0.5 + LEVEL / 2])
    return Interval(point, float(lo), float(hi), n, over, "bootstrap")


def exact(value, why: str = "deterministic") -> Interval:
    """A measurement with no spread (a count read from a compiled program, a FLOP count):
    judged as it is, whatever the number of seeds."""
    v = math.nan if value is None else float(value)
    return Interval(v, v, v, 1, "", "exact", why)


def estimate(value, why: str) -> Interval:
    """A prediction (a cost model applied to hardware not measured here): printed with its
    assumptions, never judged (the rule says NOT_SHOWN)."""
    v = math.nan if value is None else float(value)
    return Interval(v, math.nan, math.nan, 0, "", "estimate", why)


def judge(interval: Interval, rng: Range, *, min_n: int = MIN_SEEDS) -> tuple[str, str]:
    """The one rule: (verdict, reason) of `interval` against `rng` (module docstring)."""
    if interval.method == "estimate":
        return NOT_SHOWN, f"an estimate, not a measurement: {interval.why}"
    if interval.method != "exact" and interval.n < min_n:
        return NOT_SHOWN, f"{_count(interval.n, interval.over)}: fewer than {min_n}"
    if not finite(interval.point, interval.lo, interval.hi):
        return NOT_SHOWN, "not measurable here (a non-finite value)"
    lo, hi = interval.lo, interval.hi
    if rng.lo <= lo and hi <= rng.hi:
        return HOLDS, ""
    if hi < rng.lo:
        return FAILS, f"below the range's lower edge {_num(rng.lo)}"
    if lo > rng.hi:
        return FAILS, f"above the range's upper edge {_num(rng.hi)}"
    edge = rng.lo if lo < rng.lo else rng.hi
    return NOT_SHOWN, f"the interval straddles the edge {_num(edge)}"


def judged(cid: str, claim: str, interval: Interval, rng: Range, detail: str = "") -> Claim:
    """The Claim `cid` of `interval` against `rng` by the one rule: expected is the range,
    measured the interval, detail the rule's reason then `detail`."""
    verdict, reason = judge(interval, rng)
    return Claim(
        claim,
        str(rng),
        str(interval),
        verdict,
        "; ".join(x for x in (reason, detail) if x),
        id=cid,
    )


def rule_text() -> str:
    """The rule in words, once, for every report's "How verdicts are decided"."""
    return (
        f"Every judged claim states its range before the run; the measurement carries a "
        f"two-sided {LEVEL:.0%} interval over seeds (a t interval of the mean, or a bootstrap "
        f"interval for a statistic of the seeds) or is exact (a deterministic count). Inside "
        f"the range: holds; outside: does not hold here; straddling an edge, fewer than "
        f"{MIN_SEEDS} seeds, not measurable, or a prediction: not shown by this run. A claim "
        f"made of parts is its weakest part; a caveat is only ever a named reason."
    )


def claims_json(claims: Iterable[Claim]) -> list[dict]:
    """The rows of results.json's "table": one dict per claim (id, claim, expected, measured,
    verdict, detail)."""
    return [c.as_dict() for c in claims]


def from_json(rows: Sequence[dict]) -> list[Claim]:
    """claims_json's rows read back as Claims (a row without detail, id or caveat gets '')."""
    return [
        Claim(
            **{k: r[k] for k in COLUMNS},
            detail=r.get("detail", ""),
            id=r.get("id", ""),
            caveat=r.get("caveat", ""),
        )
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
