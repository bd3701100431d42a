"""gradient_decay: how ||∂L/∂x_t|| changes with the distance T − t to a loss at the last step.

Models: a tanh RNN whose W_hh is rescaled to several largest singular values σ_max, an LSTM,
a GRU (anatomy.mixers.cells) and a causal self-attention stack (anatomy.stack over attention
mixers).
For each, the per-step rate ρ̂ is fitted as norm ≈ c·ρ̂^distance and set beside Pascanu et
al.'s bound ||∂h_t/∂h_{t-1}|| <= γ·σ_max(W_hh) (γ = 1 for tanh).

Two RNN regimes:
* linear: float64 and inputs of std 1e-200, so the state never saturates (tanh' ≈ 1) even
  when σ_max^T is 1e176; W_hh orthogonal·σ (all singular values and |eigenvalues| = σ) or
  Gaussian rescaled to σ_max = σ (its spectral radius is about σ_max/2).
* saturating: float32, inputs of std 1, orthogonal·σ: what an ordinary RNN actually does.
Clipping: ||∂L/∂W_hh|| against T for the exploding RNN, with and without global-norm clipping.

Every curve is measured once per seed of config.seeds (each seed draws its own weights, inputs
and readout) by one compiled program per model and dtype, reused across seeds; results.json
keeps each seed's fit and (every curve_stride-th distance of) its curve, claims.py judges the
fitted quantities by their interval over the seeds, plots.py draws from results.json alone.
"""

import jax
import jax.numpy as jnp
import numpy as np

from anatomy import probes
from anatomy.attention import encoding
from anatomy.compiling import compiler_options, jit_options
from anatomy.errors import BadInputError
from anatomy.mixers import build_mixer, get_cell
from anatomy.mixers.cells import init_rnn
from anatomy.scan import run as run_cell
from anatomy.stack import apply_stack, init_stack_block, make_stack
from experiments.gradient_decay import claims, plots
from experiments.lab import record
from experiments.lab.progress import Progress

TITLE = "Gradients over distance: vanishing, exploding, and direct paths"  # of report.md
RUNS = (  # the tanh-RNN curves: (regime, W_hh kind, dtype)
    ("linear", "orthogonal", jnp.float64),
    ("linear", "gaussian", jnp.float64),
    ("saturating", "orthogonal", jnp.float32),
)


def _keys(seed):
    """One seed's independent keys: cell weights, W_hh, inputs, readout, attention weights."""
    names = ("cell", "w_hh", "inputs", "readout", "attention")
    return dict(zip(names, jax.random.split(jax.random.PRNGKey(seed), len(names))))


def _rnn_params(cfg, seed, w_kind, sigma, dtype):
    keys = _keys(seed)
    params = init_rnn(keys["cell"], cfg.d_in, cfg.hidden)
    if w_kind == "orthogonal":
        w = probes.random_orthogonal(keys["w_hh"], cfg.hidden) * sigma
    elif w_kind == "gaussian":
        w = probes.scale_to_sigma(jax.random.normal(keys["w_hh"], (cfg.hidden, cfg.hidden)), sigma)
    else:
        raise BadInputError(f"unknown w_kind {w_kind!r}; choose 'orthogonal' or 'gaussian'")
    params["w_h"] = w
    return jax.tree_util.tree_map(lambda a: jnp.asarray(a, dtype), params)


def _inputs(cfg, seed, scale, dtype, length=None):
    """xs [B, T, d_in]: standard normal (drawn in float32 for every dtype) times `scale`."""
    shape = (cfg.batch, length or cfg.length, cfg.d_in)
    return scale * jax.random.normal(_keys(seed)["inputs"], shape, jnp.float32).astype(dtype)


def _readout(cfg, seed, dtype):
    v = jax.random.normal(_keys(seed)["readout"], (cfg.hidden,), jnp.float32)
    return (v / np.sqrt(cfg.hidden)).astype(dtype)


def _jit(cfg, fn, static_argnums=()):
    """jax.jit(fn): compiled with anatomy.compiling's FAST_COMPILE when cfg.compile_fast (the
    quick preset, whose run is mostly compiling), else with XLA's defaults. Each run makes
    one per program, and every seed reuses it (the seed is an argument, not a constant)."""
    options = jit_options(compiler_options(fast=cfg.compile_fast))
    return jax.jit(fn, static_argnums=static_argnums, compiler_options=options)


def _cell_norms(name, params, xs, v):
    """||∂L/∂x_t|| [T] for L = Σ_b h_T[b]·v of a recurrent cell run over xs."""

    def loss(x):
        return jnp.sum(run_cell(get_cell(name), params, x)[1][:, -1] @ v)

    return probes.input_grad_norms(loss, xs)


def _stack(width, n_layers, n_heads):
    """The causal post-LN stack (attention mixers, FFN 4·width; keys 'split')."""
    mixer = build_mixer("attention", width, n_heads=n_heads, positions="none")
    return make_stack((mixer,) * n_layers, norm="post", d_ff=4 * width, keys="split")


