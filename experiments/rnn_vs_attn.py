"""rnn_vs_attn: the fixed-vector bottleneck, measured (CHAPTER.md claim 2; Bahdanau et al. Fig. 2).

Trains RNNenc (LSTM encoder-decoder, no attention), RNNsearch (bi-LSTM + additive attention)
and the Transformer on the same corpus with the same token budget, each in workdir/<model>/
(own checkpoints: a rerun resumes per model), then decodes the test split greedily and scores
it with sacrebleu overall and per source-length bucket. Writes results.json, report.md and
bleu_by_length.png, loss_vs_steps.png, loss_vs_time.png, attention_<model>.png.

Training goes through anatomy.sharding's jitted step on the mesh of config.sharding (default:
every device on the data axis; one device on a plain CPU run, where results are those of the
unsharded step). Batch rows are rounded to a multiple of the data axis. With several
processes (launch.py's distributed flags) each feeds only its rows of every batch; decoding
and BLEU run on a local copy of the parameters, and only process 0 writes files.
"""
from __future__ import annotations

import json
import os
import sys

import jax
import numpy as np

from anatomy import data as D
from anatomy import distributed
from anatomy import fingerprint
from anatomy import sharding
from anatomy import train as T
from anatomy.errors import BadInputError
from anatomy.data.curriculum import Curriculum
from anatomy.seq2seq import build_model, count_params
from experiments import common

TABLE_HEADER = ["model", "params", "train s", "tokens/s", "final loss", "BLEU"]


def _model_config(config, name):
    return config.model[name] if name in config.model else None


# Fields of config.train a model may NOT override in config.train_by_model: every model gets
# the same token budget (steps x token_budget, or the same wall-clock budget) and the same seed.
SHARED_TRAIN_FIELDS = ("num_steps", "max_train_seconds", "seed")


def _train_config(config, name):
    """config.train with config.train_by_model[name]'s overrides (each model its own recipe:
    learning rate, warmup, schedule, smoothing, clipping), checked (a clear error, not a deep
    traceback)."""
    c = config.train
    block = config.get("train_by_model", {}).get(name, None) or {}
    over = {k: v for k, v in block.items() if v is not None}
    shared = sorted(set(over) & set(SHARED_TRAIN_FIELDS))
    if shared:
        raise BadInputError(f"train_by_model.{name}: {shared} must be the same for every model "
                         "(same token budget, same seed); set them in config.train")
    unknown = sorted(set(over) - set(c.keys()))
    if unknown:
        raise BadInputError(f"train_by_model.{name}: unknown train fields {unknown}; fields are "
                         f"{sorted(c.keys())}")
    if over:
        c = c.copy_and_resolve_references()
        c.update(over)
    if c.num_steps <= 0 or c.log_every <= 0 or c.checkpoint_every <= 0:
        raise BadInputError("train.num_steps, log_every and checkpoint_every must be positive")
    return c


def _evaluate(model, params, corpus, config, mdir, step, run_fp):
    """BLEU on the test split, cached in mdir/eval.json for this run fingerprint (data, model,
    train config: what the checkpoint was trained with), eval config and checkpoint step.

    A cache made from anything else is recomputed, with one line naming what changed (a cache
    never stops a run: re-scoring a kept checkpoint with another beam is legitimate).
    Only process 0 reads or writes the cache (the others recompute: no half-written reads).
    """
    path = os.path.join(mdir, "eval.json")
    key = {"step": step, "eval": config.eval.to_dict(), "run": run_fp}
    lead = distributed.is_coordinator()
    if lead and os.path.exists(path):
        with open(path) as f:
            cached = json.load(f)
        stale = fingerprint.differences(cached.get("key") or {}, key)
        if not stale:
            return cached["result"]
        print(f"[{os.path.basename(mdir)}] {path} is stale, scoring again ({'; '.join(stale)[:400]})",
              file=sys.stderr, flush=True)
    ev = T.evaluate_bleu(model, params, corpus.test_by_bucket(), corpus.src_vocab, corpus.tgt_vocab,
                         max_per_bucket=config.eval.max_per_bucket, batch_size=config.eval.batch_size,
                         beam_size=config.eval.beam_size, extra_len=config.eval.extra_len,
                         len_multiple=config.eval.len_multiple)
    if lead:
        common.write_json(mdir, {"key": key, "result": ev}, name="eval.json")
    return ev


def _attention_example(corpus, min_len):
    """(src, tgt) of the first test pair whose source has >= min_len tokens (else the longest)."""
    pairs = [p for items in corpus.test_by_bucket().values() for p in items]
    for s, t in pairs:
        if len(corpus.src_vocab.encode(s)) >= min_len:
            return s, t
    return max(pairs, key=lambda p: len(p[0].split()))


