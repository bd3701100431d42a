"""context_length: can a model trained at length L use a context of 2L, 4L, 8L, and what does
it take to extend it?

Task (task.py): a key-value stream in which keys come into play and leave it, so that a value
must be copied from wherever its key last occurred, early or late; plus a passkey-style probe
(a key planted k tokens before the last one, its value asked for at the end; chance 1/V).
Contenders, every one trained from scratch at length L for the same steps on the same
batches, per seed:

    sinusoidal, learned, rope, alibi, none   decoder-only Transformers (attention.py), one per
                                             positional encoding; 'none' is NoPE
    lstm                                     a stacked LSTM LM (recurrent.py)

Extension (models.extend), from the pre-trained RoPE model's own parameters:

    rope+pi      position interpolation (Chen et al. 2023): rope_scale = ft_factor
    rope+ntk     the NTK-aware raised base: rope_base · ft_factor^(d/(d-2))
    rope+pi+ft, rope+ntk+ft   the same after a fine-tune of ft_fraction·steps at ft_factor·L
    rope+ft      the control: plain RoPE given that fine-tune (is it the encoding, or the
                 fine-tune?)
    lstm+ft      the LSTM given the same fine-tune

Measured per model and seed (train.py): the loss of every value token against its position
in held-out sequences of the longest length (the loss at length N is the mean over the first
N tokens: every model is causal), beside the oracle's (task.oracle_value_loss) and the
window reader's (task.window_reader_value_loss: what reading a fixed window of absolute
positions gets); the probe's accuracy at each k at L and at ft_factor·L, in the window of L
(k <= L - 2) and beyond it (k > L, the key at an absolute position >= L). The claims, judged
on results.json, are in claims.py. Held-out data, batches and seeds: cfg.eval_seed and
cfg.seeds, which the 'dev' preset replaces by its own (the design was chosen there).
"""

import time
from typing import NamedTuple

import jax
import numpy as np

from anatomy.errors import BadInputError
from anatomy.probes.claims import claims_markdown
from experiments import record
from experiments.context_length import claims, models, plots, tables, task, train
from experiments.progress import Progress

NAME = "context_length"
TITLE = "Context extension: positional encodings, an LSTM, and RoPE extended"  # of report.md


def lengths(cfg):
    """The evaluation lengths [factor·L for each length factor]."""
    return [int(f) * int(cfg.train_length) for f in cfg.length_factors]


def ft_length(cfg):
    return int(cfg.ft_factor) * int(cfg.train_length)


def ft_steps(cfg):
    """Fine-tune steps: round(ft_fraction · steps), at least 1."""
    return max(1, round(float(cfg.ft_fraction) * int(cfg.steps)))


def probe_distances(cfg, length):
    """The k of cfg.k_grid probed at `length`: at L, every k <= L - 2; past L, every k that
    plants the key at an absolute position >= L (k <= length - 2 - L), so that what a model
    retrieves from beyond L is never a key among the first L tokens."""
    n = int(cfg.train_length)
    top = n - 2 if int(length) == n else int(length) - 2 - n
    return [int(k) for k in cfg.k_grid if int(k) <= top]


def probe_lengths(cfg):
    """Where the probe runs: L (retrieval within L) and ft_factor·L (beyond L, where the
    extensions are fine-tuned)."""
    return sorted({int(cfg.train_length), ft_length(cfg)})


class HeldOut(NamedTuple):
    """The held-out sequences, the same for every model and seed (drawn from cfg.eval_seed).

    stream [E, longest]: key-value streams (the loss at every position). probes [P, W]: each
    probe of length N <= W written at the start of its row, W = the longest probe length (a
    causal model's answer at N - 2 ignores what follows); answer [P]; at [P] = N - 2, the
    position whose prediction is the answer; groups: (N, k, rows) per probed length and
    distance."""

    stream: np.ndarray
    probes: np.ndarray
    answer: np.ndarray
    at: np.ndarray
    groups: list


def _task_args(cfg):
    return cfg.n_keys, cfg.n_values, cfg.p_new, cfg.in_play


