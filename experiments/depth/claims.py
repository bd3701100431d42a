"""depth's claims, judged by the one verdict rule (anatomy.probes.claims) on what a run's
results.json holds, with every range and where it comes from stated here, before the run.

Every judged quantity is reduced to one value per seed and judged by its t interval over the
seeds (anatomy.probes.claims.t_interval): seed s is paired across depths and variants (the
same batches, train.run_keys). Each claim is sized from the design-seed pilot
(results/depth/pilot.json, the pilot preset): the same quantity computed on the pilot's seeds
gives its effect and spread (Claim.power: the seeds the judged run needs to clear the edge).

The losses: a run's loss on its split (judged: test windows). A seed FAILS when its loss is
NaN or no better than the unigram loss of the same characters (within FAIL_MARGIN); a failed
seed is scored at the unigram loss (a model that learned no context), so a diverged run counts
as what it is and every interval stays finite.

    Δ(L)  = loss(L) − loss(L*)     L* the shallower depth of the grid with the lowest mean loss
    g(L→2L) = loss(L) − loss(2L)   the gain of a doubling (nats per character)

Parts (a claim is the weakest of its parts, or, for 'breaks', any one of them):
    stacks         Δ(L) ≤ STACK_TOL at every L past the first
    breaks         Δ(L) ≥ STACK_TOL at some L in the claim's span
    gains          g ≥ 0 at every doubling of the grid
    steady         the last doubling's gain within a factor STEADY_FACTOR of the first's, as
                   two linear parts per seed, g_last − g_first / F ≥ 0 and F·g_first − g_last
                   ≥ 0 (a ratio of two gains is undefined for a seed whose first gain is ≤ 0).
                   Where the range comes from: on a doubling grid, any loss curve with
                   diminishing returns, E + B·L^−α, has g(4→8) / g(1→2) = 4^−α; a power law in
                   depth as shallow as the parameter exponent of Kaplan et al. 2020 (α ≈ 0.076)
                   gives 0.90, and [1/2, 2] admits any α ≤ 1/2. 'A fairly steady gain per
                   layer' cannot hold on a doubling grid for any such curve (the last step's
                   gain per layer over the first's is 8^−(1+α) ≤ 1/8): the claim is per doubling.

table(results), the experiment's own claims, by part (a part absent from the run is left out):
  the stack (default preset; L = 1, 2, 4, 8):
    depth/pre_ln_stacks           pre-LN: stacks
    depth/steady_gain             pre-LN: gains at every doubling, steadily (both parts above)
    depth/no_residual_breaks      pre-LN without its residual breaks by L = BREAK_DEPTH
    depth/lstm_plain_degrades     the plain LSTM stack breaks past FEW_LAYERS (GNMT)
    depth/lstm_plain_stacks_to_4  ... and stacks up to FEW_LAYERS layers (GNMT)
    depth/lstm_residual_ln_stacks the LSTM with residuals + LayerNorm stacks (GNMT, RNMT+)
    depth/lstm_vs_transformer     reported: pre-LN's best loss over depth minus that LSTM's
    depth/serial_steps            the forward program's serial steps: L·N for the LSTM stack,
                                  none for the Transformer (exact: read from the program)
    depth/time_per_step           reported, never judged (it moves with the machine's load)
  stability (L = 6, every variant at one rate: the largest post-LN + warmup trains well at):
    depth/post_ln_needs_warmup    post-LN without warmup loses at least WARMUP_SHARE of what
                                  post-LN with warmup learned beyond the unigram loss (paired
                                  per seed; RAdam's README: near 500 perplexity without warmup,
                                  under 10 with it); precondition: the warmup run learned
    depth/deepnorm_stable         DeepNorm without warmup: no seed fails (an exact count)
  xiong (gradients at init, L = 4 .. 64):
    depth/xiong_post_flat         post-LN's ‖∂loss/∂W^{2,L}‖ ∝ L^a, a = 0 ± XIONG_TOL
    depth/xiong_pre_sqrt          pre-LN's, a = −1/2 ± XIONG_TOL (Xiong et al. 2020, Thm. 1)
    depth/xiong_direction         pre-LN's exponent below post-LN's (one-sided)
    depth/deepnorm_slope          DeepNorm's exponent: reported, not judged (no theorem)
  a is each seed's own least-squares slope of log ‖g‖ on log L; the interval is over seeds.

chapter(results), what the chapter's closing table cites (its 'stackability' row), made of
the table's verdicts, never a second judgement of the same numbers:
    depth/stackability            the weakest of depth/pre_ln_stacks, depth/steady_gain,
                                  depth/no_residual_breaks and depth/lstm_plain_degrades; its
                                  detail says whether residual + LayerNorm make the LSTM stack
                                  too and which reaches the lower loss (GNMT, RNMT+).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from anatomy.probes.claims import (
    DID_NOT_LEARN,
    FAILS,
    HOLDS,
    MISSING,
    REPORTED,
    UNDECIDED,
    Claim,
    Range,
    exact,
    holds,
    judge,
    power_from,
    rule_text,
    t_interval,
    weakest,
)

FAIL_MARGIN = 0.05  # a seed within this many nats of the unigram loss learned no context: failed
STACK_TOL = 0.02  # nats: 'does not get worse with depth' = Δ ≤ this; 'breaks' = Δ ≥ this
BREAK_DEPTH = 8  # 'removing the residual makes it fail or degrade by L = this'
FEW_LAYERS = 4  # GNMT: plain stacks 'work well up to 4 layers'; degrading counts past this
STEADY_FACTOR = 2.0  # 'fairly steady': the last doubling's gain within this factor of the first's
WARMUP_SHARE = 0.5  # post-LN without warmup loses at least this share of warmup's gain
XIONG_POST = 0.0  # Theorem 1: post-LN's last-layer gradient does not depend on L: exponent 0
XIONG_PRE = -0.5  # ... pre-LN's scales as L^(-1/2)
XIONG_TOL = 0.15  # an exponent within this of the theorem's matches it
PILOT = "results/depth/pilot.json"

STACKS = Range.at_most(STACK_TOL, f"Δ ≤ +{STACK_TOL:g} nats at every L (one-sided)")
BREAKS = Range.at_least(STACK_TOL, f"Δ ≥ +{STACK_TOL:g} nats at some L (one-sided)")
GAINS = Range.at_least(0.0, "g ≥ 0 at every doubling (one-sided)")
STEADY = Range.at_least(
    0.0, f"≥ 0 (one-sided): g(4→8) / g(1→2) in [1/{STEADY_FACTOR:g}, {STEADY_FACTOR:g}]"
)
WARMUP = Range.at_least(WARMUP_SHARE, f"≥ {WARMUP_SHARE:g} of warmup's gain (one-sided)")
POST_FLAT = Range.around(XIONG_POST, XIONG_TOL, f"0 ± {XIONG_TOL:g} (Theorem 1: flat in L)")
PRE_SQRT = Range.around(XIONG_PRE, XIONG_TOL, f"-0.5 ± {XIONG_TOL:g} (Theorem 1: L^-1/2)")
DIRECTION = Range.at_most(0.0, "≤ 0 (one-sided: pre-LN's falls faster with L)")
NO_FAILED = Range.at_most(0.0, "0 seeds fail (an exact count)")

SRC_STACK = (
    f"Δ ≤ +{STACK_TOL:g} nats ('does not get worse': a tolerance stated before the run, 2% "
    "in perplexity)"
)
SRC_BREAK = f"Δ ≥ +{STACK_TOL:g} nats (the same tolerance, the other side)"
SRC_GAINS = "a gain ≥ 0 at every doubling (the chapter: 'a gain per layer'; per doubling)"
SRC_STEADY = (
    f"[1/{STEADY_FACTOR:g}, {STEADY_FACTOR:g}]: E + B·L^-α gives 4^-α; Kaplan et al. 2020's "
    "α ≈ 0.076 gives 0.90; the range admits α ≤ 1/2"
)
SRC_WARMUP = (
    f"≥ {WARMUP_SHARE:g}: RAdam's README (Liu et al. 2020), a 6-layer post-LN Transformer with "
    "Adam and no warmup near 500 perplexity, under 10 with warmup: nearly all of warmup's gain "
    "lost; half of it is the line between failing and training worse"
)
SRC_XIONG = "Xiong et al. 2020, Theorem 1 (asymptotic in L; the tolerance stated before the run)"


# ------------------------------------------------------------------ what a run holds


def unigram(results) -> float:
    """The unigram loss of the characters the run's seeds were scored on."""
    return results["data"]["unigram_loss"][results["split"]]