def _attention_map(model, params, corpus, pair):
    """Teacher-forced cross-attention [T, S] (heads averaged) for one pair, or None."""
    src = np.asarray(corpus.src_vocab.encode(pair[0]), np.int32)
    tgt = np.asarray(corpus.tgt_vocab.encode(pair[1]), np.int32)
    batch = {"src": src[None], "src_len": np.array([len(src)], np.int32),
             "tgt_in": np.concatenate([[D.BOS], tgt]).astype(np.int32)[None],
             "tgt_out": np.concatenate([tgt, [D.EOS]]).astype(np.int32)[None],
             "tgt_len": np.array([len(tgt) + 1], np.int32)}
    _, inter = model.apply(params, batch, deterministic=True, return_intermediates=True)
    if "cross_attention" not in inter:
        return None
    w = np.asarray(inter["cross_attention"], np.float32)[0]      # [(h,) T, S]
    while w.ndim > 2:
        w = w.mean(0)                                             # average over heads
    return w


def _sharding_config(config):
    """config.sharding, or anatomy.sharding's default (every device on the data axis)."""
    return config.sharding if "sharding" in config else sharding.default_config()


def _batch_rows(mesh, rules):
    """Devices the batch rows are split over (rows per batch must be a multiple of it)."""
    return sharding.axis_size(mesh, sharding.batch_spec(mesh, rules)[0])


def _train_one(name, config, corpus, batcher, workdir, mesh):
    """Train (or resume) and evaluate one model; returns its results row and artefacts."""
    mdir = os.path.join(workdir, name)
    model = build_model(name, _model_config(config, name), corpus.src_vocab.size, corpus.tgt_vocab.size)
    if distributed.is_coordinator():
        common.write_json(mdir, {"name": name, "model_config": model.config.to_dict()},
                          name="model.json")
    tc, sc = _train_config(config, name), _sharding_config(config)
    batches = distributed.local_batches(batcher,    # each process reads only its rows
                                        sharding.batch_sharding(mesh, tuple(sc.rules)))
    # what the checkpoints are trained with: another config in this workdir stops the run
    run_fp = fingerprint.run_fingerprint(tc, model, data=corpus.fingerprint,
                                         batch_shapes=batcher.shapes,
                                         curriculum=config.get("curriculum", None))
    res = T.train(model, batches, tc, mdir, name=name, fingerprint=run_fp,
                  **sharding.train_kwargs(model, tc, sc))
    params = distributed.local_copy(res.state.params)   # whole arrays here, for decoding
    ev = _evaluate(model, params, corpus, config, mdir, int(res.state.step), run_fp)
    s, hist = res.summary, T.read_metrics(mdir)
    rates = [r["tokens_per_second"] for r in hist[1:]] or [s["tokens_per_second"]]
    row = {"params": count_params(params), "steps": s["steps"],
           "train_seconds": s["train_seconds"],
           "tokens_per_second": float(np.median(rates)),       # steady state: compiles excluded
           "tokens_per_second_overall": s["tokens_per_second"],  # all tokens / train_seconds
           "final_loss": s["final_loss"], "final_accuracy": s["final_accuracy"],
           "bleu": ev["bleu"], "bleu_by_length": ev["bleu_by_length"],
           "count_by_length": ev["count_by_length"],
           "decode_tokens_per_second": ev["decode_tokens_per_second"],
           "examples": [[x[:200] for x in ex] for ex in ev["examples"][:3]]}
    pair = _attention_example(corpus, config.eval.attention_min_len)
    return row, hist, _attention_map(model, params, corpus, pair), pair


def _plot_bleu(results, labels, workdir):
    fig, ax = common.new_figure(figsize=(6, 4))
    x = np.arange(len(labels))
    for name, r in results.items():
        ax.plot(x, [r["bleu_by_length"].get(lab, np.nan) for lab in labels], marker="o", label=name)
    ax.set_xticks(x, labels)
    ax.set(xlabel="source length (tokens)", ylabel="test BLEU", ylim=(0, 100),
           title="BLEU against source length (cf. Bahdanau et al. 2015, Fig. 2)")
    ax.legend()
    return common.save_plot(fig, workdir, "bleu_by_length.png")


def _plot_loss(histories, workdir):
    names = []
    for xkey, fname, xlabel in (("step", "loss_vs_steps.png", "optimiser step"),
                                ("wall_time", "loss_vs_time.png", "training time (s)")):
        fig, ax = common.new_figure(figsize=(6, 4))
        for name, recs in histories.items():
            ax.plot([r[xkey] for r in recs], [r["loss"] for r in recs], label=name)
        ax.set(xlabel=xlabel, ylabel="training loss (label-smoothed)", yscale="log")
        ax.legend()
        names.append(common.save_plot(fig, workdir, fname))
    return names


def _plot_attention(name, w, pair, corpus, workdir):
    src = pair[0].split()
    tgt = pair[1].split() + ["</s>"]
    fig, ax = common.new_figure(figsize=(9, 8))
    ax.imshow(w, cmap="gray_r", aspect="auto", vmin=0.0)
    fs = 5 if max(len(src), len(tgt)) > 40 else 7
    if w.shape == (len(tgt), len(src)):      # word vocab: one token per word
        ax.set_xticks(range(len(src)), src, rotation=90, fontsize=fs)
        ax.set_yticks(range(len(tgt)), tgt, fontsize=fs)
    ax.set(xlabel="source position", ylabel="target position",
           title=f"{name}: cross-attention ({len(src)}-token source)")
    return common.save_plot(fig, workdir, f"attention_{name}.png")


