"""Validation while training: teacher-forced loss and token accuracy on fixed held-out batches.

    evaluate = make_validate(eval_step, batches)       # batches: a fixed list, e.g. 16 valid batches
    train(model, ..., config, workdir, evaluate=evaluate)   # with config.eval_every > 0

Over the real target tokens n_j of each batch j (pad excluded; eval_step's 'tokens'):

    valid_loss     = Σ_j n_j · nll_j / Σ_j n_j        (mean -log p(y_t | y_<t, x), unsmoothed)
    valid_accuracy = Σ_j n_j · acc_j / Σ_j n_j        (argmax == target)

i.e. the token-weighted means a single batch holding every token would give.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import numpy as np


def make_validate(
    eval_step: Callable, batches: Sequence[dict], *, prefix: str = "valid_"
) -> Callable:
    """evaluate(state) -> {prefix+'loss', prefix+'accuracy', prefix+'tokens'} as floats.

    eval_step(params, batch) -> metrics with 'nll', 'accuracy', 'tokens': a jitted one, e.g.
    compile_eval_step(make_eval_step(model)) or anatomy.sharding's sharded eval step. `batches`
    are fixed: every call sees the same tokens, so the numbers compare across steps and models.
    `state` is a TrainState (its params are read) or a params tree.
    """
    batches = list(batches)
    if not batches:
        raise ValueError("make_validate: no validation batches (is the valid split empty?)")

    def evaluate(state) -> dict:
        params = getattr(state, "params", state)
        got = jax.device_get([eval_step(params, b) for b in batches])
        n = np.array([float(m["tokens"]) for m in got])
        w = n / max(n.sum(), 1.0)
        return {
            prefix + "loss": float(np.sum(w * [float(m["nll"]) for m in got])),
            prefix + "accuracy": float(np.sum(w * [float(m["accuracy"]) for m in got])),
            prefix + "tokens": float(n.sum()),
        }

    return evaluate