def failed(loss, floor) -> bool:
    """NaN, or no better than the unigram loss `floor` (within FAIL_MARGIN)."""
    return loss is None or not math.isfinite(loss) or loss >= floor - FAIL_MARGIN


def has(results, *names) -> bool:
    return "variants" in results and all(n in results["variants"] for n in names)


def depths_of(results, name) -> list[int]:
    return sorted(int(d) for d in results["variants"][name]["depths"])


def losses(results, name) -> np.ndarray:
    """[seeds, depths] losses on the run's split, a failed seed at the unigram loss."""
    u = unigram(results)
    rows = results["variants"][name]["depths"]
    cols = [
        [u if failed(x, u) else float(x) for x in rows[str(d)]["loss"]]
        for d in depths_of(results, name)
    ]
    return np.array(cols, np.float64).T


def failures(results, name) -> dict[int, int]:
    """{L: how many seeds failed}."""
    u = unigram(results)
    rows = results["variants"][name]["depths"]
    return {d: sum(failed(x, u) for x in rows[str(d)]["loss"]) for d in depths_of(results, name)}


def _n(results, name) -> int:
    rows = results["variants"][name]["depths"]
    return len(next(iter(rows.values()))["loss"])


# ------------------------------------------------------------------ parts: per-seed quantities


@dataclasses.dataclass(frozen=True)
class Part:
    """One judged quantity of a claim: `values(results)` its per-seed values (None: it cannot
    be computed from these results), judged by its t interval against `rng`. `unlearned(results)`
    says, when the quantity measures nothing (the depth it compares against never learned),
    why: the part is then DID_NOT_LEARN. `source`: where the range comes from (the power text)."""

    label: str
    values: Callable
    rng: Range
    source: str
    unlearned: Callable = lambda results: ""


def _ref(results, name, j) -> int:
    """The index of the shallower depth with the lowest mean loss, before index j."""
    return int(np.argmin(losses(results, name).mean(axis=0)[:j]))


def _index(results, name, n_layers):
    depths = depths_of(results, name) if has(results, name) else []
    return depths.index(n_layers) if n_layers in depths else None


def delta(name, n_layers) -> Callable:
    """Δ(L) per seed: the loss at L minus that at the best shallower depth of these results."""

    def values(results):
        j = _index(results, name, n_layers)
        if not j:
            return None
        x = losses(results, name)
        return x[:, j] - x[:, _ref(results, name, j)]

    return values


