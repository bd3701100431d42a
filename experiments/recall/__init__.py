"""recall: where a fixed-size state still bites. Multi-query associative recall (MQAR,
Zoology's generator: task.py) against the bytes of state a model carries, per family.

Two stages, every contender trained from scratch per seed on the same batches, scored on a
test set that no choice has seen:

    frontier   every contender (models.py: a family and the knobs that set its state) at one
               length N, trained on a mixture of K (each batch split evenly), accuracy per K
               against its state bytes: Based's recall-memory frontier (Arora et al. 2024,
               Figure 2), attention's KV cache drawn as the state it is
    lengths    a few contenders at fixed width, one N at a time, each on its mixture of
               K = N/16, N/8, N/4 (Zoology's Figure 2 pairs K with N alike): accuracy
               against N (the frontier's runs at its own N)

The readers without recall (task.position_reader, task.bag_reader) and the one with it
(task.lookup_reader) are scored on the frontier's test set: the bar is out of reach without
recall. The 'lr_grid' preset trains every frontier contender at every rate of a small grid
on the design seeds and scores it on the validation set only; the rate per family with the
best mean validation accuracy is what the default's config says (a test compares them).
The claims, judged on results.json, are in claims.py.
"""

import time

import jax
import numpy as np

from anatomy.probes.claims import claims_markdown, rule_text
from experiments import record
from experiments.progress import Progress
from experiments.recall import claims, models, plots, task, train

NAME = "recall"
TITLE = "Recall against state size: MQAR (Zoology), the Based frontier"  # of report.md


