"""BLEU evaluation plumbing (decode order, eos cut, buckets) and the training time budget."""

import numpy as np
import pytest

from anatomy import train as T
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
    assert T.corpus_bleu(refs, refs) == pytest.approx(100.0)
    assert T.corpus_bleu(["x y z"] * 2, refs) < 1.0
    assert np.isnan(T.corpus_bleu([], []))


def test_decode_ids_restores_order_and_cuts_at_eos(rng):
    sources = [rng.integers(4, 50, n).astype(np.int32) for n in (5, 40, 1, 17, 33, 9, 3)]
    out, stats = T.decode_ids(
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
    ev = T.evaluate_bleu(
        None, None, by_bucket, vocab, vocab, decode_fn=short_only, batch_size=2, max_per_bucket=3
    )
    assert ev["bleu_by_length"] == {
        "1-10": pytest.approx(100.0),
        "11-20": pytest.approx(0.0, abs=1e-6),
    }
    assert ev["count_by_length"] == {"1-10": 3, "11-20": 3, "21-30": 0}
    assert 5.0 < ev["bleu"] < 95.0  # the corpus BLEU pools both buckets
    perfect = T.evaluate_bleu(
        None, None, by_bucket, vocab, vocab, decode_fn=copy_decode, batch_size=2, max_per_bucket=3
    )
    assert perfect["bleu"] == pytest.approx(100.0)
    assert perfect["bleu_by_length"] == {
        "1-10": pytest.approx(100.0),
        "11-20": pytest.approx(100.0),
    }


def test_time_budget_stops_and_checkpoints(tmp_path):
    from test_train import batches, bigram_model, small_config

    res = T.train(
        bigram_model(),
        batches,
        small_config(num_steps=10_000, max_train_seconds=1e-9),
        str(tmp_path),
    )
    assert res.summary["stopped_by_time_budget"] and res.summary["steps"] == 1
    assert T.Checkpointer(str(tmp_path / "checkpoints")).steps() == [1]
