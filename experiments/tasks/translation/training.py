"""The training of one translator (rnn_vs_attn's config): its recipe (config.train with its per-model
overrides), batches (length limit, curriculum, the fixed validation subset), training on the
mesh through anatomy.train.sharded, BLEU on the test (or valid) split cached per checkpoint,
and one cross-attention map to draw."""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from anatomy import data, distributed, fingerprint, paths, sharding, train
from anatomy.data.curriculum import Curriculum
from anatomy.errors import BadInputError
from anatomy.seq2seq import build_model, count_params, registry
from experiments.lab import jsonio


def model_spec(name: str) -> tuple[str, int]:
    """'rnnsearch' -> ('rnnsearch', 0); 'rnnsearch-30' -> ('rnnsearch', 30): the architecture
    (any model of anatomy.seq2seq.registry) and the longest training source (0 = every
    length; Bahdanau et al.'s RNNsearch-30). BadInputError naming the choices otherwise."""
    base, dash, limit = str(name).partition("-")
    if base not in registry.names() or (dash and not (limit.isdigit() and int(limit) > 0)):
        raise BadInputError(
            f"rnn_vs_attn: unknown model {name!r}; choose one of {registry.names()}, "
            "optionally with '-N' (train on sources of at most N tokens)"
        )
    return base, int(limit or 0)


def _model_config(config, name):
    return config.model[name] if name in config.model else None


# Fields of config.train a model may NOT override in config.train_by_model: every model gets
# the same token budget (steps x token_budget, or the same wall-clock budget) and the same seed.
SHARED_TRAIN_FIELDS = ("num_steps", "max_train_seconds", "seed")


def train_config(config, name):
    """config.train with config.train_by_model[name]'s overrides (each model its own recipe:
    learning rate, warmup, schedule, smoothing, clipping), checked (a clear error, not a deep
    traceback)."""
    c = config.train
    block = config.get("train_by_model", {}).get(name, None) or {}
    over = {k: v for k, v in block.items() if v is not None}
    shared = sorted(set(over) & set(SHARED_TRAIN_FIELDS))
    if shared:
        raise BadInputError(
            f"train_by_model.{name}: {shared} must be the same for every model "
            "(same token budget, same seed); set them in config.train"
        )
    unknown = sorted(set(over) - set(c.keys()))
    if unknown:
        raise BadInputError(
            f"train_by_model.{name}: unknown train fields {unknown}; fields are {sorted(c.keys())}"
        )
    if over:
        c = c.copy_and_resolve_references()
        c.update(over)
    if c.num_steps <= 0 or c.log_every <= 0 or c.checkpoint_every <= 0:
        raise BadInputError("train.num_steps, log_every and checkpoint_every must be positive")
    return c


