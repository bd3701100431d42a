"""An LSTM layer whose backward pass does ONE matmul per step, not two.

``scan.run('lstm', ..., hoist=True)`` differentiated by JAX's autodiff does, at every step
of the backward scan, the two matmuls of the step's recurrent product z = h W_h:
    dh_{t-1} += dz_t W_hᵀ          (the gradient flowing back in time: serial)
    dW_h     += h_{t-1}ᵀ dz_t       (a [H, 4H] read-modify-write per step)
Only the first is serial. ``run_lstm`` computes the same function with a custom VJP:
the backward scan produces dz_t (= the pre-activation gradient, [B, 4H]) and dh, and
after the scan the weight gradient is ONE large matmul over all steps,
    dW_h = Σ_t h_{t-1}ᵀ dz_t = einsum('tbh,tbg->hg', H_prev, dZ),
while the input projection's gradients (dW_x, db, dx) come from autodiff of the hoisted
[B, T, D] x [D, 4H] matmul outside the scan, which is already one matmul. The forward pass
is the hoisted path's, and it saves each step's pre-activations so that the backward
never recomputes a matmul. With hoist=False the projection runs inside each step (the
plain path's forward, no [T, B, 4H] buffer) and dx, dW_x, db are large matmuls after the
backward scan too; on 2 CPU cores this variant was the fastest (BENCHMARKS.md). Same values as ``run`` (the same operations in the forward
pass); gradients equal up to float rounding (sums in another order);
tests/test_recurrence_fast.py checks both against the plain path.
"""

import functools

import jax
import jax.numpy as jnp

from anatomy.recurrence.cells import LSTMState, lstm_project, lstm_update, lstm_zero_carry
from anatomy.recurrence.scan import _check_inputs, reverse_padded


def _step(w_h, carry, xw_t, m_t):
    """One masked step; returns (new carry, y, pre-activations)."""
    h, c = carry
    gates = xw_t + h @ w_h  # [B, 4H]
    new = lstm_update(c, gates)
    new = jax.tree.map(lambda n, o: jnp.where(m_t[:, None], n, o), new, carry)
    return new, jnp.where(m_t[:, None], new.h, 0.0), gates


@jax.custom_vjp
def _scan(w_h, carry0, xw, mask):
    """xw [T, B, 4H] time-major, mask [T, B] bool -> (final carry, ys [T, B, H])."""
    return _fwd(w_h, carry0, xw, mask)[0]


def _fwd(w_h, carry0, xw, mask):
    def body(carry, inp):
        new, y, gates = _step(w_h, carry, *inp)
        return new, (y, carry, gates)

    final, (ys, prev, gates) = jax.lax.scan(body, carry0, (xw, mask))
    return (final, ys), (w_h, mask, prev, gates)


def _bwd(res, cot):
    w_h, mask, prev, gates = res
    d_final, d_ys = cot
    w_t = w_h.T  # [4H, H]

    def body(d_carry, inp):
        m_t, (h_p, c_p), g_t, dy_t = inp
        m = m_t[:, None]
        dh, dc = d_carry
        dh = dh + jnp.where(m, dy_t, 0.0)  # y = h where the step is real
        _, vjp = jax.vjp(lstm_update, c_p, g_t)  # elementwise only: no matmul recomputed
        dc_p, dz = vjp(LSTMState(jnp.where(m, dh, 0.0), jnp.where(m, dc, 0.0)))
        dh_p = jnp.where(m, 0.0, dh) + dz @ w_t  # the one serial matmul of the step
        dc_p = jnp.where(m, 0.0, dc) + dc_p
        return LSTMState(dh_p, dc_p), dz

    d_carry0, dz = jax.lax.scan(body, LSTMState(*d_final), (mask, prev, gates, d_ys), reverse=True)
    d_w_h = jnp.einsum("tbh,tbg->hg", prev.h, dz)  # ONE matmul over all steps
    return d_w_h, d_carry0, dz, None


_scan.defvjp(_fwd, _bwd)


@jax.custom_vjp
def _scan_inline(w_x, b, w_h, carry0, xs, mask):
    """``_scan`` with the input projection inside each step (xs [T, B, D]): the forward
    pass of hoist=False (no [T, B, 4H] input buffer); the input gradients (dx, dW_x, db)
    are large matmuls over all steps after the backward scan, like dW_h."""
    return _fwd_inline(w_x, b, w_h, carry0, xs, mask)[0]


def _fwd_inline(w_x, b, w_h, carry0, xs, mask):
    def body(carry, inp):
        x_t, m_t = inp
        new, y, gates = _step(w_h, carry, x_t @ w_x + b, m_t)
        return new, (y, carry, gates)

    final, (ys, prev, gates) = jax.lax.scan(body, carry0, (xs, mask))
    return (final, ys), (w_x, w_h, xs, mask, prev, gates)


def _bwd_inline(res, cot):
    w_x, w_h, xs, mask, prev, gates = res
    d_w_h, d_carry0, dz, _ = _bwd((w_h, mask, prev, gates), cot)
    d_x = dz @ w_x.T  # [T, B, D]
    d_w_x = jnp.einsum("tbd,tbg->dg", xs, dz)
    return d_w_x, jnp.sum(dz, axis=(0, 1)), d_w_h, d_carry0, d_x, None


_scan_inline.defvjp(_fwd_inline, _bwd_inline)


@functools.partial(jax.jit, static_argnames=("reverse", "hoist"))
def run_lstm(params, xs, *, lengths=None, carry0=None, reverse=False, hoist=True):
    """``scan.run('lstm', params, xs, lengths=..., carry0=..., reverse=..., hoist=...)`` with
    the one-matmul-per-step backward pass (module doc). hoist=True: the input projection as
    one matmul before the scan; False: inside each step (and its gradients after the backward
    scan). Returns (final LSTMState, ys [B, T, H])."""
    xs = jnp.asarray(xs)
    _check_inputs(params, xs, lengths)
    batch, n_time, _ = xs.shape
    if carry0 is None:
        dtype = jnp.result_type(xs.dtype, params["w_h"].dtype)
        carry0 = lstm_zero_carry(batch, params["w_h"].shape[0], dtype)
    if reverse:
        xs = reverse_padded(xs, lengths)
    if lengths is None:
        mask = jnp.ones((n_time, batch), bool)
    else:
        mask = jnp.arange(n_time)[:, None] < jnp.asarray(lengths)[None, :]  # [T, B]
    xs_t = jnp.swapaxes(xs, 0, 1)  # [T, B, D]
    if hoist:
        xw = lstm_project(params, xs_t)  # [T, B, 4H]: one matmul, time-major
        final, ys = _scan(params["w_h"], LSTMState(*carry0), xw, mask)
    else:
        w_x, b, w_h = params["w_x"], params["b"], params["w_h"]
        final, ys = _scan_inline(w_x, b, w_h, LSTMState(*carry0), xs_t, mask)
    ys = jnp.swapaxes(ys, 0, 1)
    return final, reverse_padded(ys, lengths) if reverse else ys
