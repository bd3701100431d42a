"""recipe_sweep's quick grid in-process (tiny rnn_vs_attn runs), and the length curriculum."""

import json
import math
import os

import numpy as np
import pytest

from anatomy.data.batching import Batcher
from anatomy.data.curriculum import Curriculum
from anatomy.errors import BadInputError
from experiments import recipe_sweep
from experiments.configs.recipe_sweep import get_config


def test_quick_grid_writes_one_finite_row_per_setting(tmp_path):
    out = recipe_sweep.run(get_config("quick"), str(tmp_path))
    labels = [row[0] for row in out["rows"]]
    assert labels == ["base", "curriculum"]
    for row in out["rows"]:
        rec = dict(zip(out["header"], row))
        assert rec["steps"] == 6
        assert all(math.isfinite(rec[k]) for k in ("final acc", "BLEU", "1-10", "61+"))
    saved = json.load(open(os.path.join(tmp_path, "sweep.json")))
    assert saved["rows"] == json.loads(json.dumps(out["rows"]))
    assert "| curriculum |" in open(os.path.join(tmp_path, "sweep.md")).read()


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