def _table(results):
    rows = [[n, r["params"], r["train_seconds"], r["tokens_per_second"], r["final_loss"], r["bleu"]]
            for n, r in results.items()]
    return common.markdown_table(TABLE_HEADER, rows)


def _bleu_table(results, labels):
    rows = [[n, r["bleu"]] + [r["bleu_by_length"].get(lab, float("nan")) for lab in labels]
            for n, r in results.items()]
    return common.markdown_table(["model", "overall"] + list(labels), rows)


def run(config, workdir):
    """Train and evaluate config.models; write results.json, report.md and plots; return results."""
    unknown = [m for m in config.models if m not in ("rnnenc", "rnnsearch", "luong", "transformer")]
    if unknown:
        raise BadInputError(f"rnn_vs_attn: unknown models {unknown}")
    sc = _sharding_config(config)
    mesh = sharding.mesh_from_config(sc)     # a mesh that does not fit: ValueError, here
    lead = distributed.is_coordinator()
    corpus = D.load_corpus(config.data, workdir=workdir) if lead else None
    distributed.barrier("rnn_vs_attn vocab")   # process 0 has written the vocabularies
    if not lead:
        corpus = D.load_corpus(config.data, workdir=workdir)
    batcher = D.make_batcher(corpus, "train", config=config.data,
                             batch_multiple=_batch_rows(mesh, tuple(sc.rules)))
    phases = tuple(tuple(p) for p in config.get("curriculum", {}).get("phases", ()))
    if phases:   # the same length curriculum for every model (anatomy.data.curriculum)
        batcher = Curriculum(batcher, phases, token_budget=config.data.token_budget)
    labels = [D.bucket_label(lo, hi) for lo, hi in D.LENGTH_BUCKETS]
    results, histories, maps = {}, {}, {}
    for name in config.models:
        row, hist, attn, pair = _train_one(name, config, corpus, batcher, workdir, mesh)
        results[name], histories[name] = row, hist
        if attn is not None:
            maps[name] = (attn, pair)
    counts = next(iter(results.values()))["count_by_length"]
    meta = {"corpus": config.data.name, "corpus_sizes": corpus.report.get("sizes"),
            "corpus_report": D.corpus_report(corpus),    # skipped lines, filtered pairs
            "vocab": [corpus.src_vocab.size, corpus.tgt_vocab.size],
            "token_budget": config.data.token_budget, "num_steps": config.train.num_steps,
            "test_sentences_per_bucket": counts, "decode": "greedy" if config.eval.beam_size <= 1
            else f"beam {config.eval.beam_size}", "jax": jax.__version__,
            "devices": str(jax.devices()[0].platform),
            "mesh": {k: int(v) for k, v in mesh.shape.items()}, "processes": jax.process_count()}
    if lead:
        _write_outputs(config, workdir, results, histories, maps, corpus, labels, meta)
    return {"models": results, "setup": meta}


def _write_outputs(config, workdir, results, histories, maps, corpus, labels, meta):
    """results.json, the plots and report.md (process 0 only); the tables to stdout."""
    plots = [_plot_attention(name, w, pair, corpus, workdir) for name, (w, pair) in maps.items()]
    plots = [_plot_bleu(results, labels, workdir)] + _plot_loss(histories, workdir) + plots
    counts = meta["test_sentences_per_bucket"]
    common.write_json(workdir, {"models": results, "setup": meta})
    cap = (f"at most {config.eval.max_per_bucket} test sentences per bucket"
           if config.eval.max_per_bucket > 0 else "the whole test split")
    note = (f"Corpus `{config.data.name}` ({meta['corpus_sizes']}), vocab {meta['vocab']}; "
            f"every model trained {config.train.num_steps} steps of ~{config.data.token_budget}-token "
            f"batches (same token budget); BLEU by sacrebleu on {cap} ({counts}), "
            f"{meta['decode']} decoding. Times are wall clock on this machine "
            "(shared cores inflate them); tokens/s is the median over logging intervals "
            "(steady state), train s includes compilation. "
            + D.describe_corpus_report(meta["corpus_report"]))
    sections = [("Setup", note), ("Results", _table(results)),
                ("BLEU by source length", _bleu_table(results, labels) + "\n\n![](bleu_by_length.png)"),
                ("Training loss", "![](loss_vs_steps.png)\n\n![](loss_vs_time.png)")]
    attn = [p for p in plots if p.startswith("attention_")]
    if attn:
        sections.append(("Attention on one long test sentence",
                         "\n\n".join(f"![]({p})" for p in attn)))
    common.write_report(workdir, "RNN vs attention on " + config.data.name, sections)
    print("\n" + _table(results) + "\n\n" + _bleu_table(results, labels), file=sys.stdout, flush=True)
