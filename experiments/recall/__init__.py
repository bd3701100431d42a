"""recall: where a fixed-size state still bites. Multi-query associative recall (MQAR,
Zoology's generator: experiments/tasks/mqar.py) against the bytes of state a model carries,
per family.

Every contender (experiments/tasks/contenders.py: a family and the knobs that set its state)
trains from scratch per seed on the same batches: Based's mixture of lengths (Arora et al. 2024, Figure 2's
configs), every step holding every N of cfg.mixture.seq_lens, each split evenly over K = N/16,
N/8, N/4 pairs. Each is then scored at every (N, K) of the mixture on a held-out set no choice
has seen: accuracy against its state bytes is Based's recall-memory frontier (attention's KV
cache drawn as the state it is, at each N), accuracy against N is Zoology's Figure 2 at one
width.

The readers without recall (mqar.position_reader, mqar.bag_reader) and the one with it
(mqar.lookup_reader) are scored on the same held-out set: the bar is out of reach without
recall. The 'lr_grid' preset trains one contender per family at every rate of a grid on the
design seeds, scored on the validation set; the rate with the best mean validation accuracy
per family is what the default's config says (tests/experiments/recall/test_recall.py ties them). The 'pilot'
preset is the default on design seeds, scored on the validation set: the effect and spread
each claim's power is read from. The claims, judged on results.json, are in claims.py.
"""

import functools
import time

import jax
import numpy as np

from anatomy import lm
from anatomy.compiling import compiler_options
from anatomy.params import count_params
from anatomy.train import labelled
from experiments.lab import record
from experiments.lab.grids import merge_grids
from experiments.lab.progress import Progress
from experiments.recall import claims, plots
from experiments.tasks import contenders, mqar

NAME = "recall"
TITLE = "Recall against state size: MQAR (Zoology), the Based frontier"  # of report.md


