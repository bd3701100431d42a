"""long_range: can the model recall the token it saw k steps ago?

Task (delayed recall): random symbols x_1..x_L from a vocabulary of V; at every position
t > k the target is x_{t-k}, scored by accuracy over those positions (chance = 1/V). The
sequence length is the same for every k, so only the distance changes. Each (model, k)
pair is trained from scratch for the same number of Adam steps, with every model sized to
the same parameter budget:

    rnn / lstm / gru   embedding -> anatomy.recurrence.run -> linear readout (recurrent.py)
    mingru / mamba     the same, the cell a linear recurrence (gates from x only) that
                       run computes with jax.lax.associative_scan (recurrent.py)
    conv               embedding -> causal GLU conv blocks (conv.py): no recurrence, a
                       receptive field of 1 + L·(K-1) positions
    transformer        embedding·√m -> the causal pre-LN decoder-only stack with sinusoidal
                       positions (anatomy.attention.decoder_only) -> linear readout (attention.py)

The claims, judged on results.json, are in claims.py.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from experiments import outputs, record
from experiments.long_range import attention, claims, conv, recurrent

FAMILIES = {"transformer": attention, "conv": conv}  # any other name: a recurrent cell

TITLE = "Long-range recall: accuracy against distance k"  # of report.md


def count_params(tree):
    return int(sum(np.prod(x.shape) for x in jax.tree_util.tree_leaves(tree)))


def init_model(key, name, cfg, width):
    """Parameters of `name` at hidden size / d_model `width`."""
    return FAMILIES.get(name, recurrent).init(key, name, cfg, width)


def apply_model(name, params, tokens):
    """tokens [B, L] int -> logits [B, L, V] (causal: position t sees tokens <= t)."""
    return FAMILIES.get(name, recurrent).apply(name, params, tokens)


def pick_width(name, cfg):
    """The width whose parameter count comes closest to cfg.param_budget."""
    step = 2 * cfg.n_heads if name == "transformer" else 1
    best = None
    for width in range(step, 512, step):
        shapes = jax.eval_shape(lambda w=width: init_model(jax.random.PRNGKey(0), name, cfg, w))
        gap = abs(count_params(shapes) - cfg.param_budget)
        if best is None or gap < best[1]:
            best = (width, gap)
        elif gap > best[1]:
            break  # counts grow with width: past the best
    return best[0]


def make_batch(rng, cfg, batch, k):
    """tokens [B, L], targets [B, L] (x_{t-k}), weights [B, L] (1 where t >= k)."""
    length = max(cfg.k_grid) + cfg.extra_length
    tokens = rng.integers(0, cfg.vocab, size=(batch, length))
    targets = np.roll(tokens, k, axis=1)
    weights = (np.arange(length) >= k)[None, :].repeat(batch, 0).astype(np.float32)
    return tokens.astype(np.int32), targets.astype(np.int32), weights


@functools.cache
def _steps(name, lr):
    """Jitted train and eval steps of one architecture (k is data, so one compile serves all k)."""
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(lr))

    def loss_fn(params, tokens, targets, weights):
        logits = apply_model(name, params, tokens)
        ce = optax.softmax_cross_entropy_with_integer_labels(logits, targets)
        return jnp.sum(ce * weights) / jnp.sum(weights)

    @jax.jit
    def train_step(params, state, tokens, targets, weights):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets, weights)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    @jax.jit
    def accuracy(params, tokens, targets, weights):
        hit = jnp.argmax(apply_model(name, params, tokens), -1) == targets
        return jnp.sum(hit * weights) / jnp.sum(weights)

    return opt, train_step, accuracy


def train_and_eval(name, width, k, cfg):
    opt, train_step, accuracy = _steps(name, cfg.learning_rate)
    params = init_model(jax.random.PRNGKey(cfg.seed + k), name, cfg, width)
    state = opt.init(params)
    rng = np.random.default_rng(cfg.seed + 1000 * k)
    loss = float("nan")
    for _ in range(cfg.steps):
        params, state, loss = train_step(params, state, *make_batch(rng, cfg, cfg.batch, k))
    test = make_batch(np.random.default_rng(cfg.seed + 7 + 1000 * k), cfg, cfg.eval_batch, k)
    return float(accuracy(params, *test)), float(loss)


def plot(cfg, results, workdir):
    fig, ax = outputs.new_figure(figsize=(7, 4.5))
    for name, r in results.items():
        ax.plot(cfg.k_grid, r["accuracy"], "o-", label=f"{name} ({r['params']} params)")
    ax.axhline(1.0 / cfg.vocab, color="gray", ls=":", label="chance")
    ax.set_xscale("log", base=2)
    ax.set(
        xlabel="recall distance k",
        ylabel="accuracy",
        ylim=(0, 1.05),
        title=f"recall x_(t-k): {cfg.steps} Adam steps per point, equal parameter budget",
    )
    ax.legend(fontsize=8)
    return outputs.save_plot(fig, workdir, "long_range.png")


def run(config, workdir):
    """Train every (model, k), write results.json, long_range.png and report.md."""
    started = record.start("long_range", config, workdir)
    models = {}
    for name in config.models:
        width = pick_width(name, config)
        n_params = count_params(init_model(jax.random.PRNGKey(0), name, config, width))
        accs, losses = [], []
        for k in config.k_grid:
            acc, loss = train_and_eval(name, width, k, config)
            accs.append(acc)
            losses.append(loss)
        models[name] = {"width": width, "params": n_params, "accuracy": accs, "final_loss": losses}
    png = plot(config, models, workdir)
    chance = 1.0 / config.vocab
    results = {
        "config": config.to_dict(),
        "k_grid": list(config.k_grid),
        "chance": chance,
        "models": models,
        "plots": [png],
    }
    acc_table = outputs.markdown_table(
        ("model", "width", "params") + tuple(f"k={k}" for k in config.k_grid),
        [(n, r["width"], r["params"]) + tuple(r["accuracy"]) for n, r in models.items()],
    )
    notes = (
        f"Vocabulary {config.vocab} (chance {chance:.3f}), sequence length "
        f"{max(config.k_grid) + config.extra_length} for every k, {config.steps} Adam steps of "
        f"{config.batch} sequences (lr {config.learning_rate:g}, clip 1.0) per point, from "
        f"scratch; every model sized to ~{config.param_budget} parameters. One seed: differences "
        "of a few points are noise. Small, short runs: a model that fails here might succeed "
        "with more steps; the comparison is at equal budget."
    )
    return started.finish(
        results, claims.table, TITLE, [("Accuracy", acc_table), ("How it was measured", notes)]
    )
