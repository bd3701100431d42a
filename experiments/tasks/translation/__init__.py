"""Translators trained and scored the one way every experiment that translates shares
(rnn_vs_attn, the variants of rnnenc_state, each setting of recipe_sweep), on the config of
experiments/configs/rnn_vs_attn.py:

    train(config, workdir)   every model of config.models, config.seeds times, each in
                             workdir/<model>/ (own checkpoints: a rerun resumes per model):
                             trained on config.data's corpus with the same token budget,
                             validated every config.train.eval_every steps, the test (or
                             valid) split decoded and scored with sacrebleu overall and per
                             source-length bucket; results.json, the rows and their means
    training.py              one model's recipe, batches, training on the mesh and scoring
    seeds.py                 a model's rows over seeds -> mean ± std, and their tables
    cost.py                  what a paper-scale run will cost, predicted before it starts

Training goes through anatomy.train.sharded's jitted step on the mesh of config.sharding
(default: every device on the data axis; one device on a plain CPU run, where results are
those of the unsharded step). Batch rows are rounded to a multiple of the data axis. With
several processes (launch.py's distributed flags) each feeds only its rows of every batch;
decoding and BLEU run on a local copy of the parameters, and only process 0 writes files.
"""

from __future__ import annotations

import time

import jax

from anatomy import data, distributed, sharding
from experiments.lab import jsonio, provenance
from experiments.lab.progress import Progress
from experiments.tasks.translation import cost, seeds, training


def train(config, workdir):
    """Train and evaluate config.models (each config.seeds times); write results.json (process
    0); return {'models': name -> aggregated entry, 'setup': ...}."""
    specs = {
        name: training.model_spec(name) for name in config.models
    }  # bad names fail here, first
    split = training.eval_split(config)
    started, t0 = provenance.provenance(), time.time()  # commit, machine, versions, load before
    cpu0 = time.process_time()  # this process's CPU seconds, every thread (load-proof-ish)
    n_seeds = training.n_seeds(config)
    sc = training.sharding_config(config)
    mesh = sharding.mesh_from_config(sc)  # a mesh that does not fit: ValueError, here
    lead = distributed.is_coordinator()
    estimate = None
    if lead and config.get("cost_estimate", None) and config.cost_estimate.enabled:
        estimate = cost.estimate(config)  # before the corpus: reading WMT'14 takes a while
        print(cost.describe(estimate), flush=True)
    corpus = data.load_corpus(config.data, workdir=workdir) if lead else None
    distributed.barrier("rnn_vs_attn vocab")  # process 0 has written the vocabularies
    if not lead:
        corpus = data.load_corpus(config.data, workdir=workdir)
    rows = training.batch_rows(mesh, tuple(sc.rules))
    batchers = {}  # one per training length limit
    valid = training.valid_batches(config, corpus, rows)
    models = {}
    runs = Progress("rnn_vs_attn", len(specs) * n_seeds)
    for name, (_, limit) in specs.items():
        if limit not in batchers:
            batchers[limit] = training.train_batcher(config, corpus, rows, limit)
        seed_rows, example = [], None
        for seed in range(n_seeds):
            runs.step(f"{name}, seed {seed}: train, validate, decode")
            row, _, attn, pair = training.train_one(
                name, seed, config, corpus, batchers[limit], valid, workdir, mesh
            )
            seed_rows.append(row)
            if attn is not None:
                example = training.attention_example(attn, pair)
        models[name] = seeds.aggregate(seed_rows)
        if example is not None:  # seed 0's cross-attention on one long test sentence
            models[name]["attention_example"] = example
    counts = next(iter(models.values()))["seeds"][0]["count_by_length"]
    meta = {
        "corpus": config.data.name,
        "corpus_sizes": corpus.report.get("sizes"),
        "corpus_report": data.corpus_report(corpus),  # skipped lines, filtered pairs
        "vocab": [corpus.src_vocab.size, corpus.tgt_vocab.size],
        "token_budget": config.data.token_budget,
        "num_steps": config.train.num_steps,
        "max_train_seconds": config.train.max_train_seconds,
        "seeds": n_seeds,
        "std": seeds.STD,
        "eval_every": config.train.eval_every,
        "valid_batches": len(valid),
        "train_max_src_len": {n: lim for n, (_, lim) in specs.items() if lim},
        "eval_split": split,  # 'valid' when the run scores a selection (recipe_sweep)
        "test_sentences_per_bucket": counts,
        "decode": training.describe_decoding(config),
        "jax": jax.__version__,
        "devices": str(jax.devices()[0].platform),
        "mesh": {k: int(v) for k, v in mesh.shape.items()},
        "processes": jax.process_count(),
        "provenance": dict(
            started,
            loadavg_after=provenance.load_average(),
            wall_seconds=time.time() - t0,
            # CPU time of the whole run: on an idle machine a compute-bound run's wall clock
            # is at most this (about half of it when XLA keeps two cores busy); under load
            # the wall clock grows, this far less
            cpu_seconds=time.process_time() - cpu0,
        ),
        "config": config.to_dict(),  # what made these numbers (results/ and the docs quote it)
    }
    if estimate is not None:
        meta["cost_estimate"] = estimate
    results = {"models": models, "setup": meta}
    if lead:
        jsonio.write_json(workdir, results)
    return results
