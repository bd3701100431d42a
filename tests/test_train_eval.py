"""BLEU evaluation plumbing (decode order, eos cut, buckets) and the training time budget."""

import numpy as np
import pytest
from helpers import BIGRAM_V, TINY, batches, bigram_model, small_config

from anatomy import train
from anatomy.data import build_word_vocab


def copy_decode(model, params, src, src_len, max_len):
    """A 'translator' that copies its source, then eos, then junk: tokens [B, max_len].

    The junk after the first eos (word ids, a pad, another eos) must all be cut away."""
    out = np.zeros((src.shape[0], max_len), np.int32)
    for b, n in enumerate(src_len):
        out[b, :n] = src[b, :n]
        out[b, n] = 2
        junk = 4 + np.arange(max_len - n - 1) % 5  # words ...
        junk[:3] = [0, 6, 2][: len(junk)]  # ... a pad, a word and a second eos first
        out[b, n + 1 :] = junk
    return out


def test_corpus_bleu_extremes():
    refs = ["the cat sat on the mat .", "a dog barks at the moon tonight ."]
    assert train.corpus_bleu(refs, refs) == pytest.approx(100.0)
    assert train.corpus_bleu(["x y z"] * 2, refs) < 1.0
    assert np.isnan(train.corpus_bleu([], []))


def test_decode_ids_restores_order_and_cuts_at_eos(rng):
    sources = [rng.integers(4, 50, n).astype(np.int32) for n in (5, 40, 1, 17, 33, 9, 3)]
    out, stats = train.decode_ids(
        None, None, sources, batch_size=3, len_multiple=8, decode_fn=copy_decode
    )
    for s, o in zip(sources, out):
        np.testing.assert_array_equal(s, o)
    assert stats["sentences"] == 7 and stats["output_tokens"] == sum(len(s) + 1 for s in sources)


def test_evaluate_bleu_by_bucket_scores_each_bucket_on_its_own_sentences():
    """Perfect on short sources, wrong on long ones: ~100 in 1-10, 0 in 11-20, between overall."""
    words = "the cat dog sat ran on a mat big small".split()
    r = np.random.default_rng(1)
    short = [" ".join(r.choice(words, n)) + " ." for n in (6, 4, 8, 5)]
    long = [" ".join(r.choice(words, n)) + " ." for n in (14, 11, 17)]
    vocab = build_word_vocab(short + long + ["zebra"])  # 'zebra' is in no reference
    zebra = vocab.encode("zebra")[0]

    def short_only(model, params, src, src_len, max_len):
        out = copy_decode(model, params, src, src_len, max_len)
        for b, n in enumerate(src_len):
            if n > 10:
                out[b, :n] = zebra  # right length, every word wrong
        return out

    by_bucket = {"1-10": [(s, s) for s in short], "11-20": [(s, s) for s in long], "21-30": []}
    ev = train.evaluate_bleu(
        None, None, by_bucket, vocab, vocab, decode_fn=short_only, batch_size=2, max_per_bucket=3
    )
    assert ev["bleu_by_length"] == {
        "1-10": pytest.approx(100.0),
        "11-20": pytest.approx(0.0, abs=1e-6),
    }
    assert ev["count_by_length"] == {"1-10": 3, "11-20": 3, "21-30": 0}
    assert 5.0 < ev["bleu"] < 95.0  # the corpus BLEU pools both buckets
    perfect = train.evaluate_bleu(
        None, None, by_bucket, vocab, vocab, decode_fn=copy_decode, batch_size=2, max_per_bucket=3
    )
    assert perfect["bleu"] == pytest.approx(100.0)
    assert perfect["bleu_by_length"] == {
        "1-10": pytest.approx(100.0),
        "11-20": pytest.approx(100.0),
    }


def test_time_budget_stops_and_checkpoints(tmp_path):
    res = train.train(
        bigram_model(),
        batches,
        small_config(num_steps=10_000, max_train_seconds=1e-9),
        str(tmp_path),
    )
    assert res.summary["stopped_by_time_budget"] and res.summary["steps"] == 1
    assert train.Checkpointer(str(tmp_path / "checkpoints")).steps() == [1]


def test_time_budget_lays_the_schedule_over_the_budget(tmp_path, monkeypatch):
    """A real translator under max_train_seconds with an injected clock: it stops at the first
    step that ends at or past the budget (num_steps is no cap), each step trains at the
    schedule's rate for the time before it, the schedule ends at its end value at the budget,
    and every clock read that can stop the run follows a sync of that step's outputs."""
    from anatomy.seq2seq import build_model
    from anatomy.train import loop

    model = build_model("transformer", TINY["transformer"], BIGRAM_V, BIGRAM_V)
    events, now = [], [0.0]

    def clock():  # 0.25 s per reading
        events.append("clock")
        now[0] += 0.25
        return now[0]

    real_sync, real_set = loop._sync, loop.set_learning_rate
    applied = []
    monkeypatch.setattr(loop, "_sync", lambda m: (events.append("sync"), real_sync(m))[1])
    monkeypatch.setattr(
        loop, "set_learning_rate", lambda s, lr: (applied.append(lr), real_set(s, lr))[1]
    )
    config = small_config(
        num_steps=5,  # the schedule's shape only: warmup 2/5 of the budget
        warmup_steps=2,
        decay="linear",
        end_fraction=0.1,
        max_train_seconds=5.0,
        log_every=1,
        checkpoint_every=100,
    )
    res = train.train(model, batches, config, str(tmp_path), clock=clock)
    s = res.summary
    recs = train.read_metrics(str(tmp_path))
    assert s["stopped_by_time_budget"] and s["steps"] == len(applied) == len(recs)
    assert s["steps"] > config.num_steps  # the budget stops it, not num_steps
    walls = [0.0] + [r["wall_time"] for r in recs]  # training time before each step
    assert walls[-2] < config.max_train_seconds <= walls[-1] == s["train_seconds"]
    for lr, wall in zip(applied, walls):
        assert lr == pytest.approx(train.optim.schedule_at_time(config, wall), rel=1e-6)
    assert applied[0] == 0.0 and max(applied) > 0.9 * config.learning_rate  # warmup, peak
    end = config.learning_rate * config.end_fraction
    assert recs[-1]["learning_rate"] == pytest.approx(end, rel=1e-6)  # at the budget: the end
    syncs = [i for i, e in enumerate(events) if e == "sync"]
    assert len(syncs) == s["steps"] and all(events[i + 1] == "clock" for i in syncs)
