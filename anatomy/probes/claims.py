"""Claims are data: one row type, one verdict vocabulary, one verdict rule, one writer.

Every experiment that tests the chapter ends with rows of the same shape,

    Claim(claim, expected, measured, verdict, detail="", id="", power="")

    claim     what the chapter (or the experiment) says, in words: "self-attention: no decay"
    expected  the range the claim gives its quantity, stated before the run: "[5, 10]"
    measured  what this run measured, with its interval: "7.1 [6.2, 8.0] (95% t, 3 seeds)"
    verdict   one of VERDICTS below (never free text), given by the one rule
    detail    optional: why this verdict (for a verdict other than holds / does not hold here,
              what would decide it), where the number comes from
    id        a stable name others cite the claim by, "<experiment>/<name>" (the chapter's
              report and the published docs read a verdict by its id, never by its wording)
    power     optional: what sized the run (`Power.text`): the range's source, the design-seed
              pilot's effect and spread, the seeds the verdict used

and writes them once, through `claims_json` (the "table" list of results.json) and
`claims_markdown` (the "Claims" table of report.md). `from_json` reads them back.

**The one verdict rule** (`judge`). A claim states its quantity and the `Range` the chapter
or the paper gives it (two-sided, `Range.between(5, 10)`; a point with a tolerance stated
before the run, `Range.around(0, 0.15)`; or one-sided, `Range.at_least` / `at_most`, said so).
The measurement is an `Interval`: over seeds (`t_interval`, a two-sided LEVEL t interval of
the mean over per-seed values, on a log scale for a ratio and clipped at the bound for a
bounded quantity; `bootstrap_interval` only over BOOTSTRAP_MIN or more values: over 3 a
percentile bootstrap is [lowest, highest], about 75% coverage), `exact` for a deterministic
measurement with no spread (a FLOP count, a serial-step count, a collective's bytes),
`estimate` for a prediction of hardware not here. Then

    the interval lies inside the range           HOLDS
    the interval lies outside the range          FAILS ("does not hold here")
    the interval straddles an edge, fewer than   UNDECIDED (the reason names the edge and what
    MIN_SEEDS values, or a non-finite value      would decide it: the seeds at this spread)
    a precondition failed ("it must learn        DID_NOT_LEARN (the reason, in words, with the
    first")                                      number that failed it)
    an estimate (a GPU or many-machine figure)   NEEDS_ACCELERATOR (the CPU measurement and the
                                                 labelled estimate side by side, never a verdict)

`judged(cid, claim, interval, range, precondition=...)` makes the Claim. A claim made of
parts is the weakest of its evidence (`weakest`: FAILS, MISSING, DID_NOT_LEARN, UNDECIDED,
HOLDS, in that order); a part that needs an accelerator, a check of the code and a reported
number are shown beside it and never cap it.

A yes/no check of a deterministic measurement (a program has no loop; a count equals L·N) is
`holds(condition)`. CODE_CHECK is for what holds by construction (an orthogonal matrix's
singular values are 1): it checks the code, it is not evidence for the chapter. REPORTED for a
number shown beside the claims but not judged; MISSING for a claim without a measurement.

**Power** (`Power`, `seeds_needed`): before a judged run, a design-seed pilot (other seeds than
the judged ones) gives the quantity's effect and spread; the run's seeds are chosen so that the
t half-width is below the distance from the effect to the range's nearest edge.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

import numpy as np
from scipy import stats as scipy_stats

HOLDS = "holds"
FAILS = "does not hold here"
UNDECIDED = "undecided"  # the interval straddles an edge (or too few seeds): say what decides it
DID_NOT_LEARN = "did not learn"  # a precondition failed: the model never learned what is tested
NEEDS_ACCELERATOR = "needs an accelerator"  # a GPU or many-machine figure: estimated, not judged
CODE_CHECK = "a check of the code"  # true by construction: tests the code, not the chapter
REPORTED = "reported, not judged"  # a number shown for reference, no claim judged on it
MISSING = "not measured"
VERDICTS = (
    HOLDS,
    FAILS,
    UNDECIDED,
    DID_NOT_LEARN,
    NEEDS_ACCELERATOR,
    CODE_CHECK,
    REPORTED,
    MISSING,
)
# verdicts that are evidence for or against a claim, weakest first (`weakest`)
_EVIDENCE = (FAILS, MISSING, DID_NOT_LEARN, UNDECIDED, HOLDS)
# shown beside the evidence, never capping it; the first present speaks when there is no evidence
_BESIDE = (NEEDS_ACCELERATOR, CODE_CHECK, REPORTED)

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
    power: str = ""  # what sized the run (Power.text): source, pilot, seeds

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(
                f"claim {self.claim!r}: verdict {self.verdict!r} is not one of {VERDICTS}"
            )

    def as_dict(self) -> dict:
        """{id (when it has one), claim, expected, measured, verdict, detail, power (when it
        has one)}."""
        fields = dataclasses.asdict(self)
        cid = fields.pop("id")
        if not fields["power"]:
            del fields["power"]
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
MAX_TIMING_LOAD = 2.0  # no timing verdict from a run whose 1-minute load exceeded this
MIN_SEEDS = 3  # an interval over fewer values than this judges nothing
BOOTSTRAP_MIN = 8  # a percentile bootstrap over fewer values is about [min, max]


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

    def edges(self) -> tuple[float, ...]:
        """The finite edges."""
        return tuple(e for e in (self.lo, self.hi) if math.isfinite(e))

    def __str__(self) -> str:
        return self.text or f"[{_num(self.lo)}, {_num(self.hi)}]"


@dataclasses.dataclass(frozen=True)
class Interval:
    """What a run measured: a point and its interval [lo, hi] over n values (`over`: 'seeds',
    'timing rounds'), by `method`: 't' or 'bootstrap' (a LEVEL interval), 'exact' (a
    deterministic measurement: lo = hi = point), 'estimate' (a prediction, never judged).

    scale: 'log' when the t interval was taken over log values (a ratio: the point is then the
    geometric mean); clipped: 'lo', 'hi' or 'both' when an end was clipped at the bound of a
    bounded quantity (an accuracy at 1, a BLEU at 100); spread: the standard deviation the t
    interval was made from (on its scale), for what would decide a straddling interval."""

    point: float
    lo: float
    hi: float
    n: int = 1
    over: str = "seeds"
    method: str = "t"
    why: str = ""  # for 'exact' and 'estimate': what makes it so
    scale: str = "linear"
    clipped: str = ""
    spread: float = math.nan

    def __str__(self) -> str:
        p = _num(self.point)
        if self.method == "exact":
            return p
        if self.method == "estimate":
            return f"{p} (an estimate)"
        if self.n < 2 or not finite(self.lo, self.hi):
            if self.n >= 2 and finite(self.lo) and self.hi == math.inf:
                return f"{p} [{_num(self.lo)}, beyond the range measured] ({self._how()})"
            return f"{p} ({_count(self.n, self.over)})"
        lo = _num(self.lo) + (" (the bound)" if self.clipped in ("lo", "both") else "")
        hi = _num(self.hi) + (" (the bound)" if self.clipped in ("hi", "both") else "")
        return f"{p} [{lo}, {hi}] ({self._how()})"

    def _how(self) -> str:
        how = f"{LEVEL:.0%} {self.method}"
        if self.scale == "log":
            how += " on a log scale, geometric mean"
        return f"{how}, {_count(self.n, self.over)}"

    def as_dict(self) -> dict:
        """The interval as results.json holds it (non-finite bounds as None)."""
        d = dataclasses.asdict(self)
        return {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()
        }


def _floats(values) -> np.ndarray:
    arr = np.array([np.nan if v is None else float(v) for v in values], np.float64)
    return arr


def paired(a: Sequence, b: Sequence, op) -> list:
    """op(a_s, b_s) per seed s, over the seeds both lists give, in order (None where either
    is missing: an interval over them is then not finite)."""
    return [None if x is None or y is None else op(x, y) for x, y in zip(a, b)]


def _t(n: int) -> float:
    """The two-sided LEVEL quantile of Student's t with n − 1 degrees of freedom."""
    return float(scipy_stats.t.ppf(0.5 + LEVEL / 2, n - 1))


