"""Batching, vocabularies, readers and bad input, load_corpus on toy / TSV / mock WMT14."""

import numpy as np
import pytest
import sacrebleu
from helpers import tsv_config

import anatomy.data as data


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    config = data.default_config()
    config.toy.train_size, config.toy.valid_size, config.toy.test_per_bucket = 2000, 100, 10
    workdir = str(tmp_path_factory.mktemp("toy"))
    return data.load_corpus(config, workdir), config, workdir


def test_load_corpus_toy_vocab_saved_and_reused(toy):
    corpus, config, workdir = toy
    assert corpus.report["sizes"] == {"train": 2000, "valid": 100, "test": 70}
    assert {k: len(v) for k, v in corpus.test_by_bucket().items()} == {
        data.bucket_label(lo, hi): 10 for lo, hi in data.LENGTH_BUCKETS
    }
    again = data.load_corpus(config, workdir)
    assert again.src_vocab.tokens == corpus.src_vocab.tokens
    for src, tgt in corpus.splits["test"]:  # closed vocabulary: decode(encode(x)) == x
        assert corpus.tgt_vocab.decode(corpus.tgt_vocab.encode(tgt) + [data.EOS, 7]) == tgt
        assert data.UNK not in corpus.src_vocab.encode(src)
    hyps = [
        data.detokenize(corpus.tgt_vocab.decode(corpus.tgt_vocab.encode(t)))
        for _, t in corpus.splits["test"]
    ]
    refs = [t for _, t in corpus.splits["test"]]
    assert sacrebleu.corpus_bleu(hyps, [refs]).score == pytest.approx(100.0)


def test_batches_padded_masked_and_within_budget(toy):
    corpus, config, _ = toy
    budget = 512
    batcher = data.make_batcher(corpus, token_budget=budget, max_len=128, seed=5)
    encoded = corpus.encode("train")
    shapes = set(batcher.shapes)
    for k in range(0, 3 * batcher.steps_per_epoch, 7):
        b = batcher.batch_at(k)
        bsz, length = b["src"].shape
        assert (bsz, length) in shapes and bsz * length <= budget
        assert all(v.dtype == np.int32 for v in b.values())
        for j in range(bsz):
            n, m = b["src_len"][j], b["tgt_len"][j]
            assert n > 0 and m > 1 and (b["src"][j, n:] == 0).all() and (b["src"][j, :n] > 0).all()
            assert b["tgt_in"][j, 0] == data.BOS and b["tgt_out"][j, m - 1] == data.EOS
            np.testing.assert_array_equal(b["tgt_in"][j, 1:m], b["tgt_out"][j, : m - 1])
            assert (b["tgt_out"][j, m:] == 0).all() and (b["tgt_in"][j, m:] == 0).all()
        # rows are real training pairs
        src0 = b["src"][0, : b["src_len"][0]]
        assert any(np.array_equal(src0, s) for s, _ in encoded)


def test_resumed_pipeline_yields_identical_batches(toy):
    corpus, _, _ = toy
    first = data.make_batcher(corpus, token_budget=512, max_len=128, seed=11)
    k0 = first.steps_per_epoch - 3  # resume just before an epoch boundary
    full = list(first.iterate(0, num_steps=k0 + 6))
    resumed = data.make_batcher(corpus, token_budget=512, max_len=128, seed=11)
    tail = list(resumed.iterate(k0, num_steps=6, prefetch=2))  # grain, threads
    for a, b in zip(full[k0:], tail):
        assert a.keys() == b.keys() and all(np.array_equal(a[x], b[x]) for x in a)
    ds = resumed.dataset(k0)
    assert all(np.array_equal(ds[i]["src"], tail[i]["src"]) for i in range(6))
    other = data.make_batcher(corpus, token_budget=512, max_len=128, seed=12)
    assert any(
        not np.array_equal(other.batch_at(i)["src"], full[i]["src"])
        if other.batch_at(i)["src"].shape == full[i]["src"].shape
        else True
        for i in range(5)
    )
    # an epoch covers every example
    seen = set()
    for b in first.iterate(0, num_steps=first.steps_per_epoch):
        seen |= {tuple(r[:n]) for r, n in zip(b["src"], b["src_len"])}
    fits = {tuple(s) for s, t in corpus.encode("train") if len(s) <= 128 and len(t) < 128}
    assert seen == fits and first.n_filtered == 2000 - len(fits) > 0


