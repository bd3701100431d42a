"""User corpora in a workdir: the vocabulary is reused only for the data config that built it,
held-out pairs never repeat a training line, and what was skipped is reported by kind."""

import os

import numpy as np
import pytest
from helpers import tsv_config

import anatomy.data as data
from anatomy.fingerprint import FingerprintMismatchError


def _toy(scale, **kw):
    config = data.default_config()
    config.toy.train_size, config.toy.valid_size, config.toy.test_per_bucket = 300, 20, 3
    config.toy.lexicon_scale = scale
    config.update(kw)
    return config


def test_vocab_is_reused_only_for_the_data_config_that_built_it(tmp_path):
    workdir = str(tmp_path)
    small = data.load_corpus(_toy(0.1), workdir)
    vocab_file = os.path.join(workdir, "src_vocab.txt")
    before = (os.path.getmtime(vocab_file), small.src_vocab.tokens)
    # the same data config, or one that changes only batching fields: reused as saved
    again = data.load_corpus(_toy(0.1, token_budget=2048, max_len=120), workdir)
    assert (os.path.getmtime(vocab_file), again.src_vocab.tokens) == before
    # the full lexicon in the 0.1-scale workdir: one line naming the field, nothing rewritten
    with pytest.raises(FingerprintMismatchError) as err:
        data.load_corpus(_toy(1.0), workdir)
    msg = str(err.value)
    assert "toy.lexicon_scale: 0.1 -> 1.0" in msg and msg.count(" -> ") == 1, msg
    assert "\n" not in msg and "another --workdir" in msg
    assert (os.path.getmtime(vocab_file), data.load_vocab(vocab_file).tokens) == before
    with pytest.raises(FingerprintMismatchError, match=r"seed: 0 -> 1.*toy.train_size: 300 -> 400"):
        data.load_corpus(_toy(0.1, seed=1, toy={"train_size": 400}), workdir)
    # vocab files from before fingerprints existed say nothing about their config: refused
    os.remove(os.path.join(workdir, "vocab_fingerprint.json"))
    with pytest.raises(FingerprintMismatchError, match="no fingerprint"):
        data.load_corpus(_toy(0.1), workdir)


def _tsv(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _words(rng, n):
    return " ".join(f"w{i}" for i in rng.integers(0, 50, n))


def _pair(rng):
    """A TSV line: a source and a target of 2 to 7 random words."""
    return f"{_words(rng, rng.integers(2, 8))}\t{_words(rng, rng.integers(2, 8))}"


def test_edited_tsv_under_the_same_name_is_another_corpus(tmp_path):
    rng = np.random.default_rng(0)
    lines = [f"{_words(rng, 4)}\t{_words(rng, 5)}" for _ in range(60)]
    config = tsv_config(_tsv(tmp_path / "c.tsv", lines), valid_size=5, test_size=5, vocab_size=0)
    data.load_corpus(config, str(tmp_path / "wd"))
    data.load_corpus(config, str(tmp_path / "wd"))  # unchanged: reused
    _tsv(tmp_path / "c.tsv", lines[:-1] + ["new words\there"])
    with pytest.raises(FingerprintMismatchError, match=r"files\..*c\.tsv: "):
        data.load_corpus(config, str(tmp_path / "wd"))


def test_held_out_pairs_never_repeat_a_training_line(tmp_path):
    rng = np.random.default_rng(1)
    distinct = [_pair(rng) for _ in range(200)]
    lines = distinct + [distinct[i] for i in rng.integers(0, 200, 150)]  # 150 repeats
    lines = [lines[i] for i in rng.permutation(len(lines))]
    path = _tsv(tmp_path / "rep.tsv", lines)
    config = tsv_config(path, valid_size=15, test_size=15, vocab_size=0, seed=4)
    corpus = data.load_corpus(config, str(tmp_path / "wd"))
    train, valid, test = (corpus.splits[k] for k in ("train", "valid", "test"))
    assert len(valid) == len(test) == 15
    assert not set(train) & set(valid) and not set(train) & set(test)
    assert not set(valid) & set(test) and len(set(valid)) == len(set(test)) == 15
    pairs = [tuple(line.split("\t")) for line in lines]
    held = set(valid) | set(test)
    repeats = sum(p in held for p in pairs) - len(held)
    assert corpus.report["files"]["train"]["held_out_repeats"] == repeats > 0
    assert len(train) == len(pairs) - len(held) - repeats  # every other line stays in train


def test_corpus_report_names_skipped_lines_by_kind_and_filtered_pairs(tmp_path):
    rng = np.random.default_rng(2)
    lines = [_pair(rng) for _ in range(100)]
    lines[3], lines[10], lines[11] = "no tab at all", "a\tb\tc", "  \tonly target"
    lines[40] = f"{_words(rng, 30)}\t{_words(rng, 3)}"  # over max_len=20
    path = _tsv(tmp_path / "bad.tsv", lines)
    config = tsv_config(path, valid_size=5, test_size=5, vocab_size=0, max_len=20)
    report = data.load_corpus(config, str(tmp_path / "wd")).report
    train = report["files"]["train"]
    assert train["skipped"] == {"no_tab": 1, "extra_tab": 1, "empty_side": 1}
    assert train["first_bad_lines"] == {"no_tab": [4], "extra_tab": [11], "empty_side": [12]}
    assert sum(report["filtered"].values()) == 1 and set(report["filtered"]) == {
        "train",
        "valid",
        "test",
    }
    summary = data.corpus_report(data.load_corpus(config, str(tmp_path / "wd")))
    assert summary["skipped"]["train"]["first_bad_lines"] == train["first_bad_lines"]
    assert summary["filtered_for_length"] == report["filtered"] and summary["max_len"] == 20
    text = data.describe_corpus_report(summary)
    assert "train `" in text and "3 of 100 lines skipped" in text, text
    assert "no_tab 1 (first at line 4)" in text and "extra_tab 1 (first at line 11)" in text