def _unlearned_ref(name, n_layers) -> Callable:
    """Why Δ(L) measures nothing: the reference depth did not learn."""

    def why(results):
        j = _index(results, name, n_layers)
        if not j:
            return ""
        ref = depths_of(results, name)[_ref(results, name, j)]
        bad = failures(results, name)[ref]
        label = results["variants"][name]["label"]
        return (
            f"{label} did not learn at L={ref} ({bad}/{_n(results, name)} seeds within "
            f"{FAIL_MARGIN:g} nats of the unigram loss {unigram(results):.3f}, or NaN)"
            if bad
            else ""
        )

    return why


def gain(name, a, b) -> Callable:
    """g(a→b) per seed: loss(a) − loss(b)."""

    def values(results):
        i, j = _index(results, name, a), _index(results, name, b)
        if i is None or j is None:
            return None
        x = losses(results, name)
        return x[:, i] - x[:, j]

    return values


def steady(name, first, last, side) -> Callable:
    """side 'lo': g_last − g_first / F per seed; 'hi': F·g_first − g_last."""

    def values(results):
        g0, g1 = gain(name, *first)(results), gain(name, *last)(results)
        if g0 is None or g1 is None:
            return None
        return g1 - g0 / STEADY_FACTOR if side == "lo" else STEADY_FACTOR * g0 - g1

    return values


def _unlearned_at(name, n_layers) -> Callable:
    def why(results):
        if _index(results, name, n_layers) is None:
            return ""
        bad = failures(results, name)[n_layers]
        label = results["variants"][name]["label"]
        return (
            f"{label} did not learn at L={n_layers} ({bad}/{_n(results, name)} seeds failed)"
            if bad
            else ""
        )

    return why


def warmup_share(n_layers) -> Callable:
    """Per seed: (loss without warmup − loss with) / (unigram − loss with): the share of what
    warmup learned beyond the unigram loss that post-LN loses without it (1: all of it)."""

    def values(results):
        i, j = _index(results, "post", n_layers), _index(results, "post_warmup", n_layers)
        if i is None or j is None:
            return None
        cold, warm = losses(results, "post")[:, i], losses(results, "post_warmup")[:, j]
        learned = unigram(results) - warm
        return (cold - warm) / np.where(learned > 0, learned, np.nan)

    return values


def slopes(results, name) -> np.ndarray | None:
    """Each seed's least-squares slope of log ‖∂loss/∂W^{2,L}‖ at init on log L (NaN where a
    norm is not finite and positive); None when the run has no such gradients."""
    got = (results.get("xiong") or {}).get(name)
    if not got:
        return None
    depths = sorted(int(d) for d in got)
    if len(depths) < 2:
        return None
    g = np.array([[np.nan if x is None else x for x in got[str(d)]] for d in depths], np.float64)
    lx = np.log(np.asarray(depths, np.float64))
    lx = lx - lx.mean()
    with np.errstate(invalid="ignore", divide="ignore"):
        ly = np.log(np.where(g > 0, g, np.nan))  # [depths, seeds]
    return (lx @ ly) / float(lx @ lx)


def exponent(name) -> Callable:
    return lambda results: slopes(results, name)


def exponent_gap(a, b) -> Callable:
    def values(results):
        sa, sb = slopes(results, a), slopes(results, b)
        if sa is None or sb is None:
            return None
        n = min(len(sa), len(sb))
        return sa[:n] - sb[:n]

    return values


# ------------------------------------------------------------------ judging parts


_PILOT: dict = {}


def pilot_results() -> dict | None:
    """The committed pilot's results (None when none is committed), read once."""
    if "result" not in _PILOT:
        from experiments.lab import committed

        _PILOT["result"] = committed.pilot("depth")
    return _PILOT["result"]


SIZED_ON = ("seed", "data", "model", "train")  # what a pilot must share with a run it sizes


def _sized_by(pilot, results) -> bool:
    """The pilot was made with the run's data, model and budget (a quick run is not sized by
    the default's pilot)."""
    made, run = pilot.get("config") or {}, results.get("config") or {}
    return all(k in made and made.get(k) == run.get(k) for k in SIZED_ON)


def _power(part: Part, results):
    """The Power of `part` from the committed pilot (None when there is none, it was made
    with another design, or it lacks the part)."""
    pilot = pilot_results()
    if pilot is None or pilot is results or not _sized_by(pilot, results):
        return None
    try:
        values = part.values(pilot)
    except (KeyError, IndexError, ValueError):
        return None
    if values is None or len(values) < 2 or not np.all(np.isfinite(values)):
        return None
    n = len(part.values(results))
    return power_from(values, part.rng, seeds=n, source=part.source, pilot=PILOT)


def _judge_part(part: Part, results) -> tuple[str, str, str, object]:
    """(verdict, measured, reason, power) of one part."""
    values = part.values(results)
    interval = t_interval(values)
    why = part.unlearned(results)
    verdict, reason = (DID_NOT_LEARN, why) if why else judge(interval, part.rng)
    return verdict, f"{part.label} {interval}", reason, _power(part, results)


def some(verdicts) -> str:
    """One verdict for a claim that any one of its parts shows (some depth breaks): HOLDS when
    a part holds, FAILS when every part fails, otherwise the weakest of the parts that did
    not fail; MISSING for no part."""
    vs = list(verdicts)
    if not vs:
        return MISSING
    if HOLDS in vs:
        return HOLDS
    return FAILS if all(v == FAILS for v in vs) else weakest(v for v in vs if v != FAILS)


