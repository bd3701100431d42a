"""recipe_sweep: train one model under each setting of a named grid and tabulate the outcome.

Each setting is a set of overrides of experiments/configs/rnn_vs_attn.py (dotted paths such as
`train_by_model.transformer.warmup_steps` or `model.rnnenc.reverse_source`), run through
rnn_vs_attn.run in workdir/<label>/ exactly as `launch.py --experiment=rnn_vs_attn` would run
it. The table (sweep.md and stdout; sweep.json) has, per setting: steps, final train token
accuracy (the last logging interval), BLEU overall / 1-10 / 61+ tokens, train seconds and
steps per second (both load-dependent; BLEU is not).
"""

from __future__ import annotations

import os
import sys

from experiments import common, rnn_vs_attn
from experiments.configs import rnn_vs_attn as base_config
from experiments.configs.recipe_sweep import BEFORE_ISSUE10, GRIDS

HEADER = [
    "setting",
    "model",
    "overrides",
    "steps",
    "final acc",
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


def setting_config(config, overrides):
    """The rnn_vs_attn config of one setting."""
    c = base_config.get_config(config.base_preset or None)
    c.models = tuple(config.models)
    c.train.num_steps = config.num_steps
    c.eval.max_per_bucket = config.max_per_bucket
    if config.get("from_before_issue10", False):
        c = apply_overrides(c, BEFORE_ISSUE10)
    return apply_overrides(c, overrides)


def _row(label, name, overrides, r):
    by = r["bleu_by_length"]
    steps_s = r["steps"] / r["train_seconds"] if r["train_seconds"] else float("nan")
    text = ", ".join(f"{k}={v}" for k, v in overrides.items()) or "(default)"
    return [
        label,
        name,
        text,
        int(r["steps"]),
        r["final_accuracy"],
        r["bleu"],
        by.get("1-10", float("nan")),
        by.get("61+", float("nan")),
        r["train_seconds"],
        steps_s,
    ]


def run(config, workdir):
    """Run every setting of GRIDS[config.grid]; write sweep.md / sweep.json; return the rows."""
    if config.grid not in GRIDS:
        raise ValueError(
            f"recipe_sweep: unknown grid {config.grid!r}; choose one of {sorted(GRIDS)}"
        )
    settings = GRIDS[config.grid][3]
    rows, table = [], ""
    for label, overrides in settings:
        res = rnn_vs_attn.run(setting_config(config, overrides), os.path.join(workdir, label))
        rows += [_row(label, name, overrides, r) for name, r in res["models"].items()]
        table = common.markdown_table(HEADER, rows)
        with open(os.path.join(workdir, "sweep.md"), "w") as f:  # after every setting
            f.write(f"# recipe_sweep {config.grid}\n\n{table}\n")
        common.write_json(
            workdir, {"grid": config.grid, "header": HEADER, "rows": rows}, name="sweep.json"
        )
    print("\n" + table, file=sys.stdout, flush=True)
    return {"header": HEADER, "rows": rows}
