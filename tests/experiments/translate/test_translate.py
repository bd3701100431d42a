"""translate on a quick rnn_vs_attn workdir: one output line per input line, and warnings on
stderr for words outside the vocabulary and for sources longer than any it was trained on."""

import json
import pathlib
import re
import shutil

import pytest
from conftest import ROOT, launch

from anatomy.errors import BadInputError

MODEL = "transformer-30"  # trained on sources of at most 30 tokens: the length bound to warn on
KNOWN = "the gost tourks ."  # from toy_wmt's test split (lexicon_scale 0.1)
LONG = " ".join(["the gost tourks"] * 100)  # 300 known words, 10x the training bound


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """One quick-preset run, one model, shared by the module: a few steps and one test sentence
    per bucket (translate needs a checkpoint and a vocabulary, not a good model)."""
    wd = str(tmp_path_factory.mktemp("translate"))
    launch(
        "--experiment=rnn_vs_attn",
        f"--config={ROOT}/experiments/configs/rnn_vs_attn.py:quick",
        f"--config.models=('{MODEL}',)",
        "--config.train.num_steps=4",
        "--config.train.warmup_steps=1",
        "--config.train.eval_every=0",
        "--config.train.checkpoint_every=4",
        "--config.eval.max_per_bucket=1",
        f"--workdir={wd}",
        timeout=300,
    )
    return wd


def _config(**fields):
    from experiments.configs.translate import get_config

    c = get_config()
    c.model = MODEL
    c.update(fields)
    return c


def test_stdin_keeps_the_file_aligned_and_says_what_it_did_not_understand(workdir):
    lines = [KNOWN, "", LONG, "blorf zinga quux", "the cat sleeps ."]
    out = launch(
        "--experiment=translate",
        f"--workdir={workdir}",
        f"--config.model={MODEL}",
        stdin="\n".join(lines) + "\n",
        timeout=180,
    )
    got = out.stdout.split("\n")
    assert got[-1] == "" and len(got[:-1]) == len(lines), out.stdout  # one line per input line
    assert got[1] == ""  # the empty input line
    err = out.stderr
    assert (
        "2 of 5 lines have words not in the source vocabulary (243 entries; each reads as <unk>): "
        "'blorf', 'zinga', 'quux', 'cat', 'sleeps'; line 4: no known word at all" in err
    ), err
    assert (
        "1 of 5 lines longer than any source transformer-30 was trained on (at most 30 tokens, "
        "the -30 in 'transformer-30'; the longest here has 300): line 3" in err
    ), err


def test_sentences_flag_keeps_empty_entries_and_known_words_warn_nothing(workdir, capsys):
    from experiments import translate

    res = translate.run(_config(sentences=f"{KNOWN}||no droubrirk recks ."), workdir)
    assert res["sources"] == [KNOWN, "", "no droubrirk recks ."]
    assert len(res["translations"]) == 3 and res["translations"][1] == ""
    assert capsys.readouterr().out.split("\n")[:-1] == res["translations"]
    w = res["warnings"]
    assert w["unknown_words"] == [] and w["too_long"] == [] and w["trained_src_len"] == 30
    assert "warning" not in capsys.readouterr().err


def test_unknown_model_is_a_clear_error(workdir):
    """The advice is the workdir's own command (launch.py saved it) for the missing model."""
    from experiments import translate

    saved = json.loads((pathlib.Path(workdir) / "command.json").read_text())
    assert saved["experiment"] == "rnn_vs_attn" and "--config.train.num_steps=4" in saved["command"]
    with pytest.raises(
        BadInputError, match=r"No trained model 'luong'.*transformer-30.*first"
    ) as e:
        translate.run(_config(model="luong", sentences=KNOWN), workdir)
    assert (  # its own config file by preset; every override but the models kept
        "`python launch.py --experiment=rnn_vs_attn --preset=quick --config.train.num_steps=4 "
        "--config.train.warmup_steps=1 --config.train.eval_every=0 "
        "--config.train.checkpoint_every=4 --config.eval.max_per_bucket=1 "
        f"--config.models=\"('luong',)\" --workdir={workdir}`" in str(e.value)
    ), str(e.value)


