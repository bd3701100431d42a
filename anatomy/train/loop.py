"""The training loop: resumable, NaN-guarded, logging, checkpointing.

    result = train(model, batches, config, workdir)

`batches(start)` returns an iterator whose k-th item is batch number start + k (the data
pipeline's `batch k = f(seed, k)`), so the data position is just the step. The dropout key
of step k is fold_in(key(seed), k). Together with the checkpointed TrainState this makes a
resumed run take exactly the steps an uninterrupted one takes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import jax
import ml_collections
import numpy as np

from anatomy import paths
from anatomy.errors import BadInputError
from anatomy.fingerprint import check as check_fingerprint
from anatomy.fingerprint import run_fingerprint
from anatomy.train.checkpoint import Checkpointer
from anatomy.train.metrics import MetricsWriter, Progress
from anatomy.train.optim import (
    config_schedule,
    make_optimizer,
    schedule_at_time,
    set_learning_rate,
    time_budgeted,
)
from anatomy.train.state import TrainState, create_state
from anatomy.train.step import compile_train_step, make_train_step


class NonFiniteLossError(BadInputError, FloatingPointError):
    """The loss became NaN or infinite; the message names the step and the last good checkpoint."""


class TrainResult(NamedTuple):
    """state: the final TrainState; summary: steps, train_seconds, tokens, tokens_per_second,
    final_loss, final_accuracy, resumed_from (step or None)."""

    state: TrainState
    summary: dict


def default_train_config() -> ml_collections.ConfigDict:
    """The training fields every experiment's `config.train` carries (comment per field)."""
    c = ml_collections.ConfigDict()
    c.seed = 0  # parameter init, dropout RNG (data order is the data config's seed)
    c.num_steps = 1000  # optimiser steps; training stops here (reproducible)
    c.max_train_seconds = 0.0  # > 0: stop at this much training time instead of num_steps, the
    # schedule laid out over it (num_steps then sets only its shape: warmup ends at
    # warmup_steps / num_steps of the budget); not reproducible to the digit
    c.learning_rate = 2e-3  # peak learning rate (Adam)
    c.warmup_steps = 100  # linear warmup from 0
    c.decay = "linear"  # after warmup: 'rsqrt' | 'cosine' | 'linear' | 'constant'
    c.end_fraction = 0.0  # cosine/linear: final lr as a fraction of the peak
    c.b1 = 0.9  # Adam β1
    c.b2 = 0.98  # Adam β2
    c.weight_decay = 0.0  # decoupled weight decay (AdamW); 0 = plain Adam
    c.clip_norm = 1.0  # global-norm gradient clipping; 0 = off
    c.label_smoothing = 0.1  # ε of label smoothing in the loss
    c.compute_dtype = "float32"  # 'float32' | 'bfloat16' (forward/backward; master params stay f32)
    c.log_every = 50  # metrics to metrics.jsonl / TensorBoard / stderr every N steps
    c.eval_every = 0  # > 0: train(evaluate=...)'s validation every N steps (a multiple
    # of log_every) and at the end; 0 = off
    c.checkpoint_every = 500  # orbax checkpoint every N steps (and always at the end)
    c.keep_checkpoints = 2  # newest checkpoints kept
    c.progress = True  # progress line with ETA on stderr
    return c


def _flush(pending: list, last_good: str) -> dict:
    """Fetch pending per-step metrics, stop on a non-finite loss, return token-weighted means."""
    fetched = jax.device_get([m for _, m in pending])
    for (step, _), m in zip(pending, fetched):
        if not math.isfinite(float(m["loss"])):
            raise NonFiniteLossError(
                f"Non-finite loss ({float(m['loss'])}) at step {step}; training stopped and no "
                f"checkpoint was written from these parameters. Last good checkpoint: {last_good}."
            )
    tokens = np.array([float(m["tokens"]) for m in fetched])
    w = tokens / max(tokens.sum(), 1.0)
    out = {
        k: float(np.sum(w * np.array([float(m[k]) for m in fetched])))
        for k in ("loss", "nll", "accuracy")
    }
    out["grad_norm"] = float(np.mean([float(m["grad_norm"]) for m in fetched]))
    out["tokens"] = float(tokens.sum())
    return out


