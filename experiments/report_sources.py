"""report's sources: where each sub-experiment's results.json is, what it must contain,
collecting or running it, and publishing its plots beside the report.

REQUIRED names, per experiment, the key paths of results.json the report's rows read
(experiments/report_rows.py); a collected file missing one fails with the file and the key.
"""

from __future__ import annotations

import glob
import importlib
import json
import os
import shutil
from typing import NamedTuple

from anatomy import fingerprint
from anatomy.errors import BadInputError
from experiments import outputs, provenance

# keys every collected results.json must have, read from each experiment's run();
# '*' stands for every key of the dict at that level
REQUIRED = {
    "gradient_decay": [
        ("config", "fit_max_distance"),
        ("rates", "lstm"),
        ("rates", "attention"),
        ("rnn", "*", "regime"),
        ("rnn", "*", "sigma"),
        ("rnn", "*", "fit", "rate"),
        ("other", "attention", "far_over_near"),
    ],
    "long_range": [
        ("k_grid",),
        ("chance",),
        ("models", "*", "accuracy"),
        ("models", "*", "params"),
    ],
    "parallelism": [
        ("analysis", k)
        for k in (
            "lstm_steps_per_token",
            "attention_max_steps",
            "ratio_n",
            "ratio_lstm_over_attention",
        )
    ]
    + [
        ("analysis", "utilisation_at_ratio_n", "lstm"),
        ("analysis", "utilisation_at_ratio_n", "attention"),
        ("raw", "lstm"),
    ],
    "complexity": [
        ("fits", layer, axis, "exponent")
        for layer in ("recurrent", "attention_core")
        for axis in ("N", "d")
    ]
    + [("fits", "windowed_core", axis, "exponent") for axis in ("N", "d", "window")],
    "attention_memory": [
        ("config", "heads_grid"),
        ("config", "n_grid"),
        ("fits", "*", "exponent"),
        ("raw",),
        ("equality",),
    ],
    "decode_cost": [
        ("fits", "rnn", "flops_n_dependent", "exponent"),
        ("fits", "kv_cache", "flops_n_dependent", "exponent"),
        ("fits", "recompute", "flops_n_dependent", "exponent"),
        ("fits", "rnn", "latency", "exponent"),
        ("fits", "kv_cache", "latency", "exponent"),
        ("fits", "rnn_vs_d", "exponent"),
    ],
    "rnn_vs_attn": [
        ("models", "*", k)
        for k in (
            "params",
            "train_seconds",
            "tokens_per_second",
            "bleu",
            "bleu_by_length",
            "count_by_length",
        )
    ],
}

# the linear-recurrence rows (experiments/report_rows_linear.py)
REQUIRED["parallelism"] += [
    ("analysis", k)
    for k in (
        "mingru_scan_steps_per_token",
        "mingru_assoc_max_steps",
        "assoc_depth_per_doubling",
        "assoc_depth_log2_r2",
    )
] + [("analysis", "depth_exponent", k) for k in ("mingru_scan", "mingru_assoc")]
REQUIRED["complexity"] += [
    ("parallel_work", "*", k) for k in ("n", "scan_exponent", "assoc_exponent", "ratio")
]
# the convolutional rows (experiments/report_rows_conv.py)
REQUIRED["complexity"] += [("fits", "conv", axis, "exponent") for axis in ("N", "d", "k")]
REQUIRED["parallelism"] += [("config", "kernel_size")] + [
    ("analysis", k) for k in ("conv_max_steps", "conv_receptive_field", "conv_layers_to_span")
]
REQUIRED["decode_cost"] += [
    ("fits", "conv_buffer", "flops_n_dependent", "exponent"),
    ("fits", "conv_recompute", "flops_total", "exponent"),
]


class Source(NamedTuple):
    """One sub-experiment's results: where from, how obtained ('collected' | 'ran' | 'missing')."""

    name: str
    workdir: str
    status: str
    results: dict | None


def check_keys(results, name: str, path: str) -> None:
    """Raise ValueError naming the file and the first key of REQUIRED[name] that is missing."""

    def walk(node, keys, trail):
        if not keys:
            return
        key, rest = keys[0], keys[1:]
        if key == "*":
            if not isinstance(node, dict) or not node:
                raise BadInputError(
                    f"report: {path} is malformed: {'.'.join(trail) or 'top level'} "
                    "should be a non-empty dict (written by "
                    f"experiments/{name}.py)"
                )
            for k, v in node.items():
                walk(v, rest, trail + [k])
            return
        if not isinstance(node, dict) or key not in node:
            raise BadInputError(
                f"report: {path} is malformed: missing key {'.'.join(trail + [key])!r} "
                f"(written by experiments/{name}.py; rerun it, or pass "
                f"--config.rerun=True)"
            )
        walk(node[key], rest, trail + [key])

    for keys in REQUIRED.get(name, []):
        walk(results, list(keys), [])


