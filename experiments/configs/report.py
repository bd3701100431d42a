"""report: the chapter's closing table, regenerated from the other experiments' measurements.

Presets: default (collect runs/<name>/results.json where it exists, run the rest with their
default configs), 'quick' (run every sub-experiment's quick preset into <workdir>/<name>/:
the smoke test), 'committed' (nothing runs: the committed results under results/ that the
README and docs/chapter.md quote, experiments.lab.committed.VERDICTS_FROM, judged now).
"""

import ml_collections

EXPERIMENTS = (
    "gradient_decay",
    "long_range",
    "parallelism",
    "complexity",
    "decode_cost",
    "attention_memory",
    "rnn_vs_attn",
    "scaling",
    "depth",
    "context_length",
    "recall",
    "copy",
    "rnnenc_state",
    "crossover",
)


PRESETS = ("", "quick", "committed")


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.experiments = EXPERIMENTS  # sub-experiments to gather; a row whose source is left out reads 'not measured'
    # Where each sub-experiment's results live: a workdir to collect results.json from (a
    # relative path is relative to the current directory, as launch.py's --workdir), or ''
    # for <report workdir>/<name>. A workdir without results.json is run into (see run_missing).
    c.sources = ml_collections.ConfigDict({name: f"runs/{name}" for name in EXPERIMENTS})
    c.preset = ""  # preset of the sub-experiments this report runs: '' (their defaults) or 'quick'
    c.rerun = False  # run every sub-experiment even where its results.json exists
    # a collected results.json made by another config than the one this report runs it with
    # (its recorded config fingerprint differs): 'refuse' (one line naming the fields) or 'rerun'
    c.on_mismatch = "refuse"
    c.run_missing = (
        True  # run a sub-experiment whose results.json is missing (False: 'not measured')
    )
    c.committed = False  # read the committed results (results/) instead of workdirs; no runs
    c.copy_plots = (
        True  # copy PNGs + report.md of sources outside the workdir into <workdir>/<name>/
    )
    if preset == "quick":
        c.sources = ml_collections.ConfigDict({name: "" for name in EXPERIMENTS})
        c.preset = "quick"
    elif preset == "committed":
        c.committed = True
        c.run_missing = False
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose one of {PRESETS}")
    return c