def _evaluate(model, params, corpus, config, mdir, step, run_fp):
    """BLEU and chrF on config.eval.split ('test'; 'valid' for a selection), cached in
    mdir/eval.json for this run fingerprint (data, model, train config: what the checkpoint was
    trained with), eval config and checkpoint step. With config.eval.decode_grid, the beam size
    and length penalty are first chosen on eval.select_per_bucket validation sentences per
    length bucket (anatomy.train.select_decoding; the choice and its table in 'decoding').

    A cache made from anything else is recomputed, with one line naming what changed (a cache
    never stops a run: re-scoring a kept checkpoint with another beam is legitimate).
    Only process 0 reads or writes the cache (the others recompute: no half-written reads).
    """
    path = paths.join(mdir, "eval.json")
    key = {"step": step, "eval": config.eval.to_dict(), "run": run_fp}
    lead = distributed.is_coordinator()
    if lead and paths.exists(path):
        cached = json.loads(paths.read_text(path))
        stale = fingerprint.differences(cached.get("key") or {}, key)
        if not stale:
            return cached["result"]
        print(
            f"[{os.path.basename(mdir)}] {path} is stale, scoring again ({'; '.join(stale)[:400]})",
            file=sys.stderr,
            flush=True,
        )
    e = config.eval
    kw = dict(batch_size=e.batch_size, extra_len=e.extra_len, len_multiple=e.len_multiple)
    beam, alpha, choice = e.beam_size, e.get("length_penalty", 0.6), None
    grid = [tuple(g) for g in e.get("decode_grid", ())]
    t0 = time.perf_counter()
    if grid:  # the beam and length penalty chosen on the validation split, then the test
        if lead:
            print(
                f"[{os.path.basename(mdir)}] choosing the decoding on the valid split "
                f"({describe_decoding(config)})",
                file=sys.stderr,
                flush=True,
            )
        choice = train.select_decoding(
            model,
            params,
            corpus.test_by_bucket("valid"),
            corpus.src_vocab,
            corpus.tgt_vocab,
            grid,
            max_per_bucket=e.select_per_bucket,
            **kw,
        )
        beam, alpha = choice["beam_size"], choice["length_penalty"]
    buckets = corpus.test_by_bucket(eval_split(config))
    cap = e.max_per_bucket
    n = sum(min(len(v), cap) if cap > 0 else len(v) for v in buckets.values())
    how = "greedy" if beam <= 1 else f"beam {beam}, length penalty {alpha:g}"
    if lead:
        print(
            f"[{os.path.basename(mdir)}] decoding {n} {eval_split(config)} sentences ({how})",
            file=sys.stderr,
            flush=True,
        )
    ev = train.evaluate_bleu(
        model,
        params,
        buckets,
        corpus.src_vocab,
        corpus.tgt_vocab,
        max_per_bucket=e.max_per_bucket,
        beam_size=beam,
        length_penalty=alpha,
        **kw,
    )
    if choice is not None:
        ev["decoding"] = choice
    if lead:
        jsonio.write_json(mdir, {"key": key, "result": ev}, name="eval.json")
        print(
            f"[{os.path.basename(mdir)}] decoded in {time.perf_counter() - t0:.0f} s: BLEU "
            f"{ev['bleu']:.1f}",
            file=sys.stderr,
            flush=True,
        )
    return ev


def eval_split(config) -> str:
    """The split BLEU is decoded on: 'test' for a final run, 'valid' for model selection
    (recipe_sweep), so that nothing is chosen on the sentences the headline is measured on."""
    split = config.eval.get("split", "test")
    if split not in ("test", "valid"):
        raise BadInputError(f"rnn_vs_attn: eval.split must be 'test' or 'valid', got {split!r}")
    return split


def describe_decoding(config) -> str:
    """'greedy', 'beam 4 (length penalty 0.6)', or the validation choice's grid in words."""
    e = config.eval
    grid = [tuple(g) for g in e.get("decode_grid", ())]
    one = lambda b, a: "greedy" if b <= 1 else f"beam {b} (length penalty {a:g})"
    if grid:
        return (
            f"per model the best on {e.select_per_bucket} valid sentences per length bucket of "
            + ", ".join(one(b, a) for b, a in grid)
        )
    return one(e.beam_size, e.get("length_penalty", 0.6))


def _attention_example(corpus, min_len, split="test"):
    """(src, tgt) of the first pair of `split` whose source has >= min_len tokens (else the
    longest)."""
    pairs = [p for items in corpus.test_by_bucket(split).values() for p in items]
    for s, t in pairs:
        if len(corpus.src_vocab.encode(s)) >= min_len:
            return s, t
    return max(pairs, key=lambda p: len(p[0].split()))


def _attention_map(model, params, corpus, pair):
    """Teacher-forced cross-attention [T, S] (heads averaged) for one pair, or None."""
    src = np.asarray(corpus.src_vocab.encode(pair[0]), np.int32)
    tgt = np.asarray(corpus.tgt_vocab.encode(pair[1]), np.int32)
    batch = {
        "src": src[None],
        "src_len": np.array([len(src)], np.int32),
        "tgt_in": np.concatenate([[data.BOS], tgt]).astype(np.int32)[None],
        "tgt_out": np.concatenate([tgt, [data.EOS]]).astype(np.int32)[None],
        "tgt_len": np.array([len(tgt) + 1], np.int32),
    }
    _, inter = model.apply(params, batch, deterministic=True, return_intermediates=True)
    if "cross_attention" not in inter:
        return None
    w = np.asarray(inter["cross_attention"], np.float32)[0]  # [(h,) T, S]
    while w.ndim > 2:
        w = w.mean(0)  # average over heads
    return w


