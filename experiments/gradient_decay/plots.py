"""gradient_decay's plots (gradient_decay.png, clipping.png) and the prose of its report.md,
every number in it read from the measurements."""

import numpy as np

from experiments import outputs
from experiments.gradient_decay.claims import NEAR_ONE


def _pos(y):
    y = np.asarray(y, np.float64)
    return np.where(y > 0, y, np.nan)  # underflowed zeros are not drawn on a log axis


def plot(cfg, rnn, other, clip, workdir):
    fig, axes = outputs.new_figure(1, 3, figsize=(16, 4.8))
    for ax, (regime, w_kind) in zip(axes[:2], (("linear", "orthogonal"), ("linear", "gaussian"))):
        for c in rnn.values():
            if c["regime"] == regime and c["w_kind"] == w_kind:
                ax.semilogy(c["distance"], _pos(c["norm"]), label=f"σ_max={c['sigma']:g}")
        ax.set(
            xlabel="distance T − t",
            ylabel="||∂L/∂x_t||",
            title=f"tanh RNN, {w_kind} W_hh, linear regime (float64)",
        )
        ax.legend(fontsize=7)
    ax = axes[2]
    for c in rnn.values():
        if c["regime"] == "saturating" and c["sigma"] in (1.0, 1.5, max(cfg.sigmas)):
            ax.semilogy(
                c["distance"], _pos(c["norm"]), ":", label=f"RNN σ={c['sigma']:g}, saturating"
            )
    for name, c in other.items():
        ax.semilogy(c["distance"], _pos(c["norm"]), label=name)
    ax.set(xlabel="distance T − t", ylabel="||∂L/∂x_t||", title="ordinary inputs (float32)")
    ax.legend(fontsize=7)
    main = outputs.save_plot(fig, workdir, "gradient_decay.png")
    fig, ax = outputs.new_figure(figsize=(6, 4.5))
    t = [r["length"] for r in clip]
    ax.semilogy(t, [r["grad_norm"] for r in clip], "o-", label="no clipping")
    ax.semilogy(
        t,
        [r["grad_norm_clipped"] for r in clip],
        "s-",
        label=f"clip global norm at {cfg.clip_norm:g}",
    )
    ax.set(
        xlabel="sequence length T",
        ylabel="||∂L/∂θ|| (all parameters)",
        title=f"exploding regime: RNN σ_max={cfg.clip_sigma:g}, linear",
    )
    ax.legend()
    return [main, outputs.save_plot(fig, workdir, "clipping.png")]


def _saturating_note(rnn) -> str:
    """What the saturating curves measured at the largest σ_max: its rate and what it does."""
    sat = [c for c in rnn.values() if c["regime"] == "saturating"]
    if not sat:
        return "no saturating curve was measured."
    c = max(sat, key=lambda c: c["sigma"])
    rate, near = c["fit"]["rate"], NEAR_ONE
    kind = "decays" if rate < 1 - near else "explodes" if rate > 1 + near else "neither"
    what = kind if kind != "neither" else f"neither decays nor explodes (within {near:g} of 1)"
    return f"at σ_max = {c['sigma']:g} the fitted rate is {rate:.4g}/step: it {what}" + (
        ", so exploding gradients in a tanh RNN need dynamics that stay out of saturation."
        if kind == "decays" and c["sigma"] > 1
        else "."
    )


def _radius_over_sigma(rnn) -> str:
    """ρ(W)/σ_max of the Gaussian W_hh curves as measured, e.g. '0.48-0.52' (or '—')."""
    r = [
        c["spectral_radius"] / c["sigma_max"]
        for c in rnn.values()
        if c["w_kind"] == "gaussian" and c["sigma_max"] > 0
    ]
    if not r:
        return "—"
    lo, hi = min(r), max(r)
    return f"{lo:.2f}" if abs(hi - lo) < 0.005 else f"{lo:.2f}-{hi:.2f}"


def notes(config, rnn) -> str:
    """report.md's "How it was measured"."""
    return (
        f"Loss L = Σ_b h_T·v at the last of T={config.length} positions; the norm of ∂L/∂x_t is "
        "taken over batch and features. Rates are fitted as norm ≈ c·rate^distance over "
        f"distances {config.fit_min_distance}..{config.fit_max_distance}.\n\n"
        f"* **Linear regime** (float64, inputs of std {config.linear_input_scale:g}): tanh' ≈ 1, "
        "so the per-step Jacobian "
        "is W_hhᵀ. With an orthogonal W_hh·σ the measured rate is σ itself, on the bound. With a "
        "Gaussian W_hh rescaled to σ_max the rate is its spectral radius ρ(W), measured here "
        f"at {_radius_over_sigma(rnn)} of σ_max: σ_max > 1 is necessary for exploding, not "
        "sufficient.\n"
        f"* **Saturating regime** (float32, inputs of std {config.input_scale:g}): the states "
        f"saturate, tanh' < 1; {_saturating_note(rnn)}\n"
        "* **LSTM/GRU** use default inits (LSTM forget bias 1, GRU gate biases 0); the 'open "
        f"gate' variants add {config.open_gate_bias:g} to the forget (LSTM) or update (GRU) gate "
        "bias, the state a trained gate can reach: the carry path then decays far more slowly.\n"
        "* **Attention** is a causal post-LN "
        f"stack of {config.attn_layers} layers with sinusoidal positions.\n"
        "* **Clipping** rescales the whole parameter gradient to a bounded norm; it bounds the "
        "step but does not change which distances dominate the gradient. (The bias gradient "
        f"carries the explosion here: with states of ~{config.linear_input_scale:g}, ∂L/∂W_hh is "
        "itself tiny.)"
    )
