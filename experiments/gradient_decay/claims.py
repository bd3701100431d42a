"""gradient_decay's claims, judged on what its results.json holds, with their thresholds.

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    gradient_decay/pascanu/<regime>_<W kind>_<σ>   the fitted rate is within γ·σ_max
    gradient_decay/gates/<cell>                    the gates ease decay (LSTM, GRU, open gates)
    gradient_decay/attention_direct                self-attention's gradient does not decay
    gradient_decay/clipping                        the exploding gradient grows; clipping bounds it
chapter(results), what the chapter quotes, made of those verdicts:
    gradient_decay/decay       the report's long-range row (its gradient half): the saturating
                               tanh RNN's gradient falls more than DECAY_FACTOR-fold over the
                               fit distance, attention's does not (gradient_decay/attention_direct)
    gradient_decay/gradients   docs/chapter.md's gradient row: Pascanu's bound and attention's
                               flat path hold; the gates' easing is the caveat where it fails
"""

from __future__ import annotations

import math

from anatomy.errors import BadInputError
from anatomy.probes.claims import CAVEAT, HOLDS, Claim, finite, holds, weakest

NEAR_ONE = 0.01  # a gradient rate within this of 1 neither vanishes nor explodes
PASCANU_SLACK = 0.02  # fitted rate <= (1 + this)·γ·σ_max: Pascanu's bound holds (fit noise)
EXPLODE_FACTOR = 10.0  # "the raw gradient grows with T": last >= this × first
CLIP_RTOL = 1e-6  # the clipped gradient norm <= clip_norm·(1 + this) (float rounding)
DECAY_FACTOR = 10.0  # 'decays': the gradient norm falls more than this-fold over the fit
# distance; 'direct': it changes by less than this-fold over the same distance


def decays(rate, distance) -> bool:
    """A per-step gradient rate that falls more than DECAY_FACTOR-fold over `distance` steps."""
    return finite(rate) and rate > 0 and -math.log(rate) * distance > math.log(DECAY_FACTOR)


def direct(rate, distance) -> bool:
    """A per-step gradient rate that changes less than DECAY_FACTOR-fold over `distance`."""
    return finite(rate) and rate > 0 and abs(math.log(rate)) * distance < math.log(DECAY_FACTOR)


def rate_kind(rate) -> str:
    """'vanishes', 'explodes' or 'neither (≈1)': a per-step rate against 1 ± NEAR_ONE."""
    return (
        "vanishes" if rate < 1 - NEAR_ONE else "explodes" if rate > 1 + NEAR_ONE else "neither (≈1)"
    )


def pascanu(results) -> list[Claim]:
    """Every tanh-RNN curve: its fitted per-step rate against Pascanu's bound γ·σ_max."""
    out = []
    for label, c in results["rnn"].items():
        rate, bound = c["fit"]["rate"], c["pascanu_bound"]
        out.append(
            Claim(
                f"{label}: rate <= γ·σ_max (Pascanu)",
                f"<= {bound:.3g} (ρ(W)={c['spectral_radius']:.3g})",
                f"{rate:.4g}/step, {rate_kind(rate)}",
                holds(finite(rate) and rate <= bound * (1 + PASCANU_SLACK)),
                id=f"gradient_decay/pascanu/{c['regime']}_{c['w_kind']}_{c['sigma']:g}",
            )
        )
    return out


def _saturating_sigma_1(results) -> dict:
    return next(
        c for c in results["rnn"].values() if c["regime"] == "saturating" and c["sigma"] == 1.0
    )


def gates(results) -> list[Claim]:
    """The LSTM and GRU (default and open gate): a rate nearer 1 than the saturating RNN σ=1."""
    ref = _saturating_sigma_1(results)["fit"]["rate"]
    return [
        Claim(
            f"{name}: gates ease decay (rate nearer 1 than the saturating RNN σ=1)",
            f"> {ref:.4g}",
            f"{results['other'][name]['fit']['rate']:.4g}/step",
            holds(results["other"][name]["fit"]["rate"] > ref),
            id=f"gradient_decay/gates/{name.replace(' ', '_')}",
        )
        for name in ("lstm", "lstm open gate", "gru", "gru open gate")
    ]


