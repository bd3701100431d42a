"""Multi-query associative recall (MQAR), as Zoology defines it: the recall experiment's task.

Arora, Eyuboglu et al. 2023, "Zoology: Measuring and improving recall in efficient language
models", the generator `zoology/data/multiquery_ar.py` (`multiquery_ar`), reproduced here in
distribution with NumPy's Generator (the slow twin in tests/experiments/recall/test_recall.py transliterates it
line by line, on NumPy's legacy global generator as Zoology does, and the two are compared).

One example of N tokens, K key-value pairs, vocabulary V:

    positions 0 .. 2K-1     k_1 v_1 k_2 v_2 ... k_K v_K     keys   K distinct ids of {1 .. V/2-1}
                                                            values K distinct ids of {V/2 .. V-1}
    positions 2K .. N-1     the query region: key k_i again at position 2K + 2·g_i, where the
                            gaps g_1 .. g_K are K distinct draws without replacement from
                            {0 .. S-1}, S = (N - 2K) / 2, with P(g) ∝ a·(g+1)^(a-1) (a power
                            law; Zoology's power_a, 0.01: most queries come soon after the
                            context); every other position of the region is a filler: 0, or,
                            with random_non_queries (Zoology's default), an id drawn from
                            U{0 .. V-1}

    labels [N]               the value v_i at k_i's query position, IGNORE (-100) elsewhere:
                             a causal model must name v_i *at* the query, from the context
                             alone (the value is never shown after the query)

Loss and accuracy are taken on the queried positions only (labels != IGNORE), as Zoology's
`compute_metrics` does: accuracy is the fraction of queries whose argmax is the value.
Zoology's constraints hold: N even, V > N, 4K <= N (the gaps need S >= K).

The readers without the ability (``position_reader``, ``bag_reader``) and the one with it
(``lookup_reader``) are what show the task needs recall: a reader that knows where the
queries are but not what was said, or what was said but not in which order, cannot name a
query's value (the position reader, readers.py, scores about 2/V on fresh data: values are
drawn uniformly, whatever the position); one that looks the key up always can
(docs/design.md: a task must need what it claims to test).
"""

from typing import NamedTuple

import numpy as np

from anatomy.errors import BadInputError
from anatomy.train.labelled import IGNORE  # a label no loss or accuracy reads
from experiments.tasks.readers import position_reader  # noqa: F401  (one of its readers)

POWER_A = 0.01  # Zoology's power_a: the exponent of the query-gap power law


class MQAR(NamedTuple):
    """inputs [B, N] int32; labels [B, N] int32 (IGNORE except at the queries)."""

    inputs: np.ndarray
    labels: np.ndarray


def check(seq_len, n_pairs, vocab):
    """BadInputError unless (N, K, V) is an MQAR shape Zoology allows (module docstring)."""
    n, k, v = int(seq_len), int(n_pairs), int(vocab)
    if n < 4 or n % 2:
        raise BadInputError(f"recall: the sequence length N must be even and >= 4, got {n}")
    if k < 1 or 4 * k > n:
        raise BadInputError(f"recall: need 1 <= K <= N/4 key-value pairs, got K={k} at N={n}")
    if v <= n:
        raise BadInputError(f"recall: the vocabulary V must exceed N (Zoology), got V={v}, N={n}")
    if k > v // 2 - 1:
        raise BadInputError(
            f"recall: K={k} pairs need K distinct keys among V/2 - 1 = {v // 2 - 1}"
        )


def gap_probabilities(space, power_a=POWER_A):
    """P(gap = g) for g = 0 .. space-1: a·(g+1)^(a-1), normalised (Zoology's power law)."""
    i = np.arange(1, int(space) + 1, dtype=np.float64)
    p = power_a * i ** (power_a - 1)
    return p / p.sum()


def _distinct(rng, batch, low, high, k):
    """[batch, k] ids: k distinct draws from {low .. high-1} per row, uniformly over ordered
    k-tuples of distinct ids (rows with a repeat are drawn again: rejection keeps the law
    exact); when repeats would be common (k² > range), the first k of a random permutation."""
    span = high - low
    if k * k > span:
        return low + np.argsort(rng.random((batch, span)), axis=1)[:, :k]
    out = rng.integers(low, high, size=(batch, k))
    while True:
        s = np.sort(out, axis=1)
        again = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
        if again.size == 0:
            return out
        out[again] = rng.integers(low, high, size=(again.size, k))


