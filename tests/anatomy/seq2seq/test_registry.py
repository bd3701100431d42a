"""The model registry: one entry per translator, variants, families, clear errors; and a
throwaway model (one module + one register call) that rnn_vs_attn trains, the families list
and sharding places by the axes its init declares."""

import json
import os
import types

import jax
import jax.numpy as jnp
import ml_collections
import optax
import pytest
from jax.sharding import PartitionSpec as P

from anatomy import sharding as sh
from anatomy.attention import masked_softmax
from anatomy.axes import declare
from anatomy.errors import BadInputError
from anatomy.layers import OUT_AXES, dense, init_dense, init_embedding
from anatomy.seq2seq import MODELS, base, build_model, count_params, registry
from anatomy.train.sharded import state_shardings


def test_builtin_models_and_families():
    assert registry.names()[:4] == ("rnnenc", "rnnsearch", "luong", "transformer")
    assert {"rnnenc", "rnnsearch", "luong"} <= set(registry.names("recurrent"))
    assert "transformer" in registry.names("attention")
    assert "transformer" not in registry.names("recurrent")
    assert "rnnenc" in registry.names(cross_attention=False)
    assert "rnnenc" not in registry.names(cross_attention=True)
    assert set(registry.names()) == set(MODELS)
    for name in registry.names():
        spec = registry.get(name)
        assert spec.family in registry.FAMILIES
        assert sorted(spec.default_config().keys())  # a non-empty ConfigDict


def test_an_unknown_name_lists_the_choices():
    assert registry.get("rnnsearch").name == "rnnsearch"
    for bad in ("rnnsearch-30", "nope", "nope-30", None):  # variants are rnn_vs_attn's
        with pytest.raises(BadInputError, match="unknown model .*choose one of"):
            registry.get(bad)


def test_register_checks_its_input():
    mod = types.SimpleNamespace(default_config=dict, build=lambda *a: None)
    with pytest.raises(BadInputError, match="already registered"):
        registry.register("rnnenc", mod, family="recurrent", cross_attention=False)
    with pytest.raises(BadInputError, match="identifier"):
        registry.register("my-model", mod, family="recurrent", cross_attention=False)
    with pytest.raises(BadInputError, match="family must be one of"):
        registry.register("mine", mod, family="recursive", cross_attention=False)
    with pytest.raises(BadInputError, match="lacks \\['build'\\]"):
        registry.register(
            "mine",
            types.SimpleNamespace(default_config=dict),
            family="attention",
            cross_attention=True,
        )
    with pytest.raises(BadInputError, match="family must be one of"):
        registry.names("recursive")
    assert "mine" not in registry.names()
    try:
        spec = registry.register("mine", mod, family="convolutional", cross_attention=True)
        assert registry.get("mine") is spec and registry.names("convolutional")[-1] == "mine"
        assert spec.load() is mod
    finally:
        registry.unregister("mine")
    assert "mine" not in MODELS


# ------------------------------------------------ a throwaway model: one module + one register

BAG = types.ModuleType("bag_attention")  # stands for a new file anatomy/seq2seq/<name>.py


def _bag_default_config():
    return ml_collections.ConfigDict({"d": 16, "d_mix": 8})


def _bag_build(config, src_vocab_size, tgt_vocab_size, extra_param=False):
    """Dot-product attention of the previous target word over the source embeddings:
    a_t = softmax_s(E_src x_s · E_tgt y_{t-1}),  h_t = tanh((E_tgt y_{t-1} + Σ_s a_ts E_src x_s) W),
    logits_t = W_o h_t + b_o. W [d, f] declares ('embed', 'mlp')."""
    cfg = base.freeze(config)

    def init(key):
        ks = jax.random.split(key, 4)
        p = {
            "src_emb": init_embedding(ks[0], src_vocab_size, cfg.d),
            "tgt_emb": init_embedding(ks[1], tgt_vocab_size, cfg.d),
            "mix": declare(jax.random.normal(ks[2], (cfg.d, cfg.d_mix)), ("embed", "mlp")),
            "out": init_dense(ks[3], cfg.d_mix, tgt_vocab_size, axes=OUT_AXES),
        }
        if extra_param:
            p["extra"] = jnp.ones((3, cfg.d))  # created without declare
        return p

    def encode(params, src, src_len):
        src, src_len = base.check_src(src, src_len, "bag")
        return {"keys": params["src_emb"][src], "mask": base.source_mask(src_len, src.shape[1])}

    def _logits(params, memory, q):  # q [B, T, d] -> logits [B, T, V], a [B, T, S]
        a = masked_softmax(jnp.einsum("btd,bsd->bts", q, memory["keys"]), memory["mask"][:, None])
        ctx = jnp.einsum("bts,bsd->btd", a, memory["keys"])
        return dense(params["out"], jnp.tanh((q + ctx) @ params["mix"])), a

    def apply(params, batch, *, rng=None, deterministic=True, return_intermediates=False):
        src, src_len, tgt = base.check_batch(batch, "bag")
        logits, a = _logits(params, encode(params, src, src_len), params["tgt_emb"][tgt])
        return base.intermediates_or_logits(logits, {"cross_attention": a}, return_intermediates)

    def init_state(params, memory, max_len):
        return jnp.zeros(memory["mask"].shape[:1], jnp.int32)  # [B]: steps taken

    def step(params, memory, state, tokens):
        logits, _ = _logits(params, memory, params["tgt_emb"][tokens][:, None])
        return logits[:, 0], state + 1

    return base.Translator(
        "bag", cfg, src_vocab_size, tgt_vocab_size, init, apply, encode, init_state, step
    )