def attention_direct(results) -> Claim:
    attn = results["other"]["attention"]
    return Claim(
        "self-attention: no decay with distance (O(1) path)",
        "rate ≈ 1",
        f"{attn['fit']['rate']:.5g}/step; far/near {attn['far_over_near']:.3g}",
        holds(direct(attn["fit"]["rate"], results["config"]["fit_max_distance"])),
        id="gradient_decay/attention_direct",
    )


def clipping(results) -> Claim:
    cfg, clip = results["config"], results["clipping"]
    first, last = clip[0], clip[-1]
    grows = last["grad_norm"] > first["grad_norm"] * EXPLODE_FACTOR
    return Claim(
        f"exploding RNN σ={cfg['clip_sigma']:g}: gradient grows with T; clipping bounds it",
        f"raw grows, clipped <= {cfg['clip_norm']:g}",
        f"raw {first['grad_norm']:.3g} (T={first['length']}) -> {last['grad_norm']:.3g} "
        f"(T={last['length']}); clipped {last['grad_norm_clipped']:.3g}",
        holds(grows and last["grad_norm_clipped"] <= cfg["clip_norm"] * (1 + CLIP_RTOL)),
        id="gradient_decay/clipping",
    )


def table(results) -> list[Claim]:
    return [*pascanu(results), *gates(results), attention_direct(results), clipping(results)]


def decay(results) -> Claim:
    """The gradient half of the report's long-range row: the saturating tanh RNN (σ_max
    nearest 1) decays over the fit distance, attention keeps a direct path."""
    dist = results["config"]["fit_max_distance"]
    sat = [c for c in results["rnn"].values() if c["regime"] == "saturating"]
    if not sat:
        raise BadInputError("gradient_decay: its results have no 'saturating' RNN curve")
    rnn = min(sat, key=lambda c: abs(c["sigma"] - 1.0))
    rates = {
        "RNN": rnn["fit"]["rate"],
        "LSTM": results["rates"]["lstm"],
        "attention": results["rates"]["attention"],
    }
    attn = attention_direct(results)
    return Claim(
        "a tanh RNN's gradient decays over distance, self-attention's does not",
        f"RNN: falls > {DECAY_FACTOR:g}x over {dist} steps; attention: changes < {DECAY_FACTOR:g}x",
        f"gradient kept over {dist} steps: "
        + ", ".join(f"{n} {x**dist:.2g}" for n, x in rates.items()),
        holds(decays(rates["RNN"], dist) and attn.verdict == HOLDS),
        f"per-step gradient rates {', '.join(f'{n} {x:.4f}' for n, x in rates.items())} "
        f"(RNN: tanh, σ_max={rnn['sigma']:g}, saturating)",
        id="gradient_decay/decay",
    )


def gradients(results) -> Claim:
    """docs/chapter.md's gradient row: Pascanu's bound for every tanh-RNN setting and
    attention's flat path decide; gates that do not ease decay make it a caveat."""
    bound, gated, attn = pascanu(results), gates(results), attention_direct(results)
    core = weakest(c.verdict for c in [*bound, attn])
    eased = [c.claim.split(":")[0] for c in gated if c.verdict == HOLDS]
    not_eased = [c.claim.split(":")[0] for c in gated if c.verdict != HOLDS]
    if core != HOLDS or not not_eased:
        verdict = core
    else:
        verdict = CAVEAT if eased else weakest(c.verdict for c in gated)
    held = sum(c.verdict == HOLDS for c in bound)
    text = (
        f"the fitted per-step rate is within γ·σ_max for {held} of {len(bound)} tanh-RNN "
        f"settings; self-attention's rate is {attn.measured.split(';')[0]}"
        f"; the gates ease decay for {', '.join(eased) or 'none'}"
        + (f", not for {', '.join(not_eased)}" if not_eased else "")
    )
    return Claim(
        "gradients vanish or explode within γ·σ_max; gates ease it; attention reaches every "
        "position in one step",
        "every rate within the bound, attention's ≈ 1, every gate easing decay",
        text,
        verdict,
        id="gradient_decay/gradients",
    )


def chapter(results) -> list[Claim]:
    return [decay(results), gradients(results)]


def rules() -> list[str]:
    """How these verdicts are decided, for the report's "How verdicts are decided"."""
    return [
        f"* Decay: the gradient norm falls by more than {DECAY_FACTOR:g}x over the fitted "
        f"distance (RNN) / changes by less than {DECAY_FACTOR:g}x (attention).",
        f"* Pascanu's bound: a fitted rate within {PASCANU_SLACK:.0%} above γ·σ_max holds.",
    ]