def held_out(cfg):
    rng = np.random.default_rng(cfg.eval_seed)
    if ft_length(cfg) > max(lengths(cfg)):
        raise BadInputError(
            f"context_length: ft_factor ({cfg.ft_factor}) must be at most the largest of"
            f" length_factors {tuple(cfg.length_factors)}: the extensions are measured there"
        )
    stream = task.stream_batch(rng, cfg.eval_batch, max(lengths(cfg)), *_task_args(cfg))
    width = max(probe_lengths(cfg))
    rows, answer, at, groups, start = [], [], [], [], 0
    for n in probe_lengths(cfg):
        for k in probe_distances(cfg, n):
            tok, ans = task.probe_batch(rng, cfg.probe_batch, n, k, *_task_args(cfg))
            rows.append(np.pad(tok, ((0, 0), (0, width - n))))  # [probe_batch, width]
            answer.append(ans)
            at.append(np.full(len(ans), n - 2))
            groups.append((n, k, slice(start, start + len(ans))))
            start += len(ans)
    return HeldOut(stream, np.concatenate(rows), np.concatenate(answer), np.concatenate(at), groups)


def measure(params, model, cfg, held):
    """{'position_loss': [longest - 1], 'probe': {N: [accuracy per k]}} of one LanguageModel
    (two compiled forward shapes: the streams', the probes')."""
    args = (cfg.n_keys, cfg.n_values, cfg.eval_chunk, train.compiler_options(cfg.xla_opt_level))
    ce, _ = train.outputs(params, model, held.stream, *args)
    _, named = train.outputs(params, model, held.probes, *args)
    hit = named[np.arange(len(held.answer)), held.at] == held.answer  # [P]
    probe = {}
    for n, _, rows in held.groups:
        probe.setdefault(n, []).append(float(np.mean(hit[rows])))
    return {"position_loss": ce.mean(0), "probe": probe}


def _batches(seed, cfg, n_steps, length, batch, stream):
    """n_steps training batches [batch, length], the same for every model of a seed."""
    rng = np.random.default_rng([int(seed), stream])
    for _ in range(n_steps):
        yield task.stream_batch(rng, batch, length, *_task_args(cfg))


def contenders(cfg) -> int:
    """How many models run_seed trains or measures: the pre-trained, RoPE's two zero-shot
    extensions and the three fine-tunes from RoPE, the LSTM's fine-tune."""
    return len(cfg.models) + 5 * ("rope" in cfg.models) + ("lstm" in cfg.models)


