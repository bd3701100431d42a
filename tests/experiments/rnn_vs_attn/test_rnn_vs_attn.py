"""Smoke test of rnn_vs_attn:quick through launch.py (subprocesses, as a user runs them);
translate on its workdir is tests/experiments/translate/test_translate.py."""

import json
import math
import os
import shutil

import numpy as np
import pytest
from conftest import ROOT
from conftest import launch as launch_py

KEYS = (
    "params",
    "train_seconds",
    "tokens_per_second",
    "final_loss",
    "valid_loss",
    "bleu",
    "bleu_by_length",
    "decode_tokens_per_second",
)
PLOTS = (
    "bleu_by_length.png",
    "chrf_by_length.png",
    "loss_vs_steps.png",
    "loss_vs_time.png",
    "valid_loss.png",
    "valid_loss_vs_time.png",
    "attention_rnnsearch.png",
    "attention_transformer.png",
)
TIMING = ("wall_time", "tokens_per_second", "valid_seconds")  # the only fields that may differ
MODELS = ("rnnenc", "rnnsearch", "transformer")


def launch(*args, stdin=None, timeout=300):
    return launch_py(*args, stdin=stdin, timeout=timeout)  # asserts it exited 0


def _quick(tmp_path_factory, name, *overrides):
    """Run the quick preset (with `overrides`) into a fresh workdir: (workdir, stdout)."""
    workdir = str(tmp_path_factory.mktemp(name))
    out = launch(
        "--experiment=rnn_vs_attn",
        f"--config={ROOT}/experiments/configs/rnn_vs_attn.py:quick",
        *overrides,
        f"--workdir={workdir}",
    )
    return workdir, out.stdout


@pytest.fixture(scope="module")
def quick_run(quick_report):
    """The quick preset as the quick report ran it (conftest.quick_report, in the report's
    process): (workdir, None); the tests must not write into it."""
    return str(quick_report / "rnn_vs_attn"), None


@pytest.fixture(scope="module")
def seeds_run(tmp_path_factory):
    """The quick preset with two seeds, through launch.py: seed 0 must be quick_run to the
    digit (another process, started another way)."""
    return _quick(tmp_path_factory, "rnn_vs_attn_seeds", "--config.seeds=2")


def _results(workdir):
    with open(os.path.join(workdir, "results.json")) as f:
        return json.load(f)


def _records(path):
    with open(path) as f:
        return [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in f]


def test_results_json_has_every_key_finite(quick_run, seeds_run):
    workdir, _ = quick_run
    stdout = seeds_run[1]  # what launch.py prints
    with open(os.path.join(workdir, "results.json")) as f:
        results = json.load(f)["models"]
    assert sorted(results) == ["rnnenc", "rnnsearch", "transformer"]
    for name, r in results.items():
        for k in KEYS:
            assert k in r, (name, k)
        for k in KEYS[:-2] + KEYS[-1:]:
            assert isinstance(r[k], (int, float)) and math.isfinite(r[k]), (name, k, r[k])
        assert set(r["bleu_by_length"]) == {
            "1-10",
            "11-20",
            "21-30",
            "31-40",
            "41-50",
            "51-60",
            "61+",
        }
        assert all(0 <= v <= 100 for v in r["bleu_by_length"].values())
        assert r["params"] > 1000 and r["train_seconds"] > 0 and r["final_loss"] > 0
        assert name in stdout  # the table is printed
        assert os.path.isdir(os.path.join(workdir, name, "checkpoints", "30"))
    assert "| model |" in stdout


def test_plots_and_report_are_sane(quick_run):
    import matplotlib.image as mpimg

    workdir, _ = quick_run
    for name in PLOTS:
        img = mpimg.imread(os.path.join(workdir, name))
        assert img.shape[0] > 200 and img.shape[1] > 200, name
        assert np.std(img[..., :3]) > 0.01, f"{name} is blank"
    report = open(os.path.join(workdir, "report.md")).read()
    for name in PLOTS:
        assert f"({name})" in report
    assert "| rnnsearch |" in report and "61+" in report


