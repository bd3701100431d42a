"""long_range: can the model recall the token it saw k steps ago?

Task (delayed recall): random symbols x_1..x_L from a vocabulary of V; at every position
t >= k the target is x_{t-k}, scored by accuracy over those positions (chance = 1/V). The
sequence length is the same for every k, so only the distance changes. Each (model, k, seed)
is trained from scratch for the same number of Adam steps, with every model sized to the
same parameter budget:

    rnn / lstm / gru   embedding -> anatomy.scan.run -> linear readout (recurrent.py)
    mingru / mamba     the same, the cell a linear recurrence (gates from x only) that
                       run computes with jax.lax.associative_scan (recurrent.py)
    conv               embedding -> causal GLU conv blocks (conv.py): no recurrence, a
                       receptive field of 1 + L·(K-1) positions
    transformer        embedding·√m + sinusoidal positions -> anatomy.stack's causal pre-LN
                       stack of attention mixers -> linear readout (attention.py)

A seed fixes, for each k, the initial weights, the training stream and the held-out batch;
every model sees the same ones (a paired comparison). One compiled program per model trains
and scores any (seed, k): the steps run in a jax.lax.scan, the batches drawn on the device.
Readers without recall (readers.py: by position only, by unigram counts) are scored on the
same held-out batches: the recall bar sits above them. The claims, judged on results.json by
their intervals over the seeds, are in claims.py; plots.py draws from results.json alone.
"""

import functools

import jax
import jax.numpy as jnp
import optax

from anatomy.compiling import compiler_options, jit_options
from anatomy.errors import BadInputError
from anatomy.params import count_params
from experiments.lab import record
from experiments.lab.progress import Progress
from experiments.long_range import attention, claims, conv, plots, readers, recurrent

FAMILIES = {"transformer": attention, "conv": conv}  # any other name: a recurrent cell

TITLE = "Long-range recall: accuracy against distance k"  # of report.md


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


def length(cfg) -> int:
    """The sequence length, the same for every k: max(k_grid) + extra_length."""
    return max(cfg.k_grid) + cfg.extra_length


def make_batch(key, cfg, batch, k):
    """tokens [B, L] uniform over the vocabulary, targets [B, L] (x_{t-k}; wrapped where
    t < k), weights [B, L] (1 where t >= k). k may be traced (one program serves every k)."""
    n = length(cfg)
    tokens = jax.random.randint(key, (batch, n), 0, cfg.vocab, jnp.int32)
    targets = tokens[:, (jnp.arange(n) - k) % n]
    weights = jnp.broadcast_to((jnp.arange(n) >= k).astype(jnp.float32), (batch, n))
    return tokens, targets, weights


def keys(seed, k):
    """A (seed, k)'s independent keys: init, training stream, held-out batch, the readers'
    training batch."""
    names = ("init", "data", "test", "reader")
    return dict(zip(names, jax.random.split(jax.random.fold_in(jax.random.PRNGKey(seed), k), 4)))


# Trained by a Python loop over one compiled step instead of one program with the steps in a
# jax.lax.scan: XLA:CPU ran the conv stack's convolutions about ten times slower inside the
# loop of the scan (measured at the default sizes: about 30 against 3 ms per step); the
# recurrent models and the Transformer ran as fast or faster in the scan. Both paths draw the
# same batches and give the same numbers (tests/experiments/long_range/test_long_range.py).
STEPWISE = ("conv",)


