"""One compiled program per (structure, L) that inits-to-scores a run: train and score it.

A run (`Run`) is one seed of one variant at one peak learning rate, scored on one split.
Variants that share a structure (lm.Variant.program: post-LN with and without warmup) share
the compiled program, and so do all the learning rates of the grid: it takes a run's initial
parameters (model.init(init_key), run op by op outside the program: jitted inside, its random
draws tripled the compile time), its data key, whether it warms up, its peak rate and the
windows it is scored on, and

    for i < n_steps (a traced bound: one compile serves n_steps = 1 and n_steps = steps):
        w     = data.batch(train, fold_in(data_key, i))  [B, N + 1]
        g     = ∇ loss(params; w)
        norms = per-layer ‖g‖, ‖g of Xiong's weight‖     kept at i = 0: the gradient at init
        u     = Adam(clip(g))                            optax, the project's b1, b2, eps
        params -= peak · s_i · u     s_i = make_schedule(1, warmup or 0, steps, 'linear')(i)
    loss = loss(params; every window of the split)

and returns the training losses [steps], the gradient norms at init and the split's loss.
The whole loop is one XLA program (no Python between steps). XLA:CPU runs these small
programs on one core, so runs go config.workers at a time, in threads (XLA releases Python's
lock; a vmap over seeds ran no faster here and compiled a fifth slower); the next (structure,
L)'s program compiles in another thread meanwhile (`Compiler`). NaNs are not stopped: a run
that diverges ends with a NaN loss and counts as failed (claims.py).

Xiong's gradient at initialisation alone (`xiong_norms`) is its own small program per
(variant, L), vmapped over the seeds: model.init and the gradient of each seed's first
training batch, the same numbers a training run records at its step 0.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from anatomy import probes
from anatomy.compiling import FAST_COMPILE, compiler_options, jit_options
from anatomy.params import count_params
from anatomy.train.optim import make_schedule
from experiments.depth import data, lm

SPLITS = ("valid", "test")


@dataclasses.dataclass(frozen=True)
class Run:
    """One run of a variant: its seed number (keys fold_in(k_init, seed), fold_in(k_data,
    seed): train.run_keys), peak learning rate, optimiser steps (1: the gradient at init and
    the untrained loss) and the split its loss is scored on ('valid' | 'test')."""

    seed: int
    lr: float
    steps: int
    split: str


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


def make_program(model, xiong, cfg):
    """jit(run): (params, data_key, warm bool, peak lr, n_steps, train [n], windows [W, N + 1])
    -> {'losses': [steps] (NaN past n_steps), 'init': grad_norms at the first step,
    'loss': [] on the windows}."""
    tc = cfg.train
    tx = optimizer(tc)
    plain = make_schedule(1.0, 0, tc.steps, "linear")  # the schedules' shapes at peak 1: every
    warmed = make_schedule(1.0, tc.warmup_steps, tc.steps, "linear")  # decay is linear in it
    loss = functools.partial(lm.loss, model)

    def run(params, data_key, warm, peak, n_steps, train, windows):
        zeros = jax.tree_util.tree_map(jnp.zeros_like, grad_norms(model, xiong, params))

        def step(i, carry):
            params, opt_state, losses, init = carry
            batch = data.batch(train, jax.random.fold_in(data_key, i), tc.batch, tc.length)
            value, grads = jax.value_and_grad(loss)(params, batch)
            norms = grad_norms(model, xiong, grads)
            init = jax.tree_util.tree_map(lambda a, b: jnp.where(i == 0, b, a), init, norms)
            updates, opt_state = tx.update(grads, opt_state, params)
            lr = peak * jnp.where(warm, warmed(i), plain(i))
            params = jax.tree_util.tree_map(lambda p, u: p - lr * u, params, updates)
            return params, opt_state, losses.at[i].set(value), init

        carry = (params, tx.init(params), jnp.full((tc.steps,), jnp.nan), zeros)
        params, _, losses, init = jax.lax.fori_loop(0, n_steps, step, carry)
        return {"losses": losses, "init": init, "loss": loss(params, windows)}

    return jax.jit(run)


def run_keys(seed: int, seeds) -> tuple:
    """(init_keys, data_keys) [len(seeds)] of the given seed numbers: run s of every variant
    and depth draws its parameters from fold_in(k_init, s) and its batches from
    fold_in(k_data, s), so depths and variants are compared on the same batches."""
    k_init, k_data = jax.random.split(jax.random.PRNGKey(seed))
    seeds = jnp.asarray(list(seeds))
    fold = jax.vmap(jax.random.fold_in, in_axes=(None, 0))
    return fold(k_init, seeds), fold(k_data, seeds)


@dataclasses.dataclass(frozen=True)
class Program:
    """A (structure, L)'s model and its compiled program, and how long compiling took."""

    model: lm.LanguageModel
    exe: object
    compile_s: float


