"""copy: the task's layout, the readers with and without copying, and the state bound."""

import math

import numpy as np
import pytest

from anatomy.errors import BadInputError
from experiments.copy import task

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