def sharding_config(config):
    """config.sharding, or anatomy.sharding's default (every device on the data axis)."""
    return config.sharding if "sharding" in config else sharding.default_config()


def batch_rows(mesh, rules):
    """Devices the batch rows are split over (rows per batch must be a multiple of it)."""
    return sharding.axis_size(mesh, sharding.batch_spec(mesh, rules)[0])


def n_seeds(config) -> int:
    n = config.get("seeds", 1)
    if int(n) != n or n < 1:
        raise BadInputError(f"rnn_vs_attn: seeds must be a positive integer, got {n!r}")
    return int(n)


def _model_dir(workdir, name, seed):
    """workdir/<name>/ for seed 0 (the one-seed run's layout), workdir/<name>/seed<s>/ for s > 0:
    a seeds run in the workdir of a one-seed run reuses its seed 0 and trains only the others."""
    return os.path.join(workdir, name) if seed == 0 else os.path.join(workdir, name, f"seed{seed}")


def train_batcher(config, corpus, rows, max_src_len=0):
    """The training batches of a model: sources of at most max_src_len tokens when > 0 (else
    data.train_max_src_len's limit), under config.curriculum's phases when set."""
    batcher = data.make_batcher(
        corpus, "train", config=config.data, batch_multiple=rows, max_src_len=max_src_len or None
    )
    phases = tuple(tuple(p) for p in config.get("curriculum", {}).get("phases", ()))
    if phases:  # the same length curriculum for every model (anatomy.data.curriculum)
        batcher = Curriculum(batcher, phases, token_budget=config.data.token_budget)
    return batcher


def valid_batches(config, corpus, rows):
    """The fixed validation subset: the first config.eval.valid_batches batches of the valid
    split (every length; bucket order shuffled once by the data seed), [] when validation is off."""
    n = config.eval.get("valid_batches", 0)
    if config.train.eval_every <= 0 or n <= 0 or not corpus.splits.get("valid"):
        return []
    vb = data.make_batcher(corpus, "valid", config=config.data, batch_multiple=rows)
    return [vb.batch_at(k) for k in range(min(n, vb.steps_per_epoch))]


def _validator(model, tc, mesh, rules, valid):
    """evaluate(state) -> valid_loss / valid_accuracy on `valid` (this process's rows), through
    anatomy.train.sharded's jitted eval step on the training mesh; None when validation is off."""
    if not valid or tc.eval_every <= 0:
        return None
    b_sh = sharding.batch_sharding(mesh, rules)
    _, p_sh = train.sharded.state_shardings(model, train.make_optimizer(tc), mesh, rules)
    step = train.sharded.shard_eval_step(
        train.make_eval_step(model, compute_dtype=tc.compute_dtype), mesh, p_sh, b_sh
    )
    return train.make_validate(step, [distributed.local_rows(b, b_sh) for b in valid])


def _round(x, digits=6):
    """x to `digits` significant digits for results.json (None stays None)."""
    return None if x is None else float(f"{x:.{digits}g}")


def attention_example(weights, pair) -> dict:
    """The cross-attention map results.json keeps for the plot: {'src', 'tgt', 'weights'
    [T, S] rounded to 4 decimals}."""
    w = np.asarray(weights, np.float64)
    return {"src": pair[0], "tgt": pair[1], "weights": np.round(w, 4).tolist()}


def _last(hist, key):
    vals = [r[key] for r in hist if key in r]
    return vals[-1] if vals else None