def _gaps(rng, batch, space, k, power_a):
    """[batch, k] distinct gaps per row, drawn one after another without replacement with
    P ∝ gap_probabilities: Gumbel-top-k (the k largest of log p + Gumbel noise come out in
    the order of successive sampling without replacement, the law of numpy's
    choice(replace=False, p=p))."""
    logp = np.log(gap_probabilities(space, power_a))  # [S]
    keys = logp + rng.gumbel(size=(batch, space))  # [B, S]
    return np.argsort(-keys, axis=1)[:, :k]


def mqar(rng, batch, seq_len, n_pairs, vocab, *, power_a=POWER_A, random_non_queries=True):
    """An MQAR batch of `batch` examples (module docstring), from the Generator `rng`."""
    check(seq_len, n_pairs, vocab)
    n, k, v = int(seq_len), int(n_pairs), int(vocab)
    half, context = v // 2, 2 * k
    keys = _distinct(rng, batch, 1, half, k)  # [B, K]
    values = _distinct(rng, batch, half, v, k)  # [B, K]
    gaps = _gaps(rng, batch, (n - context) // 2, k, power_a)  # [B, K]
    inputs = np.zeros((batch, n), np.int64)
    inputs[:, 0:context:2] = keys
    inputs[:, 1:context:2] = values
    at = context + 2 * gaps  # [B, K]: the query positions
    np.put_along_axis(inputs, at, keys, axis=1)
    labels = np.full((batch, n), IGNORE, np.int64)
    np.put_along_axis(labels, at, values, axis=1)
    if random_non_queries:
        filler = inputs == 0
        inputs[filler] = rng.integers(0, v, size=int(filler.sum()))
    return MQAR(inputs.astype(np.int32), labels.astype(np.int32))


def mixture(rng, batch, seq_len, pair_counts, vocab, **kw):
    """A batch of `batch` examples at one length N split evenly over the K of `pair_counts`
    (batch must be a multiple of their number): (MQAR, K [batch] of each row)."""
    counts = [int(k) for k in pair_counts]
    if batch % len(counts):
        raise BadInputError(
            f"recall: batch {batch} must be a multiple of the {len(counts)} pair counts {counts}"
        )
    part = batch // len(counts)
    parts = [mqar(rng, part, seq_len, k, vocab, **kw) for k in counts]
    inputs = np.concatenate([p.inputs for p in parts])
    labels = np.concatenate([p.labels for p in parts])
    return MQAR(inputs, labels), np.repeat(counts, part)


def accuracy(predicted, labels):
    """Fraction of queried positions (labels != IGNORE) where predicted [B, N] == labels."""
    labels = np.asarray(labels)
    hit = (np.asarray(predicted) == labels)[labels != IGNORE]
    return float(hit.mean())


# --- readers: with and without the ability the task claims to test ----------------------------


def lookup_reader(inputs, labels):
    """Predictions [B, N] of a reader that recalls: at each query, the value that followed the
    same key in the context (the first 2K tokens). Accuracy 1 on every MQAR batch."""
    inputs, labels = np.asarray(inputs), np.asarray(labels)
    pred = np.full(labels.shape, IGNORE, np.int64)
    for b, t in zip(*np.nonzero(labels != IGNORE)):
        k = int((labels[b] != IGNORE).sum())  # this row's K: the context is its first 2K tokens
        keys = inputs[b, 0 : 2 * k : 2]
        pred[b, t] = inputs[b, 2 * int(np.flatnonzero(keys == inputs[b, t])[0]) + 1]
    return pred


def bag_reader(inputs, labels, vocab):
    """Predictions [B, N] of a reader that knows which tokens came before each query but not
    their order (a bag of tokens, with counts): the most frequent value id (>= V/2) so far,
    ties to the smallest id. Each value occurs once in the context, so it cannot tell which of
    the K belongs to the query key: about 1/K."""
    inputs, labels = np.asarray(inputs), np.asarray(labels)
    half = int(vocab) // 2
    pred = np.full(labels.shape, IGNORE, np.int64)
    for b, t in zip(*np.nonzero(labels != IGNORE)):
        prefix = inputs[b, :t]
        vals = prefix[prefix >= half]
        ids, counts = np.unique(vals, return_counts=True)
        pred[b, t] = ids[np.argmax(counts)] if ids.size else half
    return pred
