"""copy: can a model repeat a string it has read? (Jelassi et al. 2024, "Repeat After Me").

Task (experiments/tasks/copying.py): '$ s | s .' over an alphabet of A symbols; every
contender is trained on strings of 1 .. L symbols and tested at lengths up to 8L on exact
match (every symbol and the final '.'), at a matched parameter count (each contender's width
chosen so that its parameter count comes closest to target_params: contenders.matched, in
experiments/tasks/contenders.py). Contenders, trained from scratch per seed on the same
batches: softmax attention (RoPE; NoPE; Hard-ALiBi heads, Jelassi et al.'s
length-generalising encodings), the LSTM, and the recurrent mixers of anatomy.mixers, built as
recall builds them (2 layers, no MLP, the same short conv in front of every mixer).

Drawn beside each fixed-state model: Jelassi et al.'s bound l* = b / log2 A
(copying.state_bound), b the bits of its state. The readers without copying (position only, a bag of the string's
symbols) and the one with it are scored on the same test strings: the bar is out of reach
without copying. The 'lr_grid' preset trains every contender at every rate of a grid on the
design seed, scored on the validation strings only (mean exact match over the tested lengths
up to L, ties broken by the lower validation loss): each contender its own rate, written into
the default's config. The 'pilot' preset is the default on design seeds: the effect and seed
spread each claim's seeds are sized from (claims.py reads it from results/copy/pilot.json).
Claims: claims.py.
"""

import concurrent.futures
import multiprocessing
import time

import jax
import ml_collections
import numpy as np

from anatomy import lm
from anatomy.compiling import compiler_options
from anatomy.params import count_params
from anatomy.train import labelled
from experiments.copy import claims, plots
from experiments.lab import record
from experiments.lab.grids import merge_grids
from experiments.lab.progress import Progress
from experiments.tasks import copying
from experiments.tasks.contenders import build, family_of, matched, parse

NAME = "copy"
TITLE = "Copying: repeat a string (Jelassi et al. 2024), trained to L, tested to 8L"


def _vocab(cfg):
    return copying.ids(cfg.alphabet).vocab


def batches(cfg, seed):
    """The training batches of a seed (the same for every contender): (tokens, Queries)
    padded to one shape, strings of U{1 .. L} symbols."""
    rng = np.random.default_rng([int(seed), 1])
    width, size = copying.width(cfg.train_max), int(cfg.batch) * (int(cfg.train_max) + 1)
    for _ in range(int(cfg.steps)):
        data = copying.batch(rng, copying.train_lengths(rng, cfg.batch, cfg.train_max), cfg.alphabet,
                          width)  # fmt: skip
        yield data.tokens, labelled.queries(data.labels, size)


def held_out(cfg, split_seed, lengths=None):
    """[one Copy batch per tested length]: eval_examples strings each, from split_seed."""
    rng = np.random.default_rng([int(split_seed), 2])
    lengths = cfg.test_lengths if lengths is None else lengths
    return [
        copying.batch(rng, np.full(int(cfg.eval_examples), int(n)), cfg.alphabet) for n in lengths
    ]


def measure(model, params, cfg, held):
    """([exact-match rate per length], [symbol accuracy per length])."""
    exact, symbols = [], []
    for data in held:
        options = compiler_options(cfg.xla_opt_level)
        pred = labelled.predict(
            params, model, data.tokens, data.labels, int(cfg.eval_chunk), options
        )
        exact.append(float(copying.exact(pred, data.labels).mean()))
        asked = data.labels != copying.IGNORE
        symbols.append(float((pred == data.labels)[asked].mean()))
    return exact, symbols


def valid_loss(model, params, cfg, held):
    """The mean cross-entropy (nats) over every labelled position of `held` (the lr grid's
    tie-break between rates that copy equally often)."""
    options = compiler_options(cfg.xla_opt_level)
    pairs = [(data.tokens, data.labels) for data in held]
    return labelled.mean_loss(params, model, pairs, int(cfg.eval_chunk), options)


def fit(spec, cfg, seed, learning_rate):
    """(model, params, losses, seconds, cpu_seconds): the matched contender `spec` trained on
    a seed's batches (wall clock and this process's CPU time, compiling included)."""
    model = build(spec, cfg, _vocab(cfg))
    opt = labelled.optimizer(
        float(learning_rate), int(cfg.warmup), int(cfg.steps), float(cfg.weight_decay)
    )
    params = model.init(jax.random.PRNGKey(int(seed)))
    t0, c0 = time.time(), time.process_time()
    options = compiler_options(cfg.xla_opt_level)
    params, losses = labelled.fit(params, model, batches(cfg, seed), opt, options)
    return model, params, losses, time.time() - t0, time.process_time() - c0