def test_eval_batches_cover_each_pair_once_and_count_long_ones(toy):
    corpus, _, _ = toy
    batches = data.eval_batches(corpus, "test", token_budget=512, max_len=64)
    index = np.concatenate([b["index"] for b in batches])
    kept = sorted(index[index >= 0].tolist())
    encoded = corpus.encode("test")
    too_long = [i for i, (s, t) in enumerate(encoded) if len(s) > 64 or len(t) + 1 > 64]
    assert kept == [i for i in range(len(encoded)) if i not in too_long]
    assert corpus.report["filtered"]["test"] == len(too_long) > 0
    for b in batches:
        for j, i in enumerate(b["index"]):
            if i >= 0:
                np.testing.assert_array_equal(b["src"][j, : b["src_len"][j]], encoded[i][0])
    with pytest.raises(ValueError, match="token_budget"):
        data.make_batcher(corpus, token_budget=32, max_len=128)


def _write(path, text, mode="w"):
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def test_tsv_bad_lines_skipped_counted_and_reported(tmp_path):
    lines = ["a b\tx y", "no tab here", "one\ttwo\tthree", " \tz", "c\t ", "grüße\tü ö"]
    pairs, report = data.read_tsv(
        _write(tmp_path / "c.tsv", "\ufeff" + "\r\n".join(lines) + "\r\n")
    )
    assert pairs == [("a b", "x y"), ("grüße", "ü ö")]
    assert report["skipped"] == {"no_tab": 1, "extra_tab": 1, "empty_side": 2}
    assert report["bad_lines"] == [2, 3, 4, 5]
    assert report["first_bad_lines"] == {"no_tab": [2], "extra_tab": [3], "empty_side": [4, 5]}


@pytest.mark.parametrize("case", ["missing", "empty", "utf8", "mismatch", "unknown"])
def test_hard_input_errors_name_the_file(tmp_path, case):
    if case == "missing":
        with pytest.raises(data.CorpusError, match="nope.tsv"):
            data.read_tsv(str(tmp_path / "nope.tsv"))
    elif case == "empty":
        path = _write(tmp_path / "bad.tsv", "no tab\n\n")
        with pytest.raises(data.CorpusError, match="bad.tsv: no usable line"):
            data.read_tsv(path)
    elif case == "utf8":
        path = _write(tmp_path / "latin.tsv", "a\tb\nc\tb\xe4d\n".encode("latin-1"), "wb")
        with pytest.raises(data.CorpusError, match="latin.tsv:2: invalid UTF-8"):
            data.read_tsv(path)
    elif case == "mismatch":
        src, tgt = _write(tmp_path / "s.txt", "a\nb\n"), _write(tmp_path / "t.txt", "x\n")
        with pytest.raises(data.CorpusError, match="t.txt has 1"):
            data.read_text_pair(src, tgt)
    else:
        config = data.default_config()
        config.name = "nonsense"
        with pytest.raises(data.CorpusError, match="nonsense"):
            data.load_corpus(config)
    assert issubclass(data.CorpusError, ValueError)


