"""Fixed-shape, token-budget batches; batch k is a pure function of (seed, k).

Every pair goes to the smallest bucket length L >= max(len(src), len(tgt) + 1); a bucket's batch
always has shape [B, L] with B = token_budget // L, so a jitted step compiles once per bucket,
never per batch. With batch_multiple=m > 1 (the data-axis size of a sharded run) B is rounded
down to a multiple of m, and never below m, so every batch divides over the devices. Training order, epoch e: each bucket's examples are permuted with a generator
seeded by (seed, e, bucket) and cut into batches (the last one completed by wrapping around
the permutation, so every row is a real example), then all batches of the epoch are permuted
with (seed, e). batch_at(k) rebuilds epoch k // steps_per_epoch from the seed alone, so a run
resumed at step k sees exactly the batches it would have seen.

Batch dict (numpy int32, pad = 0):
    src [B, L], src_len [B], tgt_in [B, L] (bos + target), tgt_out [B, L] (target + eos),
    tgt_len [B] (= len(target) + 1); eval batches add index [B] (-1 on padding rows).
"""

import itertools
import logging

import grain
import numpy as np

from anatomy.data import defaults
from anatomy.data.vocab import BOS, EOS
from anatomy.errors import BadInputError

DEFAULT_BOUNDARIES = (8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256, 384, 512)


