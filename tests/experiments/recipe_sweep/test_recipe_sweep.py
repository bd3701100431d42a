"""recipe_sweep's quick grid in-process (tiny rnn_vs_attn runs), and the length curriculum."""

import json
import math
import os

import numpy as np
import pytest

from anatomy.data.batching import Batcher
from anatomy.data.curriculum import Curriculum
from anatomy.errors import BadInputError
from anatomy.train.loop import NonFiniteLossError
from experiments import recipe_sweep
from experiments.configs.recipe_sweep import get_config


def test_quick_grid_scores_each_setting_on_the_valid_split(tmp_path):
    out = recipe_sweep.run(get_config("quick"), str(tmp_path))
    labels = [row[0] for row in out["rows"]]
    assert labels == ["base", "curriculum"]
    for row in out["rows"]:
        rec = dict(zip(out["header"], row))
        assert rec["steps"] == 6
        assert all(math.isfinite(rec[k]) for k in ("final acc", "BLEU", "1-10", "61+"))
    saved = json.load(open(os.path.join(tmp_path, "sweep.json")))
    assert saved["rows"] == json.loads(json.dumps(out["rows"]))
    assert saved["split"] == "valid" and saved["chosen"]["rnnenc"] in labels
    assert "| curriculum |" in open(os.path.join(tmp_path, "sweep.md")).read()
    for label in labels:  # each run decoded the valid split, never the test split
        res = json.load(open(os.path.join(tmp_path, label, "rnnenc", "results.json")))
        assert res["setup"]["eval_split"] == "valid"


def _planted_run(calls):
    """A stand-in for translation.train whose BLEU depends on the split it is scored on: on
    'test' the low learning rate is best, on 'valid' the high one; lr 1.0 diverges."""

    def run(config, workdir):
        model = config.models[0]
        lr = config.train_by_model[model].learning_rate
        calls.append((model, lr, config.eval.split, config.train.num_steps))
        if lr == 1.0:
            raise NonFiniteLossError("Non-finite loss (nan) at step 3")
        bleu = {"test": 50 - 10 * lr, "valid": 50 + 10 * lr}[config.eval.split]
        row = {
            "steps": 7,
            "final_accuracy": 0.5,
            "valid_loss": 1.0,
            "bleu": bleu,
            "bleu_by_length": {"1-10": bleu, "61+": bleu},
            "train_seconds": 1.0,
        }
        return {"models": {model: row}}

    return run


def test_valid_decides_the_choice_for_every_model_and_a_divergence_is_no_score(
    tmp_path, monkeypatch
):
    from experiments.tasks import translation

    calls = []
    monkeypatch.setattr(translation, "train", _planted_run(calls))
    settings = [(f"lr{lr}", {"train_by_model.{model}.learning_rate": lr}) for lr in (0.1, 0.5, 1.0)]
    monkeypatch.setitem(recipe_sweep.GRIDS, "planted", (("rnnenc", "transformer"), 7, 2, settings))
    config = get_config("quick")
    config.grid, config.models, config.num_steps = "planted", ("rnnenc", "transformer"), 7
    out = recipe_sweep.run(config, str(tmp_path))
    # the same settings and steps for every model, each scored on valid only
    assert sorted(calls) == sorted(
        (m, lr, "valid", 7) for m in config.models for lr in (0.1, 0.5, 1.0)
    )
    assert out["chosen"] == {"rnnenc": "lr0.5", "transformer": "lr0.5"}  # best on test: lr0.1
    assert out["chosen_jointly"] == "lr0.5"  # lr1.0 diverged: no joint score
    diverged = [r for r in out["rows"] if r[0] == "lr1.0"]
    assert len(diverged) == 2 and all(math.isnan(r[out["header"].index("BLEU")]) for r in diverged)
    saved = json.load(open(os.path.join(tmp_path, "sweep.json")))
    assert saved["split"] == "valid" and saved["chosen"] == out["chosen"]


def test_budget_grid_gives_every_model_the_same_lr_by_warmup_settings():
    from experiments.configs.recipe_sweep import GRIDS

    models, steps, _, settings = GRIDS["budget"]
    assert {"rnnenc", "rnnsearch", "transformer", "convs2s"} <= set(models)
    grid = {
        (o["train_by_model.{model}.learning_rate"], o["train_by_model.{model}.warmup_steps"])
        for _, o in settings
    }
    assert len(grid) == len(settings) >= 4 and len({lr for lr, _ in grid}) >= 2
    for m in models:
        c = recipe_sweep.setting_config(get_config("budget"), settings[-1][1], m)
        assert c.models == (m,) and c.eval.split == "valid" and c.train.num_steps == steps


def test_unknown_override_path_names_it():
    with pytest.raises(ValueError, match="model.rnnenc.no_such_field"):
        recipe_sweep.setting_config(get_config("quick"), {"model.rnnenc.no_such_field": 1})


def _pairs(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return [
        (list(rng.integers(4, 50, k)), list(rng.integers(4, 50, k + rng.integers(0, 3))))
        for k in rng.integers(1, 90, n)
    ]


def test_curriculum_phases_hold_only_short_pairs_then_the_full_batcher():
    full = Batcher(_pairs(), token_budget=512, boundaries=(16, 32, 64), max_len=96, seed=3)
    cur = Curriculum(full, ((7, 16), (5, 32)), token_budget=512)
    for k in range(7):
        b = cur.batch_at(k)
        assert b["src"].shape[1] == 16 and b["src_len"].max() <= 16 and b["tgt_len"].max() <= 16
    for k in range(7, 12):
        assert cur.batch_at(k)["src"].shape[1] <= 32
    for k in (12, 13, 40):  # after the curriculum: the full order from batch 0
        np.testing.assert_array_equal(cur.batch_at(k)["src"], full.batch_at(k - 12)["src"])
    assert {tuple(b["src"].shape) for b in cur.iterate(0, 12)} <= set(full.shapes)
    resumed = next(cur.iterate(start_step=9))
    np.testing.assert_array_equal(resumed["src"], cur.batch_at(9)["src"])


def test_curriculum_with_no_short_pair_is_a_clear_error():
    full = Batcher([([5] * 40, [6] * 40)] * 10, token_budget=512, boundaries=(64,), max_len=64)
    with pytest.raises(BadInputError, match="at most 8 tokens"):
        Curriculum(full, ((3, 8),), token_budget=512)


def test_joint_choice_is_the_best_mean_over_models_every_model_scored():
    h = recipe_sweep.HEADER
    row = lambda label, model, bleu: [
        bleu if k == "BLEU" else label if k == "setting" else model if k == "model" else 0
        for k in h
    ]
    rows = [
        row("a", "rnnenc", 10.0),
        row("a", "transformer", 30.0),  # mean 20
        row("b", "rnnenc", 19.0),
        row("b", "transformer", 22.0),  # mean 20.5: best of both models' means
        row("c", "rnnenc", 40.0),
        row("c", "transformer", float("nan")),  # diverged: c has no joint score
        row("d", "rnnenc", 22.0),
        row("d", "transformer", 19.0),  # mean 20.5 too: b came first
    ]
    assert recipe_sweep.choose(rows) == {"rnnenc": "c", "transformer": "a"}
    assert recipe_sweep.choose_jointly(rows) == "b"
    assert recipe_sweep.choose_jointly(rows[4:6]) is None