def trainer(name, width, cfg, stepwise=None):
    """(key_init, key_data, key_test, k) -> (test accuracy, final training loss): `name` at
    `width` trained from scratch for cfg.steps Adam steps (clipped at global norm 1), step i
    on the batch of fold_in(key_data, i), then scored on the held-out batch of key_test. One
    compiled program with the steps in a jax.lax.scan, or (stepwise; default: name in
    STEPWISE) a Python loop over a compiled step; k is an argument, so one compilation serves
    every (seed, k)."""
    stepwise = name in STEPWISE if stepwise is None else stepwise
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(cfg.learning_rate))
    # cfg.compile_fast: anatomy.compiling's FAST_COMPILE (the quick preset: its programs
    # compile several times faster and run a few steps each), else XLA's defaults
    options = jit_options(compiler_options(fast=cfg.compile_fast))
    jit = functools.partial(jax.jit, compiler_options=options)

    def loss_fn(params, tokens, targets, weights):
        logits = apply_model(name, params, tokens)
        ce = optax.softmax_cross_entropy_with_integer_labels(logits, targets)
        return jnp.sum(ce * weights) / jnp.sum(weights)

    def init(key_init):
        params = init_model(key_init, name, cfg, width)
        return params, opt.init(params)

    def step(params, state, key_data, i, k):
        batch = make_batch(jax.random.fold_in(key_data, i), cfg, cfg.batch, k)
        loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    def evaluate(params, key_test, k):
        tokens, targets, weights = make_batch(key_test, cfg, cfg.eval_batch, k)
        hit = jnp.argmax(apply_model(name, params, tokens), -1) == targets
        return jnp.sum(hit * weights) / jnp.sum(weights)

    if stepwise:
        init_c, step_c, evaluate_c = jit(init), jit(step), jit(evaluate)

        def train_and_eval(key_init, key_data, key_test, k):
            params, state = init_c(key_init)
            loss = jnp.nan
            for i in range(cfg.steps):
                params, state, loss = step_c(params, state, key_data, jnp.int32(i), k)
            return evaluate_c(params, key_test, k), loss

        return train_and_eval

    def train_and_eval(key_init, key_data, key_test, k):
        def body(carry, i):
            params, state, loss = step(*carry, key_data, i, k)
            return (params, state), loss

        (params, _), losses = jax.lax.scan(body, init(key_init), jnp.arange(cfg.steps))
        return evaluate(params, key_test, k), losses[-1]

    return jit(train_and_eval)


def measure_model(name, cfg, progress=None) -> dict:
    """One model over the grid: {width, params, accuracy [k][seed], final_loss [k][seed]}."""
    width = pick_width(name, cfg)
    shapes = jax.eval_shape(lambda: init_model(jax.random.PRNGKey(0), name, cfg, width))
    n_params = count_params(shapes)
    train_and_eval = trainer(name, width, cfg)
    acc, loss = [], []
    for k in cfg.k_grid:
        if progress:
            progress.step(f"{name} k={k}, seeds {list(cfg.seeds)}")
        row = [train_and_eval(kk["init"], kk["data"], kk["test"], k) for kk in _seed_keys(cfg, k)]
        acc.append([float(a) for a, _ in row])
        loss.append([float(x) for _, x in row])
    return {"width": width, "params": n_params, "accuracy": acc, "final_loss": loss}


def _seed_keys(cfg, k):
    return [keys(seed, k) for seed in cfg.seeds]


def measure_readers(cfg) -> dict:
    """{'position', 'unigram'}: [k][seed] accuracy of each reader without recall on the
    held-out batch every model is scored on."""
    out = {"position": [], "unigram": []}
    for k in cfg.k_grid:
        rows = [
            readers.reader_accuracies(
                make_batch(kk["reader"], cfg, cfg.eval_batch, k),
                make_batch(kk["test"], cfg, cfg.eval_batch, k),
                cfg.vocab,
            )
            for kk in _seed_keys(cfg, k)
        ]
        for name in out:
            out[name].append([r[name] for r in rows])
    return out


def run(config, workdir):
    """Train every (model, k, seed), score the readers, write results.json, long_range.png
    (drawn from what results.json holds) and report.md."""
    if not config.seeds:
        raise BadInputError("long_range: config.seeds is empty; give at least one seed")
    started = record.start("long_range", config, workdir)
    progress = Progress("long_range", len(config.models) * len(config.k_grid))
    models = {name: measure_model(name, config, progress) for name in config.models}
    results = {
        "config": config.to_dict(),
        "k_grid": list(config.k_grid),
        "chance": 1.0 / config.vocab,
        "models": models,
        "readers": measure_readers(config),
    }
    plain = record.stored(results)
    results["plots"] = plots.draw(plain, workdir)
    return started.finish(
        results,
        claims.table,
        TITLE,
        [("Accuracy", plots.accuracy_table(plain)), ("How it was measured", plots.notes(plain))],
    )
