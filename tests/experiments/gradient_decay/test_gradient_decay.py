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
REF = "rnn saturating orthogonal σ=1"  # the decay claim's RNN
SAME = claims.SAME_INIT_RNN  # the gates' reference: the tanh RNN at their own init
D = 100  # the injected fit distance
LO, HI = 10 ** (-1 / D), 10 ** (1 / D)  # attention's 'direct' range, per step


def results(**rates):
    """Every curve the claims read, each at a typical rate, with `rates` ({label: per-seed
    rates}, label spaces written as '_') replacing some."""
    base = {
        "rnn linear orthogonal σ=1.5": per_seed(1.5, 1e-4),
        "rnn linear gaussian σ=1.5": per_seed(0.8, 0.02),
        REF: per_seed(0.85, 0.01),
        SAME: per_seed(0.6, 0.01),
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
    res = results(**{"rnn linear gaussian σ=1.5": rates})
    assert verdict(res, "pascanu/linear_gaussian_1.5") == want


def _all_rates():
    """{label: per-seed rates} of every curve of results()."""
    r = results()
    return {
        k: [s["fit"]["rate"] for s in c["seeds"]] for k, c in {**r["rnn"], **r["other"]}.items()
    }


def test_two_seeds_judge_nothing():
    res = gradient_decay_results({k: v[:2] for k, v in _all_rates().items()}, distance=D)
    judged = [c for c in claims.table(res) + claims.chapter(res) if c.verdict != probes.REPORTED]
    assert {c.verdict for c in judged} == {N}, [(c.id, c.verdict) for c in judged]


def test_a_rate_far_below_the_bound_holds_it():
    """The Gaussian W_hh's rate (its spectral radius, about σ_max/2) is far inside."""
    assert verdict(results(), "pascanu/linear_gaussian_1.5") == H


@pytest.mark.parametrize(
    "gate, want",
    [
        (per_seed(0.90, 0.01), H),  # decays more slowly than the same-init RNN (0.6)
        (per_seed(0.50, 0.01), F),  # decays faster: the gate does not ease it
        (per_seed(0.605, 0.03), N),  # the paired difference straddles 0
    ],
)
def test_gates_that_carry_are_judged_on_the_paired_difference_with_the_same_init_rnn(gate, want):
    assert verdict(results(gru_open_gate=gate), "gates/gru_open_gate") == want
    assert verdict(results(lstm_open_gate=gate), "gates/lstm_open_gate") == want


def test_default_initialised_gates_are_reported_beside_never_judged():
    """The GRU's update gate starts near 0.5 and halves the carry: a default-initialised cell
    shows the initialisation, not whether gates ease decay (it is shown, with what the rule
    would say, and never caps the row)."""
    slow = results(gru=per_seed(0.4, 0.01))  # far below the same-init RNN
    c = by_id(slow)["gradient_decay/gates/gru"]
    assert c.verdict == probes.REPORTED and "does not hold here" in c.detail
    assert verdict(slow, "gradients") == H


def test_the_orthogonal_linear_rnn_is_a_check_of_the_code_not_evidence():
    """Its rate equals γ·σ_max by construction (0.9999 of the bound): labelled a check of the
    code; a Gaussian W_hh, whose rate is its spectral radius, is evidence."""
    res = results()
    assert verdict(res, "pascanu/linear_orthogonal_1.5") == probes.CODE_CHECK
    assert verdict(res, "pascanu/linear_gaussian_1.5") == H
    # a broken check is still a failure that caps the row
    broken = results(**{"rnn linear orthogonal σ=1.5": per_seed(1.6, 1e-3)})
    assert verdict(broken, "pascanu/linear_orthogonal_1.5") == F
    assert verdict(broken, "gradients") == F


def test_every_claim_can_hold_and_fail():
    """Each judged claim reaches holds with one set of injected rates and does not hold here
    with another (the orthogonal linear RNN's bound is a check of the code: it reads 'a
    check of the code' when it holds; the default-initialised gates are reported)."""
    good = by_id(results())
    bad = by_id(
        results(
            **{
                "rnn linear orthogonal σ=1.5": per_seed(1.7, 1e-3),
                "rnn linear gaussian σ=1.5": per_seed(1.7, 1e-3),
                REF: per_seed(1.1, 0.001),  # above its bound 1, and no decay
                "lstm open gate": per_seed(0.4, 0.01),
                "gru open gate": per_seed(0.4, 0.01),
                "attention": per_seed(0.5, 0.001),
            }
        )
    )
    no_growth = (per_seed(300.0), per_seed(310.0), per_seed(2.0))
    clip = "gradient_decay/clipping"
    bad[clip] = by_id(gradient_decay_results(_all_rates(), distance=D, clip=no_growth))[clip]
    reported = {"gradient_decay/gates/lstm", "gradient_decay/gates/gru"}
    for cid, claim in good.items():
        if cid in reported:
            assert claim.verdict == probes.REPORTED
            continue
        if "linear_orthogonal" in cid:
            assert claim.verdict == probes.CODE_CHECK, cid
        else:
            assert claim.verdict == H, (cid, claim.verdict, claim.detail)
        assert bad[cid].verdict == F, (cid, bad[cid].verdict, bad[cid].detail)


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
    res = results(**{REF: rnn})
    assert verdict(res, "decay") == want


def test_gradients_is_the_weakest_part():
    """The chapter's gradient row: every part holding holds; one gate that carries and does
    not ease decay makes the row not hold."""
    assert verdict(results(), "gradients") == H
    res = results(gru_open_gate=per_seed(0.5, 0.01))
    row = by_id(res)["gradient_decay/gradients"]
    assert row.verdict == F
    assert "gradient_decay/gates/gru_open_gate" in row.detail
    assert "not for gru open gate" in row.measured
    res = results(gru_open_gate=per_seed(0.605, 0.03))  # straddling: undecided
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
