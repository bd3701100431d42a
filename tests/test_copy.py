"""copy: the task's layout, the readers with and without copying, and the state bound."""

import json
import math

import numpy as np
import pytest

from anatomy.errors import BadInputError
from anatomy.probes.claims import FAILS, HOLDS
from experiments import record
from experiments.copy import claims, task

A = 5


def test_rows_are_dollar_s_bar_s_dot_and_labels_the_copy(rng):
    sp = task.ids(A)
    c = task.batch(rng, [1, 4, 7], A, row_width=20)
    assert c.tokens.shape == c.labels.shape == (3, 20)
    for row, lab, n in zip(c.tokens, c.labels, c.lengths):
        s = row[1 : n + 1]
        assert row[0] == sp.bos and row[n + 1] == sp.sep and row[2 * n + 2] == sp.eos
        assert (row[n + 2 : 2 * n + 2] == s).all() and (row[2 * n + 3 :] == sp.pad).all()
        at = np.flatnonzero(lab != task.IGNORE)
        assert list(at) == list(range(n + 1, 2 * n + 2))  # the '|' .. the last symbol
        assert (lab[at] == row[at + 1]).all()  # each label is the next token
    assert task.width(7) == 17
    with pytest.raises(BadInputError, match="hold"):
        task.batch(rng, [9], A, row_width=10)
    with pytest.raises(BadInputError, match=">= 1"):
        task.batch(rng, [0, 3], A)


def test_readers_without_copying_cannot_copy(rng):
    n_train = task.train_lengths(rng, 3000, 8)
    assert n_train.min() == 1 and n_train.max() == 8
    train = task.batch(rng, n_train, A)
    test = task.batch(rng, np.full(400, 8), A)
    ok = task.exact(task.copy_reader(test.tokens, test.labels, test.lengths, A), test.labels)
    assert ok.all()
    pos = task.exact(task.position_reader(train.labels, test.labels), test.labels)
    bag = task.exact(task.bag_reader(test.tokens, test.labels, test.lengths, A), test.labels)
    assert pos.mean() < 0.01 and bag.mean() < 0.01  # A^-8 and ~1/multinomial
    # the bag reader is right exactly on the sorted strings
    s = test.tokens[:, 1:9]
    assert (bag == (np.diff(s, axis=1) >= 0).all(axis=1)).all()


def test_state_bound_is_bits_over_log2_alphabet():
    assert task.state_bound(64, 16) == 16.0
    assert task.state_bound(100, 26) == pytest.approx(100 / math.log2(26))


# --- the claims, on injected numbers (both sides of each edge) ----------------------------------


def fake(att_at_l=0.98, lstm_at_l=0.1, att_2l=0.8, mlstm_2l=0.1):
    def seeds(x):
        return [x - 0.01, x, x + 0.01]

    lengths = [4, 16, 32]

    def entry(family, bound, exact):
        return {"family": family, "bound": bound, "exact": [seeds(x) for x in exact]}

    return {
        "lengths": lengths,
        "train_max": 16,
        "readers": {"copy": [1.0] * 3, "position": [0.0] * 3, "bag": [0.05, 0.0, 0.0]},
        "contenders": {
            "attention": entry("attention", None, [1.0, att_at_l, att_2l]),
            "lstm": entry("lstm", 2048.0, [0.9, lstm_at_l, 0.0]),
            "mlstm": entry("mlstm", 9000.0, [0.95, 0.3, mlstm_2l]),
        },
    }


def verdicts(results):
    return {c.id: c.verdict for c in claims.table(record.stored(results))}


def test_copy_claims_hold_and_fail_on_both_sides():
    good = verdicts(fake())
    for cid in ("copy/needs_copying", "copy/attention_within", "copy/gap/lstm", "copy/gap/mlstm",
                "copy/longer", "copy/bound"):  # fmt: skip
        assert good[cid] == HOLDS, cid
    assert verdicts(fake(att_at_l=0.5))["copy/attention_within"] == FAILS
    assert verdicts(fake(lstm_at_l=0.95))["copy/gap/lstm"] == FAILS
    assert verdicts(fake(mlstm_2l=0.75))["copy/longer"] == FAILS
    r = fake()
    r["contenders"]["lstm"]["bound"] = 3.0  # copies 4 symbols past a bound of 3: impossible
    assert verdicts(r)["copy/bound"] == FAILS
    assert claims.chapter(record.stored(fake()))[0].verdict == HOLDS
    assert claims.chapter(record.stored(fake(lstm_at_l=0.95)))[0].verdict == FAILS


def test_quick_copy_writes_every_contender_at_matched_size(quick_report):
    workdir = quick_report / "copy"
    res = json.loads((workdir / "results.json").read_text())
    assert res["lengths"] == [2, 4, 8]
    for name, e in res["contenders"].items():
        assert e["spec"].startswith(name) and f"d_model={e['d_model']}" in e["spec"]
        assert len(e["exact"]) == len(res["lengths"])
        # the bound is drawn for a state that does not grow with the string, and only then
        assert (e["bound"] is None) == (e["state_bytes"][-1] > e["state_bytes"][0]), name
    assert res["contenders"]["attention"]["bound"] is None
    assert sorted(res["plots"]) == sorted(p.name for p in workdir.glob("*.png"))
    assert "copy/fixed_state_copy" in record.claims_of("copy", res)