def t_interval(
    values, over: str = "seeds", *, bounds: tuple[float, float] | None = None, scale: str = "linear"
) -> Interval:
    """The mean of `values` and its two-sided LEVEL t interval, mean ± t·s/√n (n − 1 degrees
    of freedom), over per-seed (or per-round) values.

    bounds: (lo, hi) of a bounded quantity (an accuracy (0, 1), a BLEU (0, 100)): an end of the
    interval past a bound is clipped to it and marked (`Interval.clipped`), never printed as
    'accuracy 1.079'. scale='log' for a ratio (every value > 0): the interval of the mean log,
    exponentiated (the point is the geometric mean; the interval is never below 0).

    A non-finite value (a diverged seed) makes the interval non-finite: the rule then says the
    quantity was not measurable. One value: lo = hi = nan."""
    if scale not in ("linear", "log"):
        raise ValueError(f"t_interval: scale {scale!r} is not 'linear' or 'log'")
    arr = _floats(values)
    n = int(arr.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, over, scale=scale)
    if scale == "log":
        if np.any(arr[np.isfinite(arr)] <= 0):
            raise ValueError(f"t_interval: a log-scale interval needs values > 0, got {arr}")
        arr = np.log(arr)
    back = np.exp if scale == "log" else (lambda x: x)
    mean = float(arr.mean())
    if n < 2 or not np.all(np.isfinite(arr)):
        return Interval(float(back(mean)), math.nan, math.nan, n, over, scale=scale)
    sd = float(arr.std(ddof=1))
    half = _t(n) * sd / math.sqrt(n)
    lo, hi = float(back(mean - half)), float(back(mean + half))
    clipped = ""
    if bounds is not None:
        b_lo, b_hi = bounds
        if lo < b_lo:
            lo, clipped = float(b_lo), "lo"
        if hi > b_hi:
            hi, clipped = float(b_hi), "both" if clipped else "hi"
    return Interval(float(back(mean)), lo, hi, n, over, scale=scale, clipped=clipped, spread=sd)


