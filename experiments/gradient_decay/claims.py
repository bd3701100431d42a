"""gradient_decay's claims, judged on what its results.json holds, with the ranges they give.

Every judged quantity is measured once per seed (results.json keeps each seed's value) and
judged by the one rule (anatomy.probes.claims.judged): its 95% t interval over the seeds
inside the claim's range holds, outside does not hold, straddling an edge (or fewer than 3
seeds) is undecided. Each judged claim carries the power its design-seed pilot gives
(results/gradient_decay/pilot.json, seeds disjoint from the judged ones).

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    gradient_decay/pascanu/<regime>_<W kind>_<σ>   fitted rate / (γ·σ_max) <= 1 (one-sided);
                                                   the linear regime with an orthogonal W_hh
                                                   meets it with equality by construction: a
                                                   check of the code, not evidence
    gradient_decay/gates/<cell>_open_gate          a gate that carries (its carry gate's bias
                                                   raised): the cell's rate minus the tanh
                                                   RNN's at the same initialisation (SAME_INIT_RNN,
                                                   every weight ~ U(±1/√H)), per seed, >= 0
    gradient_decay/gates/<cell>                    the default-initialised cell against the same
                                                   RNN: reported beside, not judged (its update
                                                   or forget gate starts near 0.5 and halves
                                                   the carry: it shows the initialisation)
    gradient_decay/attention_direct                self-attention's rate within DECAY_FACTOR
                                                   over the fit distance, both ways
    gradient_decay/clipping                        the raw gradient grows >= EXPLODE_FACTOR
                                                   over the T grid; clipping bounds it
chapter(results), what the chapter quotes, each the weakest of its parts:
    gradient_decay/decay       the report's long-range row (its gradient half): the saturating
                               tanh RNN's gradient falls more than DECAY_FACTOR-fold over the
                               fit distance; attention's does not (gradient_decay/attention_direct)
    gradient_decay/gradients   the scorecard's gradient row: every Pascanu bound, attention's
                               direct path and every gate easing decay
"""

from __future__ import annotations

import dataclasses
import math

from anatomy.errors import BadInputError
from anatomy.probes.claims import (
    CODE_CHECK,
    HOLDS,
    REPORTED,
    Claim,
    Interval,
    Range,
    judge,
    judged,
    judged_parts,
    paired,
    power_from,
    t_interval,
    weakest,
)
from experiments.lab import committed

# The ranges, stated before any run:
PASCANU_SLACK = 0.02  # fitted rate / (γ·σ_max) <= 1 + this: the bound, with room for the fit
DECAY_FACTOR = 10.0  # 'decays': the norm falls more than this-fold over the fit distance;
# 'direct': it changes by less than this-fold over the same distance, either way
EXPLODE_FACTOR = 10.0  # "the raw gradient grows with T": last / first >= this
CLIP_RTOL = 1e-6  # the clipped gradient norm <= clip_norm·(1 + this) (float rounding)
NEAR_ONE = 0.01  # words only: a rate within this of 1 'neither vanishes nor explodes'
# the tanh RNN the gates are compared with: the gated cells' own default initialisation
SAME_INIT_RNN = "rnn default init"
PILOT = "results/gradient_decay/pilot.json"
SOURCES = {  # where each range comes from
    "pascanu": "Pascanu et al. 2013, §3.1: ||∂h_t/∂h_{t−1}|| ≤ γ·σ_max(W_hh), γ = 1 for tanh",
    "gates": "the chapter: gates ease decay (a gate that carries keeps more of the gradient "
    "per step than the tanh RNN it is added to)",
    "direct": f"the chapter: one attention step joins any two positions (derived: a direct "
    f"path changes the norm by less than {DECAY_FACTOR:g}x over the fit distance)",
    "decays": f"the chapter: the tanh RNN's gradient shrinks exponentially (derived: more "
    f"than {DECAY_FACTOR:g}x over the fit distance)",
}


def _power(results, values_of, rng: Range, source: str, scale: str = "linear"):
    """The Power of a claim whose per-seed values `values_of(results)` gives, from the
    committed pilot (None when none is committed or it lacks what the claim reads)."""
    pilot = committed.pilot("gradient_decay")
    if pilot is None:
        return None
    try:
        values = values_of(pilot)
    except KeyError:
        return None
    n = len(results["config"]["seeds"])
    return power_from(values, rng, seeds=n, source=source, pilot=PILOT, scale=scale)


