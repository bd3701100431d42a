"""recipe_sweep: train each model under each setting of a named grid, score it on the
validation split, and choose one setting per model.

Each setting is a set of overrides of experiments/configs/rnn_vs_attn.py (dotted paths such as
`train_by_model.{model}.warmup_steps` or `model.rnnenc.reverse_source`; `{model}` is replaced
by the model being run, so one grid gives every model the same settings). Every (setting,
model) pair is its own translation run (experiments/tasks/translation, the training of
rnn_vs_attn), in workdir/<label>/<model>/, exactly as
`launch.py --experiment=rnn_vs_attn --config.models="('<model>',)"` would train it except that
BLEU is decoded on the **validation** split (`eval.split = 'valid'`, the same per-bucket
structure as the test split, `max_per_bucket` sentences per bucket): the test split is
decoded only by the final run, never by a selection. A setting that diverges (a non-finite
loss) is a row with no score, and the sweep goes on.

The table (sweep.md and stdout; sweep.json) has, per setting and model: steps, final train
token accuracy (the last logging interval), validation loss, valid BLEU overall / 1-10 / 61+,
train seconds and steps per second (both load-dependent; BLEU is not). sweep.json also
records the split that scored it, `chosen`: per model, the label with the highest valid
BLEU (the first one on a tie), and `chosen_jointly`: the label with the highest mean valid BLEU
over the models, for what they must share (a vocabulary, the number of steps). Every
selection is scored by greedy decoding; a preset that chooses its beam on the validation split
(eval.decode_grid) does so in its final run.
"""

from __future__ import annotations

import math
import sys
import time

from anatomy import paths
from anatomy.tables import markdown_table
from anatomy.train.loop import NonFiniteLossError
from experiments.configs import rnn_vs_attn as base_config
from experiments.configs.recipe_sweep import GRIDS, UNTUNED_DEFAULTS
from experiments.lab import jsonio, provenance
from experiments.tasks import translation

SELECTION_SPLIT = "valid"  # what every selection is scored on (never 'test')

HEADER = [
    "setting",
    "model",
    "overrides",
    "steps",
    "final acc",
    "valid loss",
    "BLEU",
    "1-10",
    "61+",
    "train s",
    "steps/s",
]


def apply_overrides(config, overrides):
    """Set each dotted path of `overrides` in `config` (a ValueError names an unknown path)."""
    for path, value in overrides.items():
        *parents, leaf = path.split(".")
        node = config
        for p in parents:
            if p not in node:
                raise ValueError(f"recipe_sweep: no config field {path!r} (at {p!r})")
            node = node[p]
        if leaf not in node:
            raise ValueError(
                f"recipe_sweep: no config field {path!r}; "
                f"{'.'.join(parents) or 'config'} has {sorted(node.keys())}"
            )
        node[leaf] = value
    return config


def for_model(overrides, model):
    """`overrides` with every '{model}' in its paths replaced by `model`."""
    return {path.replace("{model}", model): v for path, v in overrides.items()}


def setting_config(config, overrides, model=None):
    """The rnn_vs_attn config of one setting (for one model, or config.models when None),
    scored on the validation split by greedy decoding (a preset that chooses its beam on the
    validation split does so in its final run, after the recipe is chosen)."""
    c = base_config.get_config(config.base_preset or None)
    c.models = (model,) if model else tuple(config.models)
    c.train.num_steps = config.num_steps
    c.eval.max_per_bucket = config.max_per_bucket
    c.eval.split = SELECTION_SPLIT
    c.eval.decode_grid = ()
    c.eval.beam_size = 0
    if config.get("from_untuned_defaults", False):
        c = apply_overrides(c, UNTUNED_DEFAULTS)
    return apply_overrides(c, for_model(overrides, model) if model else overrides)