BAG.default_config, BAG.build = _bag_default_config, _bag_build


@pytest.fixture
def bag():
    registry.register("bag", BAG, family="attention", cross_attention=True)  # the one line
    yield "bag"
    registry.unregister("bag")


@pytest.mark.slow
def test_a_registered_model_trains_in_rnn_vs_attn(bag, tmp_path):
    from experiments import rnn_vs_attn
    from experiments.configs.rnn_vs_attn import get_config

    c = get_config("quick")  # the config derives its model blocks from the registry
    assert c.model[bag].to_dict() == _bag_default_config().to_dict() and bag in c.train_by_model
    c.models = (bag, f"{bag}-20")
    c.data.toy.update(train_size=200, valid_size=10, test_per_bucket=1)
    c.train.update(num_steps=4, log_every=2, checkpoint_every=4, eval_every=0)
    c.eval.valid_batches = 0
    res = rnn_vs_attn.run(c, str(tmp_path))
    for name in c.models:
        row = res["models"][name]
        assert row["steps"] == 4 and 0 <= row["bleu"] <= 100, row
        assert row["params"] == count_params(
            build_model(bag, None, *res["setup"]["vocab"]).init(jax.random.key(0))
        )
    assert res["setup"]["train_max_src_len"] == {f"{bag}-20": 20}
    with open(tmp_path / "results.json") as f:
        assert set(json.load(f)["models"]) == set(c.models)
    assert os.path.exists(tmp_path / f"attention_{bag}.png")  # it cross-attends: a heatmap


def test_a_registered_model_is_in_its_family(bag):
    assert bag in registry.names("attention") and bag not in registry.names("recurrent")
    assert bag in registry.names(cross_attention=True)
    from experiments.tasks.translation.training import model_spec

    assert model_spec(f"{bag}-30") == (bag, 30)  # rnn_vs_attn's length-limited variant


def test_a_registered_model_gets_its_declared_shardings(bag):
    model = build_model(bag, {"d": 16, "d_mix": 8}, 24, 24)
    mesh = sh.make_mesh((2, 4))
    axes = sh.logical_axes(model.init, jax.random.key(0))
    assert axes == {
        "src_emb": ("vocab", "embed"),
        "tgt_emb": ("vocab", "embed"),
        "mix": ("embed", "mlp"),
        "out": {"w": ("embed", "vocab"), "b": ("vocab",)},
    }
    _, p_sh = state_shardings(model, optax.adam(1e-3), mesh)
    specs = jax.tree.map(lambda s: s.spec, p_sh)
    assert specs["mix"] == P(None, "model")  # 'mlp' -> the model axis (DEFAULT_RULES)
    assert specs["src_emb"] == P() and specs["out"]["w"] == P() and specs["out"]["b"] == P()
    # with a rule for 'vocab' the output projection is split too
    rules = tuple(r for r in sh.DEFAULT_RULES if r[0] != "vocab") + (("vocab", "model"),)
    specs = sh.param_specs(jax.eval_shape(model.init, jax.random.key(0)), mesh, rules, axes=axes)
    assert specs["out"]["w"] == P(None, "model") and specs["tgt_emb"] == P("model")


def test_an_undeclared_parameter_of_a_model_is_an_error_naming_it(bag):
    model = BAG.build(ml_collections.ConfigDict({"d": 16, "d_mix": 8}), 24, 24, extra_param=True)
    with pytest.raises(BadInputError, match=r"parameter \['extra'\] \(shape \(3, 16\)\) has no"):
        state_shardings(model, optax.adam(1e-3), sh.make_mesh((2, 4)))


def test_a_registered_model_is_grouped_by_the_report(bag):
    """The report's rows pick translators by family / cross-attention from the registry."""
    from experiments.rnn_vs_attn.claims import translators

    models = {name: {} for name in ("rnnenc", "rnnsearch", "transformer", bag, f"{bag}-30")}
    assert translators(models, cross_attention=True) == ["rnnsearch", "transformer", bag]
    assert translators(models, family="attention") == ["transformer", bag]
    assert translators(models, family="recurrent") == ["rnnenc", "rnnsearch"]


# ------------------------------------------------ choice checks: one helper, every model


@pytest.mark.parametrize("name", registry.names())
def test_every_choice_check_raises_bad_input_naming_field_and_choices(name):
    """Each model's CHOICES go through base.check_choices: a bad value is one line
    (BadInputError, which launch.py prints) naming the field and every allowed value."""
    module = registry.get(name).load()
    choices = getattr(module, "CHOICES", {})
    if registry.get(name).family == "recurrent":
        assert "cell" in choices or "mixer" in choices  # its recurrence: a cell or a mixer
    for field, allowed in choices.items():
        assert module.default_config()[field] in allowed
        with pytest.raises(BadInputError) as err:
            build_model(name, {field: "no-such-choice"}, 16, 16)
        msg = str(err.value)
        assert f"{name}: {field} must be one of" in msg and "'no-such-choice'" in msg
        assert all(str(a) in msg for a in allowed)


def test_check_choices_passes_good_values():
    cfg = ml_collections.ConfigDict({"cell": "lstm"})
    base.check_choices("m", cfg, {"cell": ("lstm", "gru")})
    with pytest.raises(BadInputError, match="m: cell must be one of gru, got 'lstm'"):
        base.check_choices("m", cfg, {"cell": ("gru",)})
