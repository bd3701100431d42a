"""The fused backward of a gated cell's scan: ONE matmul per backward step, not two.

A cell's scan differentiated by JAX's autodiff does, at every step of the backward scan, the
two matmuls of the step's recurrent product h W_h:
    dh_{t-1} += dgh_t W_hᵀ          (the gradient flowing back in time: serial)
    dW_h     += h_{t-1}ᵀ dgh_t       (a [H, G*H] read-modify-write per step)
Only the first is serial. ``run_fused`` computes the same function with a custom VJP: the
backward scan produces the pre-activation gradients (dgx_t of the input projection, dgh_t of
the hidden one, [B, G*H]) and dh, and after the scan the weight gradient is ONE large matmul
over all steps,
    dW_h = Σ_t h_{t-1}ᵀ dgh_t = einsum('tbh,tbg->hg', H_prev, dGH)   (d b_h = Σ dgh_t),
while the input projection's gradients (dW_x, db, dx) come from the hoisted [T, B, D] x
[D, G*H] matmul outside the scan, which is already one matmul (a cell's own projection and
its autodiff, or ``_project``'s einsums, since XLA CPU runs autodiff's transposed dW_x dot
slower). The forward pass is the hoisted path's, and it saves what each step's elementwise
update needs (the pre-activations), so that the backward never recomputes a matmul. With
hoist=False the projection runs inside each step (the plain path's forward, no [T, B, G*H]
input buffer) and dx, dW_x, db are large matmuls after the backward scan too; on 2 CPU
cores this variant was the fastest (BENCHMARKS.md).

This is an engine of the cell scan, not a cell: a cell hands it a ``FusedCell`` (its
elementwise update from (carry, what the step saved) and how the saved pre-activations
depend on the two projections); the masking, the reverse, the serial matmul and the large
matmuls are shared. The LSTM's and the GRU's FusedCell and their layers (run_lstm,
run_gru) live with the cells, anatomy/mixers/cells.py, and reach ``scan.run(vjp='fused')``
through their CellSpec's ``fused``. Same values as ``run`` (the same operations in the
forward pass); gradients equal up to float rounding (sums in another order);
tests/anatomy/scan/test_fused.py checks both against the plain path.
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from anatomy.scan.sequences import reverse_padded


class FusedCell(NamedTuple):
    """What the generic scan needs of a cell (all static: a jit / custom_vjp constant).

    pre(xw_t, hw_t) -> s_t: what the step's elementwise update needs, from the input
      projection xw_t and the hidden one hw_t = h W_h (+ b_h), both [B, G*H].
    update(carry, s_t) -> new carry: the elementwise part of the step (differentiated by
      jax.vjp in the backward: no matmul).
    emit(s_t) -> e_t: what the forward scan stacks of s_t for the backward;
      rebuild(xw_t, e_t) -> s_t; needs_xw: whether rebuild reads xw_t (then the backward
      takes it from the hoisted [T, B, G*H] buffer, or the inline scan stacks it too).
    d_x(ds), d_h(ds): the gradients of xw and hw from the gradient ds of s (any leading axes).
    hidden(carry) -> h; with_hidden(carry, h) -> carry with h replaced.
    """

    pre: callable
    update: callable
    emit: callable
    rebuild: callable
    needs_xw: bool
    d_x: callable
    d_h: callable
    hidden: callable
    with_hidden: callable


def _step(cell, w_h, b_h, carry, xw_t, m_t):
    """One masked step; returns (new carry, y, saved pre-activations)."""
    hw = cell.hidden(carry) @ w_h  # [B, G*H]: the step's one matmul
    if b_h is not None:
        hw = hw + b_h
    s = cell.pre(xw_t, hw)
    new = cell.update(carry, s)
    new = jax.tree.map(lambda n, o: jnp.where(m_t[:, None], n, o), new, carry)
    return new, jnp.where(m_t[:, None], cell.hidden(new), 0.0), s


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _scan(cell, w_h, b_h, carry0, xw, mask):
    """xw [T, B, G*H] time-major, mask [T, B] bool -> (final carry, ys [T, B, H]).
    b_h: the hidden projection's bias [G*H], or None (LSTM)."""
    return _fwd(cell, w_h, b_h, carry0, xw, mask)[0]


def _fwd(cell, w_h, b_h, carry0, xw, mask):
    def body(carry, inp):
        new, y, s = _step(cell, w_h, b_h, carry, *inp)
        return new, (y, carry, cell.emit(s))

    final, (ys, prev, emitted) = jax.lax.scan(body, carry0, (xw, mask))
    xw_saved = xw if cell.needs_xw else None  # the input itself: no copy
    return (final, ys), (w_h, b_h, mask, prev, emitted, xw_saved)


def _bwd_scan(cell, w_h, mask, prev, emitted, xw, cot):
    """The backward scan: (d carry0, ds [T, ...] the saved pre-activations' gradients)."""
    d_final, d_ys = cot
    w_t = w_h.T  # [G*H, H]

    def body(d_carry, inp):
        m_t, prev_t, e_t, xw_t, dy_t = inp
        m = m_t[:, None]
        d_carry = cell.with_hidden(d_carry, cell.hidden(d_carry) + jnp.where(m, dy_t, 0.0))
        s_t = cell.rebuild(xw_t, e_t)
        _, vjp = jax.vjp(cell.update, prev_t, s_t)  # elementwise only: no matmul recomputed
        d_prev, ds = vjp(jax.tree.map(lambda d: jnp.where(m, d, 0.0), d_carry))
        d_prev = jax.tree.map(lambda d, p: jnp.where(m, 0.0, d) + p, d_carry, d_prev)
        dh = cell.hidden(d_prev) + cell.d_h(ds) @ w_t  # the one serial matmul of the step
        return cell.with_hidden(d_prev, dh), ds

    return jax.lax.scan(body, d_final, (mask, prev, emitted, xw, d_ys), reverse=True)