def train(
    model,
    batches: Callable[[int], Iterator[dict]],
    config,
    workdir: str,
    *,
    params: Any = None,
    name: str = "",
    train_step: Callable | None = None,
    fingerprint: dict | None = None,
    state_shardings: Any = None,
    evaluate: Callable[[TrainState], dict] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> TrainResult:
    """Train `model` (a Translator: .init, .apply) on `batches` for config.num_steps steps.

    Writes into `workdir`: checkpoints/<step>/ (orbax), metrics.jsonl, tensorboard/ (the
    last two, and the progress line, from process 0 only when several processes train).
    If `workdir` already holds a checkpoint, resumes from the latest one (params, optimiser,
    step = data position; the RNG is a function of seed and step). `params` overrides
    model.init(key) for a fresh start. `train_step` overrides the compiled default
    (one built by compile_train_step). Raises NonFiniteLossError on a NaN/Inf loss.

    Fingerprint: every checkpoint's meta holds `fingerprint` (default
    anatomy.fingerprint.run_fingerprint(config, model): the train config without the fields
    free to change on resume, and the model config; callers add the data). A workdir whose
    checkpoint carries another stops with FingerprintMismatchError naming the fields, before
    any array is read. `state_shardings` (a TrainState of shardings, e.g. from
    anatomy.train.sharded.train_kwargs) is where a resumed state is restored, on any mesh.

    Validation: with `evaluate(state) -> dict of float scalars` (e.g. make_validate's
    valid_loss / valid_accuracy) and config.eval_every > 0, it runs every eval_every steps and
    at the last step; its scalars and valid_seconds join that step's metrics record. Its time
    is not training time (not in wall_time, train_seconds or the time budget), and it reads
    the state only, so training takes the same steps with it or without it.

    Time budget (config.max_train_seconds > 0; budgeted training, Li et al. 2020): the run
    stops at the first step that ends at or past the budget, whatever num_steps says, and
    every step trains at the learning rate of optim.schedule_at_time for the training time
    before it, so warmup and decay end at the budget. Each step is synced on the device
    before the clock is read (dispatch is asynchronous: an unsynced clock runs ahead of the
    work). `clock` (seconds) is injectable for tests.
    """
    if evaluate is not None and config.eval_every > 0 and config.eval_every % config.log_every:
        raise BadInputError(
            f"train.eval_every ({config.eval_every}) must be a multiple of "
            f"train.log_every ({config.log_every}): validation joins a log record"
        )
    tx = make_optimizer(config)
    init_key, dropout_key = jax.random.split(jax.random.key(config.seed))
    state = create_state(model.init(init_key) if params is None else params, tx)
    ckpt = Checkpointer(paths.join(workdir, "checkpoints"), max_to_keep=config.keep_checkpoints)
    fingerprint = run_fingerprint(config, model) if fingerprint is None else fingerprint
    meta = {
        "seed": int(config.seed),
        "data_position": 0,
        "train_seconds": 0.0,
        "tokens": 0.0,
        "last_metrics": {},
        "fingerprint": fingerprint,
    }
    resumed_from = ckpt.latest_step()
    if resumed_from is not None:
        check_fingerprint(
            f"the checkpoint {ckpt.path(resumed_from)}",
            ckpt.read_meta(resumed_from).get("fingerprint"),
            fingerprint,
            fresh=f"use another --workdir (or delete {workdir}) to train afresh",
        )
        state, meta = ckpt.restore(state, shardings=state_shardings)
    step = int(state.step)
    if train_step is None:
        train_step = compile_train_step(
            make_train_step(
                model,
                tx,
                label_smoothing=config.label_smoothing,
                compute_dtype=config.compute_dtype,
            )
        )
    # With several processes every one runs this loop; only process 0 writes the metrics
    # (metrics.jsonl, TensorBoard) and the progress line, the others log nothing.
    lead = jax.process_index() == 0
    writer = MetricsWriter(workdir, resume_step=step) if lead else None
    show = bool(config.progress) and lead
    progress = Progress(
        config.num_steps,
        start=step,
        name=name or "train",
        enabled=show,
        budget_s=config.max_train_seconds if time_budgeted(config) else 0.0,
    )
    if resumed_from is not None and show:
        progress.stream.write(
            f"[{name or 'train'}] resumed from {ckpt.path(resumed_from)} (step {step})\n"
        )
    last_good = (
        f"{ckpt.path(resumed_from)} (step {resumed_from})"
        if resumed_from is not None
        else "none yet"
    )
    train_seconds, tokens_total = float(meta["train_seconds"]), float(meta["tokens"])
    pending = []
    timed = time_budgeted(config)
    budget_hit = timed and train_seconds >= config.max_train_seconds
    more = (lambda: not budget_hit) if timed else (lambda: step < config.num_steps)
    data = batches(int(meta["data_position"])) if more() else iter(())
    interval_t0 = clock()  # checkpoint writes are not counted as training time
    elapsed = 0.0  # training time since interval_t0, as of the last synced step
    try:
        while more():
            batch = next(data)
            if timed:  # the learning rate for the time trained so far
                lr = schedule_at_time(config, train_seconds + elapsed)
                state = state._replace(opt_state=set_learning_rate(state.opt_state, lr))
            state, m = train_step(state, batch, jax.random.fold_in(dropout_key, step))
            step += 1
            pending.append((step, m))
            if timed:
                _sync(m)  # the step has run, not just been dispatched
                elapsed = clock() - interval_t0
                budget_hit = train_seconds + elapsed >= config.max_train_seconds
            done = budget_hit if timed else step == config.num_steps
            valid_due = (
                evaluate is not None
                and config.eval_every > 0
                and (step % config.eval_every == 0 or done)
            )
            if not (step % config.log_every == 0 or step % config.checkpoint_every == 0 or done):
                continue  # (a valid_due step is a log step: checked above)
            agg = _flush(pending, last_good)  # syncs on the device
            # timed: training time ends when the last step has run (the clock that stopped it)
            interval_s = elapsed if timed else clock() - interval_t0
            train_seconds += interval_s
            tokens_total += agg["tokens"]
            rec = dict(
                agg,
                tokens_per_second=agg["tokens"] / max(interval_s, 1e-9),
                wall_time=train_seconds,
                learning_rate=(
                    schedule_at_time(config, train_seconds) if timed else _lr(config, step)
                ),
            )
            if valid_due:  # after the clock stopped: not training time
                rec.update(_validate(evaluate, state))
            if writer is not None:
                writer.write(step, rec)
            progress.update(
                step,
                seconds=train_seconds,
                loss=agg["loss"],
                acc=agg["accuracy"],
                tok_s=rec["tokens_per_second"],
                **({"val_loss": rec["valid_loss"]} if "valid_loss" in rec else {}),
            )
            meta.update(
                data_position=step,
                train_seconds=train_seconds,
                tokens=tokens_total,
                last_metrics=rec,
            )
            pending = []
            if step % config.checkpoint_every == 0 or done:
                last_good = f"{ckpt.save(state, meta)} (step {step})"
            interval_t0, elapsed = clock(), 0.0
    finally:
        if writer is not None:
            writer.close()
        ckpt.close()
    last = meta.get("last_metrics", {})
    summary = {
        "steps": step,
        "train_seconds": train_seconds,
        "tokens": tokens_total,
        "tokens_per_second": tokens_total / max(train_seconds, 1e-9),
        "final_loss": last.get("loss", float("nan")),
        "final_accuracy": last.get("accuracy", float("nan")),
        "resumed_from": resumed_from,
        "stopped_by_time_budget": budget_hit,
    }
    return TrainResult(state, summary)


def _sync(metrics) -> None:
    """Wait until the step that produced `metrics` has run on the device."""
    jax.block_until_ready(metrics)


def _validate(evaluate: Callable[[TrainState], dict], state: TrainState) -> dict:
    """evaluate(state) as float scalars, plus valid_seconds (the time it took)."""
    t0 = time.perf_counter()
    out = {k: float(v) for k, v in jax.device_get(evaluate(state)).items()}
    return dict(out, valid_seconds=time.perf_counter() - t0)


def _lr(config, step: int) -> float:
    """The learning rate at `step` (for the logs), from the optax schedule that trains."""
    return float(config_schedule(config)(step))
