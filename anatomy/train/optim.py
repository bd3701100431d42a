"""Learning-rate schedules and the optimiser: Adam(W) (or Adadelta) + global-norm clipping
(optax)."""

from __future__ import annotations

import jax.numpy as jnp
import optax

from anatomy.errors import BadInputError

DECAYS = ("rsqrt", "cosine", "linear", "constant")
# config.optimizer (a train config without the field trains with AdamW): Adadelta with Zeiler
# 2012's rho and eps as Bahdanau et al. 2015 trained RNNsearch (learning_rate 1.0, no decay).
OPTIMIZERS = ("adamw", "adadelta")
ADADELTA = {"rho": 0.95, "eps": 1e-6}
# optax's states of an injected hyperparameter (the names differ between optax versions)
_INJECTED = tuple(
    getattr(optax, n)
    for n in ("InjectHyperparamsState", "InjectStatefulHyperparamsState")
    if hasattr(optax, n)
)


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


def time_budgeted(config) -> bool:
    """True when config.max_train_seconds > 0: the run stops at that training time and its
    schedule is laid out over it (budgeted training, Li et al. 2020), not over num_steps."""
    return float(config.get("max_train_seconds", 0.0) or 0.0) > 0


def schedule_at_time(config, seconds: float) -> float:
    """The learning rate of a time-budgeted run after `seconds` of training: the step
    schedule's at step num_steps · min(seconds / max_train_seconds, 1), so warmup ends at
    warmup_steps / num_steps of the budget and the decay reaches its end value at the budget."""
    progress = min(max(seconds, 0.0) / config.max_train_seconds, 1.0)
    return float(config_schedule(config)(progress * config.num_steps))


def make_optimizer(config) -> optax.GradientTransformation:
    """optax chain from a train config: clip_by_global_norm(clip_norm) -> AdamW(schedule).

    Fields read: learning_rate, warmup_steps, num_steps, decay, end_fraction, b1, b2,
    weight_decay, clip_norm (0 = no clipping), max_train_seconds, and optimizer when the
    config has it ('adamw', the default, or 'adadelta': optax.adadelta(schedule, **ADADELTA,
    weight_decay), b1 and b2 unused). Under a time budget
    (time_budgeted) the learning rate is an injected hyperparameter of the optimiser state,
    which the loop sets before every step from the training time (set_learning_rate);
    otherwise optax's own step count drives the schedule.
    """
    parts = []
    if config.clip_norm and config.clip_norm > 0:
        parts.append(optax.clip_by_global_norm(config.clip_norm))
    name = config.get("optimizer", "adamw")
    if name not in OPTIMIZERS:
        raise BadInputError(f"Unknown optimizer {name!r}; choose one of {OPTIMIZERS}")
    if name == "adadelta":
        opt, kwargs = optax.adadelta, dict(ADADELTA)
    else:
        opt, kwargs = optax.adamw, {"b1": config.b1, "b2": config.b2, "eps": 1e-9}
    if time_budgeted(config):
        opt = optax.inject_hyperparams(opt, static_args=tuple(kwargs))
        lr = schedule_at_time(config, 0.0)
    else:
        lr = config_schedule(config)
    parts.append(opt(lr, weight_decay=config.weight_decay, **kwargs))
    return optax.chain(*parts)


def set_learning_rate(opt_state, learning_rate: float):
    """`opt_state` (of a time-budgeted make_optimizer) with its injected learning rate set."""
    found = []

    def visit(s):
        if isinstance(s, _INJECTED):
            found.append(s)
            lr = jnp.asarray(learning_rate, s.hyperparams["learning_rate"].dtype)
            return s._replace(hyperparams={**s.hyperparams, "learning_rate": lr})
        if isinstance(s, tuple) and not hasattr(s, "_fields"):
            return tuple(visit(x) for x in s)
        return s

    out = visit(opt_state)
    if not found:
        raise BadInputError("set_learning_rate: the optimiser state has no injected learning rate")
    return out
