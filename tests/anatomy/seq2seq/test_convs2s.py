"""ConvS2S's own properties: greedy and beam search through anatomy.decode match the full
pass (their reordering must carry the buffers), the encoder's gradient scaling changes only
gradients, intermediates, dropout and errors, its parameters' axes, and it runs in rnn_vs_attn
through --config.models. The translators' contract (buffered decoding equals the teacher-forced
pass, padding is invisible, it overfits and decodes, sharded training equals one device) runs
over every registered model in test_seq2seq.py and test_sharding_models.py."""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import ROOT, launch
from helpers import TINY, V, noisy_params, random_batch

from anatomy import decode
from anatomy import sharding as sh
from anatomy.errors import BadInputError
from anatomy.seq2seq import BOS, EOS, PAD, build_model, count_params, default_model_config, registry

TINY = TINY["convs2s"]


def test_registered_as_convolutional_with_cross_attention():
    spec = registry.get("convs2s")
    assert (spec.family, spec.cross_attention) == ("convolutional", True)
    assert "convs2s" in registry.names("convolutional")
    n = count_params(
        jax.eval_shape(build_model("convs2s", None, 1000, 1000).init, jax.random.key(0))
    )
    assert 1.1e6 < n < 1.9e6, n  # comparable with the other default translators


def teacher_log_probs(model, params, src, src_len, tokens):
    """log p(tokens[:, i] | tokens[:, <i], x) [B, L] from ONE teacher-forced apply."""
    tgt_in = np.concatenate([np.full((len(tokens), 1), BOS), tokens[:, :-1]], 1).astype(np.int32)
    logits = model.apply(params, {"src": src, "src_len": src_len, "tgt_in": tgt_in})
    lp = np.asarray(decode.log_probs(logits))  # [B, L, V]
    return np.take_along_axis(lp, tokens[..., None], -1)[..., 0]


def test_greedy_and_beam_through_decode_match_the_full_pass():
    """Greedy: every emitted token is the full pass's argmax for that prefix. Beam (K=3):
    the returned score is the full pass's log p / lp(n) of the returned hypothesis, so the
    buffers were reordered with the beams; K = all prefixes finds the exhaustive optimum."""
    model = build_model("convs2s", dict(TINY, kernel_size=2), V, 7)  # 3 generated words
    params = jax.tree.map(lambda x: 2.0 * x, noisy_params(model, 4))  # peaked, not flat
    b = random_batch(3, n=3)
    src, src_len, max_len = b["src"], b["src_len"], 5

    tokens = np.asarray(decode.greedy(model, params, src, src_len, max_len))
    tgt_in = np.concatenate([np.full((3, 1), BOS), tokens[:, :-1]], 1).astype(np.int32)
    logits = model.apply(params, {"src": src, "src_len": src_len, "tgt_in": tgt_in})
    best = np.asarray(jnp.argmax(decode.mask_never_generated(logits), -1))  # [B, L]
    live = np.cumsum(tokens == EOS, 1) - (tokens == EOS) == 0  # up to and including eos
    np.testing.assert_array_equal(tokens[live], best[live])

    alpha = 0.6
    beam, scores = map(
        np.asarray,
        decode.beam_search(model, params, src, src_len, beam_size=3, max_len=max_len, alpha=alpha),
    )
    lp = teacher_log_probs(model, params, src, src_len, np.where(beam == PAD, EOS, beam))
    ends = (beam == EOS).any(1)
    n = np.where(ends, (beam == EOS).argmax(1) + 1, max_len)  # hypothesis lengths
    want = np.where(np.arange(max_len) < n[:, None], lp, 0.0).sum(1) / ((5.0 + n) / 6.0) ** alpha
    np.testing.assert_allclose(scores, want, rtol=1e-5, atol=1e-5)

    k = 4**3
    tok_k, sc_k = decode.beam_search(model, params, src, src_len, beam_size=k, max_len=3)
    ex_tok, ex_sc = decode.exhaustive_search(model, params, src, src_len, 3)
    np.testing.assert_array_equal(tok_k, ex_tok)
    np.testing.assert_allclose(sc_k, ex_sc, rtol=1e-5)


