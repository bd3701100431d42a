"""context_length: can a model trained at length L use a context of 2L, 4L, 8L, and what does
it take to extend it?

Task (task.py): a key-value stream in which keys come into play and leave it, so that a value
must be copied from wherever its key last occurred, early or late; plus a passkey-style probe
(a key planted k tokens before the last one, its value asked for at the end; chance 1/V).
Contenders, each trained from scratch at length L by its own recipe (steps, warmup, and a peak
rate chosen on a design seed by the lr_grid preset), per seed, on the same batches:

    sinusoidal, learned, rope, alibi, none   decoder-only Transformers (attention.py), one per
                                             positional encoding; 'none' is NoPE
    lstm                                     a stacked LSTM LM (recurrent.py)

Extension (models.extend), from the pre-trained RoPE model's own parameters:

    rope+pi      position interpolation (Chen et al. 2023): rope_scale = ft_factor
    rope+ntk     the NTK-aware raised base: rope_base · ft_factor^(d/(d-2))
    rope+pi+ft, rope+ntk+ft   the same after a fine-tune of ft_steps at ft_factor·L
    rope+ft      the control: plain RoPE given that fine-tune (is it the encoding, or the
                 fine-tune?)
    lstm+ft      the LSTM given the same fine-tune

Each fine-tune has its own rate from the grid. Along RoPE's three fine-tunes the probe at
ft_factor·L is measured after each step count of cfg.ft_curve (0: the zero-shot model), the
fine-tune curve the extension claims read.

Measured per model and seed (train.py): the loss of every value token against its position
in held-out sequences of the longest length (the loss at length N is the mean over the first
N tokens: every model is causal), beside the oracle's (task.oracle_value_loss) and the
window reader's (task.window_reader_value_loss: what reading a fixed window of absolute
positions gets); the probe's accuracy at each k at L and at ft_factor·L, in the window of L
(k <= L - 2) and beyond it (k > L, the key at an absolute position >= L). The claims, judged
on results.json, are in claims.py. Held-out data, batches and seeds: cfg.eval_seed and
cfg.seeds (each model on seeds_of(cfg, name)); the 'pilot' and 'lr_grid' presets replace them
by design seeds and design held-out data.
"""

import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from anatomy.compiling import compiler_options
from anatomy.errors import BadInputError
from anatomy.params import count_params
from anatomy.train import labelled
from experiments.context_length import claims, models, plots, tables, task, train
from experiments.lab import record
from experiments.lab.progress import Progress

NAME = "context_length"
TITLE = "Context extension: positional encodings, an LSTM, and RoPE extended"  # of report.md


def lengths(cfg):
    """The evaluation lengths [factor·L for each length factor]."""
    return [int(f) * int(cfg.train_length) for f in cfg.length_factors]


def ft_length(cfg):
    return int(cfg.ft_factor) * int(cfg.train_length)


def ft_steps(cfg):
    return int(cfg.ft_steps)


def seeds_of(cfg, name):
    """The seeds `name` runs on: the first cfg.model_seeds[name] of cfg.seeds (all of them
    when it is not named there)."""
    n = cfg.model_seeds.get(name) if name in cfg.model_seeds else None
    return tuple(int(s) for s in cfg.seeds[: len(cfg.seeds) if n is None else int(n)])


def check(cfg):
    """Refuse a config the run cannot honour, naming the field."""
    if cfg.mode not in ("judged", "grid"):
        raise BadInputError(f"context_length: mode must be 'judged' or 'grid', got {cfg.mode!r}")
    missing = [m for m in cfg.models if m not in cfg.recipe]
    if missing:
        raise BadInputError(f"context_length: recipe has no entry for {missing}")
    unknown = [m for m in cfg.model_seeds if m not in cfg.models]
    if unknown or any(int(n) < 1 for n in cfg.model_seeds.values()):
        raise BadInputError(
            f"context_length: model_seeds must name models of cfg.models with n >= 1; got "
            f"{dict(cfg.model_seeds)}"
        )
    curve = [int(s) for s in cfg.ft_curve]
    if curve != sorted(set(curve)) or (curve and not 0 <= curve[0] <= curve[-1] <= ft_steps(cfg)):
        raise BadInputError(
            f"context_length: ft_curve must rise from 0 to ft_steps ({ft_steps(cfg)}); got {curve}"
        )
    if ("rope" in cfg.models or "lstm" in cfg.models) and not all(
        k in cfg.ft_learning_rate for k in FINE_TUNES
    ):
        raise BadInputError(f"context_length: ft_learning_rate needs {list(FINE_TUNES)}")