def rate_kind(rate) -> str:
    """'vanishes', 'explodes' or 'neither (≈1)': a per-step rate against 1 ± NEAR_ONE."""
    return (
        "vanishes" if rate < 1 - NEAR_ONE else "explodes" if rate > 1 + NEAR_ONE else "neither (≈1)"
    )


def per_seed(curve: dict, key: str = "rate") -> list:
    """One number of a curve per seed: its fitted `key` ('rate') or a seed entry's own key."""
    return [s["fit"][key] if key in s.get("fit", {}) else s[key] for s in curve["seeds"]]


def direct_range(distance: int) -> Range:
    """A per-step rate whose norm changes less than DECAY_FACTOR-fold over `distance` steps."""
    lo, hi = DECAY_FACTOR ** (-1 / distance), DECAY_FACTOR ** (1 / distance)
    return Range.between(
        lo, hi, f"within {DECAY_FACTOR:g}x over {distance} steps: [{lo:.4g}, {hi:.4g}]/step"
    )


def decays_range(distance: int) -> Range:
    """A per-step rate whose norm falls more than DECAY_FACTOR-fold over `distance` steps."""
    hi = DECAY_FACTOR ** (-1 / distance)
    return Range.at_most(
        hi, f"falls > {DECAY_FACTOR:g}x over {distance} steps: ≤ {hi:.4g}/step (one-sided)"
    )


PASCANU_RANGE = Range.at_most(
    1 + PASCANU_SLACK, f"rate/(γ·σ_max) ≤ 1 (one-sided; +{PASCANU_SLACK:.0%} for the fit)"
)
GATE_RANGE = Range.at_least(0.0, "≥ 0: decays no faster than the RNN (one-sided)")


def _ratio_range(config) -> Range:
    return Range.at_least(
        math.log10(EXPLODE_FACTOR),
        f"log10(raw T={config['clip_lengths'][-1]} / T={config['clip_lengths'][0]}) "
        f"≥ {math.log10(EXPLODE_FACTOR):g} (one-sided)",
    )


def pascanu(results) -> list[Claim]:
    """Every tanh-RNN curve: its fitted per-step rate over γ·σ_max, per seed, <= 1."""
    out = []
    for label, c in results["rnn"].items():
        rates = per_seed(c)
        ratio = t_interval(paired(rates, per_seed(c, "pascanu_bound"), lambda r, b: r / b))
        mean = t_interval(rates)
        claim = judged(
            f"gradient_decay/pascanu/{c['regime']}_{c['w_kind']}_{c['sigma']:g}",
            f"{label}: fitted rate ≤ γ·σ_max (Pascanu)",
            ratio,
            PASCANU_RANGE,
            f"per-step rate {mean} ({rate_kind(mean.point)}); γ·σ_max = "
            f"{max(per_seed(c, 'pascanu_bound')):.4g}, ρ(W) = "
            f"{t_interval(per_seed(c, 'spectral_radius')).point:.3g}; range: {SOURCES['pascanu']}",
        )
        if by_construction(c) and claim.verdict == HOLDS:
            claim = dataclasses.replace(
                claim,
                verdict=CODE_CHECK,
                detail="equal to the bound by construction (linear regime, orthogonal W_hh: "
                "every singular value is σ, tanh' = 1): it checks the code, it is not "
                "evidence; " + claim.detail,
            )
        out.append(claim)
    return out


def by_construction(curve) -> bool:
    """A tanh-RNN curve whose rate equals γ·σ_max by construction: the linear regime with an
    orthogonal W_hh (all singular values σ, tanh' ≈ 1)."""
    return curve["regime"] == "linear" and curve["w_kind"] == "orthogonal"


def _reference(results) -> tuple[str, dict]:
    """The saturating tanh RNN whose σ_max is nearest 1: the gates' and the decay's reference."""
    sat = {k: c for k, c in results["rnn"].items() if c["regime"] == "saturating"}
    if not sat:
        raise BadInputError("gradient_decay: its results have no 'saturating' RNN curve")
    return min(sat.items(), key=lambda kc: abs(kc[1]["sigma"] - 1.0))


