"""gradient_decay's claims, judged on what its results.json holds, with the ranges they give.

Every judged quantity is measured once per seed (results.json keeps each seed's value) and
judged by the one rule (anatomy.probes.claims.judged): its 95% t interval over the seeds
inside the claim's range holds, outside does not hold, straddling an edge (or fewer than 3
seeds) is not shown.

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    gradient_decay/pascanu/<regime>_<W kind>_<σ>   fitted rate / (γ·σ_max) <= 1 (one-sided)
    gradient_decay/gates/<cell>                    the cell's rate minus the saturating tanh
                                                   RNN's (σ_max = 1), per seed, >= 0
    gradient_decay/attention_direct                self-attention's rate within DECAY_FACTOR
                                                   over the fit distance, both ways
    gradient_decay/clipping                        the raw gradient grows >= EXPLODE_FACTOR
                                                   over the T grid; clipping bounds it
chapter(results), what the chapter quotes, each the weakest of its parts:
    gradient_decay/decay       the report's long-range row (its gradient half): the saturating
                               tanh RNN's gradient falls more than DECAY_FACTOR-fold over the
                               fit distance; attention's does not (gradient_decay/attention_direct)
    gradient_decay/gradients   docs/chapter.md's gradient row: every Pascanu bound, attention's
                               direct path and every gate easing decay
"""

from __future__ import annotations

import math

from anatomy.errors import BadInputError
from anatomy.probes.claims import (
    HOLDS,
    Claim,
    Interval,
    Range,
    judged,
    judged_parts,
    t_interval,
    weakest,
)

# The ranges, stated before any run:
PASCANU_SLACK = 0.02  # fitted rate / (γ·σ_max) <= 1 + this: the bound, with room for the fit
DECAY_FACTOR = 10.0  # 'decays': the norm falls more than this-fold over the fit distance;
# 'direct': it changes by less than this-fold over the same distance, either way
EXPLODE_FACTOR = 10.0  # "the raw gradient grows with T": last / first >= this
CLIP_RTOL = 1e-6  # the clipped gradient norm <= clip_norm·(1 + this) (float rounding)
NEAR_ONE = 0.01  # words only: a rate within this of 1 'neither vanishes nor explodes'


def rate_kind(rate) -> str:
    """'vanishes', 'explodes' or 'neither (≈1)': a per-step rate against 1 ± NEAR_ONE."""
    return (
        "vanishes" if rate < 1 - NEAR_ONE else "explodes" if rate > 1 + NEAR_ONE else "neither (≈1)"
    )


def per_seed(curve: dict, key: str = "rate") -> list:
    """One number of a curve per seed: its fitted `key` ('rate') or a seed entry's own key."""
    return [s["fit"][key] if key in s.get("fit", {}) else s[key] for s in curve["seeds"]]


def _paired(a: list, b: list, op) -> list:
    """op(a_s, b_s) per seed (None where either is missing: the interval is then not finite)."""
    return [None if x is None or y is None else op(x, y) for x, y in zip(a, b)]


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
        ratio = t_interval(_paired(rates, per_seed(c, "pascanu_bound"), lambda r, b: r / b))
        mean = t_interval(rates)
        out.append(
            judged(
                f"gradient_decay/pascanu/{c['regime']}_{c['w_kind']}_{c['sigma']:g}",
                f"{label}: fitted rate ≤ γ·σ_max (Pascanu)",
                ratio,
                PASCANU_RANGE,
                f"per-step rate {mean} ({rate_kind(mean.point)}); γ·σ_max = "
                f"{max(per_seed(c, 'pascanu_bound')):.4g}, ρ(W) = "
                f"{t_interval(per_seed(c, 'spectral_radius')).point:.3g}",
            )
        )
    return out


def _reference(results) -> tuple[str, dict]:
    """The saturating tanh RNN whose σ_max is nearest 1: the gates' and the decay's reference."""
    sat = {k: c for k, c in results["rnn"].items() if c["regime"] == "saturating"}
    if not sat:
        raise BadInputError("gradient_decay: its results have no 'saturating' RNN curve")
    return min(sat.items(), key=lambda kc: abs(kc[1]["sigma"] - 1.0))


GATED = ("lstm", "lstm open gate", "gru", "gru open gate")


def gates(results) -> list[Claim]:
    """The LSTM and GRU (default and open gate): per seed, the cell's rate minus the reference
    RNN's (the same seed's inputs and readout) >= 0: the gate eases decay."""
    label, ref = _reference(results)
    out = []
    for name in GATED:
        cell = results["other"][name]
        diff = t_interval(_paired(per_seed(cell), per_seed(ref), lambda a, b: a - b))
        out.append(
            judged(
                f"gradient_decay/gates/{name.replace(' ', '_')}",
                f"{name}: gates ease decay (its rate minus the {label}'s)",
                diff,
                GATE_RANGE,
                f"per-step rates: {name} {t_interval(per_seed(cell))}, {label} "
                f"{t_interval(per_seed(ref))}",
            )
        )
    return out


def attention_direct(results) -> Claim:
    attn = results["other"]["attention"]
    distance = results["config"]["fit_max_distance"]
    return judged(
        "gradient_decay/attention_direct",
        "self-attention: no decay with distance (O(1) path)",
        t_interval(per_seed(attn)),
        direct_range(distance),
        f"far/near {t_interval(per_seed(attn, 'far_over_near'))} (reported)",
    )


def clipping_parts(results) -> dict:
    """'grows': log10 of the raw norm at the last T over the first, per seed; 'clipped': the
    clipped norm at the last T, per seed; each an (Interval, Range)."""
    cfg, clip = results["config"], results["clipping"]
    first, last = clip[0], clip[-1]
    growth = _paired(
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
    parts = [*bound, attn, *gated]
    verdict = weakest(c.verdict for c in parts)
    held = sum(c.verdict == HOLDS for c in bound)
    name = lambda c: c.claim.split(":")[0]
    eased = [name(c) for c in gated if c.verdict == HOLDS]
    not_eased = [f"{name(c)} ({c.verdict})" for c in gated if c.verdict != HOLDS]
    text = (
        f"the fitted per-step rate is within γ·σ_max for {held} of {len(bound)} tanh-RNN "
        f"settings; self-attention's per-step rate is {attn.measured}"
        f"; the gates ease decay for {', '.join(eased) or 'none'}"
        + (f", not for {', '.join(not_eased)}" if not_eased else "")
    )
    weak = [c for c in parts if c.verdict == verdict and verdict != HOLDS]
    return Claim(
        "gradients vanish or explode within γ·σ_max; gates ease it; attention reaches every "
        "position in one step",
        f"every rate within the bound, attention's within {DECAY_FACTOR:g}x over "
        f"{results['config']['fit_max_distance']} steps, every gate easing decay",
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
        f"{PASCANU_SLACK:.0%} for the fit; gates: a gated cell's rate minus the saturating "
        "RNN's ≥ 0 (one-sided).",
    ]
