"""long_range: the task needs recall (readers without it stay below the bar, against slow
twins), its batches, its two training paths, and every claim on injected per-seed accuracies,
both sides of each edge. (The experiment itself runs in tests/test_walls.py, on the quick
report's run.)"""

import numpy as np
import pytest
from helpers import long_range_results, per_seed

from anatomy import probes
from experiments import long_range as lr
from experiments.configs.long_range import get_config
from experiments.long_range import claims, readers

H, F, N, M = probes.HOLDS, probes.FAILS, probes.UNDECIDED, probes.MISSING
D = probes.DID_NOT_LEARN
BAR = claims.recall_bar(1 / 8)  # 0.5625
KS = [1, 4, 8, 32]


# ----------------------------------------------------------------- the task and its readers


def _unigram_slow(tokens, vocab):
    out = np.zeros_like(tokens)
    for b in range(tokens.shape[0]):
        for t in range(tokens.shape[1]):
            counts = [list(tokens[b, : t + 1]).count(v) for v in range(vocab)]
            out[b, t] = counts.index(max(counts))  # ties: the smallest symbol
    return out


def _position_slow(targets, weights, vocab):
    table = []
    for t in range(targets.shape[1]):
        counts = [0.0] * vocab
        for b in range(targets.shape[0]):
            counts[targets[b, t]] += weights[b, t]
        table.append(counts.index(max(counts)))
    return np.array(table)


def test_readers_equal_their_slow_twins():
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 5, size=(6, 11))
    targets = np.roll(tokens, 3, axis=1)
    weights = (np.arange(11) >= 3)[None].repeat(6, 0).astype(np.float32)
    assert np.array_equal(readers.unigram_reader(tokens, 5), _unigram_slow(tokens, 5))
    assert np.array_equal(
        readers.position_reader(targets, weights, 5), _position_slow(targets, weights, 5)
    )


def test_make_batch_targets_the_token_k_back_where_it_is_scored():
    cfg = get_config("quick")
    tokens, targets, weights = (
        np.asarray(a) for a in lr.make_batch(lr.keys(0, 3)["test"], cfg, 4, 3)
    )
    assert tokens.shape == (4, lr.length(cfg)) and tokens.min() >= 0 and tokens.max() < cfg.vocab
    assert np.array_equal(targets[:, 3:], tokens[:, :-3])
    assert np.array_equal(weights[0], (np.arange(lr.length(cfg)) >= 3).astype(np.float32))


@pytest.mark.parametrize("preset", ["quick", None])
def test_the_task_needs_recall(preset):
    """The twin: on the task's own held-out batches (3 seeds), neither reader without recall
    reaches the recall bar at any k, while a reader that reads x_(t-k) scores 1."""
    cfg = get_config(preset)
    for k in cfg.k_grid:
        for seed in cfg.seeds:
            keys = lr.keys(seed, k)
            train = [np.asarray(a) for a in lr.make_batch(keys["reader"], cfg, cfg.eval_batch, k)]
            test = [np.asarray(a) for a in lr.make_batch(keys["test"], cfg, cfg.eval_batch, k)]
            acc = readers.reader_accuracies(train, test, cfg.vocab)
            assert max(acc.values()) < BAR, (preset, k, seed, acc)
            tokens, targets, weights = test
            oracle = np.roll(tokens, k, axis=1)  # reads the token k back
            assert readers.accuracy(oracle, targets, weights) == 1.0


def test_the_two_training_paths_give_the_same_numbers():
    """A Python loop over one compiled step (STEPWISE) and the steps in a scan: the same
    batches, the same numbers."""
    cfg = get_config("quick")
    cfg.steps = 3
    keys = lr.keys(1, 8)
    args = (keys["init"], keys["data"], keys["test"], 8)
    for name in ("conv",):
        width = lr.pick_width(name, cfg)
        fused = lr.trainer(name, width, cfg, stepwise=False)(*args)
        looped = lr.trainer(name, width, cfg, stepwise=True)(*args)
        assert float(fused[0]) == float(looped[0]), name
        np.testing.assert_allclose(float(fused[1]), float(looped[1]), rtol=1e-6)


# ------------------------------------------------------------------- claims, injected


def _by_id(res):
    return {c.id: c for c in claims.table(res) + claims.chapter(res)}


def _verdict(res, cid):
    return _by_id(res)[f"long_range/{cid}"].verdict


def _models(**override):
    """Accuracies at KS = 1, 4, 8, 32: the recurrent models recall near, the Transformer far,
    the conv stack inside its field (F = 5); `override` replaces a model's row."""
    acc = {
        "rnn": [1.0, 0.95, 0.3, 0.13],
        "lstm": [1.0, 1.0, 0.8, 0.15],
        "mingru": [1.0, 1.0, 0.8, 0.14],
        "mamba": [1.0, 1.0, 0.9, 0.2],
        "transformer": [1.0, 1.0, 1.0, 0.99],
        "conv": [1.0, 1.0, 0.125, 0.126],
    }
    acc.update(override)
    return long_range_results(
        acc, KS, readers={"position": [0.125] * 4, "unigram": [0.25, 0.2, 0.18, 0.15]}
    )


