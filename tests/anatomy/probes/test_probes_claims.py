"""The one verdict rule (anatomy/probes/claims.py): a Range stated before the run against the
Interval a run measured. Every edge is tested from both sides with injected numbers."""

import math

import numpy as np
import pytest
from scipy import stats

from anatomy.probes import claims
from anatomy.probes.claims import (
    BOOTSTRAP_MIN,
    CODE_CHECK,
    DID_NOT_LEARN,
    FAILS,
    HOLDS,
    MIN_SEEDS,
    NEEDS_ACCELERATOR,
    REPORTED,
    UNDECIDED,
    Claim,
    Interval,
    Power,
    Range,
    bootstrap_interval,
    estimate,
    exact,
    judge,
    judged,
    power_from,
    seeds_needed,
    t_interval,
)


def test_t_interval_is_mean_plus_minus_t_s_over_root_n():
    vals = [1.0, 2.0, 4.0, 7.0]
    got = t_interval(vals)
    half = stats.t.ppf(0.975, 3) * np.std(vals, ddof=1) / 2.0  # the textbook formula
    assert got.point == pytest.approx(3.5)
    assert (got.lo, got.hi) == pytest.approx((3.5 - half, 3.5 + half))
    assert got.n == 4 and got.over == "seeds" and got.method == "t"
    # a diverged seed: not measurable; one value: no interval
    assert not math.isfinite(t_interval([1.0, None, 2.0]).lo)
    assert not math.isfinite(t_interval([1.0]).hi) and t_interval([1.0]).n == 1


def test_bootstrap_interval_is_reproducible_and_covers_the_statistic():
    rng = np.random.default_rng(3)
    rows = rng.normal(2.0, 0.1, size=(BOOTSTRAP_MIN, 4))  # 8 seeds, 4 measurements each
    a = bootstrap_interval(rows, lambda r: r.mean())
    b = bootstrap_interval(rows, lambda r: r.mean())
    assert a == b and a.method == "bootstrap" and a.n == BOOTSTRAP_MIN
    assert a.lo < a.point < a.hi and a.hi - a.lo < 0.2
    # identical seeds: a zero-width interval at the statistic
    same = bootstrap_interval(np.ones((BOOTSTRAP_MIN, 3)), lambda r: r.sum() / r.size)
    assert same.lo == same.hi == same.point == 1.0


def test_a_bootstrap_over_few_values_is_refused_it_would_be_min_to_max():
    """Over 3 values a percentile bootstrap of the mean is [lowest, highest]: about 75%
    coverage under a 95% label. The rule refuses it below BOOTSTRAP_MIN rows."""
    vals = np.array([[1.0], [2.0], [3.0]])
    with pytest.raises(ValueError, match="t_interval"):
        bootstrap_interval(vals, lambda r: r.mean())
    # what it would have said (the percentile of the resampled means): [min, max]
    rng = np.random.default_rng(0)
    draws = [vals[rng.integers(0, 3, 3)].mean() for _ in range(2000)]
    assert np.quantile(draws, [0.025, 0.975]) == pytest.approx([1.0, 3.0], abs=0.34)


def test_t_interval_coverage_is_its_level_where_the_percentile_bootstrap_falls_short():
    """Over 3 normal values the t interval covers the mean ~95% of the time; [min, max] (the
    3-value percentile bootstrap) 75%."""
    rng = np.random.default_rng(1)
    x = rng.normal(0.0, 1.0, size=(4000, 3))
    half = stats.t.ppf(0.975, 2) * x.std(axis=1, ddof=1) / math.sqrt(3)
    t_cover = np.mean(np.abs(x.mean(axis=1)) <= half)
    minmax = np.mean((x.min(axis=1) <= 0) & (x.max(axis=1) >= 0))
    assert t_cover == pytest.approx(0.95, abs=0.015)
    assert minmax == pytest.approx(0.75, abs=0.02)


