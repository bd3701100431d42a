"""What a mixer's registration is made of, and the idioms every mixer file registers with.

A mixer's file (linear_attention.py, rglru.py, ..., cells.py) ends with its registration, a
module-level ``MixerSpec`` (``SPEC``; cells.py and quasi.py name theirs), which the registry
(registry.py) only collects. A recurrence that is also a cell, ``cell(params, carry, x) ->
(carry, y)``, carries its ``CellSpec`` in its MixerSpec (``cell``): the parts the scan runner
(anatomy.scan.run) and the translators use. ``cell_spec`` reads a cell's functions from its
module by their naming convention; ``cell_mixer`` makes a nonlinear cell a mixer (apply: the
scan runner on the cell's path; step: the cell); ``heads_init``, ``fn_apply``, ``fn_step`` and
``zero`` adapt a mixer's functions to the interface's signatures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from anatomy.scan import FORMS, run


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
      (params, xs [B, T, D], carry0, *, lengths, form) -> (final carry, ys [B, T, H]),
      in any form of anatomy.scan.linear_scan ('associative', 'sequential', 'chunked').
    from_hidden: None, or (params, h0 [B, H]) -> a carry starting from the output h0 (a
      translator's s_0): the state is set to h0 where it has the output's shape (sru, qrnn,
      mingru) and to zero where it does not (mamba's [B, H, N]).
    fused: None, or the custom-VJP layer (anatomy.scan.fused's engine, cells.py's run_lstm /
      run_gru) that scan.run(vjp="fused") calls:
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


def identity(carry):
    return carry


def carry_h(carry):
    return carry.h


def cell_spec(names, name, hidden, *, shares=None, **forms):
    """The CellSpec of ``name`` from ``names`` (a cell module's globals(), read where it
    registers itself), named by the cells' convention: init_<name>, <name>_cell,
    <name>_project, <name>_recur, <name>_zero_carry. A variant that ``shares`` another cell's
    init, input projection and zero carry names that cell (gru_paper: 'gru'). forms: the
    optional fields (sequence, from_hidden, fused)."""
    base = shares or name
    return CellSpec(
        name=name,
        init=names[f"init_{base}"],
        cell=names[f"{name}_cell"],
        project=names[f"{base}_project"],
        recur=names[f"{name}_recur"],
        zero_carry=names[f"{base}_zero_carry"],
        hidden=hidden,
        **forms,
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class MixerSpec:
    """How a mixer's module maps onto the interface (cfg: its frozen config).

    init(key, d_model, cfg) -> params; apply(params, x, state, cfg, form, lengths) -> (y,
    state); step(params, state, x_t, cfg) -> (y_t, state); zero_state(params, batch, max_len,
    cfg, dtype) -> state; knobs: the shared knobs it takes (registry.KNOBS; conv, form and
    chunk are everyone's); own_knobs: the knobs only it has, {name: (default, what it means)};
    forms: its forms, the first the fallback default; stateful_apply: apply takes and returns
    a state.
    """

    name: str
    init: Callable
    apply: Callable
    step: Callable
    zero_state: Callable
    knobs: tuple
    own_knobs: dict = dataclasses.field(default_factory=dict)
    forms: tuple = FORMS
    defaults: dict = dataclasses.field(default_factory=dict)
    stateful_apply: bool = True
    cell: CellSpec | None = None


def _size(v):
    return int(v) or None


def heads_init(init):
    return lambda key, m, c: init(key, m, c.n_heads, _size(c.d_key), _size(c.d_value))


def fn_apply(fn, *names):
    """apply through fn(params, x, state, *, form, chunk, lengths, **{the knobs named})."""

    def apply(p, x, s, c, form, lengths):
        kw = {k: c[k] for k in names}
        return fn(p, x, s, form=form, chunk=c.chunk, lengths=lengths, **kw)

    return apply


def fn_step(fn, *names):
    return lambda p, s, x, c: fn(p, s, x, **{k: c[k] for k in names})


def zero(fn):
    return lambda p, batch, max_len, c, dtype: fn(p, batch, dtype)


def cell_mixer(cell):
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
