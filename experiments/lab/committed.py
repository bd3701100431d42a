"""The committed results under results/, and which one each experiment's verdicts read.

    load("depth/default")  ->  {'name', 'command', 'saved', 'saved_by', 'result', ...}

A run's results.json becomes results/<name>.json by `python -m experiments.lab.publish save`.
VERDICTS_FROM names, per experiment, the committed result its chapter verdicts are read from:
its default run, except where the default is one seed to fit its time and the verdict needs
several (rnn_vs_attn's headline: its `seeds` preset). The README, docs/chapter.md and
`python launch.py --experiment=report --preset=committed` all read the same ones.
"""

from __future__ import annotations

import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "results")

VERDICTS_FROM = {
    "gradient_decay": "gradient_decay/default",
    "long_range": "long_range/default",
    "parallelism": "parallelism/default",
    "complexity": "complexity/default",
    "decode_cost": "decode_cost/default",
    "attention_memory": "attention_memory/default",
    "rnn_vs_attn": "rnn_vs_attn/seeds",  # the default is one seed; the verdicts need three
    "scaling": "scaling/default",
    "depth": "depth/default",
    "context_length": "context_length/default",
    "recall": "recall/default",
    "copy": "copy/default",
    "rnnenc_state": "rnnenc_state/default",
    "crossover": "crossover/default",
}


def result_path(name: str) -> str:
    return os.path.join(RESULTS, name + ".json")


def exists(name: str) -> bool:
    """results/<name>.json is committed."""
    return os.path.exists(result_path(name))


def load(name: str) -> dict:
    """The committed result results/<name>.json ({'command', 'saved', 'result', ...})."""
    if not exists(name):
        experiment, _, preset = name.partition("/")
        run = f"python launch.py --experiment={experiment}" + (
            f" --preset={preset}" if preset != "default" else ""
        )
        raise FileNotFoundError(
            f"results/{name}.json is not committed: run `{run} --workdir=DIR`, then "
            f"`python -m experiments.lab.publish save {name} --workdir=DIR --command='{run}'`"
        )
    with open(result_path(name)) as f:
        return json.load(f)


def pilot(experiment: str) -> dict | None:
    """The committed design-seed pilot of `experiment` (results/<experiment>/pilot.json: its
    `pilot` preset, run on seeds disjoint from the judged ones), its "result"; None when none
    is committed. A claim sizes its run from it (anatomy.probes.claims.power_from) and prints
    the pilot's effect and spread beside its verdict."""
    name = f"{experiment}/pilot"
    return load(name)["result"] if exists(name) else None