GATED = ("lstm", "lstm open gate", "gru", "gru open gate")
CARRYING = ("lstm open gate", "gru open gate")  # the gates that carry: what the claim is on


def _gate_diff(results, name) -> list:
    """Per seed: the cell's rate minus the same-initialisation tanh RNN's (same inputs, readout)."""
    ref = results["other"][SAME_INIT_RNN]
    return paired(per_seed(results["other"][name]), per_seed(ref), lambda a, b: a - b)


def gates(results) -> list[Claim]:
    """Every gated cell against the tanh RNN at the same initialisation (SAME_INIT_RNN), per
    seed: its rate minus the RNN's >= 0. Judged for the gates that carry (CARRYING, the carry
    gate's bias raised by config.open_gate_bias); the default-initialised cells are reported
    beside them (their carry gate starts near 0.5)."""
    ref = results["other"][SAME_INIT_RNN]
    out = []
    for name in GATED:
        cell = results["other"][name]
        diff = t_interval(_gate_diff(results, name))
        rates = f"per-step rates: {name} {t_interval(per_seed(cell))}, {SAME_INIT_RNN} " + str(
            t_interval(per_seed(ref))
        )
        cid = f"gradient_decay/gates/{name.replace(' ', '_')}"
        claim = f"{name}: gates ease decay (its rate minus the tanh RNN's at the same init)"
        if name in CARRYING:
            power = _power(
                results, lambda r, n=name: _gate_diff(r, n), GATE_RANGE, SOURCES["gates"]
            )
            out.append(judged(cid, claim, diff, GATE_RANGE, rates, power=power))
        else:
            verdict, why = judge(diff, GATE_RANGE)
            out.append(
                Claim(
                    claim,
                    str(GATE_RANGE),
                    str(diff),
                    REPORTED,
                    f"the default initialisation, shown beside the gates that carry (by the "
                    f"rule it would read: {verdict}{'; ' + why if why else ''}); {rates}",
                    id=cid,
                )
            )
    return out


def attention_direct(results) -> Claim:
    attn = results["other"]["attention"]
    distance = results["config"]["fit_max_distance"]
    rng = direct_range(distance)
    return judged(
        "gradient_decay/attention_direct",
        "self-attention: no decay with distance (O(1) path)",
        t_interval(per_seed(attn)),
        rng,
        f"far/near {t_interval(per_seed(attn, 'far_over_near'))} (reported)",
        power=_power(results, lambda r: per_seed(r["other"]["attention"]), rng, SOURCES["direct"]),
    )


def clipping_parts(results) -> dict:
    """'grows': log10 of the raw norm at the last T over the first, per seed; 'clipped': the
    clipped norm at the last T, per seed; each an (Interval, Range)."""
    cfg, clip = results["config"], results["clipping"]
    first, last = clip[0], clip[-1]
    growth = paired(
        last["grad_norm"],
        first["grad_norm"],
        lambda a, b: math.log10(a / b) if a > 0 and b > 0 else None,
    )
    return {
        "grows": (t_interval(growth), _ratio_range(cfg)),
        "clipped": (
            t_interval(last["grad_norm_clipped"]),
            Range.at_most(cfg["clip_norm"] * (1 + CLIP_RTOL), f"≤ {cfg['clip_norm']:g}"),
        ),
    }


def clipping(results) -> Claim:
    cfg = results["config"]
    parts = clipping_parts(results)
    first, last = cfg["clip_lengths"][0], cfg["clip_lengths"][-1]
    return judged_parts(
        "gradient_decay/clipping",
        f"exploding RNN σ={cfg['clip_sigma']:g}: gradient grows with T; clipping bounds it",
        f"{parts['grows'][1]}; clipped {parts['clipped'][1]}",
        parts,
        f"raw norm grows 10^{parts['grows'][0]} from T={first} to T={last}; clipped "
        f"{parts['clipped'][0]}",
    )


def table(results) -> list[Claim]:
    return [*pascanu(results), *gates(results), attention_direct(results), clipping(results)]


def _kept(interval: Interval, distance: int) -> str:
    """How much of the gradient a per-step rate keeps over `distance` steps: '9.7e-15'."""
    return f"{interval.point**distance:.2g}"


