"""attention_memory: how much memory full and chunked attention need, against N.

Full attention (scaled_dot_product) holds the [b, h, N, N] logits and weights; chunked
attention (anatomy.attention.chunked_attention, an online softmax over key blocks with a
Flash-style recomputing backward) holds O(N·d) plus one [N, block_k] tile per head. Memory is
read from the compiled program, not measured at run time, so it is deterministic:

    jax.jit(f).lower(q, k, v).compile().memory_analysis()
      temp_size_in_bytes      the program's own working buffers      <- fitted
      argument / output size  q, k, v in; out (or dq, dk, dv) out     (O(N·d) for both)

for the forward f = attention(q, k, v) and forward+backward f = grad(Σ attention²) w.r.t.
q, k, v, over N (queries = keys = N) and the number of heads, then exponents fitted in
log-log space: full attention's temp memory should grow as N², chunked attention's as N.
A run of both at check_n confirms they compute the same numbers (forward and gradients).
The claims, judged on results.json, are in claims.py.
"""

import jax
import jax.numpy as jnp
import numpy as np

from anatomy import probes
from anatomy.attention import chunked_attention, scaled_dot_product
from anatomy.tables import markdown_table
from experiments.attention_memory import claims
from experiments.attention_memory.claims import EXPECTED, MODES, fit_key, series
from experiments.lab import outputs, record, style
from experiments.lab.progress import Progress

TITLE = "Memory of full and chunked attention, from the compiled program"  # of report.md


def _impls(cfg):
    block_q = cfg.block_q or None
    return {
        "full": lambda q, k, v: scaled_dot_product(q, k, v)[0],
        "chunked": lambda q, k, v: chunked_attention(q, k, v, block_q=block_q, block_k=cfg.block_k),
    }


def _program(fn, mode):
    if mode == "forward":
        return fn
    return lambda q, k, v: jax.grad(lambda q, k, v: jnp.sum(fn(q, k, v) ** 2), (0, 1, 2))(q, k, v)


def memory_of(fn, *args):
    """The compiled program's memory: dict(temp, argument, output) in bytes."""
    ma = probes.compiled(fn, *args).memory_analysis()
    return {
        "temp": int(ma.temp_size_in_bytes),
        "argument": int(ma.argument_size_in_bytes),
        "output": int(ma.output_size_in_bytes),
    }


def measure(cfg):
    """[dict(impl, mode, heads, n, temp, argument, output)] over the whole grid."""
    rows = []
    progress = Progress("attention_memory", len(cfg.heads_grid) * len(cfg.n_grid))
    for heads in cfg.heads_grid:
        for n in cfg.n_grid:
            progress.step(f"{heads} head(s), N = {n}: full and chunked, fwd and fwd+bwd")
            x = jax.ShapeDtypeStruct((cfg.batch, n, heads, cfg.d_head), jnp.float32)
            for impl, fn in _impls(cfg).items():
                for mode in MODES:
                    mem = memory_of(_program(fn, mode), x, x, x)
                    rows.append(dict(impl=impl, mode=mode, heads=heads, n=n, **mem))
    return rows


def check_equal(cfg):
    """Max |chunked - full| of the outputs and of the gradients at N = check_n (relative)."""
    heads = cfg.heads_grid[-1]
    keys = jax.random.split(jax.random.PRNGKey(cfg.seed), 3)
    q, k, v = (jax.random.normal(key, (cfg.batch, cfg.check_n, heads, cfg.d_head)) for key in keys)
    impls = _impls(cfg)
    out = {}
    for mode in MODES:
        got = jax.jit(_program(impls["chunked"], mode))(q, k, v)
        want = jax.jit(_program(impls["full"], mode))(q, k, v)
        errs = [
            float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b)))
            for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want))
        ]
        out[mode] = max(errs)
    return out


def fit(cfg, raw) -> dict:
    """{'<impl> <mode> h=<heads>': the power law of temp bytes against N} (claims.fit_key)."""
    fits = {}
    for impl in EXPECTED:
        for mode in MODES:
            for heads in cfg.heads_grid:
                fits[fit_key(impl, mode, heads)] = probes.fit_power_law(
                    *series(raw, impl, mode, heads)
                )
    return fits


def plot(cfg, raw, workdir):
    fig, axes = outputs.new_figure(1, len(MODES), figsize=(6 * len(MODES), 4.5))
    for ax, mode in zip(axes, MODES):
        for impl in ("full", "chunked"):
            for i, heads in enumerate(cfg.heads_grid):
                n, temp = series(raw, impl, mode, heads)
                look = style.line(impl) | ({"alpha": 0.5} if i else {})
                ax.loglog(n, np.asarray(temp) / 2**20, label=f"{impl}, h={heads}", **look)
            n, temp = series(raw, impl, mode, cfg.heads_grid[-1])
            theory = EXPECTED[impl][0]
            style.reference_slope(ax, n, temp[0] / 2**20, theory, f"reference N^{theory:g}")
        ax.set(
            xlabel="N (sequence length)",
            ylabel="compiled temp memory (MiB)",
            title=f"attention's memory, {mode}: full N^2, chunked (online softmax) N^1",
        )
        ax.title.set_fontsize(9)
        outputs.grid_ticks(ax, cfg.n_grid)
        ax.legend(fontsize=7)
    return outputs.save_plot(fig, workdir, "attention_memory.png")


draw = outputs.drawn_by(plot)  # attention_memory.png from results.json alone


def run(config, workdir):
    """Measure, fit, write results.json, attention_memory.png and report.md; returns results."""
    started = record.start("attention_memory", config, workdir)
    raw = measure(config)
    errors = check_equal(config)
    png = plot(config, raw, workdir)
    results = {
        "config": config.to_dict(),
        "fits": fit(config, raw),
        "raw": raw,
        "equality": errors,
        "plots": [png],
    }
    table = markdown_table(
        ("impl", "mode", "h", "N", "temp MiB", "arguments MiB", "outputs MiB"),
        [
            (r["impl"], r["mode"], r["heads"], r["n"])
            + tuple(r[key] / 2**20 for key in ("temp", "argument", "output"))
            for r in raw
        ],
    )
    notes = (
        "Bytes are XLA's own buffer assignment for the compiled program "
        f"(`memory_analysis()`, {jax.default_backend()} backend): nothing of size N² is run, "
        "so N = 8,192 costs compile time only. `temp` is the program's working memory and is "
        "what the exponents are fitted on; arguments and outputs (q, k, v in; out or dq, dk, "
        "dv out) are O(N·d) for both and listed below. "
        f"batch {config.batch}, d = {config.d_head} per head, chunked blocks: "
        f"block_q = {config.block_q or 'all queries'}, block_k = {config.block_k}. "
        "Full attention's N² buffers are its [b, h, N, N] logits and weights (forward) and "
        "their gradients (backward); chunked attention's backward recomputes each tile "
        "from the saved log-sum-exp instead of storing the weights."
    )
    return started.finish(
        results, claims.table, TITLE, [("How it was measured", notes), ("Measurements", table)]
    )