def _binding(powers, disjunction: bool):
    """The power that decides the claim: the part furthest from resolving (all parts must
    hold), or the nearest (any part may)."""
    ok = [(p.half_width / p.margin if p.margin > 0 else math.inf, p) for p in powers if p]
    if not ok:
        return None
    return (min if disjunction else max)(ok, key=lambda t: t[0])[1]


def claim_of(cid, claim, expected, parts, results, *, disjunction=False, detail="") -> Claim:
    """The Claim of `parts`, each judged by the one rule: the weakest of them (disjunction: any
    one holding makes it hold, `some`); measured: every part's interval; detail: the reasons
    of the parts that gave the verdict, then `detail`; power: the binding part's."""
    judged = [(p, *_judge_part(p, results)) for p in parts]
    verdicts = [v for _, v, *_ in judged]
    verdict = (some if disjunction else weakest)(verdicts)
    why = [f"{p.label}: {r}" for p, v, _, r, _ in judged if r and v == verdict]
    labelled = [(p.label, pw) for p, *_, pw in judged if pw is not None]
    bind = _binding([pw for _, pw in labelled], disjunction)
    power = next((f"{label}: {pw.text()}" for label, pw in labelled if pw is bind), "")
    return Claim(
        claim,
        expected,
        "; ".join(m for _, _, m, _, _ in judged),
        verdict,
        "; ".join(x for x in (*why, detail) if x),
        id=cid,
        power=power,
    )


def _missing(cid, claim, expected, needs) -> Claim:
    return Claim(claim, expected, f"not run ({', '.join(needs)})", MISSING, id=cid)


def _rates(results, name) -> str:
    rows = results["variants"][name]["depths"]
    return "rate " + ", ".join(
        f"L={d} {rows[str(d)]['learning_rate']:g}" for d in depths_of(results, name)
    )


def _failed(results, name) -> str:
    bad = {d: n for d, n in failures(results, name).items() if n}
    n = _n(results, name)
    return ", ".join(f"{k}/{n} failed at L={d}" for d, k in bad.items())


def _extras(results, name) -> str:
    return "; ".join(x for x in (_failed(results, name), _rates(results, name)) if x)


# ------------------------------------------------------------------ the stack


def stacks_parts(results, name, limit=None) -> list[Part]:
    return [
        Part(f"L={d}", delta(name, d), STACKS, SRC_STACK, _unlearned_ref(name, d))
        for d in depths_of(results, name)[1:]
        if limit is None or d <= limit
    ]


def breaks_parts(results, name, above=1, limit=None) -> list[Part]:
    return [
        Part(f"L={d}", delta(name, d), BREAKS, SRC_BREAK, _unlearned_ref(name, d))
        for d in depths_of(results, name)[1:]
        if d > above and (limit is None or d <= limit)
    ]


def _stacks_claim(name, cid, claim, limit=None):
    expected = f"Δ ≤ +{STACK_TOL:g} nats at every L" + (f" ≤ {limit}" if limit else "")

    def fn(results) -> Claim:
        if not has(results, name):
            return _missing(cid, claim, expected, [name])
        parts = stacks_parts(results, name, limit)
        if not parts:
            return Claim(
                claim, expected, "one depth only", UNDECIDED, "no depth to compare", id=cid
            )
        return claim_of(
            cid, claim, expected + " (one-sided)", parts, results, detail=_extras(results, name)
        )

    fn.cid = cid
    return fn


def _breaks_claim(name, cid, claim, above=1, limit=BREAK_DEPTH):
    expected = f"Δ ≥ +{STACK_TOL:g} nats at some {above} < L" + (f" ≤ {limit}" if limit else "")

    def fn(results) -> Claim:
        if not has(results, name):
            return _missing(cid, claim, expected, [name])
        parts = breaks_parts(results, name, above, limit)
        if not parts:
            return Claim(claim, expected, "no depth in the range", UNDECIDED, "", id=cid)
        return claim_of(
            cid,
            claim,
            expected + " (one-sided)",
            parts,
            results,
            disjunction=True,
            detail=_extras(results, name),
        )

    fn.cid = cid
    return fn


pre_ln_stacks = _stacks_claim(
    "pre", "depth/pre_ln_stacks", "pre-LN: the stack does not get worse with depth"
)
no_residual_breaks = _breaks_claim(
    "no_residual",
    "depth/no_residual_breaks",
    f"pre-LN without the residual fails or degrades by L={BREAK_DEPTH}",
)
lstm_residual_ln_stacks = _stacks_claim(
    "lstm_residual_ln",
    "depth/lstm_residual_ln_stacks",
    "residual + LayerNorm LSTM stacks (GNMT, RNMT+)",
)
lstm_plain_degrades = _breaks_claim(
    "lstm",
    "depth/lstm_plain_degrades",
    f"plain RNN stacks stop training as layers are added past {FEW_LAYERS} (LSTM; GNMT)",
    above=FEW_LAYERS,
    limit=None,
)
_lstm_to_4 = _stacks_claim(
    "lstm",
    "depth/lstm_plain_stacks_to_4",
    f"plain LSTM stacks work up to {FEW_LAYERS} layers (GNMT)",
    limit=FEW_LAYERS,
)


def lstm_plain_stacks_to_4(results) -> Claim:
    row = _lstm_to_4(results)
    ratio = bottom_over_top(results, "lstm") if has(results, "lstm") else None
    if ratio is None:
        return row
    grads = f"at init, layer 1's gradient is {ratio[1]:.2g}x layer {ratio[0]}'s"
    return dataclasses.replace(row, detail="; ".join(x for x in (row.detail, grads) if x))


