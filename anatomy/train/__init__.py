"""Training and evaluation harness: losses, optimiser, pure train step, loop, checkpoints, BLEU.

Public API
    default_train_config() -> ConfigDict: seed, num_steps, max_train_seconds, learning_rate,
        warmup_steps, decay ('rsqrt'|'cosine'|'linear'|'constant'), end_fraction, b1, b2,
        weight_decay, clip_norm, label_smoothing, compute_dtype ('float32'|'bfloat16'),
        log_every, eval_every (0 = no validation), checkpoint_every, keep_checkpoints, progress.
    train(model, batches, config, workdir, *, params=None, name='', train_step=None,
          fingerprint=None, state_shardings=None, evaluate=None)
        -> TrainResult(state, summary)     resumes from workdir/checkpoints when present, only
        with the fingerprint the checkpoint carries (default anatomy.fingerprint.run_fingerprint
        (config, model); else FingerprintMismatchError naming the fields), restored into
        state_shardings (any mesh; sharded.train_kwargs supplies them);
        batches(start) -> iterator of batch start, start+1, ... (anatomy.data Batcher.iterate).
        Writes workdir/metrics.jsonl, workdir/tensorboard/, workdir/checkpoints/<step>/.
        Raises NonFiniteLossError naming the step and the last good checkpoint.
        evaluate(state) -> dict runs every config.eval_every steps, outside the training clock.
    make_validate(eval_step, batches) -> evaluate(state) -> {valid_loss, valid_accuracy,
        valid_tokens}: teacher-forced, token-weighted over fixed held-out batches
    TrainState(params, opt_state, step)                       a pytree (NamedTuple)
    make_train_step(model, tx, *, label_smoothing, compute_dtype)
        -> train_step(state, batch, rng) -> (state, metrics)  pure
    compile_train_step(train_step, *, donate=True, in_shardings=None, out_shardings=None)
        the ONE place jit, donation and shardings are wired
    make_eval_step / compile_eval_step; sequence_loss, smoothed_cross_entropy
    make_schedule, config_schedule (the one the optimiser trains with and the loop logs),
    make_optimizer
    Checkpointer(directory, max_to_keep) .save(state, meta) / .restore(like, step=None,
        shardings=None) / .read_meta(step=None)
        CorruptCheckpointError, NonFiniteStateError
    MetricsWriter, read_metrics, Progress
    corpus_bleu, corpus_chrf, decode_ids, evaluate_bleu (BLEU and chrF overall and per
        LENGTH_BUCKETS label), select_decoding (beam size and length penalty chosen on a
        validation split)
    sharded: the sharded steps over anatomy.sharding's meshes (shard_train_step,
        shard_eval_step, state_shardings, sharded_steps, setup_train, train_kwargs)
    labelled (imported by name): a decoder-only LanguageModel (anatomy.lm) trained by jitted
        optimiser steps on the positions a task labels, or on every next token (fit,
        optimizer, queries, predict, mean_loss)
"""

from anatomy.train import sharded
from anatomy.train.checkpoint import Checkpointer, CorruptCheckpointError, NonFiniteStateError
from anatomy.train.evaluate import (
    corpus_bleu,
    corpus_chrf,
    decode_ids,
    evaluate_bleu,
    select_decoding,
)
from anatomy.train.loop import NonFiniteLossError, TrainResult, default_train_config, train
from anatomy.train.losses import sequence_loss, smoothed_cross_entropy
from anatomy.train.metrics import MetricsWriter, Progress, read_metrics
from anatomy.train.optim import config_schedule, make_optimizer, make_schedule
from anatomy.train.state import TrainState, all_finite, create_state
from anatomy.train.step import (
    compile_eval_step,
    compile_train_step,
    make_eval_step,
    make_train_step,
)
from anatomy.train.validate import make_validate

__all__ = [
    "Checkpointer",
    "CorruptCheckpointError",
    "NonFiniteStateError",
    "NonFiniteLossError",
    "TrainResult",
    "TrainState",
    "MetricsWriter",
    "Progress",
    "all_finite",
    "compile_eval_step",
    "compile_train_step",
    "corpus_bleu",
    "corpus_chrf",
    "create_state",
    "decode_ids",
    "default_train_config",
    "evaluate_bleu",
    "select_decoding",
    "make_eval_step",
    "make_optimizer",
    "make_validate",
    "make_schedule",
    "config_schedule",
    "make_train_step",
    "read_metrics",
    "sharded",
    "sequence_loss",
    "smoothed_cross_entropy",
    "train",
]
