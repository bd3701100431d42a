"""gradient_decay: how ||∂L/∂x_t|| changes with the distance T − t to a loss at the last step.

Models: a tanh RNN whose W_hh is rescaled to several largest singular values σ_max, an LSTM,
a GRU (anatomy.recurrence) and a causal self-attention stack (anatomy.attention.decoder_only).
For each, the per-step rate ρ̂ is fitted as norm ≈ c·ρ̂^distance and set beside Pascanu et
al.'s bound ||∂h_t/∂h_{t-1}|| <= γ·σ_max(W_hh) (γ = 1 for tanh).

Two RNN regimes:
* linear: float64 and inputs of std 1e-200, so the state never saturates (tanh' ≈ 1) even
  when σ_max^T is 1e176; W_hh orthogonal·σ (all singular values and |eigenvalues| = σ) or
  Gaussian rescaled to σ_max = σ (its spectral radius is about σ_max/2).
* saturating: float32, inputs of std 1, orthogonal·σ: what an ordinary RNN actually does.
Clipping: ||∂L/∂W_hh|| against T for the exploding RNN, with and without global-norm clipping.
"""

import functools
import time

import jax
import jax.numpy as jnp
import numpy as np

from anatomy import probes
from anatomy.attention.decoder_only import decoder_only, init_block
from anatomy.errors import BadInputError
from anatomy.recurrence import get_cell, init_rnn
from anatomy.recurrence import run as run_cell
from experiments import common, thresholds


def _rnn_params(cfg, w_kind, sigma, dtype):
    k1, k2 = jax.random.split(jax.random.PRNGKey(cfg.seed))
    params = init_rnn(k1, cfg.d_in, cfg.hidden)
    if w_kind == "orthogonal":
        w = probes.random_orthogonal(k2, cfg.hidden) * sigma
    elif w_kind == "gaussian":
        w = probes.scale_to_sigma(jax.random.normal(k2, (cfg.hidden, cfg.hidden)), sigma)
    else:
        raise BadInputError(f"unknown w_kind {w_kind!r}; choose 'orthogonal' or 'gaussian'")
    params["w_h"] = w
    return jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype), params)


def _inputs(cfg, scale, dtype, length=None):
    shape = (cfg.batch, length or cfg.length, cfg.d_in)
    return scale * jax.random.normal(jax.random.PRNGKey(cfg.seed + 1), shape, jnp.float32).astype(
        dtype
    )


def _readout(cfg, dtype):
    v = jax.random.normal(jax.random.PRNGKey(cfg.seed + 2), (cfg.hidden,), jnp.float32)
    return (v / np.sqrt(cfg.hidden)).astype(dtype)


@functools.partial(jax.jit, static_argnums=0)
def _cell_norms(name, params, xs, v):
    """||∂L/∂x_t|| [T] for L = Σ_b h_T[b]·v of a recurrent cell run over xs."""

    def loss(x):
        return jnp.sum(run_cell(name, params, x)[1][:, -1] @ v)

    return probes.input_grad_norms(loss, xs)


def _attention_stack(params, xs):
    """xs [B, T, d_in] -> xs·W_in + positions -> the causal post-LN stack -> [B, T, m]."""
    return decoder_only(params, xs @ params["w_in"])


@jax.jit
def _attention_norms(params, xs, v):
    return probes.input_grad_norms(lambda x: jnp.sum(_attention_stack(params, x)[:, -1] @ v), xs)


def _fit(cfg, norms):
    dist, by_d = probes.by_distance(np.asarray(norms, np.float64))
    sel = (dist >= cfg.fit_min_distance) & (dist <= cfg.fit_max_distance)
    fit = probes.fit_rate(dist[sel], by_d[sel])
    return dist, by_d, fit


