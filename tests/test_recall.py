"""recall: the MQAR generator against Zoology's (a line-by-line twin on NumPy's legacy
generator), its invariants, and the readers with and without recall."""

import json

import numpy as np
import pytest

from anatomy.errors import BadInputError
from anatomy.probes.claims import FAILS, HOLDS, MISSING, UNDECIDED
from experiments import record
from experiments.recall import choose, claims, task

IGNORE = task.IGNORE


def zoology_multiquery_ar(vocab_size, num_examples, input_seq_len, seed, power_a=0.01,
                          num_kv_pairs=8, random_non_queries=True):  # fmt: skip
    """Zoology's multiquery_ar (zoology/data/multiquery_ar.py, num_passes=1), transliterated
    from torch to NumPy: the slow twin, on the legacy global generator as Zoology seeds it."""
    assert input_seq_len % 2 == 0 and vocab_size > input_seq_len
    assert num_kv_pairs * 4 <= input_seq_len
    np.random.seed(seed)
    context_size = num_kv_pairs * 2
    key_vocab_size = vocab_size // 2
    key_choices = np.arange(1, key_vocab_size)
    value_choices = np.arange(key_vocab_size, vocab_size)
    keys_unshuffled = np.tile(key_choices, (num_examples, 1))
    keys = np.apply_along_axis(
        np.random.choice, 1, keys_unshuffled, replace=False, size=num_kv_pairs
    )
    values_unshuffled = np.tile(value_choices, (num_examples, 1))
    values = np.apply_along_axis(
        np.random.choice, 1, values_unshuffled, replace=False, size=num_kv_pairs
    )
    kvs = np.zeros((num_examples, context_size), dtype=np.int64)
    kvs[:, 0::2] = keys
    kvs[:, 1::2] = values
    space = (input_seq_len - context_size) // 2
    p = power_a * np.arange(1, space + 1) ** (power_a - 1)
    p = p / p.sum()
    x = np.stack([np.arange(space, dtype=int)] * num_examples)
    gaps = np.apply_along_axis(
        np.random.choice, axis=1, arr=x, replace=False, p=p, size=num_kv_pairs
    )
    queries = np.zeros((num_examples, input_seq_len - context_size + 1), dtype=np.int64)
    np.put_along_axis(queries, (gaps * 2), values=keys, axis=1)
    examples = np.concatenate([kvs, queries], axis=1)
    labels = np.full((num_examples, input_seq_len + 1), -100, dtype=np.int64)
    np.put_along_axis(labels, (gaps * 2) + context_size + 1, values=values, axis=1)
    inputs, labels = examples[:, :-1], labels[:, 1:]
    if random_non_queries:
        zero = inputs == 0
        inputs[zero] = np.random.randint(vocab_size, size=inputs.shape)[zero]
    return inputs, labels


def test_mqar_invariants(rng):
    n, k, v, b = 64, 6, 200, 50
    batch = task.mqar(rng, b, n, k, v)
    x, y = batch.inputs, batch.labels
    assert x.shape == y.shape == (b, n) and x.dtype == y.dtype == np.int32
    assert x.min() >= 0 and x.max() < v
    for row_x, row_y in zip(x, y):
        keys, values = row_x[0 : 2 * k : 2], row_x[1 : 2 * k : 2]
        assert len(set(keys)) == k and keys.min() >= 1 and keys.max() < v // 2
        assert len(set(values)) == k and values.min() >= v // 2
        assert (row_y[: 2 * k] == IGNORE).all()
        at = np.flatnonzero(row_y != IGNORE)
        assert len(at) == k and ((at - 2 * k) % 2 == 0).all()  # queries at even offsets
        assert sorted(row_x[at]) == sorted(keys)  # every key asked exactly once
        for t in at:  # the label is the value paired with the key asked
            assert row_y[t] == values[list(keys).index(row_x[t])]
    assert task.accuracy(task.lookup_reader(x, y), y) == 1.0


def test_without_random_fillers_the_region_is_zero_but_the_queries():
    b = task.mqar(np.random.default_rng(1), 8, 32, 4, 64, random_non_queries=False)
    region = b.inputs[:, 8:]
    assert ((region == 0) == (b.labels[:, 8:] == IGNORE)).all()