def cells(cfg):
    """[(N, (K, ...))]: every length of the mixture with its K = N/f, f in k_fractions."""
    return [
        (int(n), tuple(int(n) // int(f) for f in cfg.mixture.k_fractions))
        for n in cfg.mixture.seq_lens
    ]


def batch_shape(cfg):
    """[(N, sequences a step at N)] and the total sequences a step."""
    per = [(n, int(p) * len(ks)) for (n, ks), p in zip(cells(cfg), cfg.mixture.per_k, strict=True)]
    return per, sum(b for _, b in per)


def _draw(cfg, rng, batch, seq_len, pair_counts):
    data, _ = mqar.mixture(
        rng, batch, seq_len, pair_counts, cfg.vocab,
        power_a=cfg.power_a, random_non_queries=cfg.random_non_queries,
    )  # fmt: skip
    return data


def batches(cfg, seed):
    """The training batches of a seed, the same for every contender: per step (tokens,
    Queries), each a tuple with one part per N of the mixture ([B_N, N] and its queries)."""
    rng = np.random.default_rng([int(seed), 1])
    shape, _ = batch_shape(cfg)
    for _ in range(int(cfg.steps)):
        toks, qs = [], []
        for (n, ks), (_, b) in zip(cells(cfg), shape):
            data = _draw(cfg, rng, b, n, ks)
            toks.append(data.inputs)
            qs.append(labelled.queries(data.labels))
        yield tuple(toks), tuple(qs)


def split_seed(cfg):
    """The seed of the set the frontier is scored on (cfg.split: 'test' or 'valid')."""
    if cfg.split not in ("test", "valid"):
        raise ValueError(f"recall: split must be 'test' or 'valid', got {cfg.split!r}")
    return int(cfg.test_seed if cfg.split == "test" else cfg.valid_seed)


def held_out(cfg, seed):
    """{N: [one MQAR per K]}: eval_examples each at every (N, K), drawn from `seed`."""
    out = {}
    for n, ks in cells(cfg):
        rng = np.random.default_rng([int(seed), n])
        out[n] = [_draw(cfg, rng, int(cfg.eval_examples), n, (k,)) for k in ks]
    return out


def accuracy(model, params, cfg, held):
    """[N][K] accuracy of a trained model on held-out MQARs ({N: [one per K]})."""
    options = compiler_options(cfg.xla_opt_level)
    out = []
    for n in sorted(held):
        row = []
        for data in held[n]:
            pred = labelled.predict(
                params, model, data.inputs, data.labels, int(cfg.eval_chunk), options
            )
            row.append(mqar.accuracy(pred, data.labels))
        out.append(row)
    return out


def fit(spec, cfg, seed, learning_rate):
    """(model, params, losses, seconds) of contender `spec` trained on a seed's batches."""
    model = contenders.build(spec, cfg, cfg.vocab)
    opt = labelled.optimizer(
        float(learning_rate), int(cfg.warmup), int(cfg.steps), float(cfg.weight_decay)
    )
    params = model.init(jax.random.PRNGKey(int(seed)))
    t0 = time.time()
    options = compiler_options(cfg.xla_opt_level)
    params, losses = labelled.fit(params, model, batches(cfg, seed), opt, options)
    return model, params, losses, time.time() - t0


def rate(cfg, spec):
    return float(cfg.learning_rate[contenders.family_of(spec)])


def readers(cfg, seed):
    """Accuracy [N][K] of the readers with and without recall on the set drawn from `seed`
    (the position-only reader counts reader_examples training examples per N)."""
    held = held_out(cfg, seed)
    out = {"lookup": [], "position": [], "bag": []}
    for n, ks in cells(cfg):
        part = int(cfg.reader_examples) // len(ks) * len(ks)
        seen = _draw(cfg, np.random.default_rng([int(cfg.valid_seed), n, 1]), part, n, ks)
        row = {name: [] for name in out}
        for d in held[n]:
            row["lookup"].append(mqar.accuracy(mqar.lookup_reader(d.inputs, d.labels), d.labels))
            pred = mqar.position_reader(seen.labels, d.labels)
            row["position"].append(mqar.accuracy(pred, d.labels))
            row["bag"].append(mqar.accuracy(mqar.bag_reader(d.inputs, d.labels, cfg.vocab),
                                            d.labels))  # fmt: skip
        for name in out:
            out[name].append(row[name])
    return out


def describe(spec, cfg):
    """{family, params, state_bytes [per N]} of contender `spec` (shapes only)."""
    model = contenders.build(spec, cfg, cfg.vocab)
    params = jax.eval_shape(model.init, jax.random.PRNGKey(0))
    return {
        "family": contenders.family_of(spec),
        "params": count_params(params),
        "state_bytes": [lm.state_bytes(model, params, n) for n, _ in cells(cfg)],
    }


def point(spec, cfg, held, learning_rate, progress=None):
    """Contender `spec` trained per seed on the mixture and scored on `held`: its
    description, accuracy [N][K][seed], final losses, seconds."""
    runs = []
    for seed in cfg.seeds:
        if progress:
            progress.step(f"{spec} seed {seed}")
        model, params, losses, secs = fit(spec, cfg, seed, learning_rate)
        runs.append((accuracy(model, params, cfg, held), losses[-1], secs))
    acc = np.array([r[0] for r in runs], float)  # [seed, N, K]
    return {
        **describe(spec, cfg),
        "learning_rate": float(learning_rate),
        "accuracy": np.moveaxis(acc, 0, -1).tolist(),  # [N][K][seed]
        "final_train_loss": [r[1] for r in runs],
        "train_seconds": [r[2] for r in runs],
    }


def frontier(cfg, seed, progress=None):
    """Every contender scored at every (N, K) on the set drawn from `seed`."""
    held = held_out(cfg, seed)
    out = {
        spec: point(spec, cfg, held, rate(cfg, spec), progress) for spec in cfg.frontier.contenders
    }
    return {
        "seq_lens": [n for n, _ in cells(cfg)],
        "pair_counts": [list(ks) for _, ks in cells(cfg)],
        "contenders": out,
    }


def lr_grid(cfg):
    """Each of cfg.grid_contenders at every rate of cfg.lr_grid on the design seeds, scored on
    the validation set (mean accuracy over every (N, K) and the seeds); the chosen rate per
    family, and accuracy [N][K][seed] of every point."""
    held = held_out(cfg, cfg.valid_seed)
    rates = [float(r) for r in cfg.lr_grid]
    valid, points = {}, {}
    progress = Progress(NAME, len(cfg.grid_contenders) * len(rates) * len(cfg.seeds))
    for spec in cfg.grid_contenders:
        valid[spec], points[spec] = [], []
        for lr in rates:
            p = point(spec, cfg, held, lr, progress)
            valid[spec].append(float(np.mean(p["accuracy"])))
            points[spec].append(p["accuracy"])
    return {"rates": rates, "valid_accuracy": valid, "chosen": choose(valid, rates),
            "accuracy": points, "seq_lens": [n for n, _ in cells(cfg)],
            "pair_counts": [list(ks) for _, ks in cells(cfg)]}  # fmt: skip


def merged_grid(*grids):
    """One grid from lr_grid results run over disjoint rates on the same design seeds and
    validation set (results/recall/lr_grid.json and lr_grid_low.json: the low rate was added
    once the hybrid and Mamba chose the bottom edge), rates ascending, the choice re-made over
    every rate (`choose`)."""
    rates, v = merge_grids(grids, ("valid_accuracy", "accuracy"))
    return {**grids[0], "rates": rates, **v, "chosen": choose(v["valid_accuracy"], rates)}


def choose(valid, rates):
    """{family: rate}: per family, the rate with the best validation accuracy averaged over
    the family's contenders (the first on a tie)."""
    by_family = {}
    for spec, accs in valid.items():
        by_family.setdefault(contenders.family_of(spec), []).append(accs)
    return {f: rates[int(np.argmax(np.mean(a, axis=0)))] for f, a in by_family.items()}


def fits(cfg) -> int:
    """How many models a judged run trains."""
    return len(cfg.seeds) * len(cfg.frontier.contenders)


def run(config, workdir):
    """Measure, write results.json, plots, report.md (the lr_grid preset: the grid only)."""
    started = record.start(NAME, config, workdir)
    results = {"config": config.to_dict()}
    if config.lr_grid:
        return started.finish_grid(results, lr_grid(config), plots.grid_table, TITLE)
    seed = split_seed(config)
    results["readers"] = readers(config, seed)
    results["frontier"] = frontier(config, seed, Progress(NAME, fits(config)))
    # the pilot is judged without power (it is what power is read from)
    judge = functools.partial(claims.table, pilot=None) if config.split == "valid" else claims.table
    return started.finish_drawn(
        results,
        plots.draw,
        claims,
        TITLE + (" (pilot, design seeds, validation set)" if config.split == "valid" else ""),
        lambda plain: [
            ("Frontier: accuracy against state bytes", plots.frontier_table(plain)),
            ("Accuracy against N", plots.lengths_table(plain)),
            ("Readers with and without recall", plots.readers_table(plain)),
            ("The papers' figures beside ours", plots.papers(plain)),
            ("How it was measured", plots.notes(plain)),
        ],
        table=judge,
    )