def compile_program(variant, xiong, cfg, n_layers, corpus) -> Program:
    """The compiled program of `variant`'s structure at n_layers (any variant of it)."""
    model = lm.build(variant, cfg.model, n_layers, corpus.vocab_size)
    params = jax.eval_shape(model.init, jax.random.PRNGKey(0))
    args = (jnp.asarray(corpus.train), jnp.asarray(corpus.valid))
    t0 = time.perf_counter()
    exe = (
        make_program(model, xiong, cfg)
        .lower(params, jax.random.PRNGKey(0), False, 1.0, jnp.int32(cfg.train.steps), *args)
        .compile(jit_options(compiler_options(fast=cfg.compile_fast)))
    )
    return Program(model, exe, time.perf_counter() - t0)


class Compiler:
    """compile_program in a second thread, one job ahead: `submit(key, *args)` starts a
    compile, `get(key)` waits for it. XLA compiles and runs a program without Python's lock,
    so the next (structure, L) compiles while this one trains."""

    def __init__(self):
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="depth-compile")
        self._jobs = {}

    def submit(self, key, *args) -> None:
        if key not in self._jobs:
            self._jobs[key] = self._pool.submit(compile_program, *args)

    def get(self, key) -> Program:
        return self._jobs.pop(key).result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _timed(fn, *args):
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return jax.device_get(out), time.perf_counter() - t0


def _tasks(group, cfg, runs) -> list[tuple]:
    """[(variant, Run, init key, data key)] of runs ({variant name: [Run]}), in order."""
    tasks = []
    for v in group:
        todo = runs.get(v.name, [])
        init_keys, data_keys = run_keys(cfg.seed, [r.seed for r in todo])
        tasks += [(v, r, ik, dk) for r, ik, dk in zip(todo, init_keys, data_keys)]
    return tasks


def one_run(program: Program, corpus, task) -> dict:
    """One run (a task of _tasks) on its compiled program: {'loss' (on the run's split),
    'losses' [steps], 'init' (grad_norms at the first step: 'layers' [L], 'xiong', 'total'),
    'seconds'}."""
    variant, r, init_key, data_key = task
    params = program.model.init(init_key)
    train_ids = jnp.asarray(corpus.train)
    windows = jnp.asarray(corpus.windows(r.split))
    args = (params, data_key, variant.warmup, r.lr, jnp.int32(r.steps), train_ids, windows)
    got, seconds = _timed(program.exe, *args)
    return {
        "loss": float(got["loss"]),
        "losses": np.asarray(got["losses"], np.float64),
        "init": {k: np.asarray(x, np.float64) for k, x in got["init"].items()},
        "seconds": seconds,
    }


def _workers(cfg) -> int:
    return max(1, int(cfg.get("workers", 1)))


def run_group(program: Program, group, cfg, corpus, runs) -> dict:
    """Every run of every variant of `group` (one structure) on its compiled program,
    cfg.workers at a time (threads: XLA runs a program without Python's lock, each on one
    core here; every run's result is the same whichever thread runs it).

    runs: {variant name: [Run]}. Returns {variant name: [one_run's row per run, in order]}.
    """
    tasks = _tasks(group, cfg, runs)
    one = functools.partial(one_run, program, corpus)
    if _workers(cfg) == 1 or len(tasks) < 2:
        rows = [one(t) for t in tasks]
    else:
        with concurrent.futures.ThreadPoolExecutor(_workers(cfg), "depth-run") as ex:
            rows = list(ex.map(one, tasks))
    out = {v.name: [] for v in group}
    for (v, *_), row in zip(tasks, rows):
        out[v.name].append(row)
    return out


