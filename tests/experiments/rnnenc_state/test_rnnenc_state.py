"""rnnenc_state: its verdicts on injected numbers, and the quick preset's results."""

import json

from anatomy.probes.claims import DID_NOT_LEARN, FAILS, HOLDS
from experiments.lab import record
from experiments.rnnenc_state import claims

BUCKETS = ["1-10", "61+"]


def fake(short=90.0, long=50.0, enc_long=15.0, search_long=98.0):
    def row(s, lo, seeds=3):
        return {"bleu_by_length": {"1-10": [s] * seeds, "61+": [lo - 1, lo, lo + 1][:seeds]},
                "bleu": [s] * seeds, "n_seeds": seeds}  # fmt: skip

    return {
        "buckets": BUCKETS,
        "baselines": {"rnnenc": row(90.0, enc_long, 1), "rnnsearch": row(99.0, search_long, 1)},
        "variants": {"mlstm_64": row(short, long)},
    }


def verdicts(results):
    return {c.id: c.verdict for c in claims.table(record.stored(results))}


def test_rnnenc_state_claims_hold_and_fail_on_both_sides():
    good = verdicts(fake())
    assert good["rnnenc_state/learned/mlstm_64"] == HOLDS
    assert good["rnnenc_state/moves/mlstm_64"] == HOLDS
    assert good["rnnenc_state/behind/mlstm_64"] == HOLDS
    assert verdicts(fake(long=18.0))["rnnenc_state/moves/mlstm_64"] == FAILS
    assert verdicts(fake(long=95.0))["rnnenc_state/behind/mlstm_64"] == FAILS
    chapter = claims.chapter(record.stored(fake()))[0]
    assert chapter.id == "rnnenc_state/bigger_state" and chapter.verdict == HOLDS
    # a variant that never learned short sentences moves nothing: not shown
    assert claims.chapter(record.stored(fake(short=10.0)))[0].verdict == DID_NOT_LEARN


def test_quick_rnnenc_state_trains_through_rnn_vs_attn(quick_report):
    workdir = quick_report / "rnnenc_state"
    res = json.loads((workdir / "results.json").read_text())
    (label,) = res["variants"]
    v = res["variants"][label]
    assert set(v["bleu_by_length"]) == set(res["buckets"]) and v["state_bytes"] > 0
    assert v["memory_bytes"] == v["state_bytes"]  # all the decoder gets is the state
    assert (
        workdir / label / "results.json"
    ).is_file()  # the translation run's own (experiments/tasks/translation)
    assert "rnnenc_state/bigger_state" in record.claims_of("rnnenc_state", res)


def test_default_reads_its_baselines_from_the_committed_rnn_vs_attn_result():
    """The default's baselines (no training: the committed result's BLEU, and each model's
    memory counted from its config); the quick preset reads none, so this path is only here."""
    from experiments import rnnenc_state
    from experiments.configs.rnnenc_state import get_config, rnn_vs_attn_config

    cfg = get_config()
    out, command = rnnenc_state.baselines(cfg, rnn_vs_attn_config(cfg, list(cfg.variants)[0]))
    assert set(out) == set(cfg.baselines) and command.startswith("python launch.py")
    assert all(b["n_seeds"] == len(b["bleu"]) >= 1 for b in out.values())
    # RNNenc's decoder reads one vector; RNNsearch's reads every source position
    assert 0 < out["rnnenc"]["memory_bytes"] < out["rnnsearch"]["memory_bytes"]


def test_the_baseline_is_the_committed_result_rnn_vs_attn_verdicts_read():
    """The config names its baseline (it reads no result when built): the committed result
    rnn_vs_attn's verdicts read, the one the committed rnnenc_state run read too."""
    from experiments.configs import rnnenc_state as cfg
    from experiments.lab import committed

    assert cfg.BASELINE == committed.VERDICTS_FROM["rnn_vs_attn"]
    assert committed.exists(cfg.BASELINE)
    assert cfg.get_config().baseline_result == cfg.BASELINE
    ran = committed.load("rnnenc_state/default")["result"]["config"]
    assert ran["baseline_result"] == cfg.BASELINE


def test_a_field_added_after_the_baseline_is_no_difference():
    from experiments.rnnenc_state import differs

    base = {"corpus": "toy_wmt", "train": {"steps": 2000}}
    assert not differs(base, {**base, "gettext": {"lang": "fr"}})  # a new, inert field
    assert differs(base, {**base, "corpus": "gettext"})
    assert differs(base, {"corpus": "toy_wmt", "train": {"steps": 1000}})
    assert differs(base, {"corpus": "toy_wmt"})  # a field the baseline had is gone