def _row(label, name, overrides, r):
    text = ", ".join(f"{k}={v}" for k, v in overrides.items()) or "(default)"
    if r is None:  # diverged: no score
        return [label, name, text] + [float("nan")] * (len(HEADER) - 3)
    by = r["bleu_by_length"]
    steps_s = r["steps"] / r["train_seconds"] if r["train_seconds"] else float("nan")
    valid_loss = r.get("valid_loss")
    return [
        label,
        name,
        text,
        int(r["steps"]),
        r["final_accuracy"],
        float("nan") if valid_loss is None else valid_loss,
        r["bleu"],
        by.get("1-10", float("nan")),
        by.get("61+", float("nan")),
        r["train_seconds"],
        steps_s,
    ]


def choose(rows, header=HEADER):
    """{model: label} with the highest score ('BLEU' column, the validation split's) per
    model; the first setting wins a tie; a model whose every setting diverged is absent."""
    i_label, i_model, i_score = (header.index(k) for k in ("setting", "model", "BLEU"))
    best = {}
    for row in rows:
        score = row[i_score]
        if score is None or not math.isfinite(score):
            continue
        if row[i_model] not in best or score > best[row[i_model]][1]:
            best[row[i_model]] = (row[i_label], score)
    return {m: label for m, (label, _) in best.items()}


def choose_jointly(rows, header=HEADER):
    """The setting with the highest mean score over the models (for what every model must
    share: a vocabulary, the steps), among the settings every model of the rows scored; None
    when there is none. The first setting wins a tie."""
    i_label, i_model, i_score = (header.index(k) for k in ("setting", "model", "BLEU"))
    models = list(dict.fromkeys(row[i_model] for row in rows))
    scores = {}
    for row in rows:
        scores.setdefault(row[i_label], {})[row[i_model]] = row[i_score]
    mean = {
        label: sum(by.values()) / len(by)
        for label, by in scores.items()
        if set(by) == set(models) and all(v is not None and math.isfinite(v) for v in by.values())
    }
    return max(mean, key=lambda label: (mean[label], -list(scores).index(label)), default=None)


def _run_one(config, overrides, model, workdir):
    """rnn_vs_attn's row of `model` under one setting, or None if its loss diverged."""
    try:
        res = translation.train(setting_config(config, overrides, model), workdir)
    except NonFiniteLossError as e:
        print(f"[recipe_sweep] {model} diverged: {e}", file=sys.stderr, flush=True)
        return None
    return res["models"][model]


def run(config, workdir):
    """Run every setting of GRIDS[config.grid] for every model; write sweep.md / sweep.json;
    return {'header', 'rows', 'split', 'chosen'}."""
    if config.grid not in GRIDS:
        raise ValueError(
            f"recipe_sweep: unknown grid {config.grid!r}; choose one of {sorted(GRIDS)}"
        )
    settings = GRIDS[config.grid][3]
    rows, table, out = [], "", {}
    started, t0 = provenance.provenance(), time.time()  # the load before; the clock
    for label, overrides in settings:
        for model in config.models:
            r = _run_one(config, overrides, model, paths.join(workdir, label, model))
            rows.append(_row(label, model, for_model(overrides, model), r))
            table = markdown_table(HEADER, rows)
            out = {
                "grid": config.grid,
                "split": SELECTION_SPLIT,
                "sentences_per_bucket": config.max_per_bucket,
                "num_steps": config.num_steps,
                "header": HEADER,
                "rows": rows,
                "chosen": choose(rows),
                "chosen_jointly": choose_jointly(rows),
                # as record.finish's: the load before and after, the wall clock so far
                "provenance": dict(
                    started,
                    loadavg_after=provenance.load_average(),
                    wall_seconds=time.time() - t0,
                ),
            }
            paths.write_text(  # after every run
                paths.join(workdir, "sweep.md"),
                f"# recipe_sweep {config.grid} (BLEU on the {SELECTION_SPLIT} split, "
                f"{config.max_per_bucket or 'all'} sentences per bucket)\n\n{table}\n\n"
                f"chosen: {out['chosen']}\n",
            )
            jsonio.write_json(workdir, out, name="sweep.json")
    print("\n" + table + f"\n\nchosen (valid BLEU): {out['chosen']}", file=sys.stdout, flush=True)
    return out