def rate(cfg, name):
    """Contender `name`'s peak learning rate: each its own (the lr grid's choice)."""
    return float(cfg.learning_rate[name])


def readers(cfg):
    """Exact-match rate per tested length of the readers with and without copying."""
    held = held_out(cfg, cfg.test_seed)
    rng = np.random.default_rng([int(cfg.valid_seed), 3])
    longest = max(int(n) for n in cfg.test_lengths)
    seen = copying.batch(
        rng, copying.train_lengths(rng, cfg.reader_examples, longest), cfg.alphabet
    )
    out = {"copy": [], "position": [], "bag": []}
    for d in held:
        out["copy"].append(copying.copy_reader(d.tokens, d.labels, d.lengths, cfg.alphabet))
        out["position"].append(copying.position_reader(seen.labels, d.labels))
        out["bag"].append(copying.bag_reader(d.tokens, d.labels, d.lengths, cfg.alphabet))
    return {k: [float(copying.exact(p, d.labels).mean()) for p, d in zip(v, held)]
            for k, v in out.items()}  # fmt: skip


CURVE_BLOCK = 100  # steps per point of the recorded training-loss curve


def _blocks(losses):
    x = np.asarray(losses, dtype=np.float64)
    n = len(x) // CURVE_BLOCK * CURVE_BLOCK
    return [float(v) for v in x[:n].reshape(-1, CURVE_BLOCK).mean(1)] if n else [float(x.mean())]


def contenders(cfg):
    """{name: the matched spec} of every contender."""
    return {
        name: matched(name, cfg, _vocab(cfg), int(cfg.target_params)) for name in cfg.contenders
    }


def _describe(name, spec, cfg):
    model = build(spec, cfg, _vocab(cfg))
    params = jax.eval_shape(model.init, jax.random.PRNGKey(0))
    lengths = [int(n) for n in cfg.test_lengths]
    state = [lm.state_bytes(model, params, copying.width(n)) for n in lengths]
    fixed = len(set(state)) == 1  # a state that does not grow with the string
    return {
        "spec": spec,
        "family": family_of(name),
        "d_model": parse(spec)[1]["d_model"],
        "params": count_params(params),
        "state_bytes": state,  # [length]: the state after '$ s | s .' of that length
        "bound": copying.state_bound(8 * state[0], cfg.alphabet) if fixed else None,
    }


def _one(job):
    """One (contender, seed) of run_all, self-contained so a worker process can run it:
    (exact, symbols, losses, seconds, cpu_seconds)."""
    cfg_dict, spec, seed, lr, split_seed = job
    cfg = ml_collections.ConfigDict(cfg_dict)
    model, params, losses, seconds, cpu = fit(spec, cfg, seed, lr)
    exact, symbols = measure(model, params, cfg, held_out(cfg, split_seed))
    return exact, symbols, losses, seconds, cpu


def _map(fn, jobs, workers, progress):
    """[fn(job)] in order, in `workers` processes (spawned: JAX does not survive a fork), or
    here when workers <= 1. Each job is independent and its own numbers: the same either way
    (tests/experiments/copy/test_copy.py runs both)."""
    labels = [label for label, _ in jobs]
    jobs = [job for _, job in jobs]
    if int(workers) <= 1:
        out = []
        for label, job in zip(labels, jobs):
            progress.step(label)
            out.append(fn(job))
        return out
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(int(workers), mp_context=ctx) as pool:
        futures = [pool.submit(fn, job) for job in jobs]
        for label, future in zip(labels, futures):
            progress.step(label)
            future.result()
        return [f.result() for f in futures]


def run_all(cfg, split_seed):
    """{contender: its entry}: every contender on every seed, each (contender, seed) an
    independent job, cfg.workers of them at once (the machine's cores)."""
    specs = contenders(cfg)
    jobs = [
        (f"{name} seed {seed}", (cfg.to_dict(), spec, int(seed), rate(cfg, name), split_seed))
        for name, spec in specs.items()
        for seed in cfg.seeds
    ]
    done = iter(_map(_one, jobs, cfg.get("workers", 1), Progress(NAME, len(jobs))))
    out = {}
    for name, spec in specs.items():
        runs = [next(done) for _ in cfg.seeds]
        out[name] = {
            **_describe(name, spec, cfg),
            "learning_rate": rate(cfg, name),
            "exact": [list(x) for x in zip(*(r[0] for r in runs))],  # [length][seed]
            "symbol_accuracy": [list(x) for x in zip(*(r[1] for r in runs))],
            "final_train_loss": [r[2][-1] for r in runs],
            # [seed][block]: the mean training loss over each CURVE_BLOCK steps (a plateau?)
            "train_loss_curve": [_blocks(r[2]) for r in runs],
            "train_seconds": [r[3] for r in runs],
            # CPU seconds (all threads): a run's cost on a loaded machine, where wall is not
            "train_cpu_seconds": [r[4] for r in runs],
        }
    return out