def test_encoder_gradient_scale_changes_gradients_not_values():
    batch = random_batch(5)
    scaled = build_model("convs2s", TINY, V, V)
    plain = build_model("convs2s", dict(TINY, scale_encoder_grad=False), V, V)
    params = noisy_params(scaled, 2)

    def loss(m):
        return jax.jit(jax.value_and_grad(lambda p: jnp.sum(jnp.sin(m.apply(p, batch)))))

    (v_s, g_s), (v_p, g_p) = loss(scaled)(params), loss(plain)(params)
    assert v_s == v_p  # forward exactly unchanged
    factor = 1.0 / (2 * TINY["n_decoder_layers"])
    jax.tree.map(  # the encoder body reaches the loss only through z
        lambda a, b: np.testing.assert_allclose(a, factor * b, rtol=1e-4, atol=1e-7),
        g_s["encoder"],
        g_p["encoder"],
    )
    np.testing.assert_array_equal(g_s["decoder"]["fc_in"]["w"], g_p["decoder"]["fc_in"]["w"])


def test_intermediates_dropout_and_errors():
    batch = random_batch(6)
    model = build_model("convs2s", dict(TINY, dropout_rate=0.2, max_positions=8), V, V)
    params = model.init(jax.random.key(0))
    apply = jax.jit(model.apply, static_argnames=("deterministic", "return_intermediates"))
    _, inter = apply(params, batch, return_intermediates=True)
    s_len, t_len = batch["src"].shape[1], batch["tgt_in"].shape[1]
    assert len(inter["cross_attention_layers"]) == 2
    a = np.asarray(inter["cross_attention"])
    assert a.shape == (3, t_len, s_len)
    np.testing.assert_allclose(a.sum(-1), 1.0, rtol=1e-5)
    invalid = np.arange(s_len)[None, None] >= batch["src_len"][:, None, None]
    assert (a[np.broadcast_to(invalid, a.shape)] == 0).all()
    with pytest.raises(ValueError, match="rng"):
        model.apply(params, batch, deterministic=False)
    d1 = apply(params, batch, rng=jax.random.key(1), deterministic=False)
    np.testing.assert_array_equal(
        d1, apply(params, batch, rng=jax.random.key(1), deterministic=False)
    )
    assert not np.allclose(d1, apply(params, batch))
    long = dict(batch, tgt_in=np.ones((3, 9), np.int32))
    with pytest.raises(BadInputError, match="max_positions=8"):
        model.apply(params, long)
    memory = model.encode(params, batch["src"], batch["src_len"])
    with pytest.raises(BadInputError, match="max_positions=8"):
        model.init_state(params, memory, 9)
    for bad in ({"kernel_size": 0}, {"dropout_rate": 1.0}, {"n_decoder_layers": 0}):
        with pytest.raises(BadInputError, match="convs2s"):
            build_model("convs2s", bad, V, V)
    assert set(TINY) < set(default_model_config("convs2s"))


def test_runs_in_rnn_vs_attn_through_config_models(tmp_path):
    launch(
        "--experiment=rnn_vs_attn",
        f"--config={ROOT}/experiments/configs/rnn_vs_attn.py:quick",
        "--config.models=('convs2s',)",
        "--config.train.num_steps=10",
        "--config.train.eval_every=5",
        "--config.eval.max_per_bucket=2",
        f"--workdir={tmp_path}",
    )
    with open(os.path.join(tmp_path, "results.json")) as f:
        row = json.load(f)["models"]["convs2s"]
    assert row["params"] > 0 and np.isfinite(row["final_loss"])
    assert 0.0 <= row["bleu"] <= 100.0 and row["bleu_by_length"]
    assert os.path.exists(os.path.join(tmp_path, "attention_convs2s.png"))


def test_parameters_declare_their_axes():
    """Every parameter's logical axes come from its init (an undeclared one is an error)."""
    model = build_model("convs2s", TINY, V, V)
    ax = sh.logical_axes(model.init, jax.random.key(0))
    assert ax["src_emb"] == ("vocab", "embed") and ax["tgt_pos_emb"] == (None, "embed")
    assert ax["out"]["w"] == ("embed", "vocab") and ax["out"]["b"] == ("vocab",)
    assert ax["decoder"]["blocks"][1]["conv"]["w"] == (None, None, None)