# the fine-tunes: ft_learning_rate's key -> how the pre-trained model is extended first
FINE_TUNES = {"pi": "interpolation", "ntk": "ntk", "rope": "none", "lstm": None}


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
    args = (cfg.n_keys, cfg.n_values, cfg.eval_chunk, compiler_options(cfg.xla_opt_level))
    ce, _ = train.outputs(params, model, held.stream, *args)
    _, named = train.outputs(params, model, held.probes, *args)
    hit = named[np.arange(len(held.answer)), held.at] == held.answer  # [P]
    probe = {}
    for n, _, rows in held.groups:
        probe.setdefault(n, []).append(float(np.mean(hit[rows])))
    return {"position_loss": ce.mean(0), "probe": probe}


def probe_at(params, model, cfg, held, length):
    """[accuracy per k] of the probe at `length` alone (a point of the fine-tune curve): the
    rows measure() reads for it, in the same compiled shape, so it equals measure()'s
    probe[length]."""
    groups = [rows for n, _, rows in held.groups if n == int(length)]
    lo, hi = groups[0].start, groups[-1].stop
    args = (cfg.n_keys, cfg.n_values, cfg.eval_chunk, compiler_options(cfg.xla_opt_level))
    _, named = train.outputs(params, model, held.probes[lo:hi], *args)
    hit = named[np.arange(hi - lo), held.at[lo:hi]] == held.answer[lo:hi]
    return [float(np.mean(hit[r.start - lo : r.stop - lo])) for r in groups]


