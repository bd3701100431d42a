"""The reader every labelled task shares: one that knows where the labelled positions are but
not the tokens. A task's own readers (mqar.py, copying.py) add the one with its ability and
the others without it."""

import numpy as np

from anatomy.train.labelled import IGNORE


def position_reader(train_labels, labels):
    """Predictions [B, T] for the labelled positions of `labels` (IGNORE elsewhere): at
    position t, the label most often seen at t in `train_labels` [B', T'] (ties: the smallest
    id; 0 where training labelled nothing at t): the best guess without the tokens."""
    train_labels, labels = np.asarray(train_labels), np.asarray(labels)
    best = np.zeros(labels.shape[1], np.int64)
    for t in range(min(labels.shape[1], train_labels.shape[1])):
        seen = train_labels[:, t][train_labels[:, t] != IGNORE]
        if seen.size:
            vals, counts = np.unique(seen, return_counts=True)
            best[t] = vals[np.argmax(counts)]
    return np.where(labels != IGNORE, best[None, :], IGNORE)