def test_mqar_has_zoologys_law_for_every_part():
    """Our generator and Zoology's twin, 4,000 examples each: the query gaps follow the same
    law (frequency of each gap, and of the first query's gap), keys and values are uniform,
    fillers uniform over the vocabulary. Seeds fixed: a deterministic comparison."""
    n, k, v, m = 40, 3, 64, 4000
    ours = task.mqar(np.random.default_rng(0), m, n, k, v)
    x_z, y_z = zoology_multiquery_ar(v, m, n, seed=0, num_kv_pairs=k)
    s = (n - 2 * k) // 2

    def gap_law(labels):
        at = np.argwhere(labels != IGNORE)[:, 1]
        return np.bincount((at - 2 * k) // 2, minlength=s) / len(at)

    def stderr(p):
        return np.sqrt(p * (1 - p) / (m * k))

    a, z = gap_law(ours.labels), gap_law(y_z)
    assert np.all(np.abs(a - z) <= 5 * np.sqrt(2) * stderr(z) + 1e-3)
    # with K = 1 the law is the power law itself
    one = task.mqar(np.random.default_rng(2), m, n, 1, v)
    p = task.gap_probabilities((n - 2) // 2)
    got = np.bincount((np.argwhere(one.labels != IGNORE)[:, 1] - 2) // 2, minlength=len(p)) / m
    assert np.all(np.abs(got - p) <= 5 * np.sqrt(p * (1 - p) / m) + 1e-3)
    for xs in (ours.inputs, x_z):  # keys uniform over 1 .. V/2 - 1 (mean V/4)
        keys = xs[:, 0 : 2 * k : 2]
        assert abs(keys.mean() - v / 4) < 0.5
    fill = ours.inputs[:, 2 * k :][ours.labels[:, 2 * k :] == IGNORE]
    assert abs(fill.mean() - (v - 1) / 2) < 0.5 and fill.min() == 0 and fill.max() == v - 1


def test_mqar_refuses_what_zoology_refuses(rng):
    with pytest.raises(BadInputError, match="even"):
        task.mqar(rng, 2, 33, 4, 64)
    with pytest.raises(BadInputError, match="N/4"):
        task.mqar(rng, 2, 32, 9, 64)
    with pytest.raises(BadInputError, match="exceed"):
        task.mqar(rng, 2, 64, 4, 64)


def test_mixture_and_queries(rng):
    batch, counts = task.mixture(rng, 6, 32, (2, 4, 8), 100)
    assert list(counts) == [2, 2, 4, 4, 8, 8]
    q = task.queries(batch.labels)
    assert q.row.shape == (28,) and q.mask.all() and list(np.bincount(q.row)) == list(counts)
    for b in range(6):
        at = q.at[q.row == b]
        assert list(at) == list(np.flatnonzero(batch.labels[b] != IGNORE))
        assert (q.answer[q.row == b] == batch.labels[b, at]).all()
    padded = task.queries(batch.labels, 30)
    assert padded.mask.sum() == 28 and not padded.mask[28:].any()
    with pytest.raises(BadInputError, match="fit"):
        task.queries(batch.labels, 20)
    with pytest.raises(BadInputError, match="multiple"):
        task.mixture(rng, 5, 32, (2, 4), 100)


def test_readers_without_recall_stay_near_chance(rng):
    """The twins the experiment's claims rest on: a reader that knows the query positions
    (position_reader) or the tokens without their order (bag_reader) cannot recall."""
    n, k, v = 64, 8, 512
    train = task.mqar(rng, 2000, n, k, v)
    test = task.mqar(rng, 500, n, k, v)
    pos = task.accuracy(task.position_reader(train.labels, test.labels), test.labels)
    bag = task.accuracy(task.bag_reader(test.inputs, test.labels, v), test.labels)
    assert pos < 0.05  # ~2/V
    assert 0.5 / k < bag < 2.0 / k  # ~1/K: it knows the K values, not which is whose
    assert task.accuracy(task.lookup_reader(test.inputs, test.labels), test.labels) == 1.0


# --- the claims, on injected numbers (both sides of each edge) ----------------------------------


ATT, SMALL, MID, BIG = "attention", "mlstm:d_key=4", "mlstm:d_key=16", "mlstm:d_key=64"
DIAG, HYB = "rglru:expand=8", "hybrid:mixer=mlstm:d_key=16"


def entry(family, state, acc):
    """A frontier contender: accuracy [K][seed] from per-K lists of 3 seeds."""
    return {"family": family, "state_bytes": state, "accuracy": acc}


def fake(att=0.99, mid=(0.6, 0.4, 0.2), diag=0.2, hyb=0.9, grow=0.3, lengths=(0.98, 0.97)):
    def seeds(x):
        return [x - 0.01, x, x + 0.01]

    small = [seeds(v - grow) for v in mid]
    return {
        "readers": {"lookup": [1.0, 1.0, 1.0], "position": [0.002] * 3, "bag": [0.25, 0.12, 0.06]},
        "frontier": {
            "seq_len": 64,
            "pair_counts": [4, 8, 16],
            "contenders": {
                ATT: entry("attention", 65536, [seeds(att)] * 3),
                SMALL: entry("mlstm", 1000, small),
                MID: entry("mlstm", 4000, [seeds(v) for v in mid]),
                BIG: entry("mlstm", 16000, [seeds(min(v + grow, 1.0)) for v in mid]),
                DIAG: entry("rglru", 3800, [seeds(diag)] * 3),
                HYB: entry("hybrid", 40000, [seeds(hyb)] * 3),
            },
        },
        "lengths": {
            "seq_lens": [64, 128],
            "pair_counts": [[4, 8, 16], [8, 16, 32]],
            "contenders": {ATT: {"family": "attention", "accuracy": [seeds(x) for x in lengths]}},
        },
    }


def verdicts(results):
    return {c.id: c.verdict for c in claims.table(record.stored(results))}


def test_recall_claims_hold_and_fail_on_both_sides():
    good = verdicts(fake())
    for cid in ("recall/needs_recall", "recall/attention_every_n", "recall/grows_with_state",
                "recall/falls_with_k", "recall/attention_flat_in_k", "recall/matrix_vs_diagonal",
                "recall/hybrid"):  # fmt: skip
        assert good[cid] == HOLDS, cid
    assert verdicts(fake(lengths=(0.98, 0.5)))["recall/attention_every_n"] == FAILS
    assert verdicts(fake(lengths=(0.98, 0.9)))["recall/attention_every_n"] == UNDECIDED  # straddles
    assert verdicts(fake(grow=0.0))["recall/grows_with_state"] == FAILS
    assert verdicts(fake(mid=(0.4, 0.4, 0.4)))["recall/falls_with_k"] == FAILS
    assert verdicts(fake(diag=0.6))["recall/matrix_vs_diagonal"] == FAILS  # the ordering, measured
    assert verdicts(fake(hyb=0.45))["recall/hybrid"] == FAILS
    r = fake()
    r["readers"]["bag"] = [0.95, 0.9, 0.9]  # a reader without recall at the bar: not a recall task
    assert verdicts(r)["recall/needs_recall"] == FAILS
    r = fake()
    del r["frontier"]["contenders"][HYB]
    assert verdicts(r)["recall/hybrid"] == MISSING
    chapter = claims.chapter(record.stored(fake()))[0]
    assert chapter.id == "recall/fixed_state_today" and chapter.verdict == HOLDS
    assert claims.chapter(record.stored(fake(hyb=0.45)))[0].verdict == FAILS
    assert claims.counterpart("hybrid:mixer=mlstm:n_heads=2:d_key=16") == "mlstm:n_heads=2:d_key=16"


def test_lr_grid_chooses_per_family_on_validation():
    valid = {
        "mlstm:d_key=4": [0.1, 0.3, 0.2],
        "mlstm:d_key=16": [0.2, 0.5, 0.6],
        ATT: [0.9, 0.8, 0.1],
    }
    assert choose(valid, [1e-3, 3e-3, 1e-2]) == {"mlstm": 3e-3, "attention": 1e-3}


# --- the quick preset through launch.py (conftest.quick_report) ---------------------------------


def test_quick_recall_measures_every_contender_and_writes_its_plots(quick_report):
    from experiments.configs.recall import get_config

    workdir = quick_report / "recall"
    res = json.loads((workdir / "results.json").read_text())
    cfg = get_config("quick")
    front = res["frontier"]
    assert list(front["contenders"]) == list(cfg.frontier.contenders)
    for name, e in front["contenders"].items():
        assert len(e["accuracy"]) == len(cfg.frontier.pair_counts), name
        assert all(len(k) == len(cfg.seeds) and all(0 <= a <= 1 for a in k) for k in e["accuracy"])
        assert e["state_bytes"] > 0 and e["params"] > 0
    # attention's state is its KV cache: it grows with N; a recurrence's does not
    lens = res["lengths"]["contenders"]["attention"]["state_bytes"]
    assert lens[1] > lens[0]
    assert sorted(res["plots"]) == sorted(p.name for p in workdir.glob("*.png"))
    ids = [r["id"] for r in res["table"]]
    assert len(ids) == len(set(ids)) and "recall/needs_recall" in ids
    assert "recall/fixed_state_today" in record.claims_of("recall", res)
