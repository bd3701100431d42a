"""The programs an accelerator estimate counts, compiled by XLA:GPU for a named GPU without one
(anatomy.probes.gpu_target): the LSTM and attention layers at N = applied.n_ratio and the
Transformer's and RNNsearch's train steps at rnn_vs_attn's sizes, in applied.precision
(bfloat16: the layers' parameters and inputs in bf16; the translators' forward and backward in
bf16 with float32 master parameters). Compiled, never run; their optimised HLO is what the
cost model counts (kernels, bytes, loop trips) instead of XLA:CPU's programs.

Deviceless compilation needs the CUDA plugin, which anatomy's own environment does not have
(installed beside the CPU jaxlib it changes JAX's backend discovery): the programs are
compiled in a subprocess (`python -m experiments.scaling.gpu_programs IN OUT`) run by
applied.gpu_python, a Python whose JAX has the plugin (gpu_target's docstring says how to make
one), with the environment gpu_target.prepare_environment sets. Without one, `start` says why
and the estimates count XLA:CPU's programs, an assumption the report names.
"""

from __future__ import annotations

import os
import sys
import time

from experiments.scaling import structure

KEY = "{family}|{n}"  # a program's key in the texts: 'lstm|512', 'transformer|32'


def start(cfg) -> dict:
    """Start compiling the programs for cfg.applied.gpu_target in a subprocess; returns a
    handle for `collect`, or {'available': False, 'why': ...} without starting anything (no
    target configured; no gpu_python and no CUDA plugin in this Python)."""
    from anatomy.probes import gpu_target

    target, python = cfg.applied.gpu_target, cfg.applied.gpu_python
    if not target:
        return {"available": False, "why": "no GPU target configured (applied.gpu_target)"}
    gpu_target.target_config(target)  # an unknown target: BadInputError before anything runs
    if not python and not gpu_target.plugin_installed():
        return {"available": False, "why": gpu_target.available()[1]}
    env = gpu_target.prepare_environment(dict(os.environ))
    env.pop("JAX_PLATFORMS", None)
    job = {"config": cfg.to_dict(), "target": target}
    return structure.spawn("experiments.scaling.gpu_programs", job, env, python)


def collect(handle: dict) -> dict:
    """{available, why, target, python, seconds, texts: {KEY: optimised HLO text}} of `start`'s
    programs (available False and the subprocess's last error line when it failed)."""
    if "proc" not in handle:
        return {**handle, "texts": {}}
    try:
        return structure.collect(handle)
    except RuntimeError as e:
        lines = [ln for ln in str(e).splitlines() if ln.strip()]
        return {"available": False, "why": lines[-1] if lines else str(e), "texts": {}}


def summary(gpu: dict, cpu_texts: dict) -> dict:
    """What results.json keeps of `collect`'s answer: everything but the texts, and per program
    its kernels, loop iterations, FLOPs and bytes, beside XLA:CPU's program of the same key."""
    from anatomy.probes import op_cost

    programs = {}
    for key, text in gpu.get("texts", {}).items():
        family, n = key.split("|")
        p = op_cost.profile(text)
        programs[key] = {"gpu": {k: p[k] for k in ("ops", "loop_iterations", "flops", "bytes")}}
        cpu = cpu_texts.get((family, int(n)))
        if cpu is not None:
            q = op_cost.profile(cpu)
            programs[key]["cpu"] = {k: q[k] for k in ("ops", "loop_iterations", "flops", "bytes")}
    return {**{k: v for k, v in gpu.items() if k != "texts"}, "programs": programs}


def compile_programs(config_dict: dict, target: str) -> dict:
    """Compile every program for `target` here (this Python must have the plugin and the
    environment prepare_environment sets): {available, why, target, python, seconds, texts}."""
    import jax
    import jax.numpy as jnp
    import ml_collections

    from anatomy.probes import gpu_target
    from anatomy.train.state import create_state
    from anatomy.train.step import cast_floating, compile_train_step
    from experiments.configs import rnn_vs_attn as rva_config
    from experiments.scaling import check, translators

    ok, why = gpu_target.available()
    out = {"available": ok, "why": why, "target": target, "python": sys.executable, "texts": {}}
    if not ok:
        return out
    t0 = time.time()
    cfg = ml_collections.ConfigDict(config_dict)
    c, a = cfg.check, cfg.applied
    dtype = {"bfloat16": jnp.bfloat16, "float32": jnp.float32}[a.precision]
    for name, family in check.LAYER_FAMILIES.items():
        init, loss = family.layer(c.d, c.n_heads)
        params = jax.eval_shape(lambda k, i=init: cast_floating(i(k), dtype), jax.random.key(0))
        x = jax.ShapeDtypeStruct((c.batch, a.n_ratio, c.d), dtype)
        grad = jax.jit(jax.grad(loss, argnums=(0, 1)))
        out["texts"][KEY.format(family=name, n=a.n_ratio)] = gpu_target.compile_text(
            grad, params, x, target=target
        )
    rva = rva_config.get_config(cfg.translators.preset or None)
    vocab = tuple(c.vocab)
    for name in ("transformer", "rnnsearch"):
        model, tx, step = translators.build(rva, name, vocab, a.precision)
        state = jax.eval_shape(
            lambda k, m=model, t=tx: create_state(m.init(k), t), jax.random.key(0)
        )
        batch = translators.batch(c.rows, c.length, vocab, c.seed)
        rng = jax.eval_shape(lambda: jax.random.key(1))
        jitted = compile_train_step(step, donate=False)
        out["texts"][KEY.format(family=name, n=c.length)] = gpu_target.compile_text(
            jitted, state, batch, rng, target=target
        )
    out["seconds"] = time.time() - t0
    return out


def main(argv):
    import json

    with open(argv[1]) as f:
        job = json.load(f)
    out = compile_programs(job["config"], job["target"])
    with open(argv[2], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv)
