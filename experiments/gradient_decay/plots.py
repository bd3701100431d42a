"""gradient_decay's plots (gradient_decay.png, rates.png, clipping.png) and the prose of its
report.md, drawn and written from what results.json holds alone (a committed result is
redrawn by the same code): each curve is the geometric mean over the seeds with the seeds'
range shaded; Pascanu's bound γ·σ_max is drawn where the claims are against it."""

import matplotlib
import numpy as np

from experiments.gradient_decay.claims import NEAR_ONE, PASCANU_SLACK, per_seed
from experiments.lab import outputs, style


def _pos(y):
    y = np.asarray([np.nan if v is None else v for v in y], np.float64)
    return np.where(y > 0, y, np.nan)  # underflowed zeros are not drawn on a log axis


def seed_band(curve) -> tuple:
    """(distance, geometric mean over seeds, min, max) of a curve's norms; NaN where a seed's
    norm underflowed to zero."""
    norms = np.stack([_pos(n) for n in curve["norm"]])  # [seeds, distances]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.exp(np.mean(np.log(norms), axis=0))
    return np.asarray(curve["distance"]), mean, np.min(norms, axis=0), np.max(norms, axis=0)


def _draw(ax, curve, label, **look):
    """The curve's geometric mean over the seeds, their range shaded; returns (colour,
    distance, mean)."""
    d, mean, lo, hi = seed_band(curve)
    look = {"marker": None, **look, "markevery": max(1, len(d) // 12)}
    (line,) = ax.semilogy(d, mean, label=label, **look)
    ax.fill_between(d, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
    return line.get_color(), d, mean


def _sigma_colour(sigma, sigmas):
    """The RNN curves of one panel, σ_max from light to dark blue (the recurrent family)."""
    lo, hi = min(sigmas), max(sigmas)
    return matplotlib.colormaps["Blues"](0.35 + 0.6 * ((sigma - lo) / (hi - lo) if hi > lo else 1))


def curves(results, workdir) -> str:
    """gradient_decay.png: ||∂L/∂x_t|| against distance; the linear-regime panels with each
    σ_max's Pascanu bound (dashed: the norm at distance 1 times (γ·σ_max)^(d−1))."""
    cfg, rnn, other = results["config"], results["rnn"], results["other"]
    fig, axes = outputs.new_figure(1, 3, figsize=(16, 4.8))
    for ax, w_kind in zip(axes[:2], ("orthogonal", "gaussian")):
        for c in rnn.values():
            if c["regime"] == "linear" and c["w_kind"] == w_kind:
                colour = _sigma_colour(c["sigma"], cfg["sigmas"])
                _, d, mean = _draw(ax, c, f"σ_max={c['sigma']:g}", color=colour)
                bound = max(per_seed(c, "pascanu_bound"))
                i = int(np.argmax(d >= 1))
                with np.errstate(over="ignore"):
                    ref = mean[i] * bound ** (d - d[i]).astype(np.float64)
                ax.semilogy(d, _pos(ref), **(style.REFERENCE | {"color": colour}))
        ax.plot([], [], **style.REFERENCE, label="Pascanu's bound γ·σ_max per step")
        ax.set(
            xlabel="distance T − t",
            ylabel="||∂L/∂x_t||",
            title=f"tanh RNN, {w_kind} W_hh, linear regime (float64)",
        )
        ax.legend(fontsize=7)
    ax = axes[2]
    for c in rnn.values():
        if c["regime"] == "saturating" and c["sigma"] in (1.0, max(cfg["sigmas"])):
            look = style.line("rnn") | {"color": _sigma_colour(c["sigma"], cfg["sigmas"])}
            _draw(ax, c, f"RNN σ={c['sigma']:g}, saturating", **(look | {"linestyle": ":"}))
    for name, c in other.items():
        look = style.line(name) | ({"linestyle": "--"} if "open gate" in name else {})
        _draw(ax, c, name, **look)
    ax.set(xlabel="distance T − t", ylabel="||∂L/∂x_t||", title="ordinary inputs (float32)")
    ax.legend(fontsize=7)
    n = len(cfg["seeds"])
    fig.suptitle(f"geometric mean over {n} seeds, their range shaded", fontsize=9)
    return outputs.save_plot(fig, workdir, "gradient_decay.png")


def rates(results, workdir) -> str:
    """rates.png: each seed's fitted per-step rate against its γ·σ_max, every tanh-RNN curve,
    beside Pascanu's bound rate = γ·σ_max (the claim: on or below it)."""
    fig, ax = outputs.new_figure(figsize=(6.4, 4.8))
    markers = {  # kind: (marker, shade of blue)
        "linear orthogonal": ("o", 0.5),
        "linear gaussian": ("s", 0.7),
        "saturating orthogonal": ("^", 0.95),
    }
    top = 0.0
    for kind, (marker, shade) in markers.items():
        xs, ys = [], []
        for c in results["rnn"].values():
            if f"{c['regime']} {c['w_kind']}" == kind:
                xs += per_seed(c, "pascanu_bound")
                ys += per_seed(c)
        if xs:
            colour = matplotlib.colormaps["Blues"](shade)  # every kind a tanh RNN: blues
            ax.plot(xs, ys, marker, color=colour, ms=5, alpha=0.7, label=f"RNN {kind}")
            top = max(top, *xs, *[y for y in ys if y is not None])
    grid = np.linspace(0, top * 1.05, 50)
    ax.plot(grid, grid, **style.REFERENCE, label="Pascanu's bound: rate = γ·σ_max")
    ax.fill_between(grid, grid * (1 + PASCANU_SLACK), top * 1.1, color="red", alpha=0.08)
    ax.axhline(1.0, color="grey", ls=":", lw=1)
    ax.set(
        xlabel="γ·σ_max(W_hh)  (γ = 1 for tanh)",
        ylabel="fitted per-step rate",
        title="fitted rate per seed against the bound (shaded: above it)",
        xlim=(0, top * 1.05),
        ylim=(0, top * 1.1),
    )
    ax.legend(fontsize=7)
    return outputs.save_plot(fig, workdir, "rates.png")


def clipping(results, workdir) -> str:
    """clipping.png: the parameter-gradient norm against T, raw and clipped, every seed."""
    cfg, clip = results["config"], results["clipping"]
    fig, ax = outputs.new_figure(figsize=(6, 4.5))
    t = [r["length"] for r in clip]
    for key, mark, label in (  # both the same tanh RNN: its colour, clipped dashed
        ("grad_norm", "o-", "no clipping"),
        ("grad_norm_clipped", "s--", f"clip global norm at {cfg['clip_norm']:g}"),
    ):
        per_t = np.stack([_pos(r[key]) for r in clip])  # [T, seeds]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.exp(np.mean(np.log(per_t), axis=1))
        (line,) = ax.semilogy(t, mean, mark, label=label, color=style.line("rnn")["color"])
        for s in range(per_t.shape[1]):
            ax.semilogy(t, per_t[:, s], mark[0], color=line.get_color(), alpha=0.4, ms=3)
    ax.axhline(cfg["clip_norm"], **style.REFERENCE, label=f"clip_norm {cfg['clip_norm']:g}")
    ax.set(
        xlabel="sequence length T",
        ylabel="||∂L/∂θ|| (all parameters)",
        title=f"exploding regime: RNN σ_max={cfg['clip_sigma']:g}, linear "
        f"({len(cfg['seeds'])} seeds)",
    )
    ax.legend()
    return outputs.save_plot(fig, workdir, "clipping.png")


def draw(results, workdir) -> list[str]:
    """Every plot of a results.json (as record.stored reads it, or a committed result's
    "result") into workdir; returns their file names."""
    return [curves(results, workdir), rates(results, workdir), clipping(results, workdir)]


def _mean_rate(curve) -> float:
    rates = [r for r in per_seed(curve) if r is not None]
    return float(np.mean(rates)) if rates else float("nan")


def _saturating_note(rnn) -> str:
    """What the saturating curves measured at the largest σ_max: its mean rate over the seeds
    and what it does."""
    sat = [c for c in rnn.values() if c["regime"] == "saturating"]
    if not sat:
        return "no saturating curve was measured."
    c = max(sat, key=lambda c: c["sigma"])
    rate, near = _mean_rate(c), NEAR_ONE
    kind = "decays" if rate < 1 - near else "explodes" if rate > 1 + near else "neither"
    what = kind if kind != "neither" else f"neither decays nor explodes (within {near:g} of 1)"
    return f"at σ_max = {c['sigma']:g} the fitted rate is {rate:.4g}/step: it {what}" + (
        ", so exploding gradients in a tanh RNN need dynamics that stay out of saturation."
        if kind == "decays" and c["sigma"] > 1
        else "."
    )


def _radius_over_sigma(rnn) -> str:
    """ρ(W)/σ_max of the Gaussian W_hh curves' seeds as measured, e.g. '0.48-0.52' (or '—')."""
    r = [
        s["spectral_radius"] / s["sigma_max"]
        for c in rnn.values()
        if c["w_kind"] == "gaussian"
        for s in c["seeds"]
        if s["sigma_max"] > 0
    ]
    if not r:
        return "—"
    lo, hi = min(r), max(r)
    return f"{lo:.2f}" if abs(hi - lo) < 0.005 else f"{lo:.2f}-{hi:.2f}"


def notes(results) -> str:
    """report.md's "How it was measured"."""
    config, rnn = results["config"], results["rnn"]
    return (
        f"Loss L = Σ_b h_T·v at the last of T={config['length']} positions; the norm of ∂L/∂x_t "
        "is taken over batch and features. Rates are fitted as norm ≈ c·rate^distance over "
        f"distances {config['fit_min_distance']}..{config['fit_max_distance']}, once per seed "
        f"({len(config['seeds'])} seeds: {', '.join(str(s) for s in config['seeds'])}; each "
        "draws its own weights, inputs and readout), and judged by their 95% t interval over "
        "the seeds.\n\n"
        f"* **Linear regime** (float64, inputs of std {config['linear_input_scale']:g}): tanh' ≈ "
        "1, so the per-step Jacobian is W_hhᵀ. With an orthogonal W_hh·σ the measured rate is "
        "σ itself, on the bound. With a Gaussian W_hh rescaled to σ_max the rate is its "
        f"spectral radius ρ(W), measured here at {_radius_over_sigma(rnn)} of σ_max: σ_max > 1 "
        "is necessary for exploding, not sufficient.\n"
        f"* **Saturating regime** (float32, inputs of std {config['input_scale']:g}): the states "
        f"saturate, tanh' < 1; {_saturating_note(rnn)}\n"
        "* **LSTM/GRU** use default inits (LSTM forget bias 1, GRU gate biases 0); the 'open "
        f"gate' variants add {config['open_gate_bias']:g} to the forget (LSTM) or update (GRU) "
        "gate bias, the state a trained gate can reach: the carry path then decays far more "
        "slowly. Each is compared with the saturating RNN at σ_max = 1 on the same seed.\n"
        "* **Attention** is a causal post-LN "
        f"stack of {config['attn_layers']} layers with sinusoidal positions.\n"
        "* **Clipping** rescales the whole parameter gradient to a bounded norm; it bounds the "
        "step but does not change which distances dominate the gradient. (The bias gradient "
        f"carries the explosion here: with states of ~{config['linear_input_scale']:g}, "
        "∂L/∂W_hh is itself tiny.)\n"
        f"* results.json keeps every {config['curve_stride']}th distance of each seed's curve "
        "(what the plots draw); the fits use every distance."
    )