def train_one(name, seed, config, corpus, batcher, valid, workdir, mesh):
    """Train (or resume) and evaluate model `name` with train.seed + seed; returns its results
    row, its metrics records and (seed 0 only) its attention map and the pair it shows."""
    base, limit = model_spec(name)
    seeds = n_seeds(config)
    mdir = _model_dir(workdir, name, seed)
    model = build_model(
        base, _model_config(config, base), corpus.src_vocab.size, corpus.tgt_vocab.size
    )
    tc, sc = train_config(config, base).copy_and_resolve_references(), sharding_config(config)
    tc.seed = config.train.seed + seed  # parameter init and dropout; data unchanged
    if distributed.is_coordinator():
        jsonio.write_json(
            mdir,
            {"name": base, "label": name, "seed": tc.seed, "model_config": model.config.to_dict()},
            name="model.json",
        )
    b_sh = sharding.batch_sharding(mesh, tuple(sc.rules))
    # what the checkpoints are trained with: another config in this workdir stops the run
    run_fp = fingerprint.run_fingerprint(
        tc,
        model,
        data=corpus.fingerprint,
        batch_shapes=batcher.shapes,
        train_max_src_len=limit,
        curriculum=config.get("curriculum", None),
    )
    res = train.train(
        model,
        distributed.local_batches(batcher, b_sh),
        tc,
        mdir,
        name=name if seeds == 1 else f"{name}/seed{seed}",
        evaluate=_validator(model, tc, mesh, tuple(sc.rules), valid),
        fingerprint=run_fp,
        **train.sharded.train_kwargs(model, tc, sc),
    )
    params = distributed.local_copy(res.state.params)  # whole arrays here, for decoding
    ev = _evaluate(model, params, corpus, config, mdir, int(res.state.step), run_fp)
    s, hist = res.summary, train.read_metrics(mdir)
    rates = [r["tokens_per_second"] for r in hist[1:]] or [s["tokens_per_second"]]
    row = {
        "train_seed": tc.seed,
        "params": count_params(params),
        "steps": s["steps"],
        "tokens": s["tokens"],
        "train_seconds": s["train_seconds"],
        "resumed_from": s["resumed_from"],  # a checkpoint step when this run did not train it all
        "stopped_by_time_budget": bool(s["stopped_by_time_budget"]),
        "tokens_per_second": float(np.median(rates)),  # steady state: compiles excluded
        "tokens_per_second_overall": s["tokens_per_second"],  # all tokens / train_seconds
        "final_loss": s["final_loss"],
        "final_accuracy": s["final_accuracy"],
        "valid_loss": _last(hist, "valid_loss"),
        "valid_accuracy": _last(hist, "valid_accuracy"),
        # [[step, validation loss], ...] every train.eval_every steps: the curve a time-to-loss
        # comparison reads (scaling's applied.steps_to_loss) from a committed result
        "valid_curve": [[r["step"], r["valid_loss"]] for r in hist if "valid_loss" in r],
        # the curves the plots draw from results.json alone: [step, training seconds (the
        # train clock: compilation in, validation out), training loss] per logging interval,
        # and the training seconds at each validation of valid_curve
        "train_curve": [
            [r["step"], _round(r.get("wall_time")), _round(r["loss"])] for r in hist if "loss" in r
        ],
        "valid_time": [_round(r.get("wall_time")) for r in hist if "valid_loss" in r],
        "bleu": ev["bleu"],
        "bleu_by_length": ev["bleu_by_length"],
        "chrf": ev["chrf"],
        "chrf_by_length": ev["chrf_by_length"],
        "count_by_length": ev["count_by_length"],
        "decode_tokens_per_second": ev["decode_tokens_per_second"],
        "examples": [[x[:200] for x in ex] for ex in ev["examples"][:3]],
    }
    if "decoding" in ev:  # the beam and length penalty chosen on the validation split
        row["decoding"] = ev["decoding"]
    if seed:
        return row, hist, None, None
    pair = _attention_example(corpus, config.eval.attention_min_len, eval_split(config))
    return row, hist, _attention_map(model, params, corpus, pair), pair