def test_a_draw_without_a_crossing_is_censored_not_nan():
    """A resample whose statistic has no crossing in the range measured (NaN) is censored
    beyond it: one such draw moves the interval's end, never makes the verdict 'not
    measurable'; an interval that runs beyond the range measured is undecided."""
    rows = np.arange(1.0, 11.0)[:, None]
    stat = lambda r: np.nan if r.mean() > 7.0 else r.mean()  # 'no crossing' for high draws
    got = bootstrap_interval(rows, stat)
    assert math.isfinite(got.point) and math.isfinite(got.lo) and got.hi == math.inf
    assert "beyond the range measured" in str(got)
    v, why = judge(got, Range.between(1, 100))
    assert v == UNDECIDED and "beyond the range measured" in why
    # every draw crosses: an ordinary finite interval
    assert math.isfinite(bootstrap_interval(rows, lambda r: r.mean()).hi)
    # a statistic censored below (e.g. a crossing before the first N measured)
    low = bootstrap_interval(rows, stat, censor=-math.inf)
    assert low.lo == -math.inf or math.isfinite(low.lo)


def test_a_bounded_quantity_is_clipped_at_its_bound_and_marked():
    """No 'accuracy 1.079' on the page: an accuracy's interval ends at 1, marked."""
    acc = t_interval([0.867, 0.938, 0.758], bounds=(0.0, 1.0))
    raw = t_interval([0.867, 0.938, 0.758])
    assert raw.hi > 1.0 and acc.hi == 1.0 and acc.lo == raw.lo and acc.clipped == "hi"
    assert "1 (the bound)" in str(acc)
    bleu = t_interval([99.0, 100.0, 99.4], bounds=(0.0, 100.0))
    assert bleu.hi == 100.0 and bleu.clipped == "hi"
    both = t_interval([0.0, 1.0, 0.0], bounds=(0.0, 1.0))
    assert (both.lo, both.hi, both.clipped) == (0.0, 1.0, "both")
    inside = t_interval([0.4, 0.5, 0.45], bounds=(0.0, 1.0))
    assert inside.clipped == "" and "bound" not in str(inside)


def test_a_ratio_takes_its_interval_on_a_log_scale():
    """A ratio's interval is the mean log's, exponentiated: the geometric mean, never below 0
    (a linear t interval of [0.4, 0.9, 0.05] reaches below 0)."""
    vals = [0.4, 0.9, 0.05]
    got = t_interval(vals, scale="log")
    logs = np.log(vals)
    half = stats.t.ppf(0.975, 2) * logs.std(ddof=1) / math.sqrt(3)
    assert got.point == pytest.approx(math.exp(logs.mean()))
    assert (got.lo, got.hi) == pytest.approx(
        (math.exp(logs.mean() - half), math.exp(logs.mean() + half))
    )
    assert got.lo > 0 and t_interval(vals).lo < 0
    assert "log scale" in str(got)
    with pytest.raises(ValueError, match="> 0"):
        t_interval([1.0, -1.0, 2.0], scale="log")


def _at(lo, hi, n=MIN_SEEDS):
    return Interval((lo + hi) / 2, lo, hi, n)


@pytest.mark.parametrize(
    "rng",
    [Range.between(5, 10), Range.around(7.5, 2.5), Range(5.0, 10.0)],
)
def test_the_rule_on_both_sides_of_each_edge(rng):
    assert judge(_at(6, 9), rng) == (HOLDS, "")
    assert judge(_at(5, 10), rng)[0] == HOLDS  # the edges are inclusive
    assert judge(_at(3, 4.9), rng)[0] == FAILS
    assert judge(_at(10.1, 12), rng)[0] == FAILS
    v, why = judge(_at(4, 6), rng)
    assert v == UNDECIDED and "straddles the edge 5" in why
    v, why = judge(_at(9, 11), rng)
    assert v == UNDECIDED and "straddles the edge 10" in why
    assert judge(_at(4, 11), rng)[0] == UNDECIDED  # wider than the range: straddles both