def _grid_one(job):
    """One (contender, rate, seed) of lr_grid, self-contained for a worker process: (the mean
    validation exact match over the lengths up to L, the mean validation loss there)."""
    cfg_dict, spec, seed, lr = job
    cfg = ml_collections.ConfigDict(cfg_dict)
    within = [int(n) for n in cfg.test_lengths if int(n) <= int(cfg.train_max)]
    held = held_out(cfg, cfg.valid_seed, within)
    model, params, *_ = fit(spec, cfg, seed, lr)
    return float(np.mean(measure(model, params, cfg, held)[0])), valid_loss(
        model, params, cfg, held
    )


def lr_grid(cfg):
    """Every contender at every rate of cfg.lr_grid on the design seeds, scored on the
    validation strings (mean exact match over the tested lengths up to L, and the mean loss
    there); each contender's chosen rate (`choose`). cfg.workers runs at once."""
    within = [int(n) for n in cfg.test_lengths if int(n) <= int(cfg.train_max)]
    rates = [float(r) for r in cfg.lr_grid]
    specs = contenders(cfg)
    jobs = [
        (f"{name} learning rate {lr:g} seed {seed}", (cfg.to_dict(), spec, int(seed), lr))
        for name, spec in specs.items()
        for lr in rates
        for seed in cfg.seeds
    ]
    done = iter(_map(_grid_one, jobs, cfg.get("workers", 1), Progress(NAME, len(jobs))))
    valid, loss = {}, {}
    for name in specs:
        valid[name], loss[name] = [], []
        for _ in rates:
            runs = [next(done) for _ in cfg.seeds]
            valid[name].append(float(np.mean([r[0] for r in runs])))
            loss[name].append(float(np.mean([r[1] for r in runs])))
    return {"rates": rates, "lengths": within, "valid_exact": valid, "valid_loss": loss,
            "chosen": choose(valid, loss, rates)}  # fmt: skip


def merged_grid(*grids):
    """One grid from lr_grid results run over disjoint rates on the same design seed, steps
    and validation strings (results/copy/lr_grid.json and lr_grid_top.json: the top rate was
    added once the mLSTM chose the old top edge), rates ascending, each contender's choice
    re-made over every rate (`choose`)."""
    rates, v = merge_grids(grids, ("valid_exact", "valid_loss"))
    return {"rates": rates, "lengths": grids[0]["lengths"], **v,
            "chosen": choose(v["valid_exact"], v["valid_loss"], rates)}  # fmt: skip


def choose(valid, loss, rates):
    """{contender: rate}: each contender's rate with the highest validation exact match, a
    tie (equal exact match, e.g. every string copied) broken by the lower validation loss (a
    non-finite loss, a diverged run, never wins)."""
    out = {}
    for name, exact in valid.items():
        # a diverged run's loss: NaN, or None once stored in results.json
        ls = [np.inf if x is None or not np.isfinite(x) else x for x in loss[name]]
        best = max(range(len(rates)), key=lambda i: (exact[i], -ls[i]))
        out[name] = rates[best]
    return out


def run(config, workdir):
    """Measure, write results.json, plots, report.md (the lr_grid preset: the grid only)."""
    started = record.start(NAME, config, workdir)
    results = {"config": config.to_dict()}
    if config.lr_grid:
        return started.finish_grid(results, lr_grid(config), plots.grid_table, TITLE)
    results["lengths"] = [int(n) for n in config.test_lengths]
    results["train_max"] = int(config.train_max)
    results["longer"] = str(config.longer)  # the attention contender copy/longer reads
    results["readers"] = readers(config)
    results["contenders"] = run_all(config, config.test_seed)
    return started.finish_drawn(
        results,
        plots.draw,
        claims,
        TITLE,
        lambda plain: [
            ("Exact match against string length", plots.exact_table(plain)),
            ("Readers with and without copying", plots.readers_table(plain)),
            ("The paper's figures beside ours", plots.paper(plain)),
            ("How it was measured", plots.notes(plain)),
        ],
    )