def test_presets_keep_one_token_budget_and_name_the_choices():
    from experiments.configs.rnn_vs_attn import get_config

    default, full = get_config(), get_config("full")
    # 'full' differs only in the lexicon and the number of steps, not in the models
    assert (default.data.toy.lexicon_scale, full.data.toy.lexicon_scale) == (0.1, 1.0)
    assert full.train.num_steps > default.train.num_steps
    assert full.model.to_dict() == default.model.to_dict()
    with pytest.raises(ValueError, match="'seeds', 'equal_time', 'bahdanau'"):
        get_config("huge")


def test_seeds_equal_time_and_bahdanau_presets():
    from experiments.configs.rnn_vs_attn import get_config

    default = get_config()
    assert default.seeds == 1 and get_config("seeds").seeds == 3
    assert default.train.eval_every > 0 and default.train.eval_every % default.train.log_every == 0
    t = get_config("equal_time").train
    # the clock stops it; num_steps shapes the schedule laid over the budget (the budget stop
    # and the schedule: tests/anatomy/train/test_train_eval.py, test_time_budget_lays_the_schedule_over_...)
    assert t.max_train_seconds > 0 and t.num_steps == default.train.num_steps
    bahdanau = get_config("bahdanau")
    assert sorted(bahdanau.models) == sorted(f"{m}-{n}" for m in MODELS for n in (30, 50))
    assert bahdanau.model.to_dict() == default.model.to_dict()


def test_validation_records_present_and_finite(quick_run):
    workdir, _ = quick_run
    for name in MODELS:
        with open(os.path.join(workdir, name, "metrics.jsonl")) as f:
            recs = [json.loads(line) for line in f]
        valid = [r for r in recs if "valid_loss" in r]
        assert [r["step"] for r in valid] == [10, 20, 30], name  # quick: eval_every 10
        for r in valid:
            assert math.isfinite(r["valid_loss"]) and r["valid_loss"] > 0, r
            assert 0 <= r["valid_accuracy"] <= 1 and r["valid_tokens"] > 0, r
        row = _results(workdir)["models"][name]
        assert row["valid_loss"] == valid[-1]["valid_loss"]


def test_seeds_keep_every_row_and_their_mean(seeds_run):
    workdir, stdout = seeds_run
    results = _results(workdir)
    assert results["setup"]["seeds"] == 2 and "ddof=1" in results["setup"]["std"]
    for name in MODELS:
        entry = results["models"][name]
        seeds = entry["seeds"]
        assert entry["n_seeds"] == 2 and len(seeds) == 2 and entry["train_seed"] == [0, 1]
        for sub in ("", "seed1"):  # seed 0 where a one-seed run keeps it, then seed<s>
            assert os.path.isdir(os.path.join(workdir, name, sub, "checkpoints", "30"))
        for key in ("bleu", "final_loss", "valid_loss", "train_seconds"):
            values = [r[key] for r in seeds]
            assert entry[key] == pytest.approx(np.mean(values), rel=1e-12), (name, key)
            assert entry["std"][key] == pytest.approx(np.std(values, ddof=1), rel=1e-12), (
                name,
                key,
            )
        for lab, mean in entry["bleu_by_length"].items():
            assert mean == pytest.approx(np.mean([r["bleu_by_length"][lab] for r in seeds]))
        assert seeds[0]["final_loss"] != seeds[1]["final_loss"]  # another init: other numbers
    assert "±" in stdout and "±" in open(os.path.join(workdir, "report.md")).read()


