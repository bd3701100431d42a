"""rnn_vs_attn in a workdir it has used before: what it reuses, what it refuses, what it reports.

One tiny model on a user TSV with 24 malformed lines, run in-process: the corpus report
(skipped lines by kind with first line numbers, pairs filtered for length) is in results.json
and report.md; a rerun with the same config resumes and reuses the BLEU cache; another eval
config re-scores (one line naming the field); another train, model or data config stops with
one line naming the field, before anything is trained or overwritten.
"""

import json
import os

import numpy as np
import pytest

from anatomy import train
from anatomy.fingerprint import FingerprintMismatchError
from experiments import rnn_vs_attn
from experiments.configs import rnn_vs_attn as configs

BAD = {"no_tab": "just words here", "extra_tab": "a b\tc\td", "empty_side": "   \tnur rechts"}


@pytest.fixture(scope="module")
def tsv(tmp_path_factory):
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(30)]
    lines = []
    for _ in range(200):
        src = list(rng.choice(words, rng.integers(2, 9)))
        lines.append(" ".join(src) + "\t" + " ".join(w.upper() for w in src))
    lines[5] = " ".join(["w1"] * 120) + "\tW1"  # over max_len: filtered
    for k, line in enumerate(BAD.values()):  # 8 of each kind
        for j in range(8):
            lines.insert(10 + 30 * j + k, line)
    path = tmp_path_factory.mktemp("corpus") / "user.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    first = {
        kind: [i + 1 for i, x in enumerate(lines) if x == line][:5] for kind, line in BAD.items()
    }
    return str(path), first


def _config(path):
    c = configs.get_config("quick")
    c.models = ("rnnenc",)
    c.data.name, c.data.train_path = "tsv", path
    c.data.valid_size, c.data.test_size, c.data.vocab_size = 10, 10, 0
    c.train.num_steps, c.train.checkpoint_every, c.train.log_every = 4, 2, 2
    c.train.eval_every = 0
    c.eval.max_per_bucket = 2
    return c


@pytest.fixture
def bleu_calls(monkeypatch):
    calls = []
    real = train.evaluate_bleu

    def counting(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(train, "evaluate_bleu", counting)
    return calls


def test_workdir_reuse_refusal_and_corpus_report(tsv, tmp_path, bleu_calls, capsys):
    path, first_lines = tsv
    workdir = str(tmp_path)
    rnn_vs_attn.run(_config(path), workdir)
    assert len(bleu_calls) == 1
    with open(os.path.join(workdir, "results.json")) as f:
        report = json.load(f)["setup"]["corpus_report"]
    train_split = report["skipped"]["train"]
    assert train_split["skipped"] == {kind: 8 for kind in BAD}
    assert train_split["first_bad_lines"] == first_lines
    assert sum(report["filtered_for_length"].values()) == 1
    with open(os.path.join(workdir, "report.md")) as f:
        md = f.read()
    assert "24 of 224 lines skipped" in md and "no_tab 8 (first at line " in md
    assert "Pairs over max_len=96" in md

    # the same config (free fields changed): resumes at the end, BLEU from the cache
    same = _config(path)
    same.train.log_every, same.train.checkpoint_every, same.train.keep_checkpoints = 1, 4, 1
    capsys.readouterr()
    rnn_vs_attn.run(same, workdir)
    assert len(bleu_calls) == 1
    # another eval config: scored again, with one line naming the field
    rescore = _config(path)
    rescore.eval.max_per_bucket = 1
    rnn_vs_attn.run(rescore, workdir)
    assert len(bleu_calls) == 2
    assert "eval.max_per_bucket: 2 -> 1" in capsys.readouterr().err

    # another train / model / data config: one line naming the field, nothing trained
    ckpts = sorted(os.listdir(os.path.join(workdir, "rnnenc", "checkpoints")))
    lr, width, data = _config(path), _config(path), _config(path)
    lr.train.learning_rate = 1e-3
    width.model.rnnenc.d_hidden = 48
    data.data.valid_size = 12
    for config, field in (
        (lr, "train.learning_rate: 0.002 -> 0.001"),
        (width, "model.config.d_hidden: 32 -> 48"),
        (data, "valid_size: 10 -> 12"),
    ):
        with pytest.raises(FingerprintMismatchError) as err:
            rnn_vs_attn.run(config, workdir)
        msg = str(err.value)
        assert field in msg and "\n" not in msg and "another --workdir" in msg, msg
        assert msg.count(" -> ") == 1, msg
    assert sorted(os.listdir(os.path.join(workdir, "rnnenc", "checkpoints"))) == ckpts
    assert len(bleu_calls) == 2