def bootstrap_interval(
    samples,
    statistic,
    *,
    over: str = "seeds",
    n_boot: int = 2000,
    seed: int = 0,
    censor: float = math.inf,
) -> Interval:
    """statistic(samples) and its percentile bootstrap interval at LEVEL: `samples` resampled
    with replacement along its first axis (one row per seed or round), `n_boot` times, from a
    fixed `seed` (the same digits every run). Only over BOOTSTRAP_MIN or more rows: over fewer
    a percentile bootstrap is about [lowest, highest] (75% coverage at 3): reduce each seed to
    its own value and take `t_interval` instead (ValueError says so).

    censor: the value a draw whose statistic is NaN takes (a resample with no crossing inside
    the range measured is censored beyond it, +inf by default), so one such draw moves the
    interval's end instead of making it NaN; an interval with an infinite end is then judged
    as not measurable inside the range measured."""
    arr = np.asarray(samples, np.float64)
    n = int(arr.shape[0])
    if n < BOOTSTRAP_MIN:
        raise ValueError(
            f"bootstrap_interval: {n} rows; a percentile bootstrap needs {BOOTSTRAP_MIN} or more "
            f"(over fewer it is about [min, max]): take a t_interval of per-row values"
        )
    point = float(statistic(arr))
    if math.isnan(point):
        point = censor
    if not np.all(np.isfinite(arr)):
        return Interval(point, math.nan, math.nan, n, over, "bootstrap")
    rng = np.random.default_rng(seed)
    draws = np.array([statistic(arr[rng.integers(0, n, n)]) for _ in range(n_boot)], np.float64)
    draws[np.isnan(draws)] = censor
    lo, hi = np.quantile(draws, [0.5 - LEVEL / 2, 0.5 + LEVEL / 2], method="lower")
    return Interval(point, float(lo), float(hi), n, over, "bootstrap")