lstm_plain_stacks_to_4.cid = _lstm_to_4.cid


def doublings(results, name) -> list[tuple[int, int]]:
    """The steps of the grid that double L."""
    d = depths_of(results, name)
    return [(a, b) for a, b in zip(d, d[1:]) if b == 2 * a]


def steady_parts(results) -> list[Part]:
    """pre-LN's gain at every doubling, and the last doubling's against the first's."""
    steps = doublings(results, "pre")
    if len(steps) < 2:
        return []
    first, last = steps[0], steps[-1]
    parts = [
        Part(f"g({a}→{b})", gain("pre", a, b), GAINS, SRC_GAINS, _unlearned_at("pre", a))
        for a, b in steps
    ]
    tag = f"g({last[0]}→{last[1]}) vs g({first[0]}→{first[1]})"
    for side, bound in (("lo", f"≥ 1/{STEADY_FACTOR:g}"), ("hi", f"≤ {STEADY_FACTOR:g}")):
        parts.append(
            Part(
                f"{tag}, {bound}",
                steady("pre", first, last, side),
                STEADY,
                SRC_STEADY,
                _unlearned_at("pre", first[0]),
            )
        )
    return parts


def steady_gain(results) -> Claim:
    cid = "depth/steady_gain"
    claim = "each added layer gives a fairly steady gain (pre-LN), per doubling of L"
    expected = (
        f"g(L→2L) ≥ 0 at every doubling; the last doubling's gain within a factor "
        f"{STEADY_FACTOR:g} of the first's (g_last − g_first/{STEADY_FACTOR:g} ≥ 0 and "
        f"{STEADY_FACTOR:g}·g_first − g_last ≥ 0)"
    )
    if not has(results, "pre"):
        return _missing(cid, claim, expected, ["pre"])
    parts = steady_parts(results)
    if not parts:
        return Claim(claim, expected, "fewer than two doublings", UNDECIDED, "", id=cid)
    steps = doublings(results, "pre")
    (a0, b0), (a1, b1) = steps[0], steps[-1]
    m = losses(results, "pre").mean(axis=0)
    d = depths_of(results, "pre")
    g0 = m[d.index(a0)] - m[d.index(b0)]
    g1 = m[d.index(a1)] - m[d.index(b1)]
    ratio = f"ratio of the mean gains {g1 / g0:.3g}" if g0 else "first mean gain 0"
    return claim_of(cid, claim, expected, parts, results, detail=ratio)


def best_depth(results, name) -> int:
    """The depth with the lowest mean loss."""
    d = depths_of(results, name)
    return d[int(np.argmin(losses(results, name).mean(axis=0)))]


def lstm_vs_transformer(results) -> Claim:
    cid = "depth/lstm_vs_transformer"
    claim = (
        "at this budget, the Transformer stack (pre-LN) against the LSTM stack with residuals "
        "+ LayerNorm, each at its best depth"
    )
    expected = (
        "reported, not judged: GNMT (Wu et al. 2016) trained 8-layer residual LSTMs; RNMT+ "
        "(Chen et al. 2018, residuals + per-gate LayerNorm) matched the Transformer Big on "
        "WMT'14"
    )
    if not has(results, "pre", "lstm_residual_ln"):
        return _missing(cid, claim, expected, ["pre", "lstm_residual_ln"])
    a, b = best_depth(results, "pre"), best_depth(results, "lstm_residual_ln")
    x = losses(results, "pre")[:, depths_of(results, "pre").index(a)]
    y = losses(results, "lstm_residual_ln")[:, depths_of(results, "lstm_residual_ln").index(b)]
    n = min(len(x), len(y))
    diff = t_interval(x[:n] - y[:n])
    ahead = (
        "the LSTM lower"
        if diff.lo > 0
        else "the Transformer lower"
        if diff.hi < 0
        else "neither resolved lower"
    )
    return Claim(
        claim,
        expected,
        f"pre-LN (L={a}) {x.mean():.4g} − LSTM + residual + LN (L={b}) {y.mean():.4g} = {diff}",
        REPORTED,
        f"{ahead} (paired by seed)",
        id=cid,
    )


def bottom_over_top(results, name) -> tuple[int, float] | None:
    """(L, ‖g_layer 1‖ / ‖g_layer L‖ at init, means over seeds) at the deepest L > 1."""
    depths = depths_of(results, name)
    if depths[-1] < 2:
        return None
    rows = results["variants"][name]["depths"][str(depths[-1])]["init_grad_layers"]
    g = np.array([[np.nan if x is None else x for x in r] for r in rows], np.float64)
    return depths[-1], float(np.mean(g[:, 0]) / np.mean(g[:, -1]))


def serial_steps(results) -> Claim:
    claim = "serial steps of the forward program: L·N for the LSTM stack, none for the Transformer"
    expected = "LSTM L·N at every L; attention 0 (exact)"
    cid = "depth/serial_steps"
    got = results.get("serial_steps") or {}
    if "recurrent" not in got or "attention" not in got:
        need = "a recurrent and an attention variant"
        return Claim(claim, expected, f"not run ({need})", MISSING, id=cid)
    rnn = {int(d): r for d, r in got["recurrent"].items()}
    att = {int(d): r for d, r in got["attention"].items()}
    ok = all(r["hlo"] == d * r["n"] == r["jaxpr"] for d, r in rnn.items()) and all(
        r["hlo"] == 0 == r["jaxpr"] for r in att.values()
    )
    measured = (
        "LSTM "
        + ", ".join(f"L={d}: {r['hlo']} (N={r['n']})" for d, r in rnn.items())
        + "; attention "
        + ", ".join(f"L={d}: {r['hlo']}" for d, r in att.items())
    )
    return Claim(claim, expected, measured, holds(ok), "compiled HLO = jaxpr", id=cid)