def rnn_curves(cfg):
    """RNN curves: {label: dict(distance, norm, fit, sigma_max, spectral_radius, bound)}."""
    out = {}
    runs = [
        ("linear", "orthogonal", jnp.float64),
        ("linear", "gaussian", jnp.float64),
        ("saturating", "orthogonal", jnp.float32),
    ]
    for regime, w_kind, dtype in runs:
        scale = cfg.linear_input_scale if regime == "linear" else cfg.input_scale
        for sigma in cfg.sigmas:
            with jax.enable_x64(dtype == jnp.float64):
                params = _rnn_params(cfg, w_kind, sigma, dtype)
                norms = _cell_norms("rnn", params, _inputs(cfg, scale, dtype), _readout(cfg, dtype))
                norms = np.asarray(norms, np.float64)
                w = np.asarray(params["w_h"], np.float64)
            dist, by_d, fit = _fit(cfg, norms)
            out[f"rnn {regime} {w_kind} σ={sigma:g}"] = {
                "regime": regime,
                "w_kind": w_kind,
                "sigma": sigma,
                "dtype": str(np.dtype(dtype)),
                "distance": dist,
                "norm": by_d,
                "fit": fit,
                "sigma_max": probes.sigma_max(w),
                "spectral_radius": probes.spectral_radius(w),
                "pascanu_bound": probes.pascanu_bound(w, "tanh"),
            }
    return out


def other_curves(cfg):
    """LSTM, GRU (ordinary inputs, default inits) and the causal self-attention stack."""
    out = {}
    xs = _inputs(cfg, cfg.input_scale, jnp.float32)
    v = _readout(cfg, jnp.float32)
    h = cfg.hidden
    for name in ("lstm", "gru"):
        params = get_cell(name).init(jax.random.PRNGKey(cfg.seed), cfg.d_in, h)
        dist, by_d, fit = _fit(cfg, _cell_norms(name, params, xs, v))
        out[name] = {"distance": dist, "norm": by_d, "fit": fit}
        # the same cell with its carry gate held open: LSTM forget gate (i,f,g,o: slice 1),
        # GRU update gate (r,z,n: slice 1; h' = (1-z)·n + z·h)
        bias = "b" if name == "lstm" else "b_x"
        params[bias] = params[bias].at[h : 2 * h].add(cfg.open_gate_bias)
        dist, by_d, fit = _fit(cfg, _cell_norms(name, params, xs, v))
        out[f"{name} open gate"] = {"distance": dist, "norm": by_d, "fit": fit}
    keys = jax.random.split(jax.random.PRNGKey(cfg.seed + 3), cfg.attn_layers + 1)
    params = {
        "w_in": jax.random.normal(keys[0], (cfg.d_in, cfg.hidden)) / np.sqrt(cfg.d_in),
        "layers": [init_block(k, cfg.hidden, cfg.attn_heads, 4 * cfg.hidden) for k in keys[1:]],
    }
    dist, by_d, fit = _fit(cfg, _attention_norms(params, xs, v))
    out["attention"] = {
        "distance": dist,
        "norm": by_d,
        "fit": fit,
        "far_over_near": float(by_d[-1] / by_d[1]),
    }
    return out


def clipping(cfg):
    """Parameter-gradient norm against T for the exploding linear RNN, raw and clipped.

    In the linear regime the states are ~1e-200, so ∂L/∂W_hh = Σ_t h_{t-1}ᵀ δ_t is tiny; the
    bias gradient Σ_t δ_t carries the explosion and dominates the global norm.
    """
    rows = []
    with jax.enable_x64(True):
        params = _rnn_params(cfg, "orthogonal", cfg.clip_sigma, jnp.float64)
        v = _readout(cfg, jnp.float64)

        @jax.jit
        def grads(params, xs):
            return jax.grad(
                lambda p, x: jnp.sum(run_cell("rnn", p, x)[1][:, -1] @ v), argnums=(0, 1)
            )(params, xs)

        for length in cfg.clip_lengths:
            xs = _inputs(cfg, cfg.linear_input_scale, jnp.float64, length)
            g = grads(params, xs)
            clipped, total = probes.clip_by_global_norm(g[0], cfg.clip_norm)
            rows.append(
                {
                    "length": length,
                    "grad_norm": float(total),
                    "grad_norm_clipped": float(probes.global_norm(clipped)),
                    "grad_b": float(jnp.linalg.norm(g[0]["b"])),
                }
            )
    return rows


def _pos(y):
    y = np.asarray(y, np.float64)
    return np.where(y > 0, y, np.nan)  # underflowed zeros are not drawn on a log axis


