"""The one verdict rule (anatomy/probes/claims.py): a Range stated before the run against the
Interval a run measured. Every edge is tested from both sides with injected numbers."""

import math

import numpy as np
import pytest
from scipy import stats

from anatomy.probes import claims
from anatomy.probes.claims import (
    CAVEAT,
    FAILS,
    HOLDS,
    MIN_SEEDS,
    NOT_SHOWN,
    Claim,
    Interval,
    Range,
    bootstrap_interval,
    estimate,
    exact,
    judge,
    judged,
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
    rows = rng.normal(2.0, 0.1, size=(6, 4))  # 6 seeds, 4 measurements each
    a = bootstrap_interval(rows, lambda r: r.mean())
    b = bootstrap_interval(rows, lambda r: r.mean())
    assert a == b and a.method == "bootstrap" and a.n == 6
    assert a.lo < a.point < a.hi and a.hi - a.lo < 0.2
    # identical seeds: a zero-width interval at the statistic
    same = bootstrap_interval(np.ones((5, 3)), lambda r: r.sum() / r.size)
    assert same.lo == same.hi == same.point == 1.0


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
    assert v == NOT_SHOWN and "straddles the edge 5" in why
    v, why = judge(_at(9, 11), rng)
    assert v == NOT_SHOWN and "straddles the edge 10" in why
    assert judge(_at(4, 11), rng)[0] == NOT_SHOWN  # wider than the range: straddles both


def test_one_sided_ranges_and_what_the_rule_cannot_judge():
    assert judge(_at(5, 1e9), Range.at_least(5))[0] == HOLDS
    assert judge(_at(1, 4.99), Range.at_least(5))[0] == FAILS
    assert judge(_at(4, 6), Range.at_least(5))[0] == NOT_SHOWN
    assert judge(_at(-3, 0.25), Range.at_most(0.25))[0] == HOLDS
    assert judge(_at(0.26, 0.3), Range.at_most(0.25))[0] == FAILS
    # too few seeds, a non-finite value, a prediction: never a verdict either way
    v, why = judge(_at(6, 9, n=MIN_SEEDS - 1), Range.between(5, 10))
    assert v == NOT_SHOWN and f"fewer than {MIN_SEEDS}" in why
    assert judge(t_interval([6.0, math.nan, 7.0]), Range.between(5, 10))[0] == NOT_SHOWN
    v, why = judge(estimate(7.0, "H100 datasheet peaks"), Range.between(5, 10))
    assert v == NOT_SHOWN and "estimate" in why and "H100" in why
    # an exact (deterministic) measurement is judged as it is
    assert judge(exact(12), Range.between(12, 12))[0] == HOLDS
    assert judge(exact(11), Range.between(12, 12))[0] == FAILS
    assert judge(exact(None), Range.between(12, 12))[0] == NOT_SHOWN
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
    assert d.verdict == NOT_SHOWN and d.detail == "1 seed: fewer than 3; seed 0"
    assert str(exact(4)) == "4" and str(estimate(264.4, "a")) == "264.4 (an estimate)"


def test_a_caveat_is_only_ever_a_named_reason():
    with pytest.raises(ValueError, match="is not a caveat"):
        Claim("c", "e", "m", HOLDS, caveat="why")
    with pytest.raises(ValueError, match="needs its named reason"):
        Claim("c", "e", "m", CAVEAT)
    c = Claim("c", "e", "m", CAVEAT, caveat="the fine-tune, not the encoding, did it", id="a/b")
    row = claims.claims_json([c])[0]
    assert row["caveat"] == c.caveat and claims.from_json([row]) == [c]
    assert "caveat" not in claims.claims_json([Claim("c", "e", "m", HOLDS)])[0]
    # a composite is its weakest part: a failed part is never softened into a caveat
    assert claims.weakest([HOLDS, FAILS]) == FAILS
    assert claims.weakest([HOLDS, NOT_SHOWN]) == NOT_SHOWN
    assert claims.weakest([HOLDS, HOLDS]) == HOLDS
    assert "straddling" in claims.rule_text()


def test_a_claim_of_parts_is_its_weakest_part_with_that_parts_reason():
    above = (claims.t_interval([1.0, 1.1, 0.9]), claims.Range.at_least(0.5))
    below = (claims.t_interval([0.1, 0.2, 0.15]), claims.Range.at_least(0.5))
    edge = (claims.t_interval([0.3, 0.7, 0.5]), claims.Range.at_least(0.5))
    c = claims.judged_parts("x/y", "claim", "expected", {"a": above, "b": edge}, "m", "more")
    assert (c.id, c.claim, c.expected, c.measured) == ("x/y", "claim", "expected", "m")
    assert c.verdict == claims.NOT_SHOWN and c.detail.startswith("b: the interval straddles")
    assert c.detail.endswith("; more")
    c = claims.judged_parts("x/y", "c", "e", {"a": above, "b": edge, "c": below}, "m")
    assert c.verdict == claims.FAILS and c.detail.startswith("c: below") and "b:" not in c.detail
    assert claims.judged_parts("x/y", "c", "e", {"a": above}, "m").verdict == claims.HOLDS
