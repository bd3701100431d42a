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

A recurrence that is also a cell, ``cell(params, carry, x) -> (carry, y)`` (rnn, lstm, gru,
mingru, mamba), carries its ``CellSpec`` in its registration (``MixerSpec.cell``): the parts
the scan runner (anatomy.scan.runner.run) and the translators use, at any input and hidden
width. The cells that are only cells (gru_paper, the GRU of Cho et al.'s paper; the SRU and
the QRNN) are registered by the same idiom, ``_cell``, in ``CELL_ONLY``; ``CELLS`` is every
cell by name, read from both (``get_cell``). A nonlinear cell's mixer is the scan runner:
``apply`` is ``scan.run`` on the cell's path (knobs hoist and vjp, None = the backend's
default, ``resolve_path``), ``step`` is the cell.

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
form with ``form=``, a step, a zero state), one ``MixerSpec`` below (with its ``cell`` when it
is also a cell), and its default form, a row of anatomy/recurrence/defaults.py.
"""

from __future__ import annotations

import dataclasses
import importlib
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
from anatomy.recurrence import cells
from anatomy.recurrence import fused as fused_layers
from anatomy.recurrence import quasi as q
from anatomy.recurrence import selective as sel
from anatomy.recurrence.defaults import default_form, default_path
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
from anatomy.recurrence.mingru import init_mingru, mingru, mingru_cell, mingru_zero_carry
from anatomy.recurrence.mlstm import MLSTM_FORMS, init_mlstm, mlstm, mlstm_step, mlstm_zero_state
from anatomy.recurrence.rglru import init_rglru, rglru, rglru_step, rglru_zero_state
from anatomy.recurrence.ssd import MAMBA2_FORMS, init_mamba2, mamba2, mamba2_step, mamba2_zero_state
from anatomy.scan.linear import CHUNK, FORMS, check_form
from anatomy.scan.runner import run

# the module (anatomy.recurrence's namespace holds the function of the same name)
_MINGRU = importlib.import_module("anatomy.recurrence.mingru")

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
    "hoist": (
        None,
        "a cell's input projection before the scan (True) or in each step; None = "
        "the backend's default (recurrence.defaults)",
    ),  # fmt: skip
    "vjp": (None, "a cell's gradient: 'autodiff' or 'fused' (lstm, gru); None = the default"),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class CellSpec:
    """A recurrence as a cell: everything the scan runner needs to know (keyword fields).

    name: registry key.
    init(key, d_in, d_hidden) -> params.
    cell(params, carry, x [B, D]) -> (carry, y [B, H])       (= recur ∘ project).
    project(params, x [..., D]) -> xw [..., G*H]             (hoistable input projection).
    recur(params, carry, xw [B, G*H]) -> (carry, y [B, H]).
    zero_carry(batch, d_hidden, dtype) -> carry.
    hidden(carry) -> h [B, H].
    sequence: None, or for a linear recurrence its whole-sequence form
      (params, xs [B, T, D], carry0, *, lengths, parallel) -> (final carry, ys [B, T, H]),
      computed with jax.lax.associative_scan (parallel=True) or jax.lax.scan (False).
    from_hidden: None, or (params, h0 [B, H]) -> a carry starting from the output h0 (a
      translator's s_0): the state is set to h0 where it has the output's shape (sru, qrnn,
      mingru) and to zero where it does not (mamba's [B, H, N]).
    fused: None, or the custom-VJP layer (fused.py) that scan.run(vjp="fused") calls:
      (params, xs, *, lengths, carry0, reverse, hoist) -> (final carry, ys [B, T, H]).
    """

    name: str
    init: Callable
    cell: Callable
    project: Callable
    recur: Callable
    zero_carry: Callable
    hidden: Callable
    sequence: Callable | None = None
    from_hidden: Callable | None = None
    fused: Callable | None = None


def _identity(carry):
    return carry


def _carry_h(carry):
    return carry.h


def _cell(module, name, hidden, *, shares=None, **forms):
    """The CellSpec of ``name`` from ``module``'s functions, named by the cells' convention:
    init_<name>, <name>_cell, <name>_project, <name>_recur, <name>_zero_carry. A variant that
    ``shares`` another cell's init, input projection and zero carry names that cell (gru_paper:
    'gru'). forms: the optional fields (sequence, from_hidden, fused)."""
    base = shares or name
    return CellSpec(
        name=name,
        init=getattr(module, f"init_{base}"),
        cell=getattr(module, f"{name}_cell"),
        project=getattr(module, f"{base}_project"),
        recur=getattr(module, f"{name}_recur"),
        zero_carry=getattr(module, f"{base}_zero_carry"),
        hidden=hidden,
        **forms,
    )


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
    cell: CellSpec | None = None


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


def _mingru_from_hidden(params, h0):
    return h0


def _mamba_apply(p, x, s, c, form, lengths):
    state, outs = sel.mamba(p, x, s, lengths=lengths, form=form, chunk=c.chunk)
    return outs, state


def _mamba_step(p, s, x, c):
    state, out = sel.mamba_cell(p, s, x)
    return out, state


def _cell_mixer(cell):
    """The MixerSpec of a nonlinear cell at width m (hidden = input = m): apply is the scan
    runner on the cell's path (knobs hoist, vjp), step the cell, the state its carry."""

    def apply(p, x, s, c, form, lengths):
        final, ys = run(cell, p, x, lengths=lengths, carry0=s, hoist=c.hoist, vjp=c.vjp)
        return ys, final

    def step(p, s, x, c):
        carry, y = cell.cell(p, s, x)
        return y, carry

    return MixerSpec(
        name=cell.name,
        init=lambda key, m, c: cell.init(key, m, m),
        apply=apply,
        step=step,
        zero_state=lambda p, batch, max_len, c, dtype: cell.zero_carry(
            batch, p["w_h"].shape[0], dtype
        ),
        knobs=("hoist", "vjp"),
        forms=("sequential",),
        cell=cell,
    )


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
        cell=_cell(_MINGRU, "mingru", _identity, sequence=mingru, from_hidden=_mingru_from_hidden),
    ),
    MixerSpec(
        name="mamba",
        init=lambda key, m, c: sel.init_mamba(key, m, m, c.d_state),
        apply=_mamba_apply,
        step=_mamba_step,
        zero_state=lambda p, batch, max_len, c, dtype: sel.mamba_zero_carry(
            batch, p["d"].shape[0], dtype, p["a_log"].shape[1]
        ),
        knobs=("d_state",),
        cell=_cell(sel, "mamba", _carry_h, sequence=sel.mamba, from_hidden=sel.mamba_from_hidden),
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
    _cell_mixer(_cell(cells, "rnn", _identity)),
    _cell_mixer(_cell(cells, "lstm", _carry_h, fused=fused_layers.run_lstm)),
    _cell_mixer(_cell(cells, "gru", _identity, fused=fused_layers.run_gru)),
)


def _sru_from_hidden(params, h0):
    return q.SRUState(h0, h0)


def _qrnn_from_hidden(params, h0):
    return q.QRNNState(h0, h0, jnp.zeros(h0.shape[:-1] + (params["b"].shape[0],), h0.dtype))


CELL_ONLY = (  # the cells that are no mixer of their own, by the same idiom
    _cell(cells, "gru_paper", _identity, shares="gru"),
    _cell(q, "sru", _carry_h, sequence=q.sru_sequence, from_hidden=_sru_from_hidden),
    _cell(q, "qrnn", _carry_h, sequence=q.qrnn, from_hidden=_qrnn_from_hidden),
)
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
