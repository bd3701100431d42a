"""What every contender shares: anatomy.lm's decoder-only LM, built from a Variant.

A Variant names one contender: its family ('attention' | 'recurrent', anatomy.lm's), the
structural options it sets on anatomy.lm.default_config(family) (norm and residual; residual
and layer_norm), whether it warms up, and where its wiring comes from. Variants with equal
family and options (`program`: post-LN with and without warmup) share one compiled program.

    model = build(variant, config.model, L, V)    anatomy.lm.build_lm: embedding, the
                                                  family's stack, readout (tied, the library's
                                                  default), pre-LN's final LayerNorm
    loss(model, params, windows [b, N + 1])       mean next-character cross-entropy over the
                                                  N predicted positions (anatomy.lm.token_nll)
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from anatomy import lm


@dataclasses.dataclass(frozen=True)
class Variant:
    """One contender. family: anatomy.lm's; label: how plots and tables name it; options: the
    fields it sets on the family's LM config; warmup: trains with config.train.warmup_steps of
    linear warmup; citation: where the wiring comes from."""

    name: str
    family: str
    label: str
    options: tuple
    warmup: bool = False
    citation: str = ""

    @property
    def program(self) -> tuple:
        """Variants with equal programs share one compiled training program."""
        return (self.family, self.options)

    def option(self, key, default=None):
        return dict(self.options).get(key, default)


def build(variant: Variant, model_cfg, n_layers: int, vocab_size: int) -> lm.LanguageModel:
    """anatomy.lm's model of `variant` at n_layers (config.model: d_model; n_heads, d_ff)."""
    c = lm.default_config(variant.family)
    c.d_model, c.n_layers = model_cfg.d_model, n_layers
    if variant.family == "attention":
        c.n_heads, c.d_ff = model_cfg.n_heads, model_cfg.d_ff
    c.update(dict(variant.options))
    return lm.build_lm(c, vocab_size)


def loss(model: lm.LanguageModel, params, windows):
    """Mean next-character cross-entropy (nats) of windows int [b, N + 1]."""
    return jnp.mean(lm.token_nll(model, params, windows))
