"""Translators built from anatomy.mixers, anatomy.scan, anatomy.attention and anatomy.conv, one registry
by name.

    rnnenc       encoder-decoder without attention (Cho et al. 2014; Sutskever et al. 2014)
    rnnsearch    bidirectional encoder + additive attention (Bahdanau et al. 2015)
    luong        global dot / general / concat attention with input feeding (Luong et al. 2015)
    transformer  Vaswani et al. 2017: post-LN (or pre-LN), sinusoidal positions, KV-cached decoding
    convs2s      Gehring et al. 2017: GLU convolutions, learned positions, attention in every
                 decoder layer, decoded with a K-1 input buffer per layer

    model = build_model('transformer', None, src_vocab_size, tgt_vocab_size)
    params = model.init(jax.random.key(0))
    logits = model.apply(params, batch)                       # [B, T, V]
    tokens = anatomy.decode.greedy(model, params, src, src_len, max_len)

Each model module defines default_config() -> ConfigDict and
build(config, src_vocab_size, tgt_vocab_size) -> Translator; modules load on first use.
anatomy.seq2seq.registry registers each once (with its family and whether it cross-attends);
MODELS is the registry's read-only view, name -> registry.ModelSpec.
"""

import operator

import ml_collections

from anatomy.errors import BadInputError
from anatomy.params import count_params
from anatomy.seq2seq import registry
from anatomy.seq2seq.base import BOS, EOS, PAD, UNK, Translator
from anatomy.seq2seq.base import freeze as freeze_config

MODELS = registry.SPECS

__all__ = [
    "MODELS",
    "Translator",
    "registry",
    "build_model",
    "default_model_config",
    "count_params",
    "freeze_config",
    "PAD",
    "BOS",
    "EOS",
    "UNK",
]


def _module(name):
    if name not in MODELS:
        raise BadInputError(f"unknown model {name!r}; choose one of {sorted(MODELS)}")
    return MODELS[name].load()


def default_model_config(name):
    """The model's default hyperparameters as an ml_collections.ConfigDict (a fresh copy)."""
    return _module(name).default_config()


def build_model(name, model_config=None, src_vocab_size=None, tgt_vocab_size=None):
    """A Translator for model `name`.

    Args:
      name: one of MODELS; anything else raises ValueError listing the choices.
      model_config: ConfigDict / dict of fields overriding default_model_config(name), or None.
        A field the model does not have raises ValueError naming it.
      src_vocab_size, tgt_vocab_size: ints (> 3: pad, bos, eos, unk are reserved).
    """
    module = _module(name)
    cfg = module.default_config()
    overrides = {} if model_config is None else dict(model_config.items())
    unknown = sorted(set(overrides) - set(cfg.keys()))
    if unknown:
        raise BadInputError(
            f"{name}: unknown config fields {unknown}; fields are {sorted(cfg.keys())}"
        )
    cfg.update(overrides)
    sizes = []
    for which, raw in (("src_vocab_size", src_vocab_size), ("tgt_vocab_size", tgt_vocab_size)):
        try:
            size = operator.index(raw)  # int or NumPy integer; not float, not None
        except TypeError:
            size = None
        if size is None or size <= EOS:
            raise BadInputError(f"{name}: {which} must be an int > {EOS}, got {raw!r}")
        sizes.append(size)
    return module.build(ml_collections.ConfigDict(cfg), *sizes)