def exact(value, why: str = "deterministic") -> Interval:
    """A measurement with no spread (a count read from a compiled program, a FLOP count):
    judged as it is, whatever the number of seeds."""
    v = math.nan if value is None else float(value)
    return Interval(v, v, v, 1, "", "exact", why)


def estimate(value, why: str) -> Interval:
    """A prediction (a cost model applied to hardware not measured here): printed with its
    assumptions, never judged (the rule says NEEDS_ACCELERATOR)."""
    v = math.nan if value is None else float(value)
    return Interval(v, math.nan, math.nan, 0, "", "estimate", why)


def seeds_needed(spread: float, margin: float, *, most: int = 64) -> int | None:
    """The fewest values n (≥ 2) whose LEVEL t half-width t·spread/√n is below `margin`;
    None when even `most` values are not enough (or the margin is 0)."""
    if not finite(spread, margin) or margin <= 0:
        return None
    if spread == 0:
        return 2
    for n in range(2, most + 1):
        if _t(n) * spread / math.sqrt(n) < margin:
            return n
    return None


def _what_decides(interval: Interval, edge: float) -> str:
    """What would decide a straddling interval: its margin to the edge, and the values a t
    interval at this spread needs to clear it."""
    on = math.log if interval.scale == "log" else (lambda x: x)
    if not (finite(interval.point, edge) and (interval.scale != "log" or edge > 0)):
        return "more seeds or a larger effect would decide it"
    margin = abs(on(interval.point) - on(edge))
    need = seeds_needed(interval.spread, margin) if finite(interval.spread) else None
    if need is None:
        return (
            f"the mean lies {_num(margin)} from the edge{' (log scale)' if interval.scale == 'log' else ''}: "
            "more seeds at this spread cannot clear it; a larger effect (a longer run) would"
        )
    return (
        f"about {need} {interval.over} at this spread would clear it, if the mean stays where it is"
    )


def judge(interval: Interval, rng: Range, *, min_n: int = MIN_SEEDS) -> tuple[str, str]:
    """The one rule: (verdict, reason) of `interval` against `rng` (module docstring)."""
    if interval.method == "estimate":
        return NEEDS_ACCELERATOR, f"an estimate for hardware not here: {interval.why}"
    if interval.method != "exact" and interval.n < min_n:
        return UNDECIDED, (
            f"{_count(interval.n, interval.over)}: fewer than {min_n}; "
            f"{min_n} or more would decide it"
        )
    lo, hi = interval.lo, interval.hi
    if not finite(interval.point, lo) or math.isnan(hi):
        return UNDECIDED, "not measurable here (a non-finite value)"
    if hi == math.inf:  # censored draws: the interval runs past the range measured
        if lo > rng.hi:
            return FAILS, f"above the range's upper edge {_num(rng.hi)}"
        return UNDECIDED, (
            "the interval runs beyond the range measured (some resamples never cross); "
            "a wider range would decide it"
        )
    if rng.lo <= lo and hi <= rng.hi:
        return HOLDS, ""
    if hi < rng.lo:
        return FAILS, f"below the range's lower edge {_num(rng.lo)}"
    if lo > rng.hi:
        return FAILS, f"above the range's upper edge {_num(rng.hi)}"
    edge = rng.lo if lo < rng.lo else rng.hi
    return (
        UNDECIDED,
        f"the interval straddles the edge {_num(edge)}; {_what_decides(interval, edge)}",
    )