def decay(results) -> Claim:
    """The gradient half of the report's long-range row: the saturating tanh RNN (σ_max
    nearest 1) decays over the fit distance, attention keeps a direct path; the weaker part
    decides."""
    distance = results["config"]["fit_max_distance"]
    label, rnn = _reference(results)
    rnn_rate = t_interval(per_seed(rnn))
    attn_rate = t_interval(per_seed(results["other"]["attention"]))
    lstm_rate = t_interval(per_seed(results["other"]["lstm"]))
    parts = {
        "RNN": (rnn_rate, decays_range(distance)),
        "attention": (attn_rate, direct_range(distance)),
    }
    rates = {"RNN": rnn_rate, "LSTM": lstm_rate, "attention": attn_rate}
    return judged_parts(
        "gradient_decay/decay",
        "a tanh RNN's gradient decays over distance, self-attention's does not",
        f"RNN: {parts['RNN'][1]}; attention: {parts['attention'][1]}",
        parts,
        f"gradient kept over {distance} steps: "
        + ", ".join(f"{n} {_kept(x, distance)}" for n, x in rates.items()),
        f"per-step rates RNN {rnn_rate}, attention {attn_rate}, LSTM {lstm_rate} (reported) "
        f"(RNN: tanh, σ_max={rnn['sigma']:g}, saturating)",
    )


def gradients(results) -> Claim:
    """docs/chapter.md's gradient row: Pascanu's bound for every tanh-RNN setting, attention's
    direct path and every gate easing decay; the weakest of them decides, and the detail
    names the parts that gave it."""
    bound, gated, attn = pascanu(results), gates(results), attention_direct(results)
    evidence = [c for c in bound if c.verdict != CODE_CHECK]
    carrying = [c for c in gated if c.verdict != REPORTED]
    parts = [*evidence, attn, *carrying]
    verdict = weakest(c.verdict for c in parts)
    held = sum(c.verdict == HOLDS for c in evidence)
    name = lambda c: c.claim.split(":")[0]
    eased = [name(c) for c in carrying if c.verdict == HOLDS]
    not_eased = [f"{name(c)} ({c.verdict})" for c in carrying if c.verdict != HOLDS]
    default = [f"{name(c)} {c.measured}" for c in gated if c.verdict == REPORTED]
    text = (
        f"the fitted per-step rate is within γ·σ_max for {held} of {len(evidence)} tanh-RNN "
        f"settings (and equal to it by construction for {len(bound) - len(evidence)}, a check "
        f"of the code); self-attention's per-step rate is {attn.measured}"
        f"; gates that carry ease decay for {', '.join(eased) or 'none'}"
        + (f", not for {', '.join(not_eased)}" if not_eased else "")
        + (
            f" (rate minus the same-init tanh RNN's; at the default init, reported: "
            f"{'; '.join(default)})"
            if default
            else ""
        )
    )
    weak = [c for c in parts if c.verdict == verdict and verdict != HOLDS]
    return Claim(
        "gradients vanish or explode within γ·σ_max; gates ease it; attention reaches every "
        "position in one step",
        f"every rate within the bound, attention's within {DECAY_FACTOR:g}x over "
        f"{results['config']['fit_max_distance']} steps, every gate that carries easing decay",
        text,
        verdict,
        "; ".join(f"{c.id}: {c.detail}" for c in weak),
        id="gradient_decay/gradients",
    )


def chapter(results) -> list[Claim]:
    return [decay(results), gradients(results)]


def rules() -> list[str]:
    """Each claim's range, for the report's "How verdicts are decided" (the rule itself:
    anatomy.probes.claims.rule_text)."""
    return [
        f"* Gradient decay (per-step rates over seeds): the saturating tanh RNN's norm falls by "
        f"more than {DECAY_FACTOR:g}x over the fit distance (one-sided); attention's changes by "
        f"less than {DECAY_FACTOR:g}x either way; the weaker decides.",
        f"* Pascanu's bound (one-sided): fitted rate / (γ·σ_max) ≤ 1, with "
        f"{PASCANU_SLACK:.0%} for the fit (the linear regime with an orthogonal W_hh meets it "
        "with equality by construction: a check of the code); gates: a gated cell whose carry "
        "gate is open, its rate minus the tanh RNN's at the same initialisation ≥ 0 "
        "(one-sided); the default-initialised cells are reported beside.",
    ]