def test_one_sided_ranges_and_what_the_rule_cannot_judge():
    assert judge(_at(5, 1e9), Range.at_least(5))[0] == HOLDS
    assert judge(_at(1, 4.99), Range.at_least(5))[0] == FAILS
    assert judge(_at(4, 6), Range.at_least(5))[0] == UNDECIDED
    assert judge(_at(-3, 0.25), Range.at_most(0.25))[0] == HOLDS
    assert judge(_at(0.26, 0.3), Range.at_most(0.25))[0] == FAILS
    # too few seeds, a non-finite value, a prediction: never a verdict either way
    v, why = judge(_at(6, 9, n=MIN_SEEDS - 1), Range.between(5, 10))
    assert v == UNDECIDED and f"fewer than {MIN_SEEDS}" in why
    assert judge(t_interval([6.0, math.nan, 7.0]), Range.between(5, 10))[0] == UNDECIDED
    v, why = judge(estimate(7.0, "H100 datasheet peaks"), Range.between(5, 10))
    assert v == NEEDS_ACCELERATOR and "estimate" in why and "H100" in why
    # an exact (deterministic) measurement is judged as it is
    assert judge(exact(12), Range.between(12, 12))[0] == HOLDS
    assert judge(exact(11), Range.between(12, 12))[0] == FAILS
    assert judge(exact(None), Range.between(12, 12))[0] == UNDECIDED
    with pytest.raises(ValueError, match="bounds nothing"):
        Range(3.0, 1.0)
    with pytest.raises(ValueError, match="bounds nothing"):
        Range()


def test_judged_claims_print_the_range_the_interval_and_the_reason():
    c = judged(
        "x/speedup",
        "attention is 5-10x faster",
        t_interval([6.5, 7.0, 7.5]),
        Range.between(5, 10, "5-10x (the chapter)"),
    )
    assert c.verdict == HOLDS and c.expected == "5-10x (the chapter)" and c.id == "x/speedup"
    assert c.measured.startswith("7 [") and c.measured.endswith("(95% t, 3 seeds)")
    d = judged("x/one", "one seed", t_interval([7.0]), Range.between(5, 10), detail="seed 0")
    assert d.verdict == UNDECIDED
    assert d.detail == "1 seed: fewer than 3; 3 or more would decide it; seed 0"
    assert str(exact(4)) == "4" and str(estimate(264.4, "a")) == "264.4 (an estimate)"


def test_what_would_decide_a_straddling_interval_is_said():
    """An undecided verdict says what would decide it: the seeds a t interval at this spread
    needs to clear the edge, or that no count can (the mean sits on the edge)."""
    near = t_interval([0.55, 0.7, 0.6])  # mean 0.617, straddles 0.5
    v, why = judge(near, Range.at_least(0.5))
    assert v == UNDECIDED and "straddles the edge 0.5" in why
    need = seeds_needed(near.spread, near.point - 0.5)
    assert need is not None and need > 3 and f"about {need} seeds" in why
    flat = t_interval([0.45, 0.55, 0.5])  # the mean on the edge
    assert "cannot clear it" in judge(flat, Range.at_least(0.5))[1]
    # seeds_needed is the textbook count: t(0.975, n-1)·s/√n < margin
    assert seeds_needed(1.0, 1.0) == 7  # n=6: 2.571/√6 = 1.05; n=7: 2.447/√7 = 0.925
    assert seeds_needed(1.0, 0.0) is None and seeds_needed(0.0, 0.1) == 2


def test_a_failed_precondition_is_did_not_learn_in_words():
    c = judged(
        "x/better",
        "the Transformer translates better",
        t_interval([1.0, 2.0, 1.5]),
        Range.at_least(0.0),
        precondition=(False, "the Transformer did not learn the task: best BLEU 8.9 < 10"),
    )
    assert c.verdict == DID_NOT_LEARN and c.detail.startswith("the Transformer did not learn")
    assert c.measured.startswith("1.5 [")  # the number is still shown
    ok = judged(
        "x/b", "c", t_interval([1.0, 2.0, 1.5]), Range.at_least(0.0), precondition=(True, "")
    )
    assert ok.verdict == HOLDS


