"""The mixer registry: every sequence mixer by name, behind one interface (``Mixer``).

    linear_attention  Katharopoulos et al. 2020      matrix state [h, k, v + 1], no decay
                      (feature_map='taylor': Based's, k = 1 + d + d²)
    rglru             De et al. 2024 (Griffin/Hawk)  vector state [w]
    mlstm             Beck et al. 2024 (xLSTM)       matrix state [h, k, v + 1] + stabiliser [h]
    gated_deltanet    Yang et al. 2024               matrix state [h, k, v], matrix transition
    mamba2            Dao & Gu 2024 (SSD)            matrix state [h, n, p], scalar decay
    mingru            Feng et al. 2024               vector state [w]
    mamba             Gu & Dao 2023 (selective SSM)  state [m, n]
    attention         softmax, causal                a KV cache: 2 L h d, growing with L

``build_mixer(name, d_model, **knobs) -> Mixer``; ``default_config(name)`` lists a mixer's
knobs with a comment each; an unknown name or knob is one BadInputError naming the choices.
A Mixer is pure functions over a frozen config (hashable: a static argument of jax.jit):

    init(key) -> params                     {'mix': the mixer's, 'conv': the short conv's}
    apply(params, x [b, t, m], state=None, *, form=None, lengths=None, return_state=False)
                                            -> y [b, t, m] (or (y, state after the last
                                            real step)); state: continue from it
    init_state(params, batch, max_len=None) -> the decoding state ({'mix', 'conv'}); max_len
                                            sizes the attention mixer's KV cache only
    step(params, state, x_t [b, m]) -> (y_t [b, m], state)    fed a sequence step by step,
                                            it gives apply's rows
    state_bytes(length=None, batch=1)       the bytes a decoder keeps per ``batch`` sequences
                                            after ``length`` tokens: init_state's leaves,
                                            read with jax.eval_shape (nothing computed);
                                            length matters for attention only
    forms, form                             the forms apply takes; the default one

conv (a knob of every mixer, 0 = none): a depthwise causal convolution of that width on the
mixer's input (anatomy.conv.short_conv), the recipe of the recall papers (H3, Based, Mamba,
Griffin, xLSTM); its K-1 inputs join the state. A new mixer: its module (init, the sequence
form with ``form=``, a step, a zero state), one ``MixerSpec`` below.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import ml_collections

from anatomy.conv import init_short_conv, short_conv, short_conv_step
from anatomy.errors import BadInputError
from anatomy.layers import dense, init_dense
from anatomy.mixers import attention as att
from anatomy.recurrence.defaults import default_form
from anatomy.recurrence.deltanet import (
    gated_deltanet,
    gated_deltanet_step,
    gated_deltanet_zero_state,
    init_gated_deltanet,
)
from anatomy.recurrence.linear_attention import (
    LINEAR_ATTENTION_FORMS,
    init_linear_attention,
    linear_attention,
    linear_attention_step,
    linear_attention_zero_state,
)
from anatomy.recurrence.linear_scan import CHUNK, FORMS, check_form
from anatomy.recurrence.mingru import init_mingru, mingru, mingru_cell, mingru_zero_carry
from anatomy.recurrence.mlstm import MLSTM_FORMS, init_mlstm, mlstm, mlstm_step, mlstm_zero_state
from anatomy.recurrence.rglru import init_rglru, rglru, rglru_step, rglru_zero_state
from anatomy.recurrence.selective import init_mamba, mamba, mamba_cell, mamba_zero_carry
from anatomy.recurrence.ssd import MAMBA2_FORMS, init_mamba2, mamba2, mamba2_step, mamba2_zero_state

# Every knob, its default and what it means; a mixer's default_config takes the ones it uses.
KNOBS = {
    "conv": (0, "short causal depthwise conv in front of the mixer: its width (0 = none)"),
    "form": ("", "'' = the backend's default (recurrence.defaults), else one of forms"),
    "chunk": (CHUNK, "the chunked form's chunk length C"),
    "n_heads": (4, "heads"),
    "d_key": (0, "key (feature) width per head; 0 = d_model / n_heads"),
    "d_value": (0, "value width per head; 0 = d_model / n_heads"),
    "feature_map": ("elu", "linear attention's φ: 'elu' (elu + 1), 'relu', or 'taylor' (Based)"),
    "expand": (1, "inner width = expand · d_model"),
    "n_blocks": (1, "RG-LRU gates: block-diagonal with this many blocks"),
    "head_dim": (16, "Mamba-2's head width p (heads = expand · d_model / p)"),
    "d_state": (16, "state size per channel / head (Mamba's N)"),
    "positions": (
        "rope",
        "attention's positions inside it: 'rope', 'alibi', 'none' or 'hard_alibi' (windowed "
        "heads beside NoPE ones, Jelassi et al. 2024)",
    ),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class MixerSpec:
    """How a mixer's module maps onto the interface (cfg: its frozen config).

    init(key, d_model, cfg) -> params; apply(params, x, state, cfg, form, lengths) -> (y,
    state); step(params, state, x_t, cfg) -> (y_t, state); zero_state(params, batch, max_len,
    cfg, dtype) -> state; knobs: its KNOBS (conv, form and chunk are everyone's); forms: its
    forms, the first the fallback default; stateful_apply: apply takes and returns a state.
    """

    name: str
    init: Callable
    apply: Callable
    step: Callable
    zero_state: Callable
    knobs: tuple
    forms: tuple = FORMS
    defaults: dict = dataclasses.field(default_factory=dict)
    stateful_apply: bool = True


def _size(v):
    return int(v) or None


def _heads_init(init):
    return lambda key, m, c: init(key, m, c.n_heads, _size(c.d_key), _size(c.d_value))


def _fn_apply(fn, *names):
    """apply through fn(params, x, state, *, form, chunk, lengths, **{the knobs named})."""

    def apply(p, x, s, c, form, lengths):
        kw = {k: c[k] for k in names}
        return fn(p, x, s, form=form, chunk=c.chunk, lengths=lengths, **kw)

    return apply


def _fn_step(fn, *names):
    return lambda p, s, x, c: fn(p, s, x, **{k: c[k] for k in names})


def _zero(fn):
    return lambda p, batch, max_len, c, dtype: fn(p, batch, dtype)


def _init_mingru(key, m, c):
    k1, k2 = jax.random.split(key)
    w = int(c.expand * m)
    return {"cell": init_mingru(k1, m, w), "out": init_dense(k2, w, m, axes=("hidden", "embed"))}


def _mingru_apply(p, x, s, c, form, lengths):
    h_last, hs = mingru(p["cell"], x, s, lengths=lengths, form=form, chunk=c.chunk)
    return dense(p["out"], hs), h_last


def _mingru_step(p, s, x, c):
    h, _ = mingru_cell(p["cell"], s, x)
    return dense(p["out"], h), h


def _mamba_apply(p, x, s, c, form, lengths):
    state, outs = mamba(p, x, s, lengths=lengths, form=form, chunk=c.chunk)
    return outs, state


def _mamba_step(p, s, x, c):
    state, out = mamba_cell(p, s, x)
    return out, state


def _attention_apply(p, x, s, c, form, lengths):
    return att.attention(p, x, positions=c.positions, form=form), None


SPECS = (
    MixerSpec(
        name="linear_attention",
        init=_heads_init(init_linear_attention),
        apply=_fn_apply(linear_attention, "feature_map"),
        step=_fn_step(linear_attention_step, "feature_map"),
        zero_state=lambda p, batch, max_len, c, dtype: linear_attention_zero_state(
            p, batch, dtype, c.feature_map
        ),
        knobs=("n_heads", "d_key", "d_value", "feature_map"),
        forms=LINEAR_ATTENTION_FORMS,
    ),
    MixerSpec(
        name="rglru",
        init=lambda key, m, c: init_rglru(key, m, c.expand, c.n_blocks),
        apply=_fn_apply(rglru),
        step=_fn_step(rglru_step),
        zero_state=_zero(rglru_zero_state),
        knobs=("expand", "n_blocks"),
        defaults={"conv": 4},
    ),
    MixerSpec(
        name="mlstm",
        init=_heads_init(init_mlstm),
        apply=_fn_apply(mlstm),
        step=_fn_step(mlstm_step),
        zero_state=_zero(mlstm_zero_state),
        knobs=("n_heads", "d_key", "d_value"),
        forms=MLSTM_FORMS,
        defaults={"conv": 4},
    ),
    MixerSpec(
        name="gated_deltanet",
        init=_heads_init(init_gated_deltanet),
        apply=_fn_apply(gated_deltanet),
        step=_fn_step(gated_deltanet_step),
        zero_state=_zero(gated_deltanet_zero_state),
        knobs=("n_heads", "d_key", "d_value"),
        defaults={"conv": 4},
    ),
    MixerSpec(
        name="mamba2",
        init=lambda key, m, c: init_mamba2(key, m, c.expand, c.head_dim, c.d_state),
        apply=_fn_apply(mamba2),
        step=_fn_step(mamba2_step),
        zero_state=_zero(mamba2_zero_state),
        knobs=("expand", "head_dim", "d_state"),
        forms=MAMBA2_FORMS,
        defaults={"conv": 4, "expand": 2},
    ),
    MixerSpec(
        name="mingru",
        init=_init_mingru,
        apply=_mingru_apply,
        step=_mingru_step,
        zero_state=lambda p, batch, max_len, c, dtype: mingru_zero_carry(
            batch, p["cell"]["w"].shape[1] // 2, dtype
        ),
        knobs=("expand",),
    ),
    MixerSpec(
        name="mamba",
        init=lambda key, m, c: init_mamba(key, m, m, c.d_state),
        apply=_mamba_apply,
        step=_mamba_step,
        zero_state=lambda p, batch, max_len, c, dtype: mamba_zero_carry(
            batch, p["d"].shape[0], dtype, p["a_log"].shape[1]
        ),
        knobs=("d_state",),
    ),
    MixerSpec(
        name="attention",
        init=lambda key, m, c: att.init_attention(key, m, c.n_heads),
        apply=_attention_apply,
        step=lambda p, s, x, c: att.attention_step(p, s, x, positions=c.positions),
        zero_state=lambda p, batch, max_len, c, dtype: att.attention_zero_state(
            p, batch, max_len, dtype
        ),
        knobs=("n_heads", "positions"),
        forms=att.ATTENTION_FORMS,
        stateful_apply=False,
    ),
)
MIXERS = {s.name: s for s in SPECS}  # name -> MixerSpec, in registration order
NAMES = tuple(MIXERS)
RECURRENT = tuple(n for n in NAMES if n != "attention")  # the fixed-state mixers


def get_mixer(name):
    """The MixerSpec registered as ``name``, else BadInputError listing the names."""
    if isinstance(name, MixerSpec):
        return name
    if name not in MIXERS:
        raise BadInputError(f"unknown mixer {name!r}; choose one of {', '.join(NAMES)}")
    return MIXERS[name]


def default_config(name):
    """The knobs of mixer ``name`` (a ConfigDict, a comment per field in KNOBS)."""
    spec = get_mixer(name)
    c = ml_collections.ConfigDict()
    for knob in ("conv", "form", "chunk", *spec.knobs):
        c[knob] = spec.defaults.get(knob, KNOBS[knob][0])
    return c


def check_knobs(name, knobs, what="mixer"):
    """BadInputError naming any knob that mixer ``name`` does not have."""
    unknown = sorted(set(knobs) - set(default_config(name).keys()))
    if unknown:
        raise BadInputError(
            f"{what} {name!r}: unknown knobs {unknown}; its knobs are "
            f"{sorted(default_config(name).keys())}"
        )


class Mixer(NamedTuple):
    """A built mixer: pure functions over a frozen config (module docstring)."""

    name: str
    config: ml_collections.FrozenConfigDict
    forms: tuple
    form: str
    init: Callable
    apply: Callable
    init_state: Callable
    step: Callable

    def state_bytes(self, length=None, batch=1):
        """Bytes of init_state(params, batch, length): what a decoder keeps (eval_shape only)."""
        shapes = jax.eval_shape(
            lambda: self.init_state(self.init(jax.random.key(0)), batch, length)
        )
        return sum(math.prod(x.shape) * x.dtype.itemsize for x in jax.tree.leaves(shapes))


def _conv_buffer(xp, width, lengths):
    """The last K-1 inputs before each length: xp [b, K-1+t, d] (buffer then x) -> [b, K-1, d]."""
    if lengths is None:
        return xp[:, xp.shape[1] - (width - 1) :]
    take = lambda row, n: jax.lax.dynamic_slice_in_dim(row, n, width - 1, axis=0)
    return jax.vmap(take)(xp, jnp.asarray(lengths))


def build_mixer(name, d_model, **knobs) -> Mixer:
    """The Mixer ``name`` at width d_model with ``knobs`` (default_config(name)'s fields)."""
    spec = get_mixer(name)
    check_knobs(spec.name, knobs)
    if not isinstance(d_model, int) or d_model < 1:
        raise BadInputError(f"mixer {name!r}: d_model must be a positive int, got {d_model!r}")
    c = default_config(spec.name)
    c.update(knobs)
    c.d_model = d_model
    cfg = ml_collections.FrozenConfigDict(c)
    default = cfg.form or (spec.forms[0] if spec.name == "attention" else default_form(spec.name))
    check_form(default, spec.forms, f"mixer {name!r}: form")
    width = int(cfg.conv)
    if width < 0:
        raise BadInputError(f"mixer {name!r}: conv must be a width >= 0, got {cfg.conv}")

    def init(key):
        k_mix, k_conv = jax.random.split(key)
        p = {"mix": spec.init(k_mix, d_model, cfg)}
        if width:
            p["conv"] = init_short_conv(k_conv, d_model, width, axes=("embed",))
        return p

    def apply(params, x, state=None, *, form=None, lengths=None, return_state=False):
        form = check_form(form or default, spec.forms, f"mixer {spec.name!r}: form")
        if not spec.stateful_apply and (state is not None or return_state or lengths is not None):
            raise BadInputError(
                f"mixer {spec.name!r}: apply takes no state, lengths or return_state "
                "(decode it with init_state / step)"
            )
        new = {}
        if width:
            buf = None if state is None else state["conv"]
            buf = jnp.zeros((x.shape[0], width - 1, d_model), x.dtype) if buf is None else buf
            xp = jnp.concatenate([buf.astype(x.dtype), x], axis=1)
            new["conv"] = _conv_buffer(xp, width, lengths)
            x, _ = short_conv(params["conv"], x, buf)
        y, new["mix"] = spec.apply(
            params["mix"], x, None if state is None else state["mix"], cfg, form, lengths
        )
        return (y, new) if return_state else y

    def init_state(params, batch, max_len=None, dtype=jnp.float32):
        s = {"mix": spec.zero_state(params["mix"], batch, max_len, cfg, dtype)}
        if width:
            s["conv"] = jnp.zeros((batch, width - 1, d_model), dtype)
        return s

    def step(params, state, x_t):
        new = {}
        if width:
            x_t, new["conv"] = short_conv_step(params["conv"], state["conv"], x_t)
        y, new["mix"] = spec.step(params["mix"], state["mix"], x_t, cfg)
        return y, new

    return Mixer(spec.name, cfg, spec.forms, default, init, apply, init_state, step)