def plot(cfg, rnn, other, clip, workdir):
    fig, axes = common.new_figure(1, 3, figsize=(16, 4.8))
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
    main = common.save_plot(fig, workdir, "gradient_decay.png")
    fig, ax = common.new_figure(figsize=(6, 4.5))
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
    return [main, common.save_plot(fig, workdir, "clipping.png")]


def claims(cfg, rnn, other, clip):
    """The experiment's claims (probes.Claim rows), judged on the fitted rates."""
    rows = []
    for label, c in rnn.items():
        rate, bound = c["fit"]["rate"], c["pascanu_bound"]
        near = thresholds.NEAR_ONE
        kind = "vanishes" if rate < 1 - near else "explodes" if rate > 1 + near else "neither (≈1)"
        rows.append(
            probes.Claim(
                f"{label}: rate <= γ·σ_max (Pascanu)",
                f"<= {bound:.3g} (ρ(W)={c['spectral_radius']:.3g})",
                f"{rate:.4g}/step, {kind}",
                probes.holds(np.isfinite(rate) and rate <= bound * (1 + thresholds.PASCANU_SLACK)),
            )
        )
    attn = other["attention"]
    sat1 = next(c for c in rnn.values() if c["regime"] == "saturating" and c["sigma"] == 1.0)
    for name in ("lstm", "lstm open gate", "gru", "gru open gate"):
        c = other[name]
        rows.append(
            probes.Claim(
                f"{name}: gates ease decay (rate nearer 1 than the saturating RNN σ=1)",
                f"> {sat1['fit']['rate']:.4g}",
                f"{c['fit']['rate']:.4g}/step",
                probes.holds(c["fit"]["rate"] > sat1["fit"]["rate"]),
            )
        )
    rows.append(
        probes.Claim(
            "self-attention: no decay with distance (O(1) path)",
            "rate ≈ 1",
            f"{attn['fit']['rate']:.5g}/step; far/near {attn['far_over_near']:.3g}",
            probes.holds(thresholds.direct(attn["fit"]["rate"], cfg.fit_max_distance)),
        )
    )
    last = clip[-1]
    first = clip[0]
    grows = last["grad_norm"] > first["grad_norm"] * thresholds.EXPLODE_FACTOR
    rows.append(
        probes.Claim(
            f"exploding RNN σ={cfg.clip_sigma:g}: gradient grows with T; clipping bounds it",
            f"raw grows, clipped <= {cfg.clip_norm:g}",
            f"raw {first['grad_norm']:.3g} (T={first['length']}) -> {last['grad_norm']:.3g} "
            f"(T={last['length']}); clipped {last['grad_norm_clipped']:.3g}",
            probes.holds(
                grows and last["grad_norm_clipped"] <= cfg.clip_norm * (1 + thresholds.CLIP_RTOL)
            ),
        )
    )
    return rows


def _saturating_note(rnn) -> str:
    """What the saturating curves measured at the largest σ_max: its rate and what it does."""
    sat = [c for c in rnn.values() if c["regime"] == "saturating"]
    if not sat:
        return "no saturating curve was measured."
    c = max(sat, key=lambda c: c["sigma"])
    rate, near = c["fit"]["rate"], thresholds.NEAR_ONE
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


def run(config, workdir):
    """Measure every curve, fit rates, write results.json, two PNGs and report.md."""
    started, t0 = common.provenance(), time.time()  # commit, machine, versions, load before
    rnn, other, clip = rnn_curves(config), other_curves(config), clipping(config)
    pngs = plot(config, rnn, other, clip, workdir)
    rows = claims(config, rnn, other, clip)
    rates = {k: c["fit"]["rate"] for k, c in {**rnn, **other}.items()}
    results = {
        "config": config.to_dict(),
        "rates": rates,
        "rnn": rnn,
        "other": other,
        "clipping": clip,
        "plots": pngs,
        "table": probes.claims_json(rows),
    }
    results["provenance"] = common.run_provenance("gradient_decay", config, started, t0)
    common.write_json(workdir, results)
    notes = (
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
    common.write_report(
        workdir,
        "Gradients over distance: vanishing, exploding, and direct paths",
        [
            ("Claims", probes.claims_markdown(rows)),
            ("How it was measured", notes),
            ("Plots", "\n\n".join(f"![{p}]({p})" for p in pngs)),
            ("Run", common.provenance_line(results["provenance"])),
        ],
    )
    return results
