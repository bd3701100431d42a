"""rnn_vs_attn's paper-scale presets: wmt14_enfr (Bahdanau et al. 2015) and wmt14_ende_base
(Vaswani et al. 2017's Transformer-base).

Their configs carry the papers' numbers; each runs end to end at tiny size through launch.py
(sizes, vocabularies and steps overridden on the command line) on tfds mock data:
tfds.testing.mock_data makes random examples of wmt14_translate's features, and the run reads
them through the real path (load_corpus with name='tfds', readers.read_tfds, tfds.data_source),
trains, decodes, writes results.json and prints the cost estimate before training. One tiny
run per preset, both started at once (two processes) and shared by the tests.
"""

import json
import math

import jax
import numpy as np
import optax
import pytest
from conftest import ROOT
from helpers import MOCK_LAUNCH, launch_together

from anatomy.seq2seq import build_model, count_params
from anatomy.train import config_schedule, make_optimizer
from experiments.configs.rnn_vs_attn import get_config
from experiments.tasks.translation import cost, training

STEPS = 3
TINY_DATA = (
    "--config.data.vocab_size=64",
    "--config.data.max_len=32",
    "--config.data.bucket_boundaries=(32,)",
    "--config.data.token_budget=128",
    f"--config.train.num_steps={STEPS}",
    "--config.train.log_every=1",
    "--config.train.eval_every=0",
    f"--config.train.checkpoint_every={STEPS}",
    "--config.eval.len_multiple=32",
    "--config.eval.extra_len=4",
)
# enfr trains RNNsearch-50 alone (CI time): the preset's RNNencdec-50 shares its data path and
# its cell; its sizes are checked in test_enfr_preset_is_bahdanau_et_al
MODELS = {"wmt14_enfr": ("rnnsearch-50",), "wmt14_ende_base": ("transformer",)}
TINY = {
    "wmt14_enfr": (
        "--config.models=('rnnsearch-50',)",
        *(f"--config.model.rnnsearch.{f}=8" for f in ("d_emb", "d_enc", "d_dec", "d_attn")),
        "--config.model.rnnsearch.d_readout=4",
    ),
    "wmt14_ende_base": (
        "--config.model.transformer.d_model=16",
        "--config.model.transformer.n_heads=2",
        "--config.model.transformer.d_ff=32",
        "--config.model.transformer.n_encoder_layers=1",
        "--config.model.transformer.n_decoder_layers=1",
        "--config.train.warmup_steps=2",
    ),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{preset: (workdir, returncode, stdout, stderr)} of both tiny runs, started together."""
    return launch_together(
        tmp_path_factory,
        {
            preset: [
                "-c",
                MOCK_LAUNCH,
                "16",
                "--experiment=rnn_vs_attn",
                f"--config={ROOT}/experiments/configs/rnn_vs_attn.py:{preset}",
                *TINY_DATA,
                *extra,
            ]
            for preset, extra in TINY.items()
        },
        ROOT,
    )


def test_enfr_preset_is_bahdanau_et_al():
    c = get_config("wmt14_enfr")
    assert c.models == ("rnnenc-50", "rnnsearch-50")
    d = c.data
    assert (d.name, d.tfds_name, d.src_key, d.tgt_key) == (
        "tfds",
        "wmt14_translate/fr-en",
        "en",
        "fr",
    )
    assert (d.vocab, d.vocab_size, d.shared_vocab) == ("word", 30000, False)
    assert d.token_budget == 80 * 50 and d.max_len > 50  # tested on every length
    s = c.model.rnnsearch
    assert (s.cell, s.d_emb, s.d_enc, s.d_dec, s.d_attn, s.d_readout) == (
        "gru_paper",
        620,
        1000,
        1000,
        1000,
        500,
    )
    assert (s.readout, s.readout_state, s.dropout_rate) == ("maxout", "previous", 0.0)
    e = c.model.rnnenc
    assert (e.cell, e.d_emb, e.d_hidden, e.feed_context) == ("gru_paper", 620, 1000, True)
    for name in ("rnnenc", "rnnsearch"):
        t = training.train_config(c, name)
        assert (t.optimizer, t.learning_rate, t.decay, t.warmup_steps) == (
            "adadelta",
            1.0,
            "constant",
            0,
        )
        assert (t.clip_norm, t.label_smoothing) == (1.0, 0.0)
    assert c.curriculum.phases == () and c.cost_estimate.enabled


def test_ende_base_preset_is_transformer_base():
    c = get_config("wmt14_ende_base")
    assert c.models == ("transformer",)
    d = c.data
    assert (d.tfds_name, d.src_key, d.tgt_key) == ("wmt14_translate/de-en", "en", "de")
    assert (d.vocab, d.vocab_size, d.shared_vocab, d.token_budget) == (
        "sentencepiece",
        37000,
        True,
        25000,
    )
    m = c.model.transformer
    assert (m.d_model, m.n_heads, m.d_ff, m.n_encoder_layers, m.n_decoder_layers) == (
        512,
        8,
        2048,
        6,
        6,
    )
    assert (m.norm, m.dropout_rate, m.share_embeddings, m.tie_output) == ("post", 0.1, True, True)
    t = training.train_config(c, "transformer")
    assert (t.b1, t.b2, t.clip_norm, t.label_smoothing, t.num_steps) == (
        0.9,
        0.98,
        0.0,
        0.1,
        100_000,
    )
    assert "optimizer" not in t and c.eval.beam_size == 4  # AdamW (eps 1e-9), beam 4
    # the paper's size: 65M parameters with its 37k shared vocabulary (shapes only, no compile)
    model = build_model("transformer", m, 37000, 37000)
    n = count_params(jax.eval_shape(model.init, jax.random.key(0)))
    assert 60e6 < n < 66e6, n


def test_ende_base_schedule_is_the_papers_formula():
    t = training.train_config(get_config("wmt14_ende_base"), "transformer")
    lr, d, w = config_schedule(t), 512, 4000
    for s in (1, 10, 1000, 3999, 4000, 4001, 20000, 99999):
        paper = d**-0.5 * min(s**-0.5, s * w**-1.5)
        # 1e-3: optax's float32 warmup, lr - lr (1 - s/w), cancels digits at small s
        assert math.isclose(float(lr(s)), paper, rel_tol=1e-3), (s, float(lr(s)), paper)
    assert float(lr(0)) == 0.0


def test_adadelta_is_optax_adadelta_after_clipping():
    t = training.train_config(get_config("wmt14_enfr"), "rnnsearch")
    params = {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}
    grads = {"w": np.array([[3.0, -4.0, 0.0], [0.0, 0.0, 12.0]], np.float32)}  # norm 13
    ours = make_optimizer(t)
    ref = optax.chain(optax.clip_by_global_norm(1.0), optax.adadelta(1.0, rho=0.95, eps=1e-6))
    so, sr = ours.init(params), ref.init(params)
    for _ in range(3):
        uo, so = ours.update(grads, so, params)
        ur, sr = ref.update(grads, sr, params)
        np.testing.assert_allclose(uo["w"], ur["w"], rtol=1e-6)
    adam = make_optimizer(training.train_config(get_config("wmt14_ende_base"), "transformer"))
    ua, _ = adam.update(grads, adam.init(params), params)
    assert not np.allclose(ua["w"], uo["w"])  # the field switches the optimiser
    t.optimizer = "sgd"
    with pytest.raises(ValueError, match="adadelta"):
        make_optimizer(t)


def test_estimate_batch_is_the_longest_training_bucket():
    enfr, base = get_config("wmt14_enfr"), get_config("wmt14_ende_base")
    rows, length = cost.batch_shape(enfr, 50)  # -50: the bucket of 50-token sources
    assert length == 56 and rows == 4000 // 56
    assert cost.batch_shape(base) == (25000 // 256, 256)
    assert cost.planned_vocab(base) == (37000, 37000)
    base.data.vocab_size = 0
    with pytest.raises(ValueError, match="vocab_size"):
        cost.planned_vocab(base)


@pytest.mark.parametrize("preset", list(TINY))
def test_preset_runs_end_to_end_on_mock_wmt14(runs, preset):
    workdir, rc, stdout, stderr = runs[preset]
    assert rc == 0, stderr[-4000:]
    # the estimate comes first, before the results table
    assert stdout.startswith("Cost estimate") and stdout.index("total:") < stdout.index("| model")
    with open(workdir / "results.json") as f:
        res = json.load(f)
    setup, models = res["setup"], res["models"]
    c = get_config(preset)
    assert list(models) == list(MODELS[preset]) and setup["corpus"] == "tfds"
    assert setup["config"]["data"]["tfds_name"] == c.data.tfds_name
    assert setup["corpus_sizes"] == {"train": 16, "valid": 16, "test": 16}
    assert all(0 < v <= 64 for v in setup["vocab"])
    for name, r in models.items():
        assert r["steps"] == STEPS and math.isfinite(r["final_loss"]) and 0 <= r["bleu"] <= 100
        assert sum(r["count_by_length"].values()) == 16  # every test pair decoded
        assert f"  {name}: " in stdout
        model = json.loads((workdir / name / "model.json").read_text())["model_config"]
        if preset == "wmt14_enfr":  # the preset's architecture, at the tiny sizes
            assert model["cell"] == "gru_paper"
    est = setup["cost_estimate"]
    assert list(est["models"]) == list(MODELS[preset]) and est["num_steps"] == STEPS
    for r in est["models"].values():
        assert r["params"] > 0 and r["gpu_step_s"] > 0 and r["tpu_step_s"] > r["tpu_allreduce_s"]
        assert math.isclose(r["gpu_hours"], STEPS * r["gpu_step_s"] / 3600)
        parts = r["params_gb"] + r["optimizer_gb"] + r["temp_gb"]
        assert math.isclose(r["memory_gb"], parts) and r["memory_per_chip_gb"] <= r["memory_gb"]
    assert math.isclose(est["gpu_hours"], sum(r["gpu_hours"] for r in est["models"].values()))
    if preset == "wmt14_ende_base":
        assert setup["vocab"][0] == setup["vocab"][1]
        assert (workdir / "shared_spm.model").exists()
        assert model["share_embeddings"] and model["norm"] == "post"