def under_load(loads, cores: int | None = None) -> str:
    """Why a timing cannot be judged ('' when it can): `loads` = (1-minute load average
    before the run, after it). Before the run it must be at most MAX_TIMING_LOAD (other work
    was running); after it, at most MAX_TIMING_LOAD + 1 (the run's own threads keep up to two
    cores busy, so its own load reads about 2; more means other work joined). A loaded run's
    wall time or busy-core count measures the contention, not the program."""
    vals = [float(x) if finite(x) else math.nan for x in list(loads or [])[:2]]
    before = vals[0] if vals else math.nan
    after = vals[1] if len(vals) > 1 else math.nan
    high = []
    if finite(before) and before > MAX_TIMING_LOAD:
        high.append(f"a 1-minute load of {before:.1f} before it")
    if finite(after) and after > MAX_TIMING_LOAD + 1:
        high.append(f"{after:.1f} after it")
    if not high:
        return ""
    on = f" on {cores} cores" if cores else ""
    return (
        f"timed at {' and '.join(high)}{on} (other work shared the cores): the time measures "
        "the contention, not the program; a run on an idle machine decides it"
    )


def judged(
    cid: str,
    claim: str,
    interval: Interval,
    rng: Range,
    detail: str = "",
    *,
    precondition: tuple[bool, str] | None = None,
    undecided: str = "",
    power: Power | None = None,
) -> Claim:
    """The Claim `cid` of `interval` against `rng` by the one rule: expected is the range,
    measured the interval, detail the rule's reason then `detail`.

    precondition: (ok, why): when not ok, the verdict is DID_NOT_LEARN and `why` (in words,
    with the number that failed it: "the Transformer did not learn the task: best BLEU 8.9 <
    10") is the reason; the measurement is still shown. undecided: a reason this run cannot
    judge the claim whatever its interval (`under_load`): UNDECIDED with that reason. power:
    what sized the run."""
    if precondition is not None and not precondition[0]:
        verdict, reason = DID_NOT_LEARN, precondition[1]
    elif undecided:
        verdict, reason = UNDECIDED, undecided
    else:
        verdict, reason = judge(interval, rng)
    return Claim(
        claim,
        str(rng),
        str(interval),
        verdict,
        "; ".join(x for x in (reason, detail) if x),
        id=cid,
        power=power.text() if power is not None else _unsized(interval),
    )


def _unsized(interval: Interval) -> str:
    """The power text of a claim without a pilot: what an exact count or an estimate is."""
    if interval.method == "exact":
        return "a deterministic count: no seeds, no spread to size"
    if interval.method == "estimate":
        return "an estimate for hardware not here: nothing to size"
    return ""


def judged_parts(
    cid: str, claim: str, expected: str, parts: dict, measured: str, detail: str = ""
) -> Claim:
    """The Claim `cid` made of parts, {name: (Interval, Range)}, each judged by the one rule:
    the weakest part's verdict (`weakest`); detail: 'name: reason' of each part that gave it,
    then `detail`. expected and measured say the whole claim in words."""
    verdicts = {name: judge(*part) for name, part in parts.items()}
    verdict = weakest(v for v, _ in verdicts.values())
    why = [f"{name}: {r}" for name, (v, r) in verdicts.items() if v == verdict and r]
    return Claim(
        claim, expected, measured, verdict, "; ".join([*why, detail] if detail else why), id=cid
    )


@dataclasses.dataclass(frozen=True)
class Power:
    """What sized a judged run: its design-seed pilot's effect and spread against the edge the
    claim must clear, and the seeds the judged run used.

    effect: the pilot's mean of the judged quantity; spread: its standard deviation over the
    pilot's `pilot_seeds` values (on the claim's scale: log for a ratio); edge: the range's edge
    nearest the effect; seeds: the values the verdict is judged over; source: where the range
    comes from (a citation or a derivation); pilot: the committed pilot result it was read from."""

    effect: float
    spread: float
    pilot_seeds: int
    edge: float
    seeds: int
    source: str
    pilot: str
    scale: str = "linear"

    @property
    def margin(self) -> float:
        on = math.log if self.scale == "log" else (lambda x: x)
        return abs(on(self.effect) - on(self.edge))

    @property
    def half_width(self) -> float:
        """The t half-width the judged run's seeds give at the pilot's spread."""
        if self.seeds < 2:
            return math.inf
        return _t(self.seeds) * self.spread / math.sqrt(self.seeds)

    @property
    def resolves(self) -> bool:
        return self.half_width < self.margin

    def text(self) -> str:
        need = seeds_needed(self.spread, self.margin)
        verdict = (
            f"{self.seeds} seeds give a half-width of {_num(self.half_width)}, below the margin"
            if self.resolves
            else f"{self.seeds} seeds give a half-width of {_num(self.half_width)}, NOT below "
            f"the margin ({'no feasible count' if need is None else f'{need} would'})"
        )
        log = " (log scale)" if self.scale == "log" else ""
        return (
            f"range: {self.source}; pilot ({self.pilot}, {self.pilot_seeds} design seeds): "
            f"effect {_num(self.effect)}, spread {_num(self.spread)}{log}, margin to the edge "
            f"{_num(self.edge)} {_num(self.margin)}; {verdict}"
        )