def bucket_boundaries(max_len, boundaries=()):
    """Ascending padded lengths covering max_len (the last one is max_len rounded up to 8)."""
    top = -(-max_len // 8) * 8
    base = boundaries or DEFAULT_BOUNDARIES
    out = sorted({b for b in base if b < top} | {top})
    if any(b <= 0 for b in out):
        raise BadInputError(f"bucket boundaries must be positive, got {boundaries}")
    return tuple(out)


def _filter(pairs, max_len):
    """Indices of pairs that fit (src <= max_len, tgt + 1 <= max_len), and the dropped count."""
    keep = [i for i, (s, t) in enumerate(pairs) if 0 < len(s) <= max_len and len(t) + 1 <= max_len]
    return np.asarray(keep, np.int64), len(pairs) - len(keep)


def count_too_long(pairs, max_len):
    """How many encoded pairs the batchers filter for length (see _filter)."""
    return _filter(pairs, max_len)[1]


def collate(pairs, rows, length, index=None):
    """Pad pairs[rows] to a [len(rows), length] batch dict (see module docstring)."""
    b = len(rows)
    src = np.zeros((b, length), np.int32)
    tgt_in = np.zeros((b, length), np.int32)
    tgt_out = np.zeros((b, length), np.int32)
    src_len = np.zeros((b,), np.int32)
    tgt_len = np.zeros((b,), np.int32)
    for j, r in enumerate(rows):
        s, t = pairs[r]
        src[j, : len(s)] = s
        tgt_in[j, 0] = BOS
        tgt_in[j, 1 : len(t) + 1] = t
        tgt_out[j, : len(t)] = t
        tgt_out[j, len(t)] = EOS
        src_len[j], tgt_len[j] = len(s), len(t) + 1
    batch = {
        "src": src,
        "src_len": src_len,
        "tgt_in": tgt_in,
        "tgt_out": tgt_out,
        "tgt_len": tgt_len,
    }
    if index is not None:
        batch["index"] = np.asarray(index, np.int32)
    return batch


def round_batch(b, multiple):
    """b rounded down to a multiple of `multiple`, but at least `multiple` (rows per batch)."""
    return max(multiple, b // multiple * multiple)


class Batcher:
    """Deterministic, resumable training batches over encoded pairs [(src_ids, tgt_ids)].

    Attributes: shapes [(B, L)] per non-empty bucket, steps_per_epoch, n_filtered (pairs over
    max_len, never seen), boundaries. batch_multiple=m: B = max(m, (token_budget // L) // m * m),
    a multiple of m that respects the budget whenever token_budget // L >= m.
    """

    def __init__(
        self,
        pairs,
        *,
        token_budget=defaults.TOKEN_BUDGET,
        boundaries=(),
        max_len=defaults.MAX_LEN,
        seed=defaults.SEED,
        shuffle=True,
        batch_multiple=1,
    ):
        if int(batch_multiple) != batch_multiple or batch_multiple < 1:
            raise ValueError(f"batch_multiple must be a positive int, got {batch_multiple!r}")
        self.pairs, self.seed, self.shuffle = pairs, seed, shuffle
        self.batch_multiple = int(batch_multiple)
        self.boundaries = bucket_boundaries(max_len, boundaries)
        if token_budget < self.boundaries[-1]:
            raise BadInputError(
                f"token_budget={token_budget} is smaller than the longest bucket "
                f"({self.boundaries[-1]} tokens); raise it or lower max_len"
            )
        keep, self.n_filtered = _filter(pairs, max_len)
        if self.n_filtered:
            logging.warning(
                "batching: %d of %d pairs exceed max_len=%d and are filtered",
                self.n_filtered,
                len(pairs),
                max_len,
            )
        if len(keep) == 0:
            raise BadInputError(f"no pair fits max_len={max_len}")
        need = np.asarray([max(len(pairs[i][0]), len(pairs[i][1]) + 1) for i in keep])
        which = np.searchsorted(np.asarray(self.boundaries), need)  # smallest boundary >= need
        self.buckets = []  # (L, B, example indices)
        for j, length in enumerate(self.boundaries):
            idx = keep[which == j]
            if len(idx):
                self.buckets.append(
                    (length, round_batch(token_budget // length, self.batch_multiple), idx)
                )
        self.shapes = [(b, length) for length, b, _ in self.buckets]
        self.steps_per_epoch = sum(-(-len(idx) // b) for _, b, idx in self.buckets)
        self._cached = (None, None)

    def _plan(self, epoch):
        """[(L, rows)] for every batch of one epoch, in order."""
        if self._cached[0] == epoch:
            return self._cached[1]
        plan = []
        for j, (length, b, idx) in enumerate(self.buckets):
            order = idx
            if self.shuffle:
                order = np.random.default_rng([self.seed, epoch, j]).permutation(idx)
            n_batches = -(-len(order) // b)
            order = np.resize(order, n_batches * b)  # wrap around to fill the last batch
            plan += [(length, order[i * b : (i + 1) * b]) for i in range(n_batches)]
        if self.shuffle:
            perm = np.random.default_rng([self.seed, epoch]).permutation(len(plan))
            plan = [plan[i] for i in perm]
        self._cached = (epoch, plan)
        return plan

    def batch_at(self, k, row_slice=None):
        """Batch number k (k >= 0) as a dict of int32 arrays.

        row_slice: B -> (lo, hi), e.g. the rows of a B-row batch this process feeds
        (anatomy.sharding.row_slice); then only rows lo..hi-1 of batch k are read and padded,
        and the result equals batch_at(k)[lo:hi] leaf by leaf.
        """
        if k < 0:
            raise ValueError(f"batch index must be >= 0, got {k}")
        epoch, i = divmod(int(k), self.steps_per_epoch)
        length, rows = self._plan(epoch)[i]  # example indices only: nothing read yet
        if row_slice is not None:
            lo, hi = row_slice(len(rows))
            rows = rows[lo:hi]
        return collate(self.pairs, rows, length)

    def dataset(self, start_step=0, num_steps=None, row_slice=None):
        """grain.MapDataset whose item i is batch_at(start_step + i, row_slice) (random access,
        resumable)."""
        stop = start_step + (num_steps if num_steps is not None else 1000 * self.steps_per_epoch)
        return grain.MapDataset.range(start_step, stop).map(lambda k: self.batch_at(k, row_slice))

    def iterate(self, start_step=0, num_steps=None, prefetch=0, row_slice=None):
        """Iterator over batches start_step, start_step + 1, ... (infinite if num_steps is None).

        prefetch > 0 reads ahead on that many grain threads; the order is the same.
        row_slice: only those rows of every batch (see batch_at).
        """
        if prefetch:
            ds = self.dataset(start_step, num_steps, row_slice)
            return iter(
                ds.to_iter_dataset(
                    grain.ReadOptions(num_threads=prefetch, prefetch_buffer_size=2 * prefetch)
                )
            )
        steps = (
            itertools.count(start_step)
            if num_steps is None
            else range(start_step, start_step + num_steps)
        )
        return (self.batch_at(k, row_slice) for k in steps)


def eval_batches_from_pairs(
    pairs, *, token_budget=defaults.TOKEN_BUDGET, boundaries=(), max_len=defaults.MAX_LEN
):
    """All pairs that fit max_len, once, grouped into fixed-shape bucket batches.

    Returns (batches, n_filtered). Each batch carries index [B] (position in pairs); padding
    rows of a bucket's last batch repeat its first row with index -1 (ignore them).
    """
    bounds = bucket_boundaries(max_len, boundaries)
    if token_budget < bounds[-1]:
        raise BadInputError(
            f"token_budget={token_budget} is smaller than the longest bucket {bounds[-1]}"
        )
    keep, n_filtered = _filter(pairs, max_len)
    if n_filtered:
        logging.warning(
            "evaluation: %d of %d pairs exceed max_len=%d: filtered, not truncated",
            n_filtered,
            len(pairs),
            max_len,
        )
    need = np.asarray([max(len(pairs[i][0]), len(pairs[i][1]) + 1) for i in keep], np.int64)
    which = np.searchsorted(np.asarray(bounds), need)
    batches = []
    for j, length in enumerate(bounds):
        idx = keep[which == j]
        b = token_budget // length
        for start in range(0, len(idx), b):
            rows = list(idx[start : start + b])
            index = rows + [-1] * (b - len(rows))
            rows = rows + [rows[0]] * (b - len(rows))
            batches.append(collate(pairs, rows, length, index=index))
    return batches, n_filtered


def eval_batches(
    corpus, split="test", *, token_budget=None, max_len=None, boundaries=None, config=None
):
    """Evaluation batches of a corpus split (see eval_batches_from_pairs); the number of pairs
    filtered for length goes to corpus.report['filtered'][split] (and a warning)."""
    get = lambda value, key, default: (
        value
        if value is not None
        else (config[key] if config is not None and key in config else default)
    )
    batches, n_filtered = eval_batches_from_pairs(
        corpus.encode(split),
        token_budget=get(token_budget, "token_budget", defaults.TOKEN_BUDGET),
        boundaries=tuple(get(boundaries, "bucket_boundaries", ())),
        max_len=get(max_len, "max_len", corpus.max_len),
    )
    corpus.report.setdefault("filtered", {})[split] = n_filtered
    return batches


def make_batcher(
    corpus,
    split="train",
    *,
    token_budget=None,
    seed=None,
    max_len=None,
    boundaries=None,
    shuffle=True,
    batch_multiple=None,
    max_src_len=None,
    config=None,
):
    """Batcher over corpus.encode(split); unset arguments come from config (a data config).

    batch_multiple (default config.batch_multiple, else 1): rows per batch are a multiple of
    it, e.g. the data-axis size of the mesh (see Batcher). max_src_len > 0 keeps only pairs
    with at most that many source tokens (default config.train_max_src_len for split 'train',
    else 0 = all: Bahdanau et al.'s RNNsearch-30/-50 train on short sentences, test on all).
    """
    get = lambda value, key, default: (
        value
        if value is not None
        else (config[key] if config is not None and key in config else default)
    )
    pairs = corpus.encode(split)
    limit = (
        max_src_len
        if max_src_len is not None
        else (get(None, "train_max_src_len", 0) if split == "train" else 0)
    )
    if limit:
        kept = [p for p in pairs if len(p[0]) <= limit]
        logging.info(
            "batching: %d of %d %s pairs have more than %d source tokens: left out",
            len(pairs) - len(kept),
            len(pairs),
            split,
            limit,
        )
        pairs = kept
    return Batcher(
        pairs,
        token_budget=get(token_budget, "token_budget", defaults.TOKEN_BUDGET),
        boundaries=tuple(get(boundaries, "bucket_boundaries", ())),
        max_len=get(max_len, "max_len", corpus.max_len),
        seed=get(seed, "seed", defaults.SEED),
        shuffle=shuffle,
        batch_multiple=get(batch_multiple, "batch_multiple", 1),
    )