def value_loss_at(measured, length):
    """The mean value-token loss over the first `length` tokens of a measure() (every model is
    causal: the tokens after `length` do not change it)."""
    by_pair = measured["position_loss"][train.value_positions(len(measured["position_loss"]))]
    return float(np.mean(by_pair[: int(length) // 2]))


NEXT_TOKEN = labelled.next_token_loss  # the loss trained on: every next token


def _batches(seed, cfg, n_steps, length, batch, stream):
    """n_steps training batches, each (tokens [batch, length],), the same for every model of
    a seed."""
    rng = np.random.default_rng([int(seed), stream])
    for _ in range(n_steps):
        yield (jnp.asarray(task.stream_batch(rng, batch, length, *_task_args(cfg))),)


def _vocab(cfg):
    return task.vocab_size(cfg.n_keys, cfg.n_values)


def pretrain(cfg, name, seed, learning_rate=None):
    """(spec, params, losses) of `name` trained from scratch at L by its recipe (its peak rate,
    or `learning_rate`), on seed `seed`'s batches."""
    r = cfg.recipe[name]
    spec = models.pretrained(name)
    model = models.build(spec, cfg, _vocab(cfg))
    lr = float(r.learning_rate if learning_rate is None else learning_rate)
    # Adam, linear warmup, cosine decay to a tenth of the peak
    opt = labelled.optimizer(lr, int(r.warmup), int(r.steps), end_value=lr / 10)
    batches = _batches(seed, cfg, int(r.steps), cfg.train_length, cfg.batch, stream=0)
    params = model.init(jax.random.PRNGKey(seed))
    options = compiler_options(cfg.xla_opt_level)
    params, losses = labelled.fit(params, model, batches, opt, options, NEXT_TOKEN)
    return spec, params, losses


def fine_tune(cfg, spec, params, key, seed, learning_rate=None, at=(), on=None):
    """(params, losses): `spec`'s model fine-tuned from `params` for ft_steps at ft_factor·L
    at the rate ft_learning_rate[key] (or `learning_rate`); on(step, params) after each step
    in `at`."""
    model = models.build(spec, cfg, _vocab(cfg))
    lr = float(cfg.ft_learning_rate[key] if learning_rate is None else learning_rate)
    opt = train.fine_tune_optimizer(lr, cfg.ft_warmup)
    batches = _batches(seed, cfg, ft_steps(cfg), ft_length(cfg), cfg.ft_batch, stream=1)
    options = compiler_options(cfg.xla_opt_level)
    return labelled.fit(params, model, batches, opt, options, NEXT_TOKEN, at=at, on=on)


def contenders(cfg) -> int:
    """How many models every seed trains or measures, summed over the seeds: the pre-trained,
    RoPE's two zero-shot extensions and its three fine-tunes, the LSTM's fine-tune."""
    return sum(len(seeds_of(cfg, m)) * (1 + 5 * (m == "rope") + (m == "lstm")) for m in cfg.models)


def run_seed(cfg, seed, held, progress=None):
    """Train and measure every contender that runs on `seed`: {name: dict(spec, stage, from,
    params count, last train loss, measurement, and for RoPE's fine-tunes the curve {step:
    [accuracy per k at ft_factor·L]})}; a progress line before each."""
    say = progress.step if progress else lambda what: None
    out, trained = {}, {}
    nf, n_ft = ft_length(cfg), ft_steps(cfg)

    def entry(spec, stage, source, params, losses):
        model = models.build(spec, cfg, _vocab(cfg))
        out[spec.name] = {
            "spec": spec,
            "stage": stage,
            "from": source,
            "params": count_params(params),
            "train_loss": losses[-1] if losses else None,
            **measure(params, model, cfg, held),
        }
        return model

    for name in cfg.models:
        if seed not in seeds_of(cfg, name):
            continue
        r = cfg.recipe[name]
        say(f"seed {seed}: {name}, {r.steps} steps at L = {cfg.train_length}, measured")
        spec, params, losses = pretrain(cfg, name, seed)
        trained[name] = (spec, params)
        entry(spec, "pre-trained at L", name, params, losses)
    tunes = []  # (ft_learning_rate key, spec, params, source)
    if "rope" in trained:
        spec, params = trained["rope"]
        for key in ("pi", "ntk"):
            x = models.extend(spec, FINE_TUNES[key], cfg.ft_factor, cfg.d_model // cfg.n_heads)
            say(f"seed {seed}: {x.name}, zero-shot, measured")
            entry(x, "zero-shot", "rope", params, [])
            tunes.append((key, x, params, "rope"))
        tunes.append(("rope", spec, params, "rope"))  # the control: the encoding unchanged
    if "lstm" in trained:
        tunes.append(("lstm", *trained["lstm"], "lstm"))
    for key, spec, params, source in tunes:
        say(f"seed {seed}: {spec.name}+ft, {n_ft} steps at {cfg.ft_factor}L = {nf}, measured")
        model = models.build(spec, cfg, _vocab(cfg))
        points = {}
        inside = [int(s) for s in cfg.ft_curve if 0 < int(s) < n_ft] if source == "rope" else []

        def on(step, p, model=model, points=points):
            points[step] = probe_at(p, model, cfg, held, nf)

        tuned, losses = fine_tune(cfg, spec, params, key, seed, at=inside, on=on)
        name = f"{spec.name}+ft"
        entry(spec._replace(name=name), f"fine-tuned at {cfg.ft_factor}L", source, tuned, losses)
        if source == "rope":
            points[0] = out[spec.name]["probe"][nf]  # the zero-shot model it starts from
            points[n_ft] = out[name]["probe"][nf]
            out[name]["curve"] = {int(s): points[int(s)] for s in cfg.ft_curve}
    return out


def collect(cfg, per_seed, held):
    """results.json's measurements from every seed's run_seed."""
    n = int(cfg.train_length)
    oracle = task.oracle_value_loss(held.stream, cfg.n_keys, cfg.n_values)  # [E, longest/2]
    window = int(claims.WINDOW_FRACTION * n)  # the reader of the first 48 of L = 64 tokens
    reader = task.window_reader_value_loss(held.stream[:, :n], cfg.n_keys, cfg.n_values, window)
    out = {}
    names = list(dict.fromkeys(m for s in per_seed for m in s))
    for name in names:
        seeds = [int(seed) for seed, s in zip(cfg.seeds, per_seed) if name in s]
        runs = [s[name] for s in per_seed if name in s]
        first = runs[0]
        spec = first["spec"]
        by_pos = np.stack([r["position_loss"] for r in runs])  # [seeds, longest - 1]
        source = first["from"]
        recipe = cfg.recipe[source]
        out[name] = {
            "family": spec.family,
            "positions": spec.positions if spec.family == "transformer" else None,
            "rope_base": spec.rope_base,
            "rope_scale": spec.rope_scale,
            "stage": first["stage"],
            "from": source,
            "seeds": seeds,
            "params": first["params"],
            "learning_rate": float(recipe.learning_rate),
            "steps": int(recipe.steps),
            "final_train_loss": [r["train_loss"] for r in runs],
            # [seed][pair]: the loss of value pair i (token 2i + 1), mean over the streams
            "value_loss_by_position": by_pos[:, train.value_positions(by_pos.shape[1])],
            # [probe length][k][seed]; the k are probe_distances(cfg, length)
            "probe": [
                [list(accs) for accs in zip(*(r["probe"][m] for r in runs))]
                for m in probe_lengths(cfg)
            ],
        }
        if "curve" in first:
            steps = [int(s) for s in cfg.ft_curve]
            # [step][k][seed]: the probe at ft_factor·L along the fine-tune
            out[name]["curve"] = {
                "steps": steps,
                "probe": [[list(a) for a in zip(*(r["curve"][s] for r in runs))] for s in steps],
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


def _header(config):
    return {
        "config": config.to_dict(),
        "train_length": int(config.train_length),
        "lengths": lengths(config),
        "ft_length": ft_length(config),
        "ft_steps": ft_steps(config),
        "probe_lengths": probe_lengths(config),
        "k_grid": [probe_distances(config, n) for n in probe_lengths(config)],  # [length][k]
        "chance": task.chance(config.n_values),
        "log_values": float(np.log(config.n_values)),
    }


def run(config, workdir):
    """Train every contender for every seed, measure, write results.json, plots, report.md
    (mode 'grid': the learning-rate grid alone, run_grid)."""
    check(config)
    if config.mode == "grid":
        return run_grid(config, workdir)
    started = record.start(NAME, config, workdir)
    cpu0 = time.process_time()
    held = held_out(config)
    progress = Progress(NAME, contenders(config))
    per_seed = [run_seed(config, seed, held, progress) for seed in config.seeds]
    results = {
        **_header(config),
        **collect(config, per_seed, held),
        # CPU seconds of this process (every thread) to here: training and measuring, which
        # the wall time in provenance spreads over the cores this run got
        "cpu_seconds": time.process_time() - cpu0,
    }
    return started.finish_drawn(
        results,
        plots.draw,
        claims,
        TITLE,
        lambda plain: [
            ("Fine-tune curves at ft_factor·L", tables.curves(plain)),
            ("Loss of the value tokens against the evaluation length", tables.loss(plain)),
            ("Retrieval probe", tables.probe(plain)),
            ("How it was measured", tables.notes(plain)),
        ],
        rules="\n".join(claims.rules()),
    )


GRID_TITLE = "Context extension: each model's learning rate, chosen on a design seed"


def _choose(rates, scores):
    """The rate of the lowest mean score over the seeds (the first of equals)."""
    means = [float(np.mean(s)) for s in scores]
    return float(rates[int(np.argmin(means))])


def run_grid(config, workdir):
    """Every pre-trained model at each rate of its grid (config.grid.transformer or .lstm),
    scored by its held-out value loss at L; then every fine-tune (from RoPE, or the LSTM, at its
    chosen rate) at each rate of config.grid.fine_tune, scored by the held-out value loss at
    ft_factor·L; mean over config.seeds (design seeds) and the design held-out data. Writes
    results.json (each model's scores and chosen rate) and report.md; no claim."""
    started = record.start(NAME, config, workdir)
    cpu0 = time.process_time()
    held = held_out(config)
    n, nf = int(config.train_length), ft_length(config)
    per_rate = {
        m: len(config.grid.lstm if m == "lstm" else config.grid.transformer) for m in config.models
    }
    tunes = [k for k in FINE_TUNES if ("lstm" if k == "lstm" else "rope") in config.models]
    total = len(config.seeds) * (sum(per_rate.values()) + len(tunes) * len(config.grid.fine_tune))
    progress = Progress(NAME, total)
    pre, best = {}, {}
    for name in config.models:
        rates = list(config.grid.lstm if name == "lstm" else config.grid.transformer)
        loss, closed, ret, kept = [], [], [], []
        for lr in rates:
            row = {"loss": [], "closed": [], "ret": [], "params": []}
            for seed in config.seeds:
                progress.step(f"grid: {name} at lr {lr:g}, seed {seed}")
                spec, params, _ = pretrain(config, name, seed, lr)
                m = measure(params, models.build(spec, config, _vocab(config)), config, held)
                row["loss"].append(value_loss_at(m, n))
                row["closed"].append(_closed_tail(config, held, m))
                row["ret"].append(float(np.mean(m["probe"][n])))
                row["params"].append(params)
            loss.append(row["loss"])
            closed.append(row["closed"])
            ret.append(row["ret"])
            kept.append(row["params"])
        chosen = _choose(rates, loss)
        best[name] = kept[rates.index(chosen)]
        pre[name] = {
            "learning_rates": rates,
            "steps": int(config.recipe[name].steps),
            "warmup": int(config.recipe[name].warmup),
            "loss_at_L": loss,  # [rate][seed]: held-out value loss over the first L tokens
            "closed": closed,  # [rate][seed]: the gap to the oracle closed, last quarter of L
            "retrieval_at_L": ret,  # [rate][seed]: probe accuracy at L, mean over k
            "chosen": chosen,
        }
    far = [i for i, k in enumerate(probe_distances(config, nf)) if k > n]
    ft = {}
    for key in tunes:
        source = "lstm" if key == "lstm" else "rope"
        spec = models.pretrained(source)
        if key in ("pi", "ntk"):
            spec = models.extend(
                spec, FINE_TUNES[key], config.ft_factor, config.d_model // config.n_heads
            )
        model = models.build(spec, config, _vocab(config))
        rates = list(config.grid.fine_tune)
        loss, ret = [], []
        for lr in rates:
            row_loss, row_ret = [], []
            for i, seed in enumerate(config.seeds):
                progress.step(f"grid: {spec.name}+ft at lr {lr:g}, seed {seed}")
                tuned, _ = fine_tune(config, spec, best[source][i], key, seed, lr)
                m = measure(tuned, model, config, held)
                row_loss.append(value_loss_at(m, nf))
                row_ret.append(float(np.mean([m["probe"][nf][j] for j in far])))
            loss.append(row_loss)
            ret.append(row_ret)
        ft[key] = {
            "model": f"{spec.name}+ft",
            "from": f"{source} at its chosen rate {pre[source]['chosen']:g}",
            "learning_rates": rates,
            "loss_at_ft_length": loss,  # [rate][seed]: held-out value loss over ft_factor·L
            "retrieval_beyond_L": ret,  # [rate][seed]: probe at ft_factor·L, k > L
            "chosen": _choose(rates, loss),
        }
    results = {
        **_header(config),
        "criterion": (
            "pre-training: the held-out value loss over the first L tokens; fine-tune: over "
            "the first ft_factor·L tokens; the lowest mean over the design seeds"
        ),
        "pretrain": pre,
        "fine_tune": ft,
        "cpu_seconds": time.process_time() - cpu0,
    }
    plain = record.stored(results)
    return started.finish(results, None, GRID_TITLE, [("Learning-rate grid", tables.grid(plain))])


def _closed_tail(config, held, measured):
    """The fraction of the gap from log V to the oracle closed on the last quarter of L."""
    tail = claims.tail_pairs(config.train_length)
    oracle = task.oracle_value_loss(held.stream, config.n_keys, config.n_values)[:, tail].mean()
    pairs = measured["position_loss"][train.value_positions(len(measured["position_loss"]))]
    return float(claims._closed(pairs[tail].mean(), oracle, np.log(config.n_values)))
