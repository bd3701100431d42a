"""The one registry of translators: a model is registered here once, the rest derives from it.

    spec = registry.get("rnnsearch")
    spec.family, spec.cross_attention           # 'recurrent', True
    spec.default_config()                       # a fresh ConfigDict from the model's module
    registry.names(family="recurrent")          # ('rnnenc', 'rnnsearch', 'luong')
    registry.names(cross_attention=False)       # ('rnnenc',): the no-attention baseline

A model module defines default_config() -> ConfigDict and
build(config, src_vocab_size, tgt_vocab_size) -> base.Translator. Its ModelSpec says what
the experiments, the report and sharding need to know without importing it:
    family           'recurrent' | 'attention' | 'convolutional' (FAMILIES): how the encoder
                     and decoder carry information along the sequence
    cross_attention  whether the decoder attends over the source (apply's intermediates
                     then hold 'cross_attention'); False = a fixed-vector model like RNNenc
Built-in modules load on first use (the module is a dotted path); a test may register a
module object directly.

A name is a Python identifier, so an experiment may add a suffix of its own (rnn_vs_attn's
'rnnsearch-30': a model trained on short sources) and tell it apart.
"""

from __future__ import annotations

import dataclasses
import importlib
import types

from anatomy.errors import BadInputError

FAMILIES = ("recurrent", "attention", "convolutional")


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """One registered translator: its name, module (dotted path or module), family, and
    whether its decoder attends over the source."""

    name: str
    module: str | types.ModuleType
    family: str
    cross_attention: bool

    def load(self) -> types.ModuleType:
        """The model's module (imported on first use)."""
        if isinstance(self.module, str):
            return importlib.import_module(self.module)
        return self.module

    def default_config(self):
        """The model's default hyperparameters (a fresh ml_collections.ConfigDict)."""
        return self.load().default_config()


_SPECS: dict[str, ModelSpec] = {}
SPECS = types.MappingProxyType(_SPECS)  # read-only view: name -> ModelSpec, registration order


def register(name, module, *, family, cross_attention, replace=False) -> ModelSpec:
    """Register translator `name` (module: dotted path or module object); returns its spec.

    BadInputError on a name already registered (unless replace), a name with '-' or not an
    identifier, an unknown family, a non-bool cross_attention, or a module object that lacks
    default_config / build.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise BadInputError(f"model name must be an identifier (no '-'), got {name!r}")
    if name in _SPECS and not replace:
        raise BadInputError(f"model {name!r} is already registered ({_SPECS[name].module!r})")
    if family not in FAMILIES:
        raise BadInputError(f"model {name!r}: family must be one of {FAMILIES}, got {family!r}")
    if not isinstance(cross_attention, bool):
        raise BadInputError(f"model {name!r}: cross_attention must be a bool")
    if not isinstance(module, str):
        missing = [f for f in ("default_config", "build") if not callable(getattr(module, f, None))]
        if missing:
            raise BadInputError(f"model {name!r}: module {module!r} lacks {missing}")
    spec = ModelSpec(name, module, family, cross_attention)
    _SPECS[name] = spec
    return spec


def unregister(name) -> None:
    """Remove `name` from the registry (tests that register a throwaway model clean up)."""
    _SPECS.pop(name, None)


def get(name) -> ModelSpec:
    """The spec of registered model `name`; BadInputError listing the choices otherwise."""
    if name not in _SPECS:
        raise BadInputError(f"unknown model {name!r}; choose one of {names()}")
    return _SPECS[name]


def names(family=None, *, cross_attention=None) -> tuple[str, ...]:
    """Registered names in registration order, optionally only one family (FAMILIES) and/or
    only models with (True) or without (False) cross-attention."""
    if family is not None and family not in FAMILIES:
        raise BadInputError(f"family must be one of {FAMILIES}, got {family!r}")
    return tuple(
        s.name
        for s in _SPECS.values()
        if (family is None or s.family == family)
        and (cross_attention is None or s.cross_attention == cross_attention)
    )


# The translators: one line each (a new model adds its module and one line here).
register("rnnenc", "anatomy.seq2seq.rnnenc", family="recurrent", cross_attention=False)
register("rnnsearch", "anatomy.seq2seq.rnnsearch", family="recurrent", cross_attention=True)
register("luong", "anatomy.seq2seq.luong", family="recurrent", cross_attention=True)
register("transformer", "anatomy.seq2seq.transformer", family="attention", cross_attention=True)
register("convs2s", "anatomy.seq2seq.convs2s", family="convolutional", cross_attention=True)
register("rnnenc_mixer", "anatomy.seq2seq.rnnenc_mixer", family="recurrent", cross_attention=False)
