"""The copy experiment's task: repeat a string after a separator (Jelassi, Brandfonbrener,
Kakade & Malach 2024, "Repeat After Me: Transformers are Better than State Space Models at
Copying").

One example, a string s of length l over an alphabet of A symbols (ids 0 .. A-1):

    $ s_1 .. s_l | s_1 .. s_l .  PAD ..       ids: '$' = A, '|' = A+1, '.' = A+2, PAD = A+3

    labels [T]    at position t the token the model must predict there (tokens[t+1]) for
                  t = l+1 (the '|': predict s_1) .. 2l+1 (predict '.'); IGNORE elsewhere
                  (the string itself is noise: nothing in it can be predicted)

A row is copied exactly when every labelled position's argmax is right: with teacher forcing
that is the same event as greedy decoding reproducing "s ." (a decoder that is right at every
step feeds itself the true prefix). Strings are uniform over A^l; training draws l uniformly
from 1 .. L, the tests go to 8L.

Jelassi et al.'s bound (their Theorem 2.7, in words): a model whose state can take 2^b values
cannot copy every string of length l once A^l > 2^b; at best it succeeds on a fraction
2^b / A^l of them. ``state_bound(bits, A)`` is the length l* = b / log2 A where that starts.

The readers without the ability (``position_reader``, ``bag_reader``) and with it
(``copy_reader``) show the task needs copying: knowing only where the output goes, or which
symbols s holds but not their order, cannot reproduce s (the position reader, readers.py,
scores about 1/A per symbol, A^-l per string).
"""

import math
from typing import NamedTuple

import numpy as np

from anatomy.errors import BadInputError
from anatomy.train.labelled import IGNORE  # a label no loss or accuracy reads
from experiments.tasks.readers import position_reader  # noqa: F401  (one of its readers)


class Ids(NamedTuple):
    """The special ids of an alphabet of A symbols, and the vocabulary size A + 4."""

    bos: int
    sep: int
    eos: int
    pad: int
    vocab: int


def ids(alphabet):
    a = int(alphabet)
    if a < 2:
        raise BadInputError(f"copy: the alphabet needs >= 2 symbols, got {alphabet}")
    return Ids(a, a + 1, a + 2, a + 3, a + 4)


def width(max_len):
    """Tokens of a row that holds strings up to max_len: '$' s '|' s '.' = 2·max_len + 3."""
    return 2 * int(max_len) + 3


class Copy(NamedTuple):
    """tokens [B, T] int32, labels [B, T] int32 (IGNORE but at the copy), lengths [B]."""

    tokens: np.ndarray
    labels: np.ndarray
    lengths: np.ndarray


def batch(rng, lengths, alphabet, row_width=None):
    """A Copy batch with one row per entry of `lengths` (each >= 1), padded to row_width
    (default: the longest row)."""
    lengths = np.asarray(lengths, np.int64)
    if lengths.ndim != 1 or lengths.size == 0 or lengths.min() < 1:
        raise BadInputError(f"copy: lengths must be a non-empty list of ints >= 1, got {lengths}")
    sp = ids(alphabet)
    t = width(lengths.max()) if row_width is None else int(row_width)
    if t < width(lengths.max()):
        raise BadInputError(f"copy: row width {t} cannot hold a string of {lengths.max()}")
    b = len(lengths)
    tokens = np.full((b, t), sp.pad, np.int64)
    labels = np.full((b, t), IGNORE, np.int64)
    strings = rng.integers(0, alphabet, size=(b, int(lengths.max())))  # [B, max l]
    tokens[:, 0] = sp.bos
    for i, n in enumerate(lengths):
        s = strings[i, :n]
        row = np.concatenate([[sp.bos], s, [sp.sep], s, [sp.eos]])  # [2l + 3]
        tokens[i, : len(row)] = row
        labels[i, n + 1 : 2 * n + 2] = row[n + 2 : 2 * n + 3]  # predict s_1 .. s_l, '.'
    return Copy(tokens.astype(np.int32), labels.astype(np.int32), lengths)


def train_lengths(rng, n, max_len):
    """[n] string lengths drawn uniformly from 1 .. max_len (the training distribution)."""
    return rng.integers(1, int(max_len) + 1, size=int(n))


def exact(predicted, labels):
    """[B] bool: every labelled position of the row predicted right."""
    labels = np.asarray(labels)
    wrong = (np.asarray(predicted) != labels) & (labels != IGNORE)
    return ~wrong.any(axis=1)


def state_bound(state_bits, alphabet):
    """l* = bits / log2(A): the longest string every one of which a state of `state_bits`
    bits could still tell apart (Jelassi et al. 2024, Theorem 2.7)."""
    return float(state_bits) / math.log2(int(alphabet))


# --- readers: with and without the ability the task claims to test ----------------------------


def copy_reader(tokens, labels, lengths, alphabet):
    """Predictions [B, T] of a reader that copies: at t, where tokens[t + 1] = s_j, the
    symbol l positions back (tokens[t - l] = s_j); '.' once the l symbols are out."""
    tokens, labels = np.asarray(tokens), np.asarray(labels)
    pred = np.full(labels.shape, IGNORE, np.int64)
    for b, n in enumerate(np.asarray(lengths)):
        t = np.arange(n + 1, 2 * n + 1)
        pred[b, t] = tokens[b, t - n]
        pred[b, 2 * n + 1] = ids(alphabet).eos
    return pred


def bag_reader(tokens, labels, lengths, alphabet):
    """Predictions [B, T] of a reader that knows which symbols s holds, with their counts, but
    not their order: it writes them sorted, then '.'. Right exactly when s happens to be
    sorted: 1 / (multinomial coefficient) of the string's counts."""
    tokens, labels = np.asarray(tokens), np.asarray(labels)
    eos = ids(alphabet).eos
    pred = np.full(labels.shape, IGNORE, np.int64)
    for b, n in enumerate(np.asarray(lengths)):
        pred[b, n + 1 : 2 * n + 2] = np.concatenate([np.sort(tokens[b, 1 : n + 1]), [eos]])
    return pred
