"""context_length's task: a key-value stream in which keys come into play and leave it, so that
a value must be copied from wherever its key last occurred, early or late in the sequence.

Each sequence draws a table v: {0 .. K-1} -> {0 .. V-1} (a key's value, fixed for the
sequence). A sequence of N tokens is n = N/2 pairs (key, v(key)). At most A keys are in play;
pair i brings a key into play with chance p_new (always the first pair), else repeats a key
in play:

    enter   key: uniform among the keys not in play (it may have been in play before); it
            goes into play, and the key in play longest leaves (first in, first out)
    repeat  key: uniform among the keys in play

Token ids: key j is j, value u is K + u (vocabulary K + V). A language model predicts token
t + 1 from tokens <= t. A key is noise (which one comes next). A value is noise where its key
occurs for the first time in the sequence (loss log V at best) and a copy everywhere else: the
model must find an earlier occurrence of the key and read the value beside it. The best loss
at each value position is known exactly (``oracle_value_loss``): log V on a key's first
occurrence, 0 after.

Why keys come and go: when all K keys are in play from the start (the task's first form, K =
8, every key repeating every few pairs), every key has occurred within the first few dozen
tokens, and a reader that reads only those tokens comes within 0.01 nats of the oracle: the
loss at L then cannot tell a model that reads every position from one that reads a fixed
window of absolute positions. Here keys enter throughout the sequence and stay in play for
about A / p_new pairs, so a reader of a fixed window of absolute positions pays log V on
every repeat of a key that first occurred after the window (``window_reader_value_loss``:
that reader, the twin the tests hold against the oracle). A key that comes back into play
after a long absence is a copy from far back: in sequences longer than the training length
L, some of those reach farther than any seen in training.

The retrieval probe (``probe_batch``), in the spirit of passkey retrieval (Mohtashami & Jaggi
2023): the same stream, with a query key q planted k tokens before the last key and as the
last key, and nowhere else; the model must name q's value at the last position. Accuracy is
argmax over the V value ids at that position; with values drawn uniformly and q seen once,
chance is 1/V exactly (``chance``).

Positions: "position t" is the position of the token predicted (1 .. N-1); values sit at odd t.
"""

import numpy as np

from anatomy.errors import BadInputError


def vocab_size(n_keys, n_values):
    return int(n_keys) + int(n_values)


def chance(n_values):
    """Probe accuracy of a model that knows nothing of q's value: 1/V."""
    return 1.0 / int(n_values)


def _check(length, n_keys, n_values, p_new, in_play):
    if int(length) < 4 or int(length) % 2:
        raise BadInputError(
            f"context_length: a sequence length must be even and >= 4, got {length}"
        )
    if not 1 <= int(in_play) < int(n_keys) or int(n_values) < 2:
        raise BadInputError(
            f"context_length: need 1 <= in_play < n_keys (a key out of play to bring in) and "
            f"n_values >= 2, got in_play {in_play}, n_keys {n_keys}, n_values {n_values}"
        )
    if not 0.0 < float(p_new) <= 1.0:
        raise BadInputError(f"context_length: p_new must be in (0, 1], got {p_new}")


def stream_batch(rng, batch, length, n_keys, n_values, p_new, in_play):
    """Tokens [batch, length] int32 of the key-value stream (module docstring).

    Vectorised over the batch, one step per pair. slots [B, A] hold the keys in play, a ring
    buffer in the order they entered (entered % A is where the next one goes, over the oldest);
    a new key is the not-in-play key of largest fresh uniform score (uniform among them)."""
    _check(length, n_keys, n_values, p_new, in_play)
    n, a, rows = int(length) // 2, int(in_play), np.arange(batch)
    table = rng.integers(0, int(n_values), size=(batch, int(n_keys)))  # [B, K]: the values
    fresh = rng.random((batch, n)) < float(p_new)  # [B, n]: pair i brings a key into play
    slots = np.zeros((batch, a), np.int64)  # [B, A]: the keys in play
    entered = np.zeros(batch, np.int64)  # how many keys have entered play so far
    keys = np.zeros((batch, n), np.int64)
    for i in range(n):
        new = fresh[:, i] | (entered == 0)
        playing = np.zeros((batch, int(n_keys)), bool)  # [B, K]
        filled = np.arange(a)[None, :] < entered[:, None]  # [B, A]
        np.put_along_axis(playing, slots, filled, axis=1)
        enter = np.where(playing, -1.0, rng.random((batch, int(n_keys)))).argmax(axis=1)
        pick = (rng.random(batch) * np.minimum(np.maximum(entered, 1), a)).astype(np.int64)
        keys[:, i] = np.where(new, enter, slots[rows, pick])
        slots[rows[new], entered[new] % a] = enter[new]
        entered += new
    tokens = np.empty((batch, int(length)), np.int32)
    tokens[:, 0::2] = keys
    tokens[:, 1::2] = int(n_keys) + np.take_along_axis(table, keys, axis=1)
    return tokens


