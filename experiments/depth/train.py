"""One compiled program per (structure, L) that inits-to-scores a run: train and score it.

A run is one seed of one variant. Variants that share a structure (lm.Variant.program: post-LN
with and without warmup) share the compiled program, which takes a run's initial parameters
(model.init(init_key), run op by op outside the program: jitted inside, its random draws
tripled the compile time), its data key and whether it warms up, and

    for i < n_steps (a traced bound: one compile serves n_steps = 1 and n_steps = steps):
        w     = data.batch(train, fold_in(data_key, i))  [B, N + 1]
        g     = ∇ loss(params; w)
        norms = per-layer ‖g‖, ‖g of Xiong's weight‖     kept at i = 0: the gradient at init
        u     = Adam(clip(g))                            optax, the project's b1, b2, eps
        params -= lr_i · u      lr_i = make_schedule(peak, warmup or 0, steps, 'linear')(i)
    valid_loss = loss(params; every validation window)

and returns the training losses [steps], the gradient norms at init and the validation loss.
The whole loop is one XLA program (no Python between steps). Runs go one after another: a
vmap over seeds ran no faster here and compiled a fifth slower. NaNs are not stopped: a run
that diverges ends with a NaN loss and counts as failed (claims.py).
"""

from __future__ import annotations

import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from anatomy import probes
from anatomy.train.optim import make_schedule
from experiments.depth import data, lm


def grad_norms(model, xiong, grads) -> dict:
    """{'layers': [L] ‖g‖ of each layer's parameters (model.layers), 'xiong': ‖g‖ of the
    weight `xiong` picks from them, 'total': ‖g‖ of every parameter}."""
    layers = model.layers(grads)
    return {
        "layers": jnp.stack([probes.global_norm(t) for t in layers]),
        "xiong": probes.global_norm(xiong(layers)),
        "total": probes.global_norm(grads),
    }


def optimizer(tc) -> optax.GradientTransformation:
    """clip_by_global_norm, then Adam's direction (anatomy.train.optim.make_optimizer's, with
    weight decay 0); the program applies the learning rate itself, since the variants that
    share it differ in warmup."""
    return optax.chain(
        optax.clip_by_global_norm(tc.clip_norm), optax.scale_by_adam(b1=tc.b1, b2=tc.b2, eps=1e-9)
    )


# cfg.compile_fast: XLA:CPU's backend at optimisation level 0 and its older elemental emitters
# instead of the fusion emitters. Together they compile the quick preset's small programs about
# twice as fast and run them several times slower; at the default preset's sizes the fusion
# emitters compile faster, so the default keeps XLA's own choices.
FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}


def compiler_options(cfg) -> dict | None:
    """XLA options of every program: FAST_COMPILE with cfg.compile_fast, else XLA's defaults."""
    return dict(FAST_COMPILE) if cfg.compile_fast else None


def make_program(model, xiong, cfg):
    """jit(run): (params, data_key, warm bool, n_steps, train [n], valid [W, N + 1]) ->
    {'losses': [steps] (NaN past n_steps), 'init': grad_norms at the first step,
    'valid_loss': []}."""
    tc = cfg.train
    tx = optimizer(tc)
    plain = make_schedule(tc.learning_rate, 0, tc.steps, "linear")
    warmed = make_schedule(tc.learning_rate, tc.warmup_steps, tc.steps, "linear")
    loss = functools.partial(lm.loss, model)

    def run(params, data_key, warm, n_steps, train, valid):
        zeros = jax.tree_util.tree_map(jnp.zeros_like, grad_norms(model, xiong, params))

        def step(i, carry):
            params, opt_state, losses, init = carry
            windows = data.batch(train, jax.random.fold_in(data_key, i), tc.batch, tc.length)
            value, grads = jax.value_and_grad(loss)(params, windows)
            norms = grad_norms(model, xiong, grads)
            init = jax.tree_util.tree_map(lambda a, b: jnp.where(i == 0, b, a), init, norms)
            updates, opt_state = tx.update(grads, opt_state, params)
            lr = jnp.where(warm, warmed(i), plain(i))
            params = jax.tree_util.tree_map(lambda p, u: p - lr * u, params, updates)
            return params, opt_state, losses.at[i].set(value), init

        carry = (params, tx.init(params), jnp.full((tc.steps,), jnp.nan), zeros)
        params, _, losses, init = jax.lax.fori_loop(0, n_steps, step, carry)
        return {"losses": losses, "init": init, "valid_loss": loss(params, valid)}

    return jax.jit(run)