def time_per_step(results) -> Claim:
    parts = []
    for fam in ("attention", "recurrent"):
        names = sorted(
            (n for n, v in results["variants"].items() if v["family"] == fam),
            key=lambda n: (n not in ("pre", "lstm"), n),
        )
        if not names:
            continue
        rows = results["variants"][names[0]]["depths"]
        parts.append(
            f"{names[0]}: "
            + ", ".join(f"L={d} {1e3 * r['seconds_per_step']:.0f} ms" for d, r in rows.items())
        )
    return Claim(
        "time per step grows with L for both families",
        "reported, not judged (it moves with the machine's load)",
        "; ".join(parts),
        REPORTED,
        "one run's step, the median over the seeds (runs share the cores two at a time)",
        id="depth/time_per_step",
    )


# ------------------------------------------------------------------ stability


def _stability_depth(results) -> int | None:
    if not has(results, "post", "post_warmup"):
        return None
    common = sorted(set(depths_of(results, "post")) & set(depths_of(results, "post_warmup")))
    return common[-1] if common else None


def post_ln_needs_warmup(results) -> Claim:
    cid = "depth/post_ln_needs_warmup"
    claim = (
        "post-LN without warmup fails where warmup rescues it (Xiong et al. 2020; RAdam's "
        "README), at the largest rate post-LN + warmup trains well at"
    )
    expected = (
        f"(loss without − loss with warmup) / (unigram − loss with) ≥ {WARMUP_SHARE:g} "
        "(one-sided), paired by seed; the warmup run must learn"
    )
    n_layers = _stability_depth(results)
    if n_layers is None:
        return _missing(cid, claim, expected, ["post", "post_warmup"])
    rates = [
        results["variants"][v]["depths"][str(n_layers)]["learning_rate"]
        for v in ("post", "post_warmup")
    ]
    if rates[0] != rates[1]:
        return Claim(
            claim,
            expected,
            f"rates {rates[0]:g} and {rates[1]:g}",
            UNDECIDED,
            "post-LN without and with warmup trained at different rates: one rate decides it",
            id=cid,
        )
    part = Part(
        f"L={n_layers}",
        warmup_share(n_layers),
        WARMUP,
        SRC_WARMUP,
        _unlearned_at("post_warmup", n_layers),
    )
    warm = results["variants"]["post_warmup"]["depths"][str(n_layers)]
    lost = [
        float(np.mean(losses(results, v)[:, _index(results, v, n_layers)]))
        for v in ("post", "post_warmup")
    ]
    detail = (
        f"mean loss without warmup {lost[0]:.4g} ({_failed(results, 'post') or 'no seed failed'}), "
        f"with {lost[1]:.4g}, unigram {unigram(results):.4g}; both at rate "
        f"{warm['learning_rate']:g}"
    )
    return claim_of(cid, claim, expected, [part], results, detail=detail)


def deepnorm_stable(results) -> Claim:
    cid = "depth/deepnorm_stable"
    claim = (
        "DeepNorm trains without warmup where post-LN needs it: no seed diverges (Wang et al. 2022)"
    )
    expected = str(NO_FAILED)
    n_layers = _stability_depth(results)
    if (
        n_layers is None
        or not has(results, "deepnorm")
        or n_layers not in depths_of(results, "deepnorm")
    ):
        return _missing(cid, claim, expected, ["deepnorm", "post", "post_warmup"])
    bad = failures(results, "deepnorm")[n_layers]
    verdict, reason = judge(exact(bad, "a count of seeds"), NO_FAILED)
    x = losses(results, "deepnorm")[:, _index(results, "deepnorm", n_layers)]
    rate = results["variants"]["deepnorm"]["depths"][str(n_layers)]["learning_rate"]
    post_bad = failures(results, "post")[n_layers]
    n = _n(results, "deepnorm")
    return Claim(
        claim,
        expected,
        f"L={n_layers}: {bad}/{n} seeds failed (NaN or within {FAIL_MARGIN:g} nats of the "
        f"unigram loss); loss {t_interval(x)}",
        verdict,
        "; ".join(
            x
            for x in (
                reason,
                f"rate {rate:g}, no warmup; post-LN without warmup at the same rate: "
                f"{post_bad}/{_n(results, 'post')} failed",
            )
            if x
        ),
        id=cid,
    )


# ------------------------------------------------------------------ Xiong's exponents


def _exponent_claim(cid, claim, name, rng):
    def fn(results) -> Claim:
        if slopes(results, name) is None:
            return _missing(cid, claim, str(rng), [f"{name}'s gradients at init"])
        part = Part("a", exponent(name), rng, SRC_XIONG)
        depths = sorted(int(d) for d in results["xiong"][name])
        return claim_of(
            cid,
            claim,
            str(rng),
            [part],
            results,
            detail=f"per-seed slopes over L = {', '.join(map(str, depths))}",
        )

    fn.cid = cid
    return fn


xiong_post_flat = _exponent_claim(
    "depth/xiong_post_flat",
    "post-LN: the last layer's gradient at init is flat in L (Xiong et al. 2020, Thm. 1)",
    "post",
    POST_FLAT,
)
xiong_pre_sqrt = _exponent_claim(
    "depth/xiong_pre_sqrt",
    "pre-LN: the last layer's gradient at init falls as L^-1/2 (Xiong et al. 2020, Thm. 1)",
    "pre",
    PRE_SQRT,
)