def batch_size(cfg, seq_len):
    """Sequences per step at length N: tokens_per_batch / N (at least one per K)."""
    return max(int(cfg.tokens_per_batch) // int(seq_len), 1)


def _draw(cfg, rng, batch, seq_len, pair_counts):
    data, _ = task.mixture(
        rng, batch, seq_len, pair_counts, cfg.vocab,
        power_a=cfg.power_a, random_non_queries=cfg.random_non_queries,
    )  # fmt: skip
    return data


def batches(cfg, seed, seq_len, pair_counts):
    """The training batches of a seed at length N, the same for every contender:
    (tokens [B, N], Queries)."""
    rng = np.random.default_rng([int(seed), int(seq_len)])
    b = batch_size(cfg, seq_len)
    b -= b % len(pair_counts)
    for _ in range(int(cfg.steps)):
        data = _draw(cfg, rng, max(b, len(pair_counts)), seq_len, pair_counts)
        yield data.inputs, task.queries(data.labels)


def held_out(cfg, split_seed, seq_len, pair_counts):
    """[one MQAR per K]: eval_examples each, drawn from split_seed (valid or test)."""
    rng = np.random.default_rng([int(split_seed), int(seq_len)])
    return [_draw(cfg, rng, int(cfg.eval_examples), seq_len, (k,)) for k in pair_counts]


def accuracy(model, params, cfg, held):
    """[accuracy per K] of a trained model on held-out MQARs (one per K)."""
    out = []
    for data in held:
        options = train.compiler_options(cfg.xla_opt_level)
        pred = train.predict(params, model, data.inputs, data.labels, int(cfg.eval_chunk), options)
        out.append(task.accuracy(pred, data.labels))
    return out


def fit(spec, cfg, seed, seq_len, pair_counts, learning_rate):
    """(model, params, losses, seconds) of contender `spec` trained at N on a seed's batches."""
    model = models.build(spec, cfg, cfg.vocab)
    opt = train.optimizer(learning_rate, cfg.warmup, cfg.steps, cfg.weight_decay)
    params = model.init(jax.random.PRNGKey(int(seed)))
    t0 = time.time()
    options = train.compiler_options(cfg.xla_opt_level)
    params, losses = train.fit(
        params, model, batches(cfg, seed, seq_len, pair_counts), opt, options
    )
    return model, params, losses, time.time() - t0


def rate(cfg, spec):
    return float(cfg.learning_rate[models.family_of(spec)])


def readers(cfg):
    """Accuracy per K of the readers with and without recall, on the frontier's test set."""
    n, ks = int(cfg.frontier.seq_len), tuple(cfg.frontier.pair_counts)
    held = held_out(cfg, cfg.test_seed, n, ks)
    seen = _draw(cfg, np.random.default_rng([int(cfg.valid_seed), 1]),
                 int(cfg.reader_examples) // len(ks) * len(ks), n, ks)  # fmt: skip
    out = {"lookup": [], "position": [], "bag": []}
    for d in held:
        out["lookup"].append(task.accuracy(task.lookup_reader(d.inputs, d.labels), d.labels))
        pred = task.position_reader(seen.labels, d.labels)
        out["position"].append(task.accuracy(pred, d.labels))
        pred = task.bag_reader(d.inputs, d.labels, cfg.vocab)
        out["bag"].append(task.accuracy(pred, d.labels))
    return out


def _describe(spec, cfg, seq_len):
    model = models.build(spec, cfg, cfg.vocab)
    params = jax.eval_shape(model.init, jax.random.PRNGKey(0))
    return {
        "family": models.family_of(spec),
        "params": train.count_params(params),
        "state_bytes": train.state_bytes(model, params, seq_len),
    }


def pair_counts(cfg, seq_len):
    """The K mixture at length N: the frontier's at its N, else N/16, N/8, N/4."""
    n = int(seq_len)
    if n == int(cfg.frontier.seq_len):
        return tuple(int(k) for k in cfg.frontier.pair_counts)
    return (n // 16, n // 8, n // 4)


def point(spec, cfg, seq_len, split_seed, progress=None):
    """Contender `spec` trained per seed at length N on its K mixture and scored on the split
    of split_seed: its description, accuracy [K][seed], final losses, seconds."""
    ks = pair_counts(cfg, seq_len)
    held = held_out(cfg, split_seed, seq_len, ks)
    runs = []
    for seed in cfg.seeds:
        if progress:
            progress.step(f"{spec} N={seq_len} seed {seed}")
        model, params, losses, secs = fit(spec, cfg, seed, seq_len, ks, rate(cfg, spec))
        runs.append((accuracy(model, params, cfg, held), losses[-1], secs))
    return {
        **_describe(spec, cfg, seq_len),
        "learning_rate": rate(cfg, spec),
        "accuracy": [list(a) for a in zip(*(r[0] for r in runs))],  # [K][seed]
        "final_train_loss": [r[1] for r in runs],
        "train_seconds": [r[2] for r in runs],
    }


def frontier(cfg, split_seed, progress=None):
    """Every frontier contender at the frontier's N: accuracy [K][seed]."""
    n = int(cfg.frontier.seq_len)
    out = {spec: point(spec, cfg, n, split_seed, progress) for spec in cfg.frontier.contenders}
    return {"seq_len": n, "pair_counts": list(pair_counts(cfg, n)), "contenders": out}


def fits(cfg) -> int:
    """How many models a judged run trains (the frontier's, then the lengths' other N)."""
    front, n = set(cfg.frontier.contenders), int(cfg.frontier.seq_len)
    others = sum(
        int(m) != n or spec not in front
        for spec in cfg.lengths.contenders
        for m in cfg.lengths.seq_lens
    )
    return len(cfg.seeds) * (len(front) + others)


def lengths(cfg, split_seed, front, progress=None):
    """Each lengths contender at each N on its K mixture (the frontier's runs at its N):
    accuracy [N][K][seed], the mean over K per seed [N][seed], state bytes [N]."""
    ns = [int(n) for n in cfg.lengths.seq_lens]
    out = {}
    for spec in cfg.lengths.contenders:
        rows = []
        for n in ns:
            same = n == front["seq_len"] and spec in front["contenders"]
            rows.append(
                front["contenders"][spec] if same else point(spec, cfg, n, split_seed, progress)
            )
        out[spec] = {
            "family": models.family_of(spec),
            "accuracy_by_k": [r["accuracy"] for r in rows],  # [N][K][seed]
            "accuracy": [list(np.mean(r["accuracy"], axis=0)) for r in rows],  # [N][seed]
            "state_bytes": [r["state_bytes"] for r in rows],
        }
    return {"seq_lens": ns, "pair_counts": [list(pair_counts(cfg, n)) for n in ns],
            "contenders": out}  # fmt: skip


def lr_grid(cfg):
    """Every frontier contender at every rate of cfg.lr_grid on the design seeds, scored on
    the validation set (mean accuracy over K and seeds); the chosen rate per family."""
    n, ks = int(cfg.frontier.seq_len), tuple(cfg.frontier.pair_counts)
    held = held_out(cfg, cfg.valid_seed, n, ks)
    rates = [float(r) for r in cfg.lr_grid]
    valid = {}
    progress = Progress(NAME, len(cfg.frontier.contenders) * len(rates) * len(cfg.seeds))
    for spec in cfg.frontier.contenders:
        valid[spec] = []
        for lr in rates:
            accs = []
            for seed in cfg.seeds:
                progress.step(f"{spec} learning rate {lr:g} seed {seed}")
                model, params, _, _ = fit(spec, cfg, seed, n, ks, lr)
                accs.append(float(np.mean(accuracy(model, params, cfg, held))))
            valid[spec].append(float(np.mean(accs)))
    return {"rates": rates, "valid_accuracy": valid, "chosen": choose(valid, rates)}


def choose(valid, rates):
    """{family: rate}: per family, the rate with the best validation accuracy averaged over
    the family's contenders (the first on a tie)."""
    by_family = {}
    for spec, accs in valid.items():
        by_family.setdefault(models.family_of(spec), []).append(accs)
    return {f: rates[int(np.argmax(np.mean(a, axis=0)))] for f, a in by_family.items()}


def run(config, workdir):
    """Measure, write results.json, plots, report.md (the lr_grid preset: the grid only)."""
    started = record.start(NAME, config, workdir)
    results = {"config": config.to_dict()}
    if config.lr_grid:
        results["lr_grid"] = lr_grid(config)
        results["plots"] = []
        return started.finish(
            results, None, TITLE + " (learning-rate grid)", [("Grid", plots.grid_table(results))]
        )
    results["readers"] = readers(config)
    progress = Progress(NAME, fits(config))
    results["frontier"] = frontier(config, config.test_seed, progress)
    results["lengths"] = lengths(config, config.test_seed, results["frontier"], progress)
    results["plots"] = plots.draw(record.stored(results), workdir)
    plain = record.stored(results)
    return started.finish(
        results,
        claims.table,
        TITLE,
        [
            ("The chapter's claim", claims_markdown(claims.chapter(plain))),
            ("Frontier: accuracy per K against state bytes", plots.frontier_table(plain)),
            ("Accuracy against N", plots.lengths_table(plain)),
            ("Readers with and without recall", plots.readers_table(plain)),
            ("The papers' figures beside ours", plots.papers(plain)),
            ("How it was measured", plots.notes(plain)),
            ("How verdicts are decided", rule_text()),
        ],
    )