def run_keys(seed: int, seeds) -> tuple:
    """(init_keys, data_keys) [len(seeds)] of the given seed numbers: run s of every variant
    and depth draws its parameters from fold_in(k_init, s) and its batches from
    fold_in(k_data, s), so depths and variants are compared on the same batches."""
    k_init, k_data = jax.random.split(jax.random.PRNGKey(seed))
    seeds = jnp.asarray(list(seeds))
    fold = jax.vmap(jax.random.fold_in, in_axes=(None, 0))
    return fold(k_init, seeds), fold(k_data, seeds)


def _timed(fn, *args):
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return jax.device_get(out), time.perf_counter() - t0


def train_group(group, xiong, cfg, n_layers, corpus) -> dict:
    """Train every variant of `group` (one structure) at n_layers: cfg.seeds runs each, and as
    many more seeds for one step (their gradients at init).

    Returns {variant name: {'valid_loss': [seeds], 'losses': [seeds, steps],
    'init_grads': {'layers': [2·seeds, L], 'xiong': [2·seeds], 'total': [2·seeds]},
    'seconds_per_step': median over its runs}} and '_timing': {'compile_s'}.
    """
    data_args = (jnp.asarray(corpus.train), jnp.asarray(corpus.valid))
    seeds = range(2 * cfg.seeds)
    init_keys, data_keys = run_keys(cfg.seed, seeds)
    model = lm.build(group[0], cfg.model, n_layers, corpus.vocab_size)
    inits = [model.init(k) for k in init_keys]
    t0 = time.perf_counter()
    exe = (
        make_program(model, xiong, cfg)
        .lower(inits[0], data_keys[0], False, jnp.int32(cfg.train.steps), *data_args)
        .compile(compiler_options(cfg))
    )
    compile_s = time.perf_counter() - t0
    result = {}
    for v in group:
        outs, times = [], []
        for s in seeds:
            steps = cfg.train.steps if s < cfg.seeds else 1  # the extra seeds: init only
            out, seconds = _timed(
                exe, inits[s], data_keys[s], v.warmup, jnp.int32(steps), *data_args
            )
            outs.append(out)
            times.append(seconds)
        one = float(np.median(times[cfg.seeds :]))  # one step and the evaluation
        trained = outs[: cfg.seeds]
        result[v.name] = {
            "valid_loss": np.array([o["valid_loss"] for o in trained], np.float64),
            "losses": np.array([o["losses"] for o in trained], np.float64),
            "init_grads": {
                k: np.array([o["init"][k] for o in outs], np.float64)
                for k in ("layers", "xiong", "total")
            },
            "seconds_per_step": float(
                np.median([max(t - one, 0.0) for t in times[: cfg.seeds]])
                / max(cfg.train.steps - 1, 1)
            ),
        }
    result["_timing"] = {"compile_s": compile_s}
    return result


def serial_steps(variant, cfg, n_layers, corpus) -> dict:
    """Serial loop steps of the forward program (model.apply on one window of N characters),
    read from the compiled HLO (while loops' trip counts) and from the jaxpr (scan lengths)."""
    model = lm.build(variant, cfg.model, n_layers, corpus.vocab_size)
    params = model.init(jax.random.PRNGKey(0))
    x = jnp.asarray(corpus.valid[:1, :-1])  # [1, N]
    exe = jax.jit(model.apply).lower(params, x).compile(compiler_options(cfg))
    return {
        "n": int(x.shape[1]),
        "hlo": probes.hlo_sequential_steps(exe.as_text()),
        "jaxpr": probes.jaxpr_sequential_steps(model.apply, params, x),
    }


def param_count(variant, cfg, n_layers, vocab_size) -> int:
    model = lm.build(variant, cfg.model, n_layers, vocab_size)
    shapes = jax.eval_shape(model.init, jax.random.PRNGKey(0))
    return int(sum(np.prod(s.shape) for s in jax.tree_util.tree_leaves(shapes)))