def test_seeds_run_in_a_one_seed_workdir_trains_only_the_new_seeds(quick_run, tmp_path):
    """seed 0 lives where the one-seed run put it, so adding seeds resumes it (no retraining)."""
    workdir = str(tmp_path / "grown")
    shutil.copytree(quick_run[0], workdir)
    out = launch(
        "--experiment=rnn_vs_attn",
        f"--config={ROOT}/experiments/configs/rnn_vs_attn.py:quick",
        "--config.seeds=2",
        "--config.models=('rnnenc',)",
        f"--workdir={workdir}",
    )
    assert (
        "[rnnenc/seed0] resumed from" in out.stderr and "[rnnenc/seed1] resumed" not in out.stderr
    )
    entry = _results(workdir)["models"]["rnnenc"]
    assert entry["seeds"][0]["bleu"] == _results(quick_run[0])["models"]["rnnenc"]["bleu"]
    assert os.path.isdir(os.path.join(workdir, "rnnenc", "seed1", "checkpoints", "30"))


def test_same_seed_gives_identical_metrics(quick_run, seeds_run):
    """Seed 0 of the two-seed run retrains every model of the one-seed run: the same digits."""
    one, two = _results(quick_run[0])["models"], _results(seeds_run[0])["models"]
    for name in MODELS:
        again = two[name]["seeds"][0]
        first = _records(os.path.join(quick_run[0], name, "metrics.jsonl"))
        second = _records(os.path.join(seeds_run[0], name, "metrics.jsonl"))
        assert len(first) == 6 and first == second, name
        for key in (
            "bleu",
            "bleu_by_length",
            "final_loss",
            "final_accuracy",
            "valid_loss",
            "params",
            "steps",
            "tokens",
        ):
            assert one[name][key] == again[key], (name, key)


def test_length_limited_models_train_on_short_sources_only():
    from anatomy import data
    from anatomy.errors import BadInputError
    from experiments.configs.rnn_vs_attn import get_config
    from experiments.tasks.translation import training

    assert training.model_spec("rnnsearch-30") == ("rnnsearch", 30)
    assert training.model_spec("transformer") == ("transformer", 0)
    for bad in ("rnnsearch-", "rnnsearch-0", "rnnsearch-x", "lstm-30"):
        with pytest.raises(BadInputError, match="unknown model"):
            training.model_spec(bad)
    config = get_config("quick")
    corpus = data.load_corpus(config.data)
    full = training.train_batcher(config, corpus, 1)
    short = training.train_batcher(config, corpus, 1, 30)
    longest = lambda b: max(int(b.batch_at(k)["src_len"].max()) for k in range(b.steps_per_epoch))
    assert longest(short) <= 30 < longest(full)
    valid = training.valid_batches(config, corpus, 1)
    assert len(valid) == config.eval.valid_batches
    assert (
        max(int(b["src_len"].max()) for b in data.eval_batches(corpus, "valid", config=config.data))
        > 30
    )


def test_aggregate_over_seeds_on_constructed_rows():
    from experiments.tasks.translation import seeds

    rows = [
        {
            "train_seed": s,
            "bleu": b,
            "bleu_by_length": {"1-10": b + 1},
            "valid_loss": None,
            "examples": [[f"seed {s}"]],
            "stopped_by_time_budget": False,
        }
        for s, b in ((0, 10.0), (1, 20.0), (2, 60.0))
    ]
    agg = seeds.aggregate(rows)
    assert agg["bleu"] == 30.0 and agg["std"]["bleu"] == pytest.approx(np.std([10, 20, 60], ddof=1))
    assert agg["bleu_by_length"] == {"1-10": 31.0} and agg["train_seed"] == [0, 1, 2]
    assert agg["valid_loss"] is None and agg["examples"] == [["seed 0"]] and agg["n_seeds"] == 3
    assert seeds.mean_pm_std(agg, "bleu") == f"30 ± {np.std([10, 20, 60], ddof=1):.3g}"
    one = seeds.aggregate(rows[:1])
    assert one["std"]["bleu"] is None and seeds.mean_pm_std(one, "bleu") == "10"
    # the console/report tables print steps as 2000, BLEU 96.46 as 96.5 (anatomy.tables.format_number)
    assert seeds.mean_pm_std({"steps": 2000.0}, "steps") == "2000"
    assert seeds.mean_pm_std({"bleu": 96.46}, "bleu") == "96.5"