def first_occurrence(tokens, n_keys):
    """[B, n] bool: pair i's key does not occur in pairs < i (its value cannot be predicted)."""
    keys = np.asarray(tokens)[:, 0::2]  # [B, n]
    seen = np.zeros((keys.shape[0], int(n_keys)), bool)
    first = np.zeros(keys.shape, bool)
    rows = np.arange(keys.shape[0])
    for i in range(keys.shape[1]):
        first[:, i] = ~seen[rows, keys[:, i]]
        seen[rows, keys[:, i]] = True
    return first


def oracle_value_loss(tokens, n_keys, n_values):
    """[B, n] the best expected loss at each value token: log V on a first occurrence, else 0."""
    return first_occurrence(tokens, n_keys) * np.log(n_values)


def window_reader_value_loss(tokens, n_keys, n_values, window):
    """[B, n] the loss of the best reader that sees every key but only the values among the
    first `window` tokens (a reader of a fixed window of absolute positions): 0 where the
    key's earlier occurrence lies in that window, log V elsewhere (a value whose source lies
    outside it is uniform and independent of all it sees, so no reader of the window does
    better there; where the source lies inside, copying it is exact)."""
    keys = np.asarray(tokens)[:, 0::2]  # [B, n]
    first = first_occurrence(tokens, n_keys)
    read = np.zeros(keys.shape, bool)  # pair i's key occurs in a pair j < i with 2j + 1 < window
    early = (2 * np.arange(keys.shape[1]) + 1) < int(window)  # [n]: pair j's value is seen
    for i in range(1, keys.shape[1]):
        read[:, i] = ((keys[:, :i] == keys[:, i : i + 1]) & early[:i]).any(axis=1)
    return np.where(~first & read, 0.0, np.log(n_values))


def probe_batch(rng, batch, length, distance, n_keys, n_values, p_new, in_play):
    """(tokens [batch, length], answer [batch]): the stream with a query key q planted
    `distance` tokens before the last key and as the last key, and nowhere else (its other
    occurrences become other keys); answer = q's value id.

    distance must be even (keys sit at even positions) and 2 <= distance <= length - 2."""
    _check(length, n_keys, n_values, p_new, in_play)
    if int(distance) % 2 or not 2 <= int(distance) <= length - 2:
        raise BadInputError(
            f"context_length: probe distance must be even, in [2, {length - 2}], got {distance}"
        )
    tokens = stream_batch(rng, batch, length, n_keys, n_values, p_new, in_play)
    n, gap, k = int(length) // 2, int(distance) // 2, int(n_keys)
    q = rng.integers(0, k, size=batch)  # [B]
    keys = tokens[:, 0::2]  # [B, n] (a view)
    # every other occurrence of q becomes another key: (q + 1 + U{0 .. K-2}) mod K != q
    other = (q[:, None] + 1 + rng.integers(0, k - 1, size=keys.shape)) % k
    keys[:] = np.where(keys == q[:, None], other, keys)
    keys[:, n - 1 - gap] = keys[:, n - 1] = q
    # values: every key's read again from one new table, so q's two pairs agree
    table = rng.integers(0, int(n_values), size=(batch, k))  # [B, K]
    tokens[:, 1::2] = k + np.take_along_axis(table, keys.astype(np.int64), axis=1)
    return tokens, tokens[:, -1].copy()