def _attention_stack(params, xs):
    """xs [B, T, d_in] -> xs·W_in + sinusoidal positions -> the causal post-LN stack -> [B, T, m]."""
    blocks = params["stack"]["blocks"]
    width, n_heads = params["w_in"].shape[1], blocks[0]["mixer"]["mix"]["w_q"].shape[1]
    x = xs @ params["w_in"]
    x = x + encoding("sinusoidal").added(x.shape[1], width, None)
    return apply_stack(params["stack"], _stack(width, len(blocks), n_heads), x)


def _fit(cfg, by_d):
    """The per-step rate fitted over distances fit_min_distance..fit_max_distance."""
    dist = np.arange(len(by_d))
    sel = (dist >= cfg.fit_min_distance) & (dist <= cfg.fit_max_distance)
    return probes.fit_rate(dist[sel], by_d[sel])


def _curve(cfg, norms_of_seed, extra=None) -> dict:
    """One curve over the seeds: {distance (every curve_stride-th), norm [seed][distance],
    seeds: [{seed, fit, **extra(seed, norms by distance)}]}."""
    kept = slice(None, None, cfg.curve_stride)
    norms, seeds = [], []
    for seed in cfg.seeds:
        dist, by_d = probes.by_distance(np.asarray(norms_of_seed(seed), np.float64))
        norms.append(by_d[kept])
        seeds.append({"seed": seed, "fit": _fit(cfg, by_d), **(extra(seed, by_d) if extra else {})})
    return {"distance": dist[kept], "norm": norms, "seeds": seeds}


def _say(progress):
    """progress.step, or nothing without a Progress."""
    return progress.step if progress else lambda what: None


def rnn_curves(cfg, progress=None):
    """RNN curves: {label: dict(regime, w_kind, sigma, dtype, distance, norm, seeds)}, each
    seed's entry with its fit, σ_max, spectral radius and Pascanu bound γ·σ_max of its W_hh."""
    out, cell_norms, say = {}, _jit(cfg, _cell_norms, (0,)), _say(progress)
    for regime, w_kind, dtype in RUNS:
        scale = cfg.linear_input_scale if regime == "linear" else cfg.input_scale
        for sigma in cfg.sigmas:
            say(f"tanh RNN {regime} {w_kind} σ_max={sigma:g}, seeds {list(cfg.seeds)}")
            with jax.enable_x64(dtype == jnp.float64):

                def norms(seed, w_kind=w_kind, sigma=sigma, dtype=dtype, scale=scale):
                    params = _rnn_params(cfg, seed, w_kind, sigma, dtype)
                    xs, v = _inputs(cfg, seed, scale, dtype), _readout(cfg, seed, dtype)
                    return cell_norms("rnn", params, xs, v)

                def spectrum(seed, _, w_kind=w_kind, sigma=sigma, dtype=dtype):
                    w = np.asarray(_rnn_params(cfg, seed, w_kind, sigma, dtype)["w_h"], np.float64)
                    return {
                        "sigma_max": probes.sigma_max(w),
                        "spectral_radius": probes.spectral_radius(w),
                        "pascanu_bound": probes.pascanu_bound(w, "tanh"),
                    }

                curve = _curve(cfg, norms, spectrum)
            out[f"rnn {regime} {w_kind} σ={sigma:g}"] = {
                "regime": regime,
                "w_kind": w_kind,
                "sigma": sigma,
                "dtype": str(np.dtype(dtype)),
                **curve,
            }
    return out


def _gated_norms(cfg, name):
    """A compiled (seed, open_bias) -> ||∂L/∂x_t|| [T] of the LSTM / GRU `name` at its default
    init, ordinary inputs, with its carry gate's bias raised by open_bias (0: the default init;
    LSTM forget gate, i,f,g,o: slice 1; GRU update gate, r,z,n: slice 1; h' = (1-z)·n + z·h)."""
    h = cfg.hidden

    def norms(seed, open_bias):
        params = get_cell(name).init(_keys(seed)["cell"], cfg.d_in, h)
        bias = "b" if name == "lstm" else "b_x"
        params[bias] = params[bias].at[h : 2 * h].add(open_bias)
        xs = _inputs(cfg, seed, cfg.input_scale, jnp.float32)
        return _cell_norms(name, params, xs, _readout(cfg, seed, jnp.float32))

    return _jit(cfg, norms)


def _attention_params(cfg, seed):
    """W_in and the stack, block l from keys[l + 1] itself (keys[0] draws W_in)."""
    keys = jax.random.split(_keys(seed)["attention"], cfg.attn_layers + 1)
    stack = _stack(cfg.hidden, cfg.attn_layers, cfg.attn_heads)
    blocks = [init_stack_block(k, stack, i) for i, k in enumerate(keys[1:])]
    return {
        "w_in": jax.random.normal(keys[0], (cfg.d_in, cfg.hidden)) / np.sqrt(cfg.d_in),
        "stack": {"blocks": blocks},
    }


