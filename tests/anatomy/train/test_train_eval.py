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
    assert ev["chrf_by_length"]["1-10"] == pytest.approx(100.0)
    assert ev["chrf_by_length"]["11-20"] < 5.0 and 5.0 < ev["chrf"] < 95.0
    perfect = train.evaluate_bleu(
        None, None, by_bucket, vocab, vocab, decode_fn=copy_decode, batch_size=2, max_per_bucket=3
    )
    assert perfect["bleu"] == pytest.approx(100.0)
    assert perfect["bleu_by_length"] == {
        "1-10": pytest.approx(100.0),
        "11-20": pytest.approx(100.0),
    }


def test_chrf_credits_a_right_stem_that_bleu_does_not():
    refs = ["les fichiers sont ouverts dans le répertoire courant"]
    assert train.corpus_chrf(refs, refs) == pytest.approx(100.0)
    assert np.isnan(train.corpus_chrf([], []))
    hyp = ["le fichier est ouvert dans les répertoires courants"]  # every ending wrong
    assert train.corpus_bleu(hyp, refs) < 15.0 < 40.0 < train.corpus_chrf(hyp, refs)


def test_sentencepiece_text_is_scored_as_raw_text(tmp_path):
    """French typography ('fichier : %s', « »): the reference is scored as written and a
    perfect sentencepiece output decodes to exactly it (no word-level detokenising)."""
    from anatomy.data import train_sentencepiece

    refs = ["Impossible d'ouvrir le fichier : %s", "« %s » n'existe pas !", "Quitter ?"] * 5
    sp = train_sentencepiece(refs, 40, str(tmp_path / "sp"))
    for r in refs[:3]:
        assert sp.plain(r) == r and sp.text(sp.encode(r) + [2, 7]) == r
    words = build_word_vocab(["a , b ."])
    assert words.text(words.encode("a , b .")) == words.plain("a , b .") == "a, b."
    ev = train.evaluate_bleu(
        None, None, {"1-10": [(r, r) for r in refs]}, sp, sp, decode_fn=copy_decode
    )
    assert ev["bleu"] == pytest.approx(100.0) and ev["examples"][0][1:] == (refs[0], refs[0])


def test_decode_ids_passes_the_length_penalty_to_beam_search(rng, monkeypatch):
    from anatomy import decode

    seen = []

    def beam(model, params, src, src_len, *, beam_size, max_len, alpha=0.6):
        seen.append((beam_size, alpha))
        return np.asarray(src)[:, :max_len], None

    monkeypatch.setattr(decode, "beam_search", beam)
    sources = [rng.integers(4, 9, n).astype(np.int32) for n in (3, 6)]
    for alpha in (0.0, 3.0):
        train.decode_ids(None, None, sources, beam_size=3, length_penalty=alpha)
    train.decode_ids(None, None, sources, beam_size=2)
    assert seen == [(3, 0.0), (3, 3.0), (2, 0.6)]


def test_select_decoding_keeps_the_best_valid_bleu_first_on_a_tie(monkeypatch):
    from anatomy.train import evaluate

    scores = {(1, 0.0): 20.0, (4, 0.6): 25.0, (4, 1.0): 25.0, (8, 1.0): 24.0}
    seen = []

    def fake(model, params, by_bucket, sv, tv, *, beam_size, length_penalty, **kw):
        seen.append((beam_size, length_penalty, kw["max_per_bucket"], list(by_bucket)))
        return {"bleu": scores[(beam_size, length_penalty)], "chrf": 50.0}

    monkeypatch.setattr(evaluate, "evaluate_bleu", fake)
    got = train.select_decoding(
        None, None, {"1-10": []}, None, None, list(scores), max_per_bucket=7
    )
    assert (got["beam_size"], got["length_penalty"], got["valid_bleu"]) == (4, 0.6, 25.0)
    assert got["grid"] == [[b, a, s, 50.0] for (b, a), s in scores.items()]
    assert seen == [(b, a, 7, ["1-10"]) for b, a in scores]
    with pytest.raises(ValueError, match="empty grid"):
        train.select_decoding(None, None, {}, None, None, [])


def test_time_budget_stops_and_checkpoints(tmp_path):
    res = train.train(
        bigram_model(),
        batches,
        small_config(num_steps=10_000, max_train_seconds=1e-9),
        str(tmp_path),
    )
    assert res.summary["stopped_by_time_budget"] and res.summary["steps"] == 1
    assert train.Checkpointer(str(tmp_path / "checkpoints")).steps() == [1]


@pytest.mark.slow
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