def xiong_direction(results) -> Claim:
    cid = "depth/xiong_direction"
    claim = "pre-LN's last-layer gradient at init falls faster with L than post-LN's"
    expected = f"pre-LN's exponent − post-LN's {DIRECTION}"
    if slopes(results, "pre") is None or slopes(results, "post") is None:
        return _missing(cid, claim, expected, ["gradients at init of pre and post"])
    part = Part("a_pre − a_post", exponent_gap("pre", "post"), DIRECTION, SRC_XIONG)
    return claim_of(cid, claim, expected, [part], results, detail="paired by seed")


def deepnorm_slope(results) -> Claim:
    cid = "depth/deepnorm_slope"
    claim = "DeepNorm: the last layer's gradient at init against L (no theorem; beside Xiong's)"
    a = slopes(results, "deepnorm")
    if a is None:
        return _missing(cid, claim, "reported, not judged", ["deepnorm's gradients at init"])
    interval = t_interval(a)
    inside = interval.lo <= XIONG_PRE <= interval.hi
    return Claim(
        claim,
        "reported, not judged",
        f"L^a, a = {interval}",
        REPORTED,
        f"the interval {'contains' if inside else 'does not contain'} pre-LN's theorem's -1/2",
        id=cid,
    )


# ------------------------------------------------------------------ the tables

STACK_TABLE = (
    pre_ln_stacks,
    steady_gain,
    no_residual_breaks,
    lstm_plain_degrades,
    lstm_plain_stacks_to_4,
    lstm_residual_ln_stacks,
    lstm_vs_transformer,
    serial_steps,
    time_per_step,
)
STABILITY_TABLE = (post_ln_needs_warmup, deepnorm_stable)
XIONG_TABLE = (xiong_post_flat, xiong_pre_sqrt, xiong_direction, deepnorm_slope)


def _if(names, fn):
    return lambda results: fn(results) if has(results, *names) else []


def _warmup_parts(results) -> list[Part]:
    n_layers = _stability_depth(results)
    if n_layers is None:
        return []
    return [
        Part(
            f"L={n_layers}",
            warmup_share(n_layers),
            WARMUP,
            SRC_WARMUP,
            _unlearned_at("post_warmup", n_layers),
        )
    ]


def _xiong_parts(name, rng):
    return lambda results: (
        [Part("a", exponent(name), rng, SRC_XIONG)] if slopes(results, name) is not None else []
    )


# {claim id: (its parts on these results, whether any one part decides it)}: what the claims
# above judge, and what the pilot's report sizes
SIZED = {
    "depth/pre_ln_stacks": (_if(["pre"], lambda r: stacks_parts(r, "pre")), False),
    "depth/steady_gain": (_if(["pre"], steady_parts), False),
    "depth/no_residual_breaks": (
        _if(["no_residual"], lambda r: breaks_parts(r, "no_residual", 1, BREAK_DEPTH)),
        True,
    ),
    "depth/lstm_plain_degrades": (
        _if(["lstm"], lambda r: breaks_parts(r, "lstm", FEW_LAYERS, None)),
        True,
    ),
    "depth/lstm_plain_stacks_to_4": (
        _if(["lstm"], lambda r: stacks_parts(r, "lstm", FEW_LAYERS)),
        False,
    ),
    "depth/lstm_residual_ln_stacks": (
        _if(["lstm_residual_ln"], lambda r: stacks_parts(r, "lstm_residual_ln")),
        False,
    ),
    "depth/post_ln_needs_warmup": (_warmup_parts, False),
    "depth/xiong_post_flat": (_xiong_parts("post", POST_FLAT), False),
    "depth/xiong_pre_sqrt": (_xiong_parts("pre", PRE_SQRT), False),
    "depth/xiong_direction": (
        lambda r: (
            [Part("a_pre − a_post", exponent_gap("pre", "post"), DIRECTION, SRC_XIONG)]
            if slopes(r, "pre") is not None and slopes(r, "post") is not None
            else []
        ),
        False,
    ),
}
STACK_VARIANTS = ("pre", "no_residual", "lstm", "lstm_residual", "lstm_residual_ln")


def parts_of(results) -> list[str]:
    """Which parts of the experiment the run measured: 'stack', 'stability', 'xiong'."""
    out = []
    if any(has(results, n) for n in STACK_VARIANTS):
        out.append("stack")
    if has(results, "post_warmup") or has(results, "post") or has(results, "deepnorm"):
        out.append("stability")
    if results.get("xiong"):
        out.append("xiong")
    return out


def table(results) -> list[Claim]:
    """The claims of the parts the run measured, in report order."""
    parts = parts_of(results)
    fns = (
        (STACK_TABLE if "stack" in parts else ())
        + (STABILITY_TABLE if "stability" in parts else ())
        + (XIONG_TABLE if "xiong" in parts else ())
    )
    return [fn(results) for fn in fns]


STACKABILITY_PARTS = (  # (id, how the measured column names it)
    ("depth/pre_ln_stacks", "pre-LN stacks"),
    ("depth/steady_gain", "steady gain per doubling"),
    ("depth/no_residual_breaks", "no residual breaks"),
    ("depth/lstm_plain_degrades", "plain LSTM degrades"),
)
RESCUE = "depth/lstm_residual_ln_stacks"
VERSUS = "depth/lstm_vs_transformer"


