"""One compiled program per (structure, L): init, train and score a batch of runs at once.

A run is one seed of one variant. Runs whose variants share a structure (lm.Variant.program:
post-LN with and without warmup) are rows of the same vmapped program, which takes each row's
initial parameters (lm.init(init_key), run op by op outside the program: jitted inside, its
random draws tripled the compile time) and

    for i < n_steps (a traced bound: one compile serves n_steps = 1 and n_steps = steps):
        x, y  = data.batch(train, fold_in(data_key, i))  [B, N] each
        g     = ∇ loss(params; x, y)
        norms = per-layer ‖g‖, ‖g of Xiong's weight‖     kept at i = 0: the gradient at init
        u     = Adam(clip(g))                            optax, the project's b1, b2, eps
        params -= lr_i · u      lr_i = make_schedule(peak, warmup or 0, steps, 'linear')(i)
    valid_loss = loss(params; every validation window)

and returns, per row, the training losses [steps], the gradient norms at init and the
validation loss. NaNs are not stopped: a run that diverges ends with a NaN loss and counts as
failed (claims.py), the other rows of its program are unaffected.
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


def grad_norms(family: lm.Family, grads) -> dict:
    """{'layers': [L] ‖g‖ of each layer's parameters, 'xiong': ‖g‖ of Xiong's weight,
    'total': ‖g‖ of every parameter}."""
    stack = grads["stack"]
    return {
        "layers": jnp.stack([probes.global_norm(t) for t in family.layers(stack)]),
        "xiong": probes.global_norm(family.xiong(stack)),
        "total": probes.global_norm(grads),
    }


def optimizer(tc) -> optax.GradientTransformation:
    """clip_by_global_norm, then Adam's direction (anatomy.train.optim.make_optimizer's, with
    weight decay 0); the learning rate is applied per row, since rows differ in warmup."""
    return optax.chain(
        optax.clip_by_global_norm(tc.clip_norm), optax.scale_by_adam(b1=tc.b1, b2=tc.b2, eps=1e-9)
    )


def compiler_options(cfg) -> dict | None:
    """XLA options of every program: backend optimisation level 0 with cfg.compile_fast."""
    return {"xla_backend_optimization_level": 0} if cfg.compile_fast else None


def make_program(family: lm.Family, variant: lm.Variant, cfg):
    """jit(vmap(run)): (params [R, ...], data_keys [R], warm bool [R], n_steps, train [n],
    valid_x [W, N], valid_y [W, N]) -> {'losses': [R, steps], 'init': grad_norms with a
    leading R, 'valid_loss': [R]}."""
    tc = cfg.train
    tx = optimizer(tc)
    plain = make_schedule(tc.learning_rate, 0, tc.steps, "linear")
    warmed = make_schedule(tc.learning_rate, tc.warmup_steps, tc.steps, "linear")
    loss = functools.partial(lm.loss, family, variant=variant)

    def run(params, data_key, warm, n_steps, train, valid_x, valid_y):
        zeros = jax.tree_util.tree_map(jnp.zeros_like, grad_norms(family, params))

        def step(i, carry):
            params, opt_state, losses, init = carry
            x, y = data.batch(train, jax.random.fold_in(data_key, i), tc.batch, tc.length)
            value, grads = jax.value_and_grad(loss)(params, x, y)
            norms = grad_norms(family, grads)
            init = jax.tree_util.tree_map(lambda a, b: jnp.where(i == 0, b, a), init, norms)
            updates, opt_state = tx.update(grads, opt_state, params)
            lr = jnp.where(warm, warmed(i), plain(i))
            params = jax.tree_util.tree_map(lambda p, u: p - lr * u, params, updates)
            return params, opt_state, losses.at[i].set(value), init

        carry = (params, tx.init(params), jnp.full((tc.steps,), jnp.nan), zeros)
        params, _, losses, init = jax.lax.fori_loop(0, n_steps, step, carry)
        return {"losses": losses, "init": init, "valid_loss": loss(params, valid_x, valid_y)}

    return jax.jit(jax.vmap(run, in_axes=(0, 0, 0, None, None, None, None)))


def run_keys(seed: int, seeds) -> tuple:
    """(init_keys, data_keys) [len(seeds)] of the given seed numbers: run s of every variant
    and depth draws its parameters from fold_in(k_init, s) and its batches from
    fold_in(k_data, s), so depths and variants are compared on the same batches."""
    k_init, k_data = jax.random.split(jax.random.PRNGKey(seed))
    seeds = jnp.asarray(list(seeds))
    fold = jax.vmap(jax.random.fold_in, in_axes=(None, 0))
    return fold(k_init, seeds), fold(k_data, seeds)


def train_group(group, family, cfg, n_layers, corpus) -> dict:
    """Train every variant of `group` (one structure) at n_layers: cfg.seeds runs each, plus
    as many more seeds for one step (their gradients at init).

    Returns {variant name: {'valid_loss': [seeds], 'losses': [seeds][steps],
    'init_grads': {'layers': [2·seeds][L], 'xiong': [2·seeds], 'total': [2·seeds]}}} and
    '_timing': {'compile_s', 'seconds_per_step' (all rows of the program together), 'rows'}.
    """
    variant = group[0]
    args = (
        jnp.asarray(corpus.train),
        jnp.asarray(corpus.valid_x),
        jnp.asarray(corpus.valid_y),
    )
    fn = make_program(family, variant, cfg)

    def rows(seed_numbers):
        ik, dk = run_keys(cfg.seed, seed_numbers)
        inits = [lm.init(family, k, cfg.model, corpus.vocab_size, n_layers, variant) for k in ik]
        params = jax.tree_util.tree_map(lambda *a: jnp.stack(a * len(group)), *inits)
        warm = jnp.repeat(jnp.asarray([v.warmup for v in group]), len(seed_numbers))
        return params, jnp.tile(dk, (len(group), 1)), warm

    trained, extra = rows(range(cfg.seeds)), rows(range(cfg.seeds, 2 * cfg.seeds))
    t0 = time.perf_counter()
    exe = fn.lower(*trained, jnp.int32(cfg.train.steps), *args).compile(compiler_options(cfg))
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    more = jax.block_until_ready(exe(*extra, jnp.int32(1), *args))
    one = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = jax.block_until_ready(exe(*trained, jnp.int32(cfg.train.steps), *args))
    full = time.perf_counter() - t0
    out, more = jax.device_get(out), jax.device_get(more)
    result, n = {}, cfg.seeds
    for j, v in enumerate(group):
        mine = slice(j * n, (j + 1) * n)
        result[v.name] = {
            "valid_loss": np.asarray(out["valid_loss"][mine], np.float64),
            "losses": np.asarray(out["losses"][mine], np.float64),
            "init_grads": {
                k: np.concatenate([out["init"][k][mine], more["init"][k][mine]]).astype(np.float64)
                for k in ("layers", "xiong", "total")
            },
        }
    steps = max(cfg.train.steps - 1, 1)
    result["_timing"] = {
        "compile_s": compile_s,
        "seconds_per_step": max(full - one, 0.0) / steps,
        "rows": len(group) * n,
    }
    return result


def serial_steps(family, variant, cfg, n_layers, corpus) -> dict:
    """Serial loop steps of the forward program (one window of N characters), read from the
    compiled HLO (while loops' trip counts) and from the jaxpr (scan lengths)."""
    params = lm.init(family, jax.random.PRNGKey(0), cfg.model, corpus.vocab_size, n_layers, variant)
    x = jnp.asarray(corpus.valid_x[:1])  # [1, N]

    def forward(p, ids):
        return lm.logits(family, p, ids, variant)

    exe = jax.jit(forward).lower(params, x).compile(compiler_options(cfg))
    return {
        "n": int(x.shape[1]),
        "hlo": probes.hlo_sequential_steps(exe.as_text()),
        "jaxpr": probes.jaxpr_sequential_steps(forward, params, x),
    }


def param_count(family, variant, cfg, n_layers, vocab_size) -> int:
    shapes = jax.eval_shape(
        lambda k: lm.init(family, k, cfg.model, vocab_size, n_layers, variant),
        jax.random.PRNGKey(0),
    )
    return int(sum(np.prod(s.shape) for s in jax.tree_util.tree_leaves(shapes)))
