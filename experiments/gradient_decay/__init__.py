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

import jax
import jax.numpy as jnp
import numpy as np

from anatomy import probes
from anatomy.attention.decoder_only import decoder_only, init_block
from anatomy.errors import BadInputError
from anatomy.recurrence import get_cell, init_rnn
from anatomy.recurrence import run as run_cell
from experiments import record
from experiments.gradient_decay import claims, plots

TITLE = "Gradients over distance: vanishing, exploding, and direct paths"  # of report.md


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


def run(config, workdir):
    """Measure every curve, fit rates, write results.json, two PNGs and report.md."""
    started = record.start("gradient_decay", config, workdir)
    rnn, other, clip = rnn_curves(config), other_curves(config), clipping(config)
    pngs = plots.plot(config, rnn, other, clip, workdir)
    results = {
        "config": config.to_dict(),
        "rates": {k: c["fit"]["rate"] for k, c in {**rnn, **other}.items()},
        "rnn": rnn,
        "other": other,
        "clipping": clip,
        "plots": pngs,
    }
    return started.finish(
        results, claims.table, TITLE, [("How it was measured", plots.notes(config, rnn))]
    )