def run_jobs(jobs, xiong_of, cfg, corpus, runs_of, on_compiled=None) -> dict:
    """Every job's runs, cfg.workers at a time across jobs (no core idles at a job's end):
    jobs [(L, variants sharing one program)], each program compiled in one compile thread in
    job order, runs_of(L, group) -> {variant name: [Run]}. Returns {(L, variant name): [rows]}
    and calls on_compiled(L, group, program) as each program is ready."""
    out = {}
    with (
        concurrent.futures.ThreadPoolExecutor(1, "depth-compile") as compiler,
        concurrent.futures.ThreadPoolExecutor(_workers(cfg), "depth-run") as pool,
    ):
        programs = [
            compiler.submit(compile_program, g[0], xiong_of(g[0]), cfg, n, corpus) for n, g in jobs
        ]

        def task(k, t):
            program = programs[k].result()
            return one_run(program, corpus, t)

        pending = []
        for k, (n_layers, group) in enumerate(jobs):
            for t in _tasks(group, cfg, runs_of(n_layers, group)):
                pending.append(((n_layers, t[0].name), pool.submit(task, k, t)))
        for k, (n_layers, group) in enumerate(jobs):
            if on_compiled is not None:
                on_compiled(n_layers, group, programs[k].result())
        for key, future in pending:
            out.setdefault(key, []).append(future.result())
    return out


def make_xiong_program(model, xiong, cfg):
    """jit(vmap(seeds)): (init keys [S], data keys [S], train [n]) -> grad_norms of the
    gradient at initialisation on each seed's first training batch (the batch step 0 of a
    training run of that seed draws: make_program's gradient at i = 0, without the rest)."""
    tc = cfg.train
    loss = functools.partial(lm.loss, model)

    def one(init_key, data_key, train):
        params = model.init(init_key)
        batch = data.batch(train, jax.random.fold_in(data_key, 0), tc.batch, tc.length)
        return grad_norms(model, xiong, jax.grad(loss)(params, batch))

    return jax.jit(jax.vmap(one, in_axes=(0, 0, None)))


def xiong_norms(variant, xiong, cfg, n_layers, corpus, seeds) -> tuple[dict, float]:
    """({'layers' [S, L], 'xiong' [S], 'total' [S]} of the gradient at init of `seeds` at
    n_layers, the seconds compiling took). Compiled with FAST_COMPILE: the program runs once."""
    model = lm.build(variant, cfg.model, n_layers, corpus.vocab_size)
    init_keys, data_keys = run_keys(cfg.seed, seeds)
    train_ids = jnp.asarray(corpus.train)
    t0 = time.perf_counter()
    exe = (
        make_xiong_program(model, xiong, cfg)
        .lower(init_keys, data_keys, train_ids)
        .compile(dict(FAST_COMPILE))
    )
    compile_s = time.perf_counter() - t0
    got = jax.device_get(exe(init_keys, data_keys, train_ids))
    return {k: np.asarray(x, np.float64) for k, x in got.items()}, compile_s


def serial_steps(variant, cfg, n_layers, corpus) -> dict:
    """Serial loop steps of the forward program (model.apply on one window of N characters),
    read from the compiled HLO (while loops' trip counts) and from the jaxpr (scan lengths)."""
    model = lm.build(variant, cfg.model, n_layers, corpus.vocab_size)
    params = model.init(jax.random.PRNGKey(0))
    x = jnp.asarray(corpus.valid[:1, :-1])  # [1, N]
    options = jit_options(compiler_options(fast=cfg.compile_fast))
    exe = jax.jit(model.apply).lower(params, x).compile(options)
    return {
        "n": int(x.shape[1]),
        "hlo": probes.hlo_sequential_steps(exe.as_text()),
        "jaxpr": probes.jaxpr_sequential_steps(model.apply, params, x),
    }


def param_count(variant, cfg, n_layers, vocab_size) -> int:
    model = lm.build(variant, cfg.model, n_layers, vocab_size)
    return count_params(jax.eval_shape(model.init, jax.random.PRNGKey(0)))