def run_seed(cfg, seed, held, progress=None):
    """Train and measure every contender for one seed: {name: dict(spec, stage, from,
    params count, last train loss, measurement)}; a progress line before each."""
    say = progress.step if progress else lambda what: None
    vocab = task.vocab_size(cfg.n_keys, cfg.n_values)
    options = train.compiler_options(cfg.xla_opt_level)
    out, trained = {}, {}

    def entry(spec, stage, source, params, losses):
        model = models.build(spec, cfg, vocab)
        out[spec.name] = {
            "spec": spec,
            "stage": stage,
            "from": source,
            "params": train.count_params(params),
            "train_loss": losses[-1] if losses else None,
            **measure(params, model, cfg, held),
        }

    for name in cfg.models:
        say(f"seed {seed}: {name}, {cfg.steps} steps at L = {cfg.train_length}, measured")
        spec = models.pretrained(name)
        model = models.build(spec, cfg, vocab)
        opt = train.optimizer(cfg.learning_rate, cfg.warmup, cfg.steps)
        batches = _batches(seed, cfg, cfg.steps, cfg.train_length, cfg.batch, stream=0)
        params = model.init(jax.random.PRNGKey(seed))
        params, losses = train.train(params, model, batches, opt, options)
        trained[name] = (spec, params)
        entry(spec, "pre-trained at L", name, params, losses)
    fine_tune = []
    if "rope" in trained:
        spec, params = trained["rope"]
        for how in ("interpolation", "ntk"):
            x = models.extend(spec, how, cfg.ft_factor, cfg.d_model // cfg.n_heads)
            say(f"seed {seed}: {x.name}, zero-shot, measured")
            entry(x, "zero-shot", "rope", params, [])
            fine_tune.append((x, params, "rope"))
        fine_tune.append((spec, params, "rope"))  # the control: the encoding unchanged
    if "lstm" in trained:
        fine_tune.append((*trained["lstm"], "lstm"))
    for spec, params, source in fine_tune:
        say(
            f"seed {seed}: {spec.name}+ft, {ft_steps(cfg)} steps at {cfg.ft_factor}L = "
            f"{ft_length(cfg)}, measured"
        )
        model = models.build(spec, cfg, vocab)
        opt = train.fine_tune_optimizer(cfg.ft_learning_rate, cfg.ft_warmup)
        batches = _batches(seed, cfg, ft_steps(cfg), ft_length(cfg), cfg.ft_batch, stream=1)
        tuned, losses = train.train(params, model, batches, opt, options)
        entry(
            spec._replace(name=f"{spec.name}+ft"),
            f"fine-tuned at {cfg.ft_factor}L",
            source,
            tuned,
            losses,
        )
    return out


def collect(cfg, per_seed, held):
    """results.json's measurements from every seed's run_seed."""
    n = int(cfg.train_length)
    oracle = task.oracle_value_loss(held.stream, cfg.n_keys, cfg.n_values)  # [E, longest/2]
    window = int(claims.WINDOW_FRACTION * n)  # the reader of the first 48 of L = 64 tokens
    reader = task.window_reader_value_loss(held.stream[:, :n], cfg.n_keys, cfg.n_values, window)
    out = {}
    for name, first in per_seed[0].items():
        runs = [s[name] for s in per_seed]
        spec = first["spec"]
        by_pos = np.stack([r["position_loss"] for r in runs])  # [seeds, longest - 1]
        out[name] = {
            "family": spec.family,
            "positions": spec.positions if spec.family == "transformer" else None,
            "rope_base": spec.rope_base,
            "rope_scale": spec.rope_scale,
            "stage": first["stage"],
            "from": first["from"],
            "params": first["params"],
            "final_train_loss": [r["train_loss"] for r in runs],
            # [seed][pair]: the loss of value pair i (token 2i + 1), mean over the streams
            "value_loss_by_position": by_pos[:, train.value_positions(by_pos.shape[1])],
            # [probe length][k][seed]; the k are probe_distances(cfg, length)
            "probe": [
                [list(accs) for accs in zip(*(r["probe"][m] for r in runs))]
                for m in probe_lengths(cfg)
            ],
        }
    tail = claims.tail_pairs(n)
    return {
        "oracle": {
            "value_loss_by_position": oracle.mean(0),  # [longest/2]
            "tail_by_stream": oracle[:, tail].mean(1),  # [E]: on the last quarter of L
        },
        "window_reader": {
            "window": window,
            "value_loss_by_position": reader.mean(0),  # [L/2]
            "tail_by_stream": reader[:, tail].mean(1),  # [E]
        },
        "models": out,
    }


def run(config, workdir):
    """Train every contender for every seed, measure, write results.json, plots, report.md."""
    started = record.start(NAME, config, workdir)
    cpu0 = time.process_time()
    held = held_out(config)
    progress = Progress(NAME, contenders(config) * len(config.seeds))
    per_seed = [run_seed(config, seed, held, progress) for seed in config.seeds]
    results = {
        "config": config.to_dict(),
        "train_length": int(config.train_length),
        "lengths": lengths(config),
        "ft_length": ft_length(config),
        "ft_steps": ft_steps(config),
        "probe_lengths": probe_lengths(config),
        "k_grid": [probe_distances(config, n) for n in probe_lengths(config)],  # [length][k]
        "chance": task.chance(config.n_values),
        "log_values": float(np.log(config.n_values)),
        **collect(config, per_seed, held),
        # CPU seconds of this process (every thread) to here: training and measuring, which
        # the wall time in provenance spreads over the cores this run got
        "cpu_seconds": time.process_time() - cpu0,
    }
    results["plots"] = plots.draw(record.stored(results), workdir)
    plain = record.stored(results)
    return started.finish(
        results,
        claims.table,
        TITLE,
        [
            ("The chapter's claim", claims_markdown(claims.chapter(plain))),
            ("Loss of the value tokens against the evaluation length", tables.loss(plain)),
            ("Retrieval probe", tables.probe(plain)),
            ("How it was measured", tables.notes(plain)),
            ("How verdicts are decided", "\n".join(claims.rules())),
        ],
    )
