"""Smoke test of rnn_vs_attn:quick and translate through launch.py (subprocesses, as a user runs them)."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYS = ("params", "train_seconds", "tokens_per_second", "final_loss", "bleu", "bleu_by_length",
        "decode_tokens_per_second")
PLOTS = ("bleu_by_length.png", "loss_vs_steps.png", "loss_vs_time.png",
         "attention_rnnsearch.png", "attention_transformer.png")


def launch(*args, stdin=None, timeout=300):
    out = subprocess.run([sys.executable, "launch.py", *args], cwd=ROOT, input=stdin,
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("rnn_vs_attn"))
    out = launch("--experiment=rnn_vs_attn",
                 f"--config={ROOT}/experiments/configs/rnn_vs_attn.py:quick", f"--workdir={workdir}")
    return workdir, out.stdout


def test_results_json_has_every_key_finite(quick_run):
    workdir, stdout = quick_run
    with open(os.path.join(workdir, "results.json")) as f:
        results = json.load(f)["models"]
    assert sorted(results) == ["rnnenc", "rnnsearch", "transformer"]
    for name, r in results.items():
        for k in KEYS:
            assert k in r, (name, k)
        for k in KEYS[:-2] + KEYS[-1:]:
            assert isinstance(r[k], (int, float)) and math.isfinite(r[k]), (name, k, r[k])
        assert set(r["bleu_by_length"]) == {"1-10", "11-20", "21-30", "31-40", "41-50", "51-60", "61+"}
        assert all(0 <= v <= 100 for v in r["bleu_by_length"].values())
        assert r["params"] > 1000 and r["train_seconds"] > 0 and r["final_loss"] > 0
        assert name in stdout                                  # the table is printed
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


def test_translate_from_flag_and_stdin(quick_run):
    workdir, _ = quick_run
    out = launch("--experiment=translate", f"--workdir={workdir}", "--config.model=rnnsearch",
                 "--config.sentences=the cat sleeps .|a dog sees the cat .")
    assert len(out.stdout.strip().splitlines()) == 2
    out = launch("--experiment=translate", f"--workdir={workdir}", "--config.model=rnnenc",
                 stdin="the cat sleeps .\n\nthe dogs run .\nthe end .\n")
    assert len(out.stdout.strip().splitlines()) == 3


def test_translate_unknown_model_is_a_clear_error(quick_run):
    workdir, _ = quick_run
    out = subprocess.run([sys.executable, "launch.py", "--experiment=translate", f"--workdir={workdir}",
                          "--config.model=luong", "--config.sentences=x"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "No trained model 'luong'" in out.stderr


def test_presets_keep_one_token_budget_and_name_the_choices():
    from experiments.configs.rnn_vs_attn import get_config
    default, full = get_config(), get_config("full")
    # 'full' differs only in the lexicon and the number of steps, not in the models
    assert (default.data.toy.lexicon_scale, full.data.toy.lexicon_scale) == (0.1, 1.0)
    assert full.train.num_steps > default.train.num_steps
    assert full.model.to_dict() == default.model.to_dict()
    with pytest.raises(ValueError, match="'full' or 'quick'"):
        get_config("huge")
