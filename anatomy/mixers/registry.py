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
    rnn, lstm, gru    Elman 1990; Hochreiter &       vector state [m] (the LSTM's h and c)
                      Schmidhuber 1997; Cho et al.
                      2014: nonlinear, one form
    hgrn2             Qin et al. 2024 (HGRN-2)       matrix state [h, e, v], a decay per key

Each mixer registers itself at the end of its own file (a ``MixerSpec``, spec.py); this module
only collects the registrations, one line each (``SPECS``), and builds the interface over them.
A recurrence that is also a cell, ``cell(params, carry, x) -> (carry, y)`` (rnn, lstm, gru,
mingru, mamba), carries its ``CellSpec`` in its registration (``MixerSpec.cell``): the parts
the scan runner (anatomy.scan.run) and the translators use, at any input and hidden width.
The cells that are only cells (gru_paper, the GRU of Cho et al.'s paper; the SRU and the
QRNN) are registered by the same idiom (spec.cell_spec), collected in ``CELL_ONLY``; ``CELLS``
is every cell by name, read from both (``get_cell``). A nonlinear cell's mixer is the scan
runner: ``apply`` is ``scan.run`` on the cell's path (knobs hoist and vjp, None = the
backend's default, ``resolve_path``), ``step`` is the cell.

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
Griffin, xLSTM); its K-1 inputs join the state. A new mixer: its file in anatomy/mixers/
(the paper's equations, init, the sequence form with ``form=``, a step, a zero state, and its
``SPEC``, with its ``cell`` when it is also a cell), its float64 twin test file, its default
form (a row of defaults.py), and one line in ``SPECS`` below.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import ml_collections

from anatomy.conv import init_short_conv, short_conv, short_conv_step
from anatomy.errors import BadInputError
from anatomy.mixers import (
    attention,
    cells,
    gated_deltanet,
    hgrn2,
    linear_attention,
    mamba,
    mamba2,
    mingru,
    mlstm,
    quasi,
    rglru,
)
from anatomy.mixers.defaults import default_form, default_path
from anatomy.mixers.spec import CellSpec, MixerSpec
from anatomy.scan.linear import CHUNK, check_form

# Every knob, its default and what it means; a mixer's default_config takes the ones it uses.
KNOBS = {
    "conv": (0, "short causal depthwise conv in front of the mixer: its width (0 = none)"),
    "form": ("", "'' = the backend's default (mixers.defaults), else one of forms"),
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
    "rope_base": (10000.0, "attention's RoPE frequency base (larger = slower rotations)"),
    "rope_scale": (1.0, "attention's RoPE position interpolation: position p rotated as p / scale"),
    "hoist": (
        None,
        "a cell's input projection before the scan (True) or in each step; None = "
        "the backend's default (mixers.defaults)",
    ),  # fmt: skip
    "vjp": (None, "a cell's gradient: 'autodiff' or 'fused' (lstm, gru); None = the default"),
}


# Every mixer's registration, each in its own file, in the order NAMES lists them.
SPECS = (
    linear_attention.SPEC,
    rglru.SPEC,
    mlstm.SPEC,
    gated_deltanet.SPEC,
    mamba2.SPEC,
    mingru.SPEC,
    mamba.SPEC,
    attention.SPEC,
    cells.RNN_SPEC,
    cells.LSTM_SPEC,
    cells.GRU_SPEC,
    hgrn2.SPEC,
)
CELL_ONLY = (cells.GRU_PAPER_CELL, quasi.SRU_CELL, quasi.QRNN_CELL)  # cells, no mixers
MIXERS = {s.name: s for s in SPECS}  # name -> MixerSpec, in registration order
NAMES = tuple(MIXERS)
RECURRENT = tuple(n for n in NAMES if n != "attention")  # the fixed-state mixers
CELLS = {s.name: s.cell for s in SPECS if s.cell} | {c.name: c for c in CELL_ONLY}
LINEAR_CELLS = {n: c for n, c in CELLS.items() if c.sequence}  # linear recurrences as cells
FUSED_CELLS = tuple(n for n, c in CELLS.items() if c.fused)  # ('lstm', 'gru')
# the recurrent mixers linear in their state (a form to choose; the others are nonlinear cells)
LINEAR = tuple(n for n in RECURRENT if MIXERS[n].cell is None or MIXERS[n].cell.sequence)


def get_cell(name):
    """The CellSpec registered as ``name`` (a key of CELLS: 'rnn', 'lstm', 'gru', 'gru_paper',
    or a linear recurrence: 'sru', 'qrnn', 'mingru', 'mamba').

    A CellSpec passes through unchanged, so functions can take either.
    """
    if isinstance(name, CellSpec):
        return name
    if name not in CELLS:
        raise ValueError(f"unknown cell {name!r}; choose one of {sorted(CELLS)}")
    return CELLS[name]


def resolve_path(cell, hoist=None, vjp=None, backend=None, where="recurrence"):
    """(hoist, vjp) of ``cell`` (a name): the given values, with None filled in from
    defaults.default_path. A vjp that is not "autodiff" / "fused", or "fused" for a cell
    without that path, is a BadInputError naming `where` (e.g. the model whose config asked)."""
    if vjp is not None and vjp not in ("autodiff", "fused"):
        raise BadInputError(f"{where}: vjp must be 'autodiff', 'fused' or None, got {vjp!r}")
    if vjp == "fused" and cell not in FUSED_CELLS:
        raise BadInputError(
            f"{where}: vjp='fused' exists for the cells {FUSED_CELLS}, not cell={cell!r}"
        )
    path = default_path(cell, backend)
    return (path["hoist"] if hoist is None else bool(hoist)), (path["vjp"] if vjp is None else vjp)


def get_mixer(name):
    """The MixerSpec registered as ``name``, else BadInputError listing the names."""
    if isinstance(name, MixerSpec):
        return name
    if name not in MIXERS:
        raise BadInputError(f"unknown mixer {name!r}; choose one of {', '.join(NAMES)}")
    return MIXERS[name]


def default_config(name):
    """The knobs of mixer ``name`` (a ConfigDict, a comment per field in KNOBS or in the
    mixer's own_knobs)."""
    spec = get_mixer(name)
    c = ml_collections.ConfigDict()
    for knob in ("conv", "form", "chunk", *spec.knobs):
        c[knob] = spec.defaults.get(knob, KNOBS[knob][0])
    for knob, (default, _) in spec.own_knobs.items():
        c[knob] = default
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
    if spec.cell is not None and "vjp" in c:  # the cell's path, resolved once
        c.hoist, c.vjp = resolve_path(spec.name, c.hoist, c.vjp, where=f"mixer {name!r}")
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
