"""Readers without recall: what the delayed-recall task gives away to a model that cannot
recall x_{t-k}, so that the recall bar can be set above it (the task must need what its
claims test).

    position   predicts, at each position t, the target most often seen at t in a batch of
               training sequences: everything a reader of the position alone can know
    unigram    predicts the most frequent token of x_0..x_t (ties: the smallest symbol): the
               best guess of x_{t-k} from the prefix's counts alone (the target is one of the
               prefix's tokens, any of them equally likely given only the counts)

On uniform i.i.d. symbols the position reader sits at chance (1/V) and the unigram reader a
little above it, most on the shortest prefixes. Both are NumPy, on the task's own batches;
tests/experiments/long_range/test_long_range.py checks them against slow per-position loops.
"""

from __future__ import annotations

import numpy as np


def accuracy(pred, targets, weights) -> float:
    """Σ weights·[pred == targets] / Σ weights: the task's accuracy ([B, L] arrays)."""
    pred, targets, weights = (np.asarray(a) for a in (pred, targets, weights))
    return float(np.sum((pred == targets) * weights) / np.sum(weights))


def position_reader(train_targets, train_weights, vocab: int) -> np.ndarray:
    """The position-only reader fitted on a training batch: [L] the most frequent target at
    each position among the scored ones (ties and unscored positions: the smallest symbol)."""
    targets, weights = np.asarray(train_targets), np.asarray(train_weights)
    counts = np.zeros((targets.shape[1], vocab))  # [L, V]
    for b in range(targets.shape[0]):
        np.add.at(counts, (np.arange(targets.shape[1]), targets[b]), weights[b])
    return np.argmax(counts, axis=1)


def unigram_reader(tokens, vocab: int) -> np.ndarray:
    """[B, L]: at each position t, the most frequent symbol of tokens[:, :t+1] (ties: the
    smallest)."""
    tokens = np.asarray(tokens)
    counts = np.cumsum(np.eye(vocab, dtype=np.int32)[tokens], axis=1)  # [B, L, V]
    return np.argmax(counts, axis=-1)


def reader_accuracies(train, test, vocab: int) -> dict[str, float]:
    """{'position', 'unigram'}: each reader's accuracy on the test batch (tokens, targets,
    weights); the position reader fitted on the training batch."""
    table = position_reader(train[1], train[2], vocab)
    tokens, targets, weights = test
    by_position = np.broadcast_to(table[None, :], np.shape(targets))
    return {
        "position": accuracy(by_position, targets, weights),
        "unigram": accuracy(unigram_reader(tokens, vocab), targets, weights),
    }