def load_results(name: str, workdir: str) -> dict:
    """workdir/results.json of experiment `name`, checked against REQUIRED (clear errors)."""
    path = os.path.join(workdir, "results.json")
    if not os.path.isfile(path):
        raise BadInputError(f"report: no results file {path} for experiment {name!r}")
    try:
        with open(path) as f:
            results = json.load(f)
    except json.JSONDecodeError as e:
        raise BadInputError(
            f"report: {path} is not valid JSON ({e}); rerun experiment {name!r}"
        ) from e
    check_keys(results, name, path)
    return results


def expected_config(name: str, preset: str):
    """The config the report runs experiment `name` with: its get_config(preset)."""
    return importlib.import_module(f"experiments.configs.{name}").get_config(preset or None)


def recorded(results: dict, key: str):
    """results' "config" or "provenance", at the top level or in "setup" (rnn_vs_attn)."""
    return results.get(key) or (results.get("setup") or {}).get(key)


def mismatch(name: str, results: dict, preset: str) -> list[str] | None:
    """None when `results` were made by the config the report would run (its fingerprint, or
    else the recorded config field by field, equals expected_config's); else the differing
    fields ('seed: 1 -> 0', ...), or one line saying the results record no config."""
    want = expected_config(name, preset)
    prov = recorded(results, "provenance") or {}
    if prov.get("config_fingerprint") == provenance.config_fingerprint(want):
        return None
    saved = recorded(results, "config")
    if saved is None:
        return ["no config recorded (written before results carried their config)"]
    diffs = fingerprint.differences(saved, outputs.jsonable(fingerprint._plain(want)))
    return diffs or None


def check_made_by(name: str, results: dict, preset: str, path: str) -> None:
    """Raise a one-line BadInputError naming the experiment and the differing fields unless
    `results` were made by the config the report would run."""
    diffs = mismatch(name, results, preset)
    if diffs:
        shown = "; ".join(diffs[:6]) + (f"; and {len(diffs) - 6} more" if len(diffs) > 6 else "")
        raise BadInputError(
            f"report: {path} was not made by the {preset or 'default'} preset of {name} this "
            f"report runs ({shown}); rerun it, pass --config.on_mismatch=rerun to let the report "
            f"rerun it, or point --config.sources.{name} at a matching run"
        )


def run_experiment(name: str, preset: str, workdir: str) -> dict:
    """experiments.<name>.run(get_config(preset), workdir), in this process."""
    config = expected_config(name, preset)
    os.makedirs(workdir, exist_ok=True)
    importlib.import_module(f"experiments.{name}").run(config, workdir)
    return load_results(name, workdir)  # what was written, read back as a collected one would be


def source_dir(config, name: str, workdir: str) -> str:
    where = config.sources[name] if name in config.sources else ""
    return where or os.path.join(workdir, name)


def gather(config, workdir: str) -> dict[str, Source]:
    """Collect every existing results.json first (a malformed one fails before any run), then run."""
    unknown = [n for n in config.experiments if n not in REQUIRED]
    if unknown:
        raise BadInputError(
            f"report: unknown experiments {unknown}; choose from {sorted(REQUIRED)}"
        )
    if config.on_mismatch not in ("refuse", "rerun"):
        raise BadInputError(
            f"report: on_mismatch must be 'refuse' or 'rerun', got {config.on_mismatch!r}"
        )
    sources, to_run = {}, []
    for name in config.experiments:
        sub = source_dir(config, name, workdir)
        path = os.path.join(sub, "results.json")
        if not config.rerun and os.path.isfile(path):
            results = load_results(name, sub)
            if config.on_mismatch == "rerun" and mismatch(name, results, config.preset):
                to_run.append((name, sub))  # made by another config: measured again
                continue
            check_made_by(name, results, config.preset, path)
            sources[name] = Source(name, sub, "collected", results)
        elif config.rerun or config.run_missing:
            to_run.append((name, sub))
        else:
            sources[name] = Source(name, sub, "missing", None)
    for name, sub in to_run:
        print(
            f"report: running {name} ({config.preset or 'default'} preset) into {sub}", flush=True
        )
        sources[name] = Source(name, sub, "ran", run_experiment(name, config.preset, sub))
    return {n: sources[n] for n in config.experiments}


def publish(src: Source, workdir: str, copy: bool) -> dict:
    """Links (relative to workdir) to the source's PNGs and report.md, copying them if needed.

    A source inside the report's workdir is linked in place; one outside is copied into
    workdir/<name>/ (copy=True) so the report folder stands alone, or linked by relative path.
    """
    sub, here = os.path.abspath(src.workdir), os.path.abspath(workdir)
    files = sorted(glob.glob(os.path.join(sub, "*.png")))
    report = os.path.join(sub, "report.md")
    files += [report] if os.path.isfile(report) else []
    inside = os.path.commonpath([sub, here]) == here
    if copy and not inside:
        dest = os.path.join(here, src.name)
        os.makedirs(dest, exist_ok=True)
        for f in files:
            shutil.copy2(f, dest)
        files = [os.path.join(dest, os.path.basename(f)) for f in files]
    links = [os.path.relpath(f, here) for f in files]
    return {
        "plots": [p for p in links if p.endswith(".png")],
        "report": next((p for p in links if p.endswith("report.md")), None),
    }