def power_from(
    pilot_values, rng: Range, *, seeds: int, source: str, pilot: str, scale: str = "linear"
) -> Power:
    """The Power of a claim from its pilot's per-seed values of the judged quantity: the edge
    is the range's edge nearest their mean."""
    arr = _floats(pilot_values)
    on = np.log(arr) if scale == "log" else arr
    effect = float(np.exp(on.mean()) if scale == "log" else on.mean())
    spread = float(on.std(ddof=1)) if arr.size > 1 else math.nan
    edges = rng.edges()
    edge = min(edges, key=lambda e: abs(effect - e)) if edges else math.nan
    return Power(effect, spread, int(arr.size), edge, seeds, source, pilot, scale)


def rule_text() -> str:
    """The rule in words, once, for every report's "How verdicts are decided"."""
    return (
        f"Every judged claim states its range, and where the range comes from, before the run; "
        f"the run is sized from a design-seed pilot so its interval can clear the range's edge. "
        f"The measurement carries a two-sided {LEVEL:.0%} interval: a t interval of the mean "
        f"over per-seed values (on a log scale for a ratio, clipped at the bound for an "
        f"accuracy or a BLEU), a percentile bootstrap only over {BOOTSTRAP_MIN} or more values, "
        f"or none for a deterministic count. Inside the range: **{HOLDS}**; outside: "
        f"**{FAILS}**; straddling an edge, or fewer than {MIN_SEEDS} seeds: **{UNDECIDED}** "
        f"(with what would decide it). A failed precondition (the model never learned the "
        f"task) is **{DID_NOT_LEARN}**, with the number that failed it; a figure only a GPU or "
        f"many machines can measure is **{NEEDS_ACCELERATOR}**: this machine's measurement and "
        f"a labelled estimate side by side. A claim made of parts is its weakest part, in the "
        f"order {', '.join(_EVIDENCE)}; a part that needs an accelerator, "
        f"{CODE_CHECK} (true by construction) and a number {REPORTED} never cap it."
    )


def claims_json(claims: Iterable[Claim]) -> list[dict]:
    """The rows of results.json's "table": one dict per claim (id, claim, expected, measured,
    verdict, detail)."""
    return [c.as_dict() for c in claims]


def from_json(rows: Sequence[dict]) -> list[Claim]:
    """claims_json's rows read back as Claims (a row without detail, id or power gets '')."""
    return [
        Claim(
            **{k: r[k] for k in COLUMNS},
            detail=r.get("detail", ""),
            id=r.get("id", ""),
            power=r.get("power", ""),
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


def weakest(verdicts: Iterable[str]) -> str:
    """One verdict for claims that must all hold: the weakest of their evidence (FAILS, then
    MISSING, DID_NOT_LEARN, UNDECIDED, HOLDS). A part that needs an accelerator, a check of
    the code or a reported number never caps it; with no evidence at all, the first of those
    present speaks (NEEDS_ACCELERATOR, CODE_CHECK, REPORTED); MISSING for none at all."""
    present = set(verdicts)
    return next((v for v in (*_EVIDENCE, *_BESIDE) if v in present), MISSING)


def beside(verdicts: Iterable[str]) -> list[str]:
    """The verdicts present that are shown beside the evidence and never cap it, in order."""
    present = set(verdicts)
    return [v for v in _BESIDE if v in present]


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