def _hidden_grads(cell, b_h, prev, ds):
    """dW_h as ONE matmul over all steps, and d b_h (None without a hidden bias)."""
    d_h = cell.d_h(ds)  # [T, B, G*H]
    d_w_h = jnp.einsum("tbh,tbg->hg", cell.hidden(prev), d_h)
    return d_w_h, None if b_h is None else jnp.sum(d_h, axis=(0, 1))


def _bwd(cell, res, cot):
    w_h, b_h, mask, prev, emitted, xw = res
    d_carry0, ds = _bwd_scan(cell, w_h, mask, prev, emitted, xw, cot)
    d_w_h, d_b_h = _hidden_grads(cell, b_h, prev, ds)
    return d_w_h, d_b_h, d_carry0, cell.d_x(ds), None


_scan.defvjp(_fwd, _bwd)


def _input_grads(w_x, xs, d_xw):
    """(dW_x, db_x, dx) of xw = xs W_x + b_x (xs [T, B, D], d_xw [T, B, G*H]): large matmuls."""
    d_w_x = jnp.einsum("tbd,tbg->dg", xs, d_xw)
    return d_w_x, jnp.sum(d_xw, axis=(0, 1)), d_xw @ w_x.T  # dx [T, B, D]


@jax.custom_vjp
def _project(w_x, b_x, xs):
    """The hoisted input projection xs [T, B, D] @ w_x + b_x -> [T, B, G*H], one matmul, whose
    backward is ``_input_grads`` (XLA CPU runs autodiff's transposed dW_x dot as a plain dot
    on a transposed copy of d_xw, slower than this einsum)."""
    return xs @ w_x + b_x


def _project_fwd(w_x, b_x, xs):
    return xs @ w_x + b_x, (w_x, xs)


def _project_bwd(res, d_xw):
    w_x, xs = res
    return _input_grads(w_x, xs, d_xw)


_project.defvjp(_project_fwd, _project_bwd)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _scan_inline(cell, w_x, b_x, w_h, b_h, carry0, xs, mask):
    """``_scan`` with the input projection x_t W_x + b_x inside each step (xs [T, B, D]):
    the forward pass of hoist=False (no [T, B, G*H] input buffer); the input gradients
    (dx, dW_x, db_x) are large matmuls over all steps after the backward scan, like dW_h."""
    return _fwd_inline(cell, w_x, b_x, w_h, b_h, carry0, xs, mask)[0]


def _fwd_inline(cell, w_x, b_x, w_h, b_h, carry0, xs, mask):
    def body(carry, inp):
        x_t, m_t = inp
        xw_t = x_t @ w_x + b_x
        new, y, s = _step(cell, w_h, b_h, carry, xw_t, m_t)
        return new, (y, carry, cell.emit(s), xw_t if cell.needs_xw else None)

    final, (ys, prev, emitted, xw) = jax.lax.scan(body, carry0, (xs, mask))
    return (final, ys), (w_x, w_h, b_h, xs, mask, prev, emitted, xw)


def _bwd_inline(cell, res, cot):
    w_x, w_h, b_h, xs, mask, prev, emitted, xw = res
    d_carry0, ds = _bwd_scan(cell, w_h, mask, prev, emitted, xw, cot)
    d_w_h, d_b_h = _hidden_grads(cell, b_h, prev, ds)
    d_w_x, d_b_x, d_x = _input_grads(w_x, xs, cell.d_x(ds))
    return d_w_x, d_b_x, d_w_h, d_b_h, d_carry0, d_x, None


_scan_inline.defvjp(_fwd_inline, _bwd_inline)


def run_fused(cell, project, bias_key, hidden_bias, params, xs, lengths, carry0, reverse, hoist):
    """(final carry, ys [B, T, H]) of ``cell`` (a FusedCell) over xs [B, T, D] with the fused
    backward (module doc). project: the hoisted projection (params, xs [T, B, D]) -> [T, B,
    G*H], or None for ``_project`` (its einsum backward); bias_key: the input bias's key in
    params; hidden_bias: the hidden bias's key, or None (no b_h); carry0: the initial carry
    (never None); reverse, hoist: as ``run``'s."""
    batch, n_time, _ = xs.shape
    if reverse:
        xs = reverse_padded(xs, lengths)
    if lengths is None:
        mask = jnp.ones((n_time, batch), bool)
    else:
        mask = jnp.arange(n_time)[:, None] < jnp.asarray(lengths)[None, :]  # [T, B]
    xs_t = jnp.swapaxes(xs, 0, 1)  # [T, B, D]
    w_h, b_h = params["w_h"], params[hidden_bias] if hidden_bias else None
    if hoist:
        if project is None:
            xw = _project(params["w_x"], params[bias_key], xs_t)
        else:
            xw = project(params, xs_t)  # [T, B, G*H]: one matmul, time-major
        final, ys = _scan(cell, w_h, b_h, carry0, xw, mask)
    else:
        w_x, b_x = params["w_x"], params[bias_key]
        final, ys = _scan_inline(cell, w_x, b_x, w_h, b_h, carry0, xs_t, mask)
    ys = jnp.swapaxes(ys, 0, 1)
    return final, reverse_padded(ys, lengths) if reverse else ys
