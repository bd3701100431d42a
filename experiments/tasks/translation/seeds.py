"""A translation run over seeds: a model's rows -> mean ± std, and the tables that print them.

One model's results row (see training.train_one) per seed; `aggregate` turns a model's
rows into the entry results.json keeps under models/<name>:

    {<every number of a row>: its mean over the S seeds,
     'std':   {<the same keys>: sample standard deviation over seeds, sqrt(Σ(x_s − x̄)²/(S−1));
               None with one seed},
     'seeds': [row of seed 0, row of seed 1, ...], 'n_seeds': S}

A dict of numbers (bleu_by_length, count_by_length) is averaged key by key; PER_SEED keys
(train_seed, stopped_by_time_budget, valid_curve, train_curve, valid_time, decoding) become
the list over seeds; anything else (examples) is
seed 0's. The tables print mean ± std; bleu_by_length.png (plots.py) draws the mean line
and the min-max range over seeds as a band.
"""

from __future__ import annotations

import numpy as np

from anatomy.tables import format_number, markdown_table

STD = "sample standard deviation over seeds (ddof=1); null with one seed"
PER_SEED = (
    "train_seed",
    "stopped_by_time_budget",
    "valid_curve",
    "train_curve",
    "valid_time",
    "decoding",
)
TABLE_HEADER = [
    "model",
    "params",
    "steps",
    "target tokens seen",
    "train s",
    "tokens/s",
    "final loss",
    "valid loss",
    "BLEU",
]
TABLE_KEYS = [
    "params",
    "steps",
    "tokens",
    "train_seconds",
    "tokens_per_second",
    "final_loss",
    "valid_loss",
    "bleu",
]


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _stats(values):
    """(mean, sample std or None) of numbers; None values count as NaN."""
    x = np.array([np.nan if v is None else float(v) for v in values])
    return float(np.mean(x)), (float(np.std(x, ddof=1)) if len(x) > 1 else None)


def aggregate(rows: list[dict]) -> dict:
    """A model's per-seed rows -> {mean of every number, 'std', 'seeds', 'n_seeds'}."""
    if not rows:
        raise ValueError("aggregate: no seed rows")
    out, std = {}, {}
    for key, first in rows[0].items():
        values = [r.get(key) for r in rows]
        if key in PER_SEED:
            out[key] = values
        elif all(v is None or _is_number(v) for v in values) and any(_is_number(v) for v in values):
            out[key], std[key] = _stats(values)
        elif isinstance(first, dict) and all(_is_number(v) for v in first.values()):
            pairs = {k: _stats([r[key].get(k) for r in rows]) for k in first}
            out[key] = {k: m for k, (m, _) in pairs.items()}
            std[key] = {k: s for k, (_, s) in pairs.items()}
        else:
            out[key] = first
    return dict(out, std=std, seeds=rows, n_seeds=len(rows))


def per_seed(model: dict, key: str, bucket: str | None = None) -> list:
    """One number of a model (an aggregated entry, or one row) per seed: row[key] (or row[key][bucket]) of each seed's row."""
    rows = model.get("seeds") or [model]
    return [r[key] if bucket is None else r[key].get(bucket) for r in rows]


def _fmt(v) -> str:
    return "—" if v is None else format_number(v)


def mean_pm_std(entry: dict, key: str, sub: str | None = None) -> str:
    """'mean ± std' of entry[key] (or entry[key][sub]); the mean alone with one seed or std 0."""
    mean = entry.get(key) if sub is None else entry.get(key, {}).get(sub)
    std = entry.get("std", {}).get(key)
    std = std.get(sub) if isinstance(std, dict) and sub is not None else std
    if entry.get("n_seeds", 1) > 1 and std and mean is not None:  # std 0 (params): mean alone
        return f"{_fmt(mean)} ± {_fmt(std)}"
    return _fmt(mean)


def results_table(models: dict) -> str:
    rows = [[n] + [mean_pm_std(r, k) for k in TABLE_KEYS] for n, r in models.items()]
    return markdown_table(TABLE_HEADER, rows)


def bleu_table(models: dict, labels) -> str:
    rows = [
        [n, mean_pm_std(r, "bleu")] + [mean_pm_std(r, "bleu_by_length", lab) for lab in labels]
        for n, r in models.items()
    ]
    return markdown_table(["model", "overall"] + list(labels), rows)