def test_the_advice_is_the_workdirs_own_preset(tmp_path):
    """A real-text workdir is told to train with its own preset: from its command.json, else
    from the preset its results.json recorded; a workdir with neither, the default command."""
    from experiments.translate import train_command

    wd = tmp_path / "gettext"
    wd.mkdir()
    models = "--config.models=\"('rnnsearch',)\""
    assert train_command(str(wd), "rnnsearch") == (
        f"python launch.py --experiment=rnn_vs_attn {models} --workdir={wd}"
    )
    prov = {"setup": {"provenance": {"preset": "gettext_enfr"}}}
    (wd / "results.json").write_text(json.dumps(prov))
    assert train_command(str(wd), "rnnsearch") == (
        f"python launch.py --experiment=rnn_vs_attn --preset=gettext_enfr {models} --workdir={wd}"
    )
    saved = {
        "experiment": "rnn_vs_attn",
        "preset": "gettext_enfr_seeds",
        "config": "",
        "overrides": ["--config.models=('rnnenc',)", "--config.data.gettext.lang=de"],
    }
    (wd / "command.json").write_text(json.dumps(saved))
    assert train_command(str(wd), "rnnsearch") == (
        "python launch.py --experiment=rnn_vs_attn --preset=gettext_enfr_seeds "
        f"--config.data.gettext.lang=de {models} --workdir={wd}"
    )


def test_no_workdir_is_one_line_and_makes_none(tmp_path, monkeypatch):
    """Without a trained model translate says what to run, and leaves no folder behind: by
    default it reads where the Quick start trains."""
    from experiments import translate

    gone = tmp_path / "nope"
    out = launch(
        "--experiment=translate", f"--workdir={gone}", f"--config.sentences={KNOWN}", check=False
    )
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert (
        f"No trained model: {gone} does not exist; train first: `python launch.py "
        f"--experiment=rnn_vs_attn --workdir={gone}`" in out.stderr
    ), out.stderr
    assert "keeps what was saved" not in out.stderr and not gone.exists()
    monkeypatch.setattr(translate, "DEFAULT_WORKDIR", str(gone))
    with pytest.raises(BadInputError, match="Quick start trains into") as e:
        translate.load_trained(str(gone), "transformer")
    assert "train first: `python launch.py --experiment=rnn_vs_attn` (" in str(e.value)


def test_trained_length_from_the_checkpoint_else_the_vocab_fingerprint(workdir, tmp_path):
    from experiments.translate import trained_src_len

    assert trained_src_len(workdir, MODEL) == (30, "the -30 in 'transformer-30'")
    # no checkpoint: the data config recorded with the vocabulary (toy_wmt's generator bound)
    shutil.copy(f"{workdir}/vocab_fingerprint.json", tmp_path / "vocab_fingerprint.json")
    assert trained_src_len(str(tmp_path), MODEL) == (70, "data.toy.max_src_len=70")
    (tmp_path / "vocab_fingerprint.json").write_text(json.dumps({"name": "tsv"}))
    assert trained_src_len(str(tmp_path), MODEL) == (None, "")


def test_a_source_too_long_for_learned_positions_is_left_empty(capsys):
    import numpy as np

    from anatomy.data import Vocab
    from experiments.translate import check_sources

    vocab = Vocab(["a", "."])
    lines = ["a " * 63 + ".", "a " * 64 + ".", ""]  # 64 and 65 tokens: padded to 64 and 96
    ids = [np.asarray(vocab.encode(s), np.int32) for s in lines]
    report = check_sources(
        lines, ids, vocab, name="convs2s", trained=(None, ""), max_positions=80, extra=16
    )
    assert report["untranslatable"] == [1] and report["too_long"] == []
    assert (
        "1 of 3 lines too long for convs2s to take at all (max_positions=80 with extra_len=16 "
        "takes sources of at most 64 tokens): line 2 left empty" in capsys.readouterr().err
    )


def test_the_examples_in_the_config_and_the_docs_are_in_the_vocabulary(workdir):
    """The docs' example sentences (the config's docstring, docs/usage.md) are toy_wmt's
    language, so a reader sees no <unk> warning."""
    from anatomy.data import load_vocab
    from experiments.configs import translate as cfg

    vocab = load_vocab(f"{workdir}/src_vocab.txt")
    readme = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    examples = []
    for text in (cfg.__doc__, readme):
        flags = re.findall(r"--config\.sentences='([^']*)'", text)
        piped = re.findall(r"printf '([^']*)'", text)
        examples += [s for f in flags for s in f.split("|")]
        examples += [s for p in piped for s in p.split("\\n")]
    assert len([s for s in examples if s]) >= 5, examples
    for s in filter(None, examples):
        assert all(w in vocab.index for w in s.split()), f"{s!r} has words outside the vocabulary"
    assert "the cat sleeps" not in cfg.__doc__ + readme