def _deciding(c: Claim) -> str:
    """What the sub-parts that decide claim `c` measured, each with its reason ('g(4→8) vs
    g(1→2), ≥ 1/2 -0.09 [-0.093, -0.087] (95% t, 5 seeds): below the range's lower edge 0'):
    claim_of's measured holds 'label interval' per part, its detail 'label: reason' for the
    parts that gave the verdict."""
    reasons = [seg.split(": ", 1) for seg in c.detail.split("; ") if ": " in seg]
    shown = [
        f"{seg}: {why}"
        for seg in c.measured.split("; ")
        for label, why in reasons
        if seg.startswith(label + " ")
    ]
    return "; ".join(shown) or c.measured


def stackability(results, judged=None) -> Claim:
    """The chapter's claim: the weakest of its parts (judged: the table's claims, if already
    judged; else those it reads are judged now)."""
    fns = (pre_ln_stacks, steady_gain, no_residual_breaks, lstm_plain_degrades)
    if judged is None:
        judged = [fn(results) for fn in (*fns, lstm_residual_ln_stacks, lstm_vs_transformer)]
    by = {c.id: c for c in judged}
    parts = [by[i].verdict for i, _ in STACKABILITY_PARTS]
    verdict = weakest(parts)
    claim = (
        "a block of self-attention + FFN + residual + LayerNorm stacks, with a fairly steady "
        "gain per layer (per doubling of L), without the RNN problem that adding layers makes "
        "training fail"
    )
    expected = "every part holds (the claim is its weakest part)"
    measured = "; ".join(f"{text}: {by[i].verdict}" for i, text in STACKABILITY_PARTS)
    detail = [f"LSTM + residual + LN stacks {by[RESCUE].verdict}"]
    if by[RESCUE].verdict == HOLDS:
        detail[0] += (
            " (GNMT, RNMT+): residual + LayerNorm make the LSTM stack too, the RNN's problem "
            "is the plain stack's"
        )
    if by[VERSUS].verdict == REPORTED:
        detail.append(
            f"best loss, pre-LN − that LSTM {by[VERSUS].measured.split(' = ')[-1]} "
            f"({by[VERSUS].detail})"
        )
    # what the parts that decide the verdict measured, last, one 'stackability/<part>: ...'
    # each (the scorecard's reason reads them: experiments/report/scorecard.py)
    detail += [
        f"stackability/{text.replace(' ', '_')}: {_deciding(by[i])}"
        for (i, text), v in zip(STACKABILITY_PARTS, parts)
        if v == verdict and verdict != HOLDS
    ]
    # sized as the part that decides it was (when every part holds, the first part with a pilot)
    deciding = [by[i] for (i, _), v in zip(STACKABILITY_PARTS, parts) if v == verdict]
    power = next((c.power for c in deciding if c.power), "")
    return Claim(
        claim, expected, measured, verdict, "; ".join(detail), id="depth/stackability", power=power
    )


def chapter(results) -> list[Claim]:
    """The claims the chapter's closing table cites: depth/stackability (MISSING in a run of
    another part)."""
    return [stackability(results)]


def rules() -> list[str]:
    """How these verdicts are decided, for report.md."""
    return [
        f"* {rule_text()}",
        "* Learning rates: every (variant, L) tried the same grid of peak rates on a design "
        "seed, scored on the validation windows (results/depth/lr_grid.json); the chosen rates "
        "are written in the config. The judged seeds train at them and are scored on the test "
        "windows (never read by the choice). Post-LN without and with warmup and DeepNorm train "
        "at one rate: the largest at which post-LN + warmup's validation loss was within "
        "configs/depth.py WARM_TOL of its best (warmup's use is a larger rate).",
        f"* A seed fails when its loss is NaN or within {FAIL_MARGIN:g} nats of the unigram "
        "loss of the same characters; it is then scored at the unigram loss. A comparison "
        "against a depth that did not learn is **did not learn**.",
        f"* Δ(L): a depth's loss minus that of the shallower depth with the lowest mean, per "
        f"seed (paired). Stacks: Δ ≤ +{STACK_TOL:g} nats at every depth (the weakest of the "
        f"depths). Breaks: Δ ≥ +{STACK_TOL:g} at some depth (by L = {BREAK_DEPTH} for the "
        f"residual ablation; past {FEW_LAYERS} for the plain LSTM, GNMT's 'up to 4 layers').",
        f"* A fairly steady gain (pre-LN), per doubling of L: every doubling's gain ≥ 0, and "
        f"the last doubling's gain within a factor {STEADY_FACTOR:g} of the first's (two "
        "linear parts per seed). Per layer, no curve with diminishing returns could pass on a "
        "doubling grid (the last step's gain per layer over the first's is 8^-(1+α) ≤ 1/8).",
        f"* Warmup: post-LN without warmup loses at least {WARMUP_SHARE:g} of what post-LN "
        "with warmup learned beyond the unigram loss, at the same rate, per seed. DeepNorm: no "
        "seed fails (an exact count over the seeds run).",
        f"* Xiong's exponents: each seed's least-squares slope of log ‖∂loss/∂W^(2,L)‖ at "
        f"init on log L (L = 4 .. 64): post-LN within {XIONG_TOL:g} of 0, pre-LN within "
        f"{XIONG_TOL:g} of -0.5; the direction (pre-LN's below post-LN's) is a claim of its own.",
        "* Time per step is reported, never judged.",
        "* The chapter's claim (depth/stackability) is the weakest of pre-LN stacks, its steady "
        "gain per doubling, pre-LN without its residual breaks and the plain LSTM degrades; "
        "whether residual + LayerNorm make the LSTM stack too, and which stack reaches the "
        "lower loss, is said beside it.",
    ]
