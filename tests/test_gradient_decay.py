"""gradient_decay's claims on injected per-seed numbers, both sides of each edge; its report
prose from the measurements. (The experiment itself runs in tests/test_walls.py, on the quick
report's run.)"""

import math

import pytest
from helpers import gradient_decay_results, per_seed

from anatomy import probes
from experiments.gradient_decay import claims
from experiments.gradient_decay import plots as gradient_plots

H, F, N = probes.HOLDS, probes.FAILS, probes.UNDECIDED
REF = "rnn saturating orthogonal σ=1"
D = 100  # the injected fit distance
LO, HI = 10 ** (-1 / D), 10 ** (1 / D)  # attention's 'direct' range, per step


def results(**rates):
    """Every curve the claims read, each at a typical rate, with `rates` ({label: per-seed
    rates}, label spaces written as '_') replacing some."""
    base = {
        "rnn linear orthogonal σ=1.5": per_seed(1.5, 1e-4),
        "rnn linear gaussian σ=1.5": per_seed(0.8, 0.02),
        REF: per_seed(0.85, 0.01),
        "lstm": per_seed(0.9, 0.01),
        "lstm open gate": per_seed(1.0, 0.005),
        "gru": per_seed(0.88, 0.01),
        "gru open gate": per_seed(0.96, 0.005),
        "attention": per_seed(1.0, 0.001),
    }
    base.update({k.replace("_", " "): v for k, v in rates.items()})
    return gradient_decay_results(base, distance=D)


def by_id(res):
    return {c.id: c for c in claims.table(res) + claims.chapter(res)}


def verdict(res, cid):
    return by_id(res)[f"gradient_decay/{cid}"].verdict


@pytest.mark.parametrize(
    "rates, want",
    [
        (per_seed(1.5, 1e-4), H),  # on the bound (the linear regime, orthogonal W)
        (per_seed(1.5 * (1 + claims.PASCANU_SLACK) - 1e-3, 1e-4), H),  # inside the fit's room
        (per_seed(1.6, 1e-3), F),  # above γ·σ_max
        (per_seed(1.52, 0.02), N),  # the interval straddles the bound's edge
        ([1.5, 1.5, math.nan], N),  # a seed not measurable
    ],
)
def test_pascanu_bound_is_one_sided_on_the_rate_over_the_bound(rates, want):
    res = results(**{"rnn linear orthogonal σ=1.5": rates})
    assert verdict(res, "pascanu/linear_orthogonal_1.5") == want


def _all_rates():
    """{label: per-seed rates} of every curve of results()."""
    r = results()
    return {
        k: [s["fit"]["rate"] for s in c["seeds"]] for k, c in {**r["rnn"], **r["other"]}.items()
    }


def test_two_seeds_judge_nothing():
    res = gradient_decay_results({k: v[:2] for k, v in _all_rates().items()}, distance=D)
    judged = [c for c in claims.table(res) + claims.chapter(res)]
    assert {c.verdict for c in judged} == {N}, [(c.id, c.verdict) for c in judged]


def test_a_rate_far_below_the_bound_holds_it():
    """The Gaussian W_hh's rate (its spectral radius, about σ_max/2) is far inside."""
    assert verdict(results(), "pascanu/linear_gaussian_1.5") == H


@pytest.mark.parametrize(
    "gate, want",
    [
        (per_seed(0.90, 0.01), H),  # decays more slowly than the RNN (0.85)
        (per_seed(0.80, 0.01), F),  # decays faster: the gate does not ease it
        (per_seed(0.855, 0.03), N),  # the paired difference straddles 0
    ],
)
def test_gates_are_judged_on_the_paired_difference_with_the_rnn(gate, want):
    assert verdict(results(gru=gate), "gates/gru") == want


@pytest.mark.parametrize(
    "rate, want",
    [
        (per_seed(1.0, 0.001), H),
        (per_seed(LO - 0.002, 0.0005), F),  # decays more than 10x over the distance
        (per_seed(HI + 0.002, 0.0005), F),  # grows more than 10x
        (per_seed(HI, 0.002), N),  # straddles the upper edge
    ],
)
def test_attention_direct_is_two_sided(rate, want):
    res = results(attention=rate)
    assert verdict(res, "attention_direct") == want
    # decay is its weakest part: the RNN decays (0.85 per step), so attention decides
    assert verdict(res, "decay") == want


@pytest.mark.parametrize(
    "rnn, want",
    [
        (per_seed(0.85, 0.01), H),  # falls far more than 10x over 100 steps
        (per_seed(LO + 0.001, 0.0002), F),  # falls less than 10x
        (per_seed(LO, 0.002), N),  # straddles 10x
    ],
)
def test_decay_needs_the_rnn_to_fall_more_than_tenfold(rnn, want):
    # the gates are compared with this RNN too: keep them ahead of it
    res = results(**{REF: rnn, "lstm": per_seed(1.0), "gru": per_seed(1.0)})
    assert verdict(res, "decay") == want


def test_gradients_is_the_weakest_part_never_a_caveat():
    """The chapter's gradient row: every part holding holds; one gate that does not ease decay
    makes the row not hold (it used to be 'holds with a caveat', a combination's floor)."""
    assert verdict(results(), "gradients") == H
    res = results(gru=per_seed(0.65, 0.01))
    row = by_id(res)["gradient_decay/gradients"]
    assert row.verdict == F and row.verdict != probes.CAVEAT
    assert "gradient_decay/gates/gru" in row.detail and "not for gru" in row.measured
    res = results(gru=per_seed(0.855, 0.03))  # straddling: not shown
    assert verdict(res, "gradients") == N
    res = results(**{"rnn linear orthogonal σ=1.5": per_seed(1.6, 1e-3)})
    assert verdict(res, "gradients") == F


@pytest.mark.parametrize(
    "raw_last, clipped, want",
    [
        (per_seed(1e7, 1e5), per_seed(1.0), H),
        (per_seed(2000.0, 10.0), per_seed(1.0), F),  # grew less than 10x from 300
        (per_seed(3000.0, 2000.0), per_seed(1.0), N),  # growth straddles 10x
        (per_seed(1e7, 1e5), per_seed(1.5, 0.01), F),  # clipping did not bound it
    ],
)
def test_clipping_needs_growth_and_a_bound(raw_last, clipped, want):
    res = gradient_decay_results(
        _all_rates(), distance=D, clip=(per_seed(300.0), raw_last, clipped)
    )
    assert verdict(res, "clipping") == want


def test_report_prose_comes_from_the_measurements():
    gauss = {"w_kind": "gaussian", "seeds": [{"sigma_max": 2.0, "spectral_radius": 1.14}]}
    assert gradient_plots._radius_over_sigma({"a": gauss}) == "0.57"
    assert gradient_plots._radius_over_sigma({}) == "—"
    sat = {"regime": "saturating", "sigma": 1.5, "seeds": [{"fit": {"rate": 1.009}}]}
    assert "neither decays nor explodes" in gradient_plots._saturating_note({"a": sat})
    sat["seeds"] = [{"fit": {"rate": 0.9}}, {"fit": {"rate": 0.92}}]
    assert "it decays, so exploding" in gradient_plots._saturating_note({"a": sat})
    assert "0.91/step" in gradient_plots._saturating_note({"a": sat})  # the mean of the seeds


def test_rules_say_each_range_and_leave_the_rule_to_claims():
    text = "\n".join(claims.rules())
    assert "γ·σ_max" in text and "one-sided" in text and "caveat" not in text
