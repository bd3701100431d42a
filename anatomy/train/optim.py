"""Learning-rate schedules and the optimiser: Adam(W) + global-norm clipping (optax)."""

from __future__ import annotations

import jax.numpy as jnp
import optax

from anatomy.errors import BadInputError

DECAYS = ("rsqrt", "cosine", "linear", "constant")


def make_schedule(
    learning_rate: float,
    warmup_steps: int,
    num_steps: int,
    decay: str = "rsqrt",
    end_fraction: float = 0.0,
):
    """A schedule step -> learning rate: linear warmup, then a decay.

    warmup (0 <= s < W):  lr·s/W       (W = warmup_steps; no warmup when W = 0)
    then, for s >= W, by `decay`:
        'rsqrt'    lr·sqrt(W / s)   (inverse square root, Vaswani et al.; W taken as 1 if 0)
        'cosine'   lr·(f + (1-f)·½(1 + cos(π·(s-W)/(N-W))))   f = end_fraction, N = num_steps
        'linear'   lr·(1 - (1-f)·(s-W)/(N-W))
        'constant' lr
    """
    if decay not in DECAYS:
        raise BadInputError(f"Unknown learning-rate decay {decay!r}; choose one of {DECAYS}")
    if warmup_steps < 0 or num_steps <= 0:
        raise BadInputError(
            f"Need warmup_steps >= 0 and num_steps > 0, got {warmup_steps}, {num_steps}"
        )
    w = int(warmup_steps)
    rest = max(num_steps - w, 1)
    warm = optax.linear_schedule(0.0, learning_rate, max(w, 1))
    if decay == "rsqrt":
        w0 = max(w, 1)
        after = lambda s: learning_rate * jnp.sqrt(w0 / jnp.maximum(s + w, w0))  # s counts from W
    elif decay == "cosine":
        after = optax.cosine_decay_schedule(learning_rate, rest, alpha=end_fraction)
    elif decay == "linear":
        after = optax.linear_schedule(learning_rate, learning_rate * end_fraction, rest)
    else:
        after = optax.constant_schedule(learning_rate)
    if w == 0:
        return lambda s: after(s)
    return optax.join_schedules([warm, after], boundaries=[w])


def config_schedule(config):
    """make_schedule from a train config (learning_rate, warmup_steps, num_steps, decay,
    end_fraction): the schedule the optimiser trains with and the loop logs."""
    return make_schedule(
        config.learning_rate,
        config.warmup_steps,
        config.num_steps,
        config.decay,
        config.end_fraction,
    )


def make_optimizer(config) -> optax.GradientTransformation:
    """optax chain from a train config: clip_by_global_norm(clip_norm) -> AdamW(schedule).

    Fields read: learning_rate, warmup_steps, num_steps, decay, end_fraction, b1, b2,
    weight_decay, clip_norm (0 = no clipping).
    """
    schedule = config_schedule(config)
    parts = []
    if config.clip_norm and config.clip_norm > 0:
        parts.append(optax.clip_by_global_norm(config.clip_norm))
    parts.append(
        optax.adamw(
            schedule, b1=config.b1, b2=config.b2, eps=1e-9, weight_decay=config.weight_decay
        )
    )
    return optax.chain(*parts)