def test_the_default_injection_holds_every_judged_claim():
    verdicts = {c.id: c.verdict for c in claims.table(_models()) + claims.chapter(_models())}
    judged = {k: v for k, v in verdicts.items() if "/accuracy/" not in k}
    assert set(judged.values()) == {H}, judged


@pytest.mark.parametrize(
    "reader, want",
    [
        ([0.25, 0.2, 0.18, 0.15], H),
        ([0.7, 0.2, 0.18, 0.15], F),  # a reader without recall at k = 1 clears the bar
        ([per_seed(BAR, 0.05), 0.2, 0.18, 0.15], N),  # straddles it
    ],
)
def test_task_needs_recall_on_both_sides(reader, want):
    res = _models()
    res["readers"]["unigram"] = [r if isinstance(r, list) else per_seed(r) for r in reader]
    assert _verdict(res, "task_needs_recall") == want


@pytest.mark.parametrize(
    "transformer, want",
    [
        ([1.0, 1.0, 1.0, 0.99], H),
        ([1.0, 1.0, 1.0, 0.3], F),  # below the bar at the farthest k
        ([1.0, 1.0, 1.0, per_seed(BAR, 0.1)], N),  # straddles the bar
        ([0.3, 0.2, 0.2, 0.2], D),  # never learned the task: nothing to show
    ],
)
def test_attention_recall_needs_the_bar_and_a_learned_transformer(transformer, want):
    res = _models(transformer=transformer)
    assert _verdict(res, "attention_recall") == want
    recall = _by_id(res)["long_range/recall"]
    assert recall.verdict == want
    assert ("recall agrees" in recall.detail) == (want == H)


def test_attention_recall_must_be_level_with_every_other_model():
    # another model recalls at k = 32 better than the Transformer (by more than the margin)
    res = _models(transformer=[1.0, 1.0, 1.0, 0.9], mamba=[1.0, 1.0, 1.0, 0.99])
    assert _verdict(res, "attention_recall") == F
    res = _models(transformer=[1.0, 1.0, 1.0, 0.98], mamba=[1.0, 1.0, 1.0, 0.99])
    assert _verdict(res, "attention_recall") == H  # within the margin: level


def test_reach_counts_grid_steps_to_the_farthest_k_at_the_bar():
    assert claims.reach([1.0, 0.9, 0.3, 0.1], BAR) == 2
    assert claims.reach([0.2, 0.9, 0.3, 0.6], BAR) == 4  # the farthest, even past a gap
    assert claims.reach([0.2, 0.2, 0.2, 0.2], BAR) == 0
    assert claims.reach([1.0, None, 0.2, 0.2], BAR) is None


@pytest.mark.parametrize(
    "lstm, rnn, want",
    [
        ([1.0, 1.0, 0.8, 0.15], [1.0, 0.95, 0.3, 0.13], H),  # reach 3 against 2
        ([1.0, 1.0, 0.3, 0.15], [1.0, 0.95, 0.3, 0.13], F),  # level: reach 2 and 2
        ([1.0, 1.0, [0.8, 0.8, 0.3], 0.15], [1.0, 0.95, 0.3, 0.13], N),  # one seed level
        ([0.3, 0.2, 0.2, 0.2], [1.0, 0.95, 0.3, 0.13], D),  # the LSTM never learned
    ],
)
def test_gated_reach_on_both_sides(lstm, rnn, want):
    assert _verdict(_models(lstm=lstm, rnn=rnn), "gated_reach") == want


@pytest.mark.parametrize(
    "mingru, want",
    [
        ([1.0, 1.0, 0.8, 0.14], H),  # as far as the LSTM (k = 8)
        ([1.0, 1.0, 1.0, 0.9], H),  # further
        ([1.0, 0.9, 0.3, 0.14], F),  # one step short
        ([1.0, 1.0, [0.8, 0.8, 0.3], 0.14], N),  # short on one seed only
    ],
)
def test_linear_recall_on_both_sides(mingru, want):
    res = _models(mingru=mingru)
    assert _verdict(res, "linear_recall/mingru") == want
    assert _verdict(res, "linear_recall") == want  # the row: the weakest of minGRU and Mamba


def test_linear_recall_is_not_shown_without_an_lstm_that_learned_and_missing_without_models():
    res = _models(lstm=[0.3, 0.2, 0.2, 0.2])
    assert _verdict(res, "linear_recall") == D
    del res["models"]["mingru"], res["models"]["mamba"]
    assert _verdict(res, "linear_recall") == M


@pytest.mark.parametrize(
    "conv, want",
    [
        ([1.0, 1.0, 0.125, 0.126], H),
        ([1.0, 1.0, 0.4, 0.126], F),  # recalls beyond its field: not a convolution's
        ([1.0, 1.0, per_seed(0.175, 0.03), 0.126], N),  # straddles the at-chance edge
        ([1.0, 0.3, 0.125, 0.126], D),  # did not learn inside its field
    ],
)
def test_conv_field_on_both_sides(conv, want):
    assert _verdict(_models(conv=conv), "conv_field") == want


def test_rules_say_each_range():
    text = "\n".join(claims.rules())
    assert "recall bar" in text and "reach" in text.lower() and "caveat" not in text