def _attention_norms(cfg):
    """A compiled seed -> ||∂L/∂x_t|| [T] of the causal self-attention stack, ordinary inputs."""

    def norms(seed):
        params = _attention_params(cfg, seed)
        xs, v = _inputs(cfg, seed, cfg.input_scale, jnp.float32), _readout(cfg, seed, jnp.float32)
        loss = lambda x: jnp.sum(_attention_stack(params, x)[:, -1] @ v)
        return probes.input_grad_norms(loss, xs)

    return _jit(cfg, norms)


def _default_rnn_norms(cfg):
    """A compiled seed -> ||∂L/∂x_t|| [T] of the tanh RNN at the gated cells' own default
    initialisation (every weight ~ U(-1/√H, 1/√H), W_hh included: init_rnn), ordinary inputs:
    the tanh RNN the gates are compared with (the same initialisation, only the gates added)."""

    def norms(seed):
        params = init_rnn(_keys(seed)["cell"], cfg.d_in, cfg.hidden)
        xs = _inputs(cfg, seed, cfg.input_scale, jnp.float32)
        return _cell_norms("rnn", params, xs, _readout(cfg, seed, jnp.float32))

    return _jit(cfg, norms)


def other_curves(cfg, progress=None):
    """The tanh RNN at the gated cells' default initialisation, the LSTM and GRU (ordinary
    inputs, default inits; and with the carry gate held open) and the causal self-attention
    stack (each seed's far/near: norm at the farthest distance over the norm at distance 1)."""
    out, say = {}, _say(progress)
    say(f"{claims.SAME_INIT_RNN}, seeds {list(cfg.seeds)}")
    out[claims.SAME_INIT_RNN] = _curve(cfg, _default_rnn_norms(cfg))
    for name in ("lstm", "gru"):
        norms = _gated_norms(cfg, name)
        for label, bias in ((name, 0.0), (f"{name} open gate", cfg.open_gate_bias)):
            say(f"{label}, seeds {list(cfg.seeds)}")
            out[label] = _curve(cfg, lambda s, f=norms, b=bias: f(s, b))
    say(f"self-attention ({cfg.attn_layers} layers), seeds {list(cfg.seeds)}")
    out["attention"] = _curve(
        cfg,
        _attention_norms(cfg),
        lambda s, by_d: {"far_over_near": float(by_d[-1] / by_d[1])},
    )
    return out


def _param_grads(params, xs, v):
    """(∂L/∂params, ∂L/∂xs) for L = Σ_b h_T[b]·v of the tanh RNN."""
    return jax.grad(
        lambda p, x: jnp.sum(run_cell(get_cell("rnn"), p, x)[1][:, -1] @ v), argnums=(0, 1)
    )(params, xs)


def clipping(cfg, progress=None):
    """Parameter-gradient norm against T for the exploding linear RNN, raw and clipped: one
    row per length T, each value a list over the seeds.

    In the linear regime the states are ~1e-200, so ∂L/∂W_hh = Σ_t h_{t-1}ᵀ δ_t is tiny; the
    bias gradient Σ_t δ_t carries the explosion and dominates the global norm.
    """
    rows, param_grads, say = [], _jit(cfg, _param_grads), _say(progress)
    with jax.enable_x64(True):
        for length in cfg.clip_lengths:
            say(f"clipping: RNN σ_max={cfg.clip_sigma:g} T={length}, seeds {list(cfg.seeds)}")
            row = {"length": length, "grad_norm": [], "grad_norm_clipped": [], "grad_b": []}
            for seed in cfg.seeds:
                params = _rnn_params(cfg, seed, "orthogonal", cfg.clip_sigma, jnp.float64)
                xs = _inputs(cfg, seed, cfg.linear_input_scale, jnp.float64, length)
                g = param_grads(params, xs, _readout(cfg, seed, jnp.float64))
                clipped, total = probes.clip_by_global_norm(g[0], cfg.clip_norm)
                row["grad_norm"].append(float(total))
                row["grad_norm_clipped"].append(float(probes.global_norm(clipped)))
                row["grad_b"].append(float(jnp.linalg.norm(g[0]["b"])))
            rows.append(row)
    return rows


def run(config, workdir):
    """Measure every curve over the seeds, fit rates, write results.json, three PNGs (drawn
    from what results.json holds) and report.md."""
    if not config.seeds:
        raise BadInputError("gradient_decay: config.seeds is empty; give at least one seed")
    started = record.start("gradient_decay", config, workdir)
    # one line per curve (each over every seed) and per clipping length
    others = 1 + 2 * 2 + 1  # the RNN at their init; LSTM, GRU default and open; attention
    total = len(RUNS) * len(config.sigmas) + others + len(config.clip_lengths)
    progress = Progress("gradient_decay", total)
    rnn = rnn_curves(config, progress)
    other = other_curves(config, progress)
    clip = clipping(config, progress)
    results = {
        "config": config.to_dict(),
        "rates": {k: [s["fit"]["rate"] for s in c["seeds"]] for k, c in {**rnn, **other}.items()},
        "rnn": rnn,
        "other": other,
        "clipping": clip,
    }
    plain = record.stored(results)  # plots and notes read what results.json will hold
    results["plots"] = plots.draw(plain, workdir)
    return started.finish(
        results, claims.table, TITLE, [("How it was measured", plots.notes(plain))]
    )
