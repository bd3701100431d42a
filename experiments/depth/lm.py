"""What every contender shares: a decoder-only character LM around a family's stack.

    x_0    = E[ids]·√m                [b, t, m]  (E ~ N(0, 1/m): unit-variance inputs, as the
                                                  project's translators embed)
    h      = stack(x_0)               [b, t, m]  (the family's: attention.py, recurrent.py)
    logits = h·W + c                  [b, t, V]  (untied readout)
    loss   = mean cross-entropy of the next character

A Variant names one contender: its family, the structural options that decide its compiled
program (`program`: variants with equal ones, post-LN with and without warmup, share one
compile), and whether it warms up.

Params: {'embed': [V, m], 'stack': the family's tree, 'readout': {'w': [m, V], 'b': [V]}}.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from anatomy.layers import dense, init_dense, init_embedding


@dataclasses.dataclass(frozen=True)
class Variant:
    """One contender. family: 'attention' | 'recurrent'; label: how plots and tables name it;
    options: the family's structural keywords (e.g. norm, residual); warmup: trains with
    config.train.warmup_steps of linear warmup; citation: where the wiring comes from."""

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


@dataclasses.dataclass(frozen=True)
class Family:
    """A family's stack: init(key, model_cfg, n_layers, variant) -> tree; apply(tree, x,
    variant) -> h [b, t, m]; layers(tree) -> one subtree per layer, bottom first; xiong(tree)
    -> the last layer's weight Xiong et al.'s Theorem 1 bounds (for a gradient tree too)."""

    init: Callable
    apply: Callable
    layers: Callable
    xiong: Callable


def init(family: Family, key, model_cfg, vocab_size: int, n_layers: int, variant: Variant):
    k_emb, k_stack, k_out = jax.random.split(key, 3)
    m = model_cfg.d_model
    return {
        "embed": init_embedding(k_emb, vocab_size, m),
        "stack": family.init(k_stack, model_cfg, n_layers, variant),
        "readout": init_dense(k_out, m, vocab_size),
    }


def logits(family: Family, params, ids, variant: Variant):
    """ids int [b, t] -> next-character logits [b, t, V]."""
    m = params["embed"].shape[1]
    x = params["embed"][ids] * jnp.sqrt(jnp.float32(m))  # [b, t, m]
    return dense(params["readout"], family.apply(params["stack"], x, variant))


def loss(family: Family, params, x, y, variant: Variant):
    """Mean next-character cross-entropy of windows x, y int [b, t] (nats)."""
    lg = logits(family, params, x, variant)  # [b, t, V]
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(lg, y))
