"""The model registry: one entry per translator, variants, families, clear errors."""

import types

import pytest

from anatomy.errors import BadInputError
from anatomy.seq2seq import MODELS, registry


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


def test_variants_resolve_to_their_model():
    assert registry.split_variant("rnnsearch-30") == ("rnnsearch", 30)
    assert registry.split_variant("transformer") == ("transformer", 0)
    assert registry.get("rnnenc-50") is registry.get("rnnenc")
    for bad in ("rnnsearch-0", "rnnsearch-x", "rnnsearch-", "nope", "nope-30"):
        with pytest.raises(BadInputError, match="unknown model"):
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
