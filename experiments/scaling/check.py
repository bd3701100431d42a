"""The cost model checked on this CPU: predicted against measured time of real programs.

Programs (one device, float32):
    layers       the `parallelism` experiment's LSTM and self-attention layers, jit(grad) of
                 their losses with respect to parameters and inputs, at each N of the grid
    translators  rnn_vs_attn's three train steps (anatomy's step with its optimiser, no
                 donation so the same arguments can be reused) on one padded batch
This machine's hardware table is measured in the same run (anatomy.probes.hardware's
micro-benchmarks), interleaved with the programs round by round: load that comes and goes
slows the benchmarks and the programs alike, and every figure is a median. In each round every
program and benchmark is first called `run_in` times untimed, so that what is timed is a call
after a call of the same program (as one train step follows another), not a call in whatever
state the previous program in the round left the caches and the allocator. The prediction of a
program is probes.roofline on its own compiled HLO; the error is predicted / measured.

The check must exercise every term an accelerator figure depends on: the layers at
parallelism's sizes are mostly memory-bound here, so the LSTM layer is also timed at a tiny
width and batch ('lstm_small': one op's work is nothing, its time is per-op latency, the term
that dominates the LSTM's accelerator estimate), and every program is also predicted with each
term switched off (VARIANTS, hardware.Hardware.without): a term the check needs is one whose
absence makes some measured program miss.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from anatomy.probes import hardware, hlo, op_cost, roofline
from anatomy.train.state import create_state
from anatomy.train.step import cast_floating, compile_train_step
from experiments.scaling import attention, recurrent, translators

LAYER_FAMILIES = {"lstm": recurrent, "attention": attention}
SMALL = "lstm_small"  # the LSTM layer at cfg.small_d, cfg.small_batch: latency-bound
# the model, and the model with terms switched off: {label: terms off}
VARIANTS = {
    "model": (),
    "without compute": ("compute",),
    "without memory": ("memory",),
    "without latency": ("latency",),
    "without cache tiers": ("caches",),
    "without loop rate": ("loop_bandwidth",),
    "without first touch": ("first_touch",),
    "bytes / main-memory bandwidth alone": ("compute", "latency", "caches", "first_touch"),
}


def layer_programs(cfg, dtype=jnp.float32) -> dict:
    """{('lstm' | 'attention' | 'lstm_small', N): (compiled, args)}: jit(grad) of each layer's
    loss, its parameters and inputs in `dtype`; lstm_small at cfg.small_d, cfg.small_batch
    over cfg.small_n_grid (none when the config has no small_n_grid)."""
    out = {}
    shapes = [
        (name, family, cfg.d, cfg.batch, cfg.n_grid) for name, family in LAYER_FAMILIES.items()
    ]
    if cfg.get("small_n_grid"):
        shapes.append((SMALL, recurrent, cfg.small_d, cfg.small_batch, cfg.small_n_grid))
    for name, family, d, batch, n_grid in shapes:
        init, loss = family.layer(d, cfg.n_heads)
        params = jax.jit(lambda k, i=init: cast_floating(i(k), dtype))(jax.random.PRNGKey(cfg.seed))
        grad = jax.jit(jax.grad(loss, argnums=(0, 1)))
        for n in n_grid:
            key = jax.random.PRNGKey(cfg.seed + n)
            x = jax.random.normal(key, (batch, n, d)).astype(dtype)
            out[(name, n)] = (grad.lower(params, x).compile(), (params, x))
    return out


def translator_programs(cfg, rva, compute_dtype: str = "float32") -> dict:
    """{(name, length): (compiled train step, (state, batch, rng))} at rnn_vs_attn's sizes
    (float32 master parameters, the forward and backward pass in compute_dtype)."""
    out = {}
    vocab = tuple(cfg.vocab)
    for name in cfg.translators:
        model, tx, step = translators.build(rva, name, vocab, compute_dtype)
        state = jax.jit(lambda k, m=model, t=tx: create_state(m.init(k), t))(
            jax.random.key(cfg.seed)
        )
        batch = jax.device_put(translators.batch(cfg.rows, cfg.length, vocab, cfg.seed))
        rng = jax.random.key(cfg.seed + 1)
        exe = compile_train_step(step, donate=False).lower(state, batch, rng).compile()
        out[(name, cfg.length)] = (exe, (state, batch, rng))
    return out


def fresh_bytes(exe) -> float:
    """Bytes a call of a compiled program allocates: its temporaries and its outputs (less
    those aliased to donated inputs), from XLA's memory analysis."""
    m = exe.memory_analysis()
    return float(m.temp_size_in_bytes + m.output_size_in_bytes - m.alias_size_in_bytes)


def compile_all(cfg, rva) -> dict:
    """Every program of the check, compiled: {(family, n): (compiled, args)}."""
    return {**layer_programs(cfg), **translator_programs(cfg, rva)}


def run(cfg, progs: dict) -> dict:
    """Time the micro-benchmarks and every program of compile_all interleaved; predict each
    program on the measured table. Returns {'hardware': table dict, 'benchmarks': raw figures,
    'rows': [...], 'texts': {(family, n): HLO text}} with one row per program: family, n,
    measured_s, times_s (one per round), predicted_s, ratio (predicted / measured), the
    model's terms, dominant, variants ({VARIANTS label: predicted seconds}), ops,
    loop_iterations, flops, bytes; and min_s, ratio_min: the fastest call
    against the prediction from the fastest benchmark calls (a diagnosis under load)."""
    benches = hardware.benchmarks(quick=cfg.quick_benchmarks)
    calls = {**hardware.bench_calls(benches), **progs}
    medians = hardware.interleaved_medians(calls, cfg.rounds, warmup=cfg.warmup, run_in=cfg.run_in)
    hw, raw = hardware.host_table(benches, {k: medians[k][0] for k in benches})
    # the same from the fastest call of each (what the machine does when the load lets it):
    # a diagnosis of misses, not the check
    hw_min, _ = hardware.host_table(benches, {k: min(medians[k][1]) for k in benches})
    rows = []
    for (family, n), (exe, _) in progs.items():
        m = hlo.Module(exe.as_text())
        prof, ops = op_cost.profile(m), op_cost.op_costs(m)
        kw = dict(loop_iterations=prof["loop_iterations"], fresh_bytes=fresh_bytes(exe))
        pred = roofline.predict(ops, hw, **kw)
        fastest = roofline.predict(ops, hw_min, **kw)
        variants = {
            label: roofline.predict(ops, hw.without(*off), **kw)["seconds"]
            for label, off in VARIANTS.items()
        }
        measured, times = medians[(family, n)]
        rows.append(
            {
                "family": family,
                "n": n,
                "kind": "layer" if family in (*LAYER_FAMILIES, SMALL) else "translator",
                "measured_s": measured,
                "times_s": times,
                "predicted_s": pred["seconds"],
                "ratio": pred["seconds"] / measured,
                "min_s": min(times),
                "ratio_min": fastest["seconds"] / min(times),
                **{t: pred[t] for t in roofline.TERMS},
                "dominant": pred["dominant"],
                "variants": variants,
                "fresh_bytes": kw["fresh_bytes"],
                "ops": prof["ops"],
                "loop_iterations": prof["loop_iterations"],
                "flops": prof["flops"],
                "bytes": prof["bytes"],
            }
        )
    return {
        "hardware": hw.as_dict(),
        "hardware_min": hw_min.as_dict(),
        "benchmarks": raw,
        "rows": rows,
        "texts": {(r["family"], r["n"]): progs[(r["family"], r["n"])][0].as_text() for r in rows},
    }