def test_user_tsv_and_text_pair_corpora_with_sentencepiece(tmp_path):
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    pairs = [(" ".join(rng.choice(words, rng.integers(2, 9))),) * 2 for _ in range(300)]
    tsv = _write(
        tmp_path / "u.tsv", "\n".join(f"{s}\t{t.upper()}" for s, t in pairs) + "\nbroken\n"
    )
    config = tsv_config(tsv, vocab="sentencepiece", vocab_size=60, valid_size=20, test_size=20)
    corpus = data.load_corpus(config, str(tmp_path / "wd"))
    repeats = corpus.report["files"]["train"]["held_out_repeats"]  # copies of held-out pairs
    assert corpus.report["sizes"] == {"train": 260 - repeats, "valid": 20, "test": 20}
    assert corpus.report["files"]["train"]["skipped"] == {"no_tab": 1}
    assert (tmp_path / "wd" / "src_spm.model").exists()
    s, t = corpus.splits["test"][0]
    assert corpus.tgt_vocab.decode(corpus.tgt_vocab.encode(t)) == t
    assert corpus.src_vocab.pad == 0 and corpus.src_vocab.sp.piece_to_id("</s>") == data.EOS
    again = data.load_corpus(config, str(tmp_path / "wd"))  # reuses the saved model
    assert again.src_vocab.encode(s) == corpus.src_vocab.encode(s)
    src = _write(tmp_path / "a.txt", "\n".join(s for s, _ in pairs) + "\n")
    tgt = _write(tmp_path / "b.txt", "\n".join(t for _, t in pairs) + "\n")
    config.update(
        dict(
            name="text_pair",
            train_src=src,
            train_tgt=tgt,
            vocab="word",
            shared_vocab=True,
            vocab_size=0,
        )
    )
    corpus = data.load_corpus(config, str(tmp_path / "wd2"))
    assert corpus.src_vocab is corpus.tgt_vocab and corpus.src_vocab.size == 4 + len(words)
    assert (tmp_path / "wd2" / "shared_vocab.txt").exists()
    batch = data.make_batcher(corpus, config=config).batch_at(0)
    assert batch["src"].shape[0] * batch["src"].shape[1] <= config.token_budget


def test_mock_wmt14_loads_through_the_same_code(tmp_path):
    import tensorflow_datasets as tfds

    config = data.default_config()
    config.update(
        dict(
            name="tfds",
            tfds_name="wmt14_translate/de-en",
            vocab="sentencepiece",
            vocab_size=40,
            max_len=64,
        )
    )
    with tfds.testing.mock_data(num_examples=40):
        corpus = data.load_corpus(config, str(tmp_path))
    assert corpus.report["sizes"] == {"train": 40, "valid": 40, "test": 40}
    assert all(isinstance(s, str) and isinstance(t, str) for s, t in corpus.splits["train"])
    batch = data.make_batcher(corpus, config=config).batch_at(3)
    assert batch["src"].dtype == np.int32 and batch["tgt_out"].max() < corpus.tgt_vocab.size


def test_batch_multiple_rounds_rows_down_within_budget(toy):
    corpus, _, _ = toy
    budget = 512
    plain = data.make_batcher(corpus, token_budget=budget, max_len=128, seed=5)
    rounded = data.make_batcher(corpus, token_budget=budget, max_len=128, seed=5, batch_multiple=3)
    assert len(plain.shapes) == len(rounded.shapes) > 1
    for (b0, length0), (b, length) in zip(plain.shapes, rounded.shapes):
        assert length == length0 and b % 3 == 0
        assert b == (max(3, b0 // 3 * 3))  # floor, never below the multiple
        if b0 >= 3:
            assert b * length <= budget and b > b0 - 3  # budget respected, nothing lost
    assert any(b0 % 3 for b0, _ in plain.shapes)  # the rounding did something
    for k in range(0, rounded.steps_per_epoch, 5):
        batch = rounded.batch_at(k)
        assert batch["src"].shape[0] % 3 == 0 and batch["src"].shape in rounded.shapes
    with pytest.raises(ValueError, match="batch_multiple"):
        data.make_batcher(corpus, token_budget=budget, max_len=128, batch_multiple=0)


def test_detokenize_reattaches_punctuation_for_sacrebleu():
    import sacrebleu

    from anatomy.data import detokenize

    tokenised = "die Katze , die schläft , sieht den Hund ."
    assert detokenize(tokenised) == "die Katze, die schläft, sieht den Hund."
    assert detokenize(tokenised.split() + ["</s>"]) == detokenize(tokenised)
    # sacrebleu's 13a tokeniser splits the plain string back into the same tokens.
    bleu = sacrebleu.corpus_bleu([detokenize(tokenised)], [[detokenize(tokenised)]])
    assert bleu.sys_len == len(tokenised.split()) and abs(bleu.score - 100.0) < 1e-9