def test_the_weakest_part_and_what_never_caps_a_claim():
    w = claims.weakest
    assert w([HOLDS, FAILS]) == FAILS and w([HOLDS, UNDECIDED]) == UNDECIDED
    assert w([UNDECIDED, DID_NOT_LEARN]) == DID_NOT_LEARN and w([DID_NOT_LEARN, FAILS]) == FAILS
    assert w([HOLDS, HOLDS]) == HOLDS
    # an accelerator figure, a check of the code, a reported number: beside, never a cap
    assert w([HOLDS, NEEDS_ACCELERATOR, CODE_CHECK, REPORTED]) == HOLDS
    assert w([NEEDS_ACCELERATOR, REPORTED]) == NEEDS_ACCELERATOR
    assert w([CODE_CHECK]) == CODE_CHECK and w([]) == claims.MISSING
    assert claims.beside([HOLDS, REPORTED, NEEDS_ACCELERATOR]) == [NEEDS_ACCELERATOR, REPORTED]
    text = claims.rule_text()
    for word in (HOLDS, FAILS, UNDECIDED, DID_NOT_LEARN, NEEDS_ACCELERATOR, REPORTED):
        assert word in text
    row = claims.claims_json([Claim("c", "e", "m", HOLDS, id="a/b", power="pilot")])[0]
    assert row["power"] == "pilot" and claims.from_json([row])[0].power == "pilot"
    assert "power" not in claims.claims_json([Claim("c", "e", "m", HOLDS)])[0]


def test_power_says_whether_the_seeds_resolve_the_claim():
    """The issue's example: a t half-width over 3 seeds is 2.48 standard deviations, so
    copy's bar of 0.9 with s = 0.09 and an effect of 0.85 cannot be resolved by 3 seeds."""
    assert stats.t.ppf(0.975, 2) / math.sqrt(3) == pytest.approx(2.48, abs=0.005)
    p = Power(0.85, 0.09, 3, 0.9, 3, "Jelassi et al. 2024", "results/copy/pilot.json")
    assert not p.resolves and p.half_width == pytest.approx(2.484 * 0.09, rel=1e-3)
    assert "NOT below" in p.text() and "Jelassi" in p.text()
    far = power_from([0.98, 0.99, 0.97], Range.at_least(0.9), seeds=5, source="s", pilot="p")
    assert far.edge == 0.9 and far.effect == pytest.approx(0.98) and far.resolves
    c = judged("x/y", "c", t_interval([1.0, 1.1, 0.9]), Range.at_least(0.5), power=far)
    assert c.power == far.text()


def test_a_claim_of_parts_is_its_weakest_part_with_that_parts_reason():
    above = (claims.t_interval([1.0, 1.1, 0.9]), claims.Range.at_least(0.5))
    below = (claims.t_interval([0.1, 0.2, 0.15]), claims.Range.at_least(0.5))
    edge = (claims.t_interval([0.3, 0.7, 0.5]), claims.Range.at_least(0.5))
    c = claims.judged_parts("x/y", "claim", "expected", {"a": above, "b": edge}, "m", "more")
    assert (c.id, c.claim, c.expected, c.measured) == ("x/y", "claim", "expected", "m")
    assert c.verdict == claims.UNDECIDED and c.detail.startswith("b: the interval straddles")
    assert c.detail.endswith("; more")
    c = claims.judged_parts("x/y", "c", "e", {"a": above, "b": edge, "c": below}, "m")
    assert c.verdict == claims.FAILS and c.detail.startswith("c: below") and "b:" not in c.detail
    assert claims.judged_parts("x/y", "c", "e", {"a": above}, "m").verdict == claims.HOLDS
