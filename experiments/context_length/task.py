"""context_length's task: a key-value stream whose values must be copied from far back.

A sequence of N tokens is n = N/2 pairs (key, value):

    k_1 v(k_1) k_2 v(k_2) ... k_n v(k_n)        keys k_i ~ U{0 .. K-1} i.i.d.
                                                v: a random table [K] -> {0 .. V-1},
                                                drawn afresh for every sequence

Token ids: key j is j, value u is K + u (vocabulary K + V). A language model predicts token
t + 1 from tokens <= t. A key is pure noise (its loss is log K whatever the model). A value is
noise the first time its key occurs in the sequence (loss log V at best) and a copy after that:
the model must find the key's previous occurrence, however far back, and read the value beside
it. So the value tokens carry the whole effect of context, and the best loss a model can reach
at each value position is known exactly (``oracle_value_loss``): log V on a key's first
occurrence, 0 on a repeat. The gap to a key's previous occurrence is geometric (mean K pairs),
so a sequence longer than the training length L holds repeats farther back than any seen in
training: a model that reads only its last L tokens pays log V on those.

The retrieval probe (``probe_batch``), in the spirit of passkey retrieval (Mohtashami & Jaggi
2023): the same stream, except that the query key q occurs exactly twice, planted k tokens
before the last key and as the last key; the model must name q's value at the last position.
Accuracy is argmax over the V value ids at that position; with values drawn uniformly and q
seen once, chance is 1/V exactly (``chance``).

Positions: "position t" is the position of the token predicted (1 .. N-1); values sit at odd t.
"""

import numpy as np

from anatomy.errors import BadInputError


def vocab_size(n_keys, n_values):
    return int(n_keys) + int(n_values)


def chance(n_values):
    """Probe accuracy of a model that knows nothing of q's value: 1/V."""
    return 1.0 / int(n_values)


def _check(length, n_keys, n_values):
    if int(length) < 4 or int(length) % 2:
        raise BadInputError(
            f"context_length: a sequence length must be even and >= 4, got {length}"
        )
    if int(n_keys) < 2 or int(n_values) < 2:
        raise BadInputError(
            f"context_length: need n_keys >= 2 and n_values >= 2, got {n_keys}, {n_values}"
        )


def stream_batch(rng, batch, length, n_keys, n_values):
    """Tokens [batch, length] int32 of the key-value stream (module docstring)."""
    _check(length, n_keys, n_values)
    keys = rng.integers(0, n_keys, size=(batch, length // 2))  # [B, n]
    table = rng.integers(0, n_values, size=(batch, n_keys))  # [B, K]: this sequence's values
    values = np.take_along_axis(table, keys, axis=1)  # [B, n]
    tokens = np.empty((batch, length), np.int32)
    tokens[:, 0::2] = keys
    tokens[:, 1::2] = n_keys + values
    return tokens


def first_occurrence(tokens, n_keys):
    """[B, n] bool: pair i's key does not occur in pairs < i (its value cannot be predicted)."""
    keys = np.asarray(tokens)[:, 0::2]  # [B, n]
    seen = np.zeros((keys.shape[0], n_keys), bool)
    first = np.zeros(keys.shape, bool)
    rows = np.arange(keys.shape[0])
    for i in range(keys.shape[1]):
        first[:, i] = ~seen[rows, keys[:, i]]
        seen[rows, keys[:, i]] = True
    return first


def oracle_value_loss(tokens, n_keys, n_values):
    """[B, n] the best expected loss at each value token: log V on a first occurrence, else 0."""
    return first_occurrence(tokens, n_keys) * np.log(n_values)


def probe_batch(rng, batch, length, distance, n_keys, n_values):
    """(tokens [batch, length], answer [batch]): the stream with the query key q planted
    `distance` tokens before the last key (and nowhere else before it); answer = q's value id.

    distance must be even (keys sit at even positions) and 2 <= distance <= length - 2.
    """
    _check(length, n_keys, n_values)
    if int(distance) % 2 or not 2 <= int(distance) <= length - 2:
        raise BadInputError(
            f"context_length: probe distance must be even, in [2, {length - 2}], got {distance}"
        )
    tokens = stream_batch(rng, batch, length, n_keys, n_values)
    n, gap = length // 2, int(distance) // 2
    q = rng.integers(0, n_keys, size=batch)  # [B]
    keys = tokens[:, 0::2]  # [B, n] (a view)
    # every other occurrence of q becomes another key: (q + 1 + U{0 .. K-2}) mod K != q
    other = (q[:, None] + 1 + rng.integers(0, n_keys - 1, size=keys.shape)) % n_keys
    keys[:] = np.where(keys == q[:, None], other, keys)
    keys[:, n - 1 - gap] = q
    keys[:, n - 1] = q
    # values: re-read every key's value from one table, so q's two pairs agree
    table = rng.integers(0, n_values, size=(batch, n_keys))
    tokens[:, 1::2] = n_keys + np.take_along_axis(table, keys, axis=1)
    answer = tokens[:, -1].copy()
    return tokens, answer
