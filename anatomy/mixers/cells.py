"""Recurrent cells as pure functions: vanilla RNN (tanh, Elman 1990), LSTM (Hochreiter &
Schmidhuber 1997), GRU (Cho et al. 2014), each a mixer too.

    RNN    h_t = tanh(x_t W_x + h_{t-1} W_h + b)                        W_x [D, H], W_h [H, H]
    LSTM   [i, f, g, o] = x_t W_x + h_{t-1} W_h + b                     W_x [D, 4H], W_h [H, 4H]
           c_t = σ(f) ⊙ c_{t-1} + σ(i) ⊙ tanh(g),  h_t = σ(o) ⊙ tanh(c_t)
    GRU    r, z = σ(x_t W_xr + h_{t-1} W_hr + b_r), σ(...)              W_x [D, 3H], W_h [H, 3H]
           n = tanh(x_t W_xn + b_xn + r ⊙ (h_{t-1} W_hn + b_hn))       (reset after, torch's;
           h_t = (1 - z) ⊙ n + z ⊙ h_{t-1}                               gru_paper: r before W_hn)

Every cell has the same signature, ``cell(params, carry, x) -> (carry, y)``,
with ``x`` [B, D], hidden size H, and ``y`` = the new hidden state h [B, H].

Each cell is split in two so that the formulas live in one place:

* ``*_project(params, x)``: the input projection ``x @ w_x + b`` [..., G*H]
  (G gates). It works on any leading shape, so the scan runner can apply it
  to a whole [B, T, D] sequence as ONE matmul before the loop ("hoisting").
* ``*_recur(params, carry, xw)``: one step given the projected input
  ``xw`` [B, G*H]; all gates' recurrent matmuls are fused into one
  ``h @ w_h`` with ``w_h`` [H, G*H].

The plain cell is ``recur(params, carry, project(params, x))``.

Initialisation (all cells): weights ~ U(-1/sqrt(H), 1/sqrt(H)) as in
``torch.nn.RNN/LSTM/GRU``; biases are zero (the LSTM forget-gate bias is
``forget_bias``, 1.0 by default, Jozefowicz et al. 2015).

Logical axes (anatomy.axes): the gate dimension G*H is 'hidden' (split over the
mesh's 'model' axis by default); the input dimension is never sharded.

The LSTM's and the GRU's fused layers (run_lstm, run_gru: one matmul per backward step) are
anatomy.scan.fused's engine fed with each cell's elementwise update (a FusedCell). No
associative operator composes two steps of a nonlinear cell, so each has one form,
'sequential': the registrations at the end (RNN, LSTM, GRU as mixers: apply is the scan
runner on the cell's path; GRU_PAPER a cell only) are read by anatomy.mixers.registry.
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from anatomy.axes import declare
from anatomy.mixers.spec import carry_h, cell_mixer, cell_spec, identity
from anatomy.scan.fused import FusedCell, run_fused
from anatomy.scan.sequences import check_inputs

# Every cell's parameters: w_x [D, G*H], w_h [H, G*H], b / b_x / b_h [G*H].
CELL_AXES = {
    "w_x": (None, "hidden"),
    "w_h": (None, "hidden"),
    "b": ("hidden",),
    "b_x": ("hidden",),
    "b_h": ("hidden",),
}


class LSTMState(NamedTuple):
    """LSTM carry: hidden state h [B, H] and cell state c [B, H]."""

    h: jax.Array
    c: jax.Array


def _check_dims(d_in, d_hidden):
    if int(d_in) < 1 or int(d_hidden) < 1:
        raise ValueError(
            f"d_in and d_hidden must be positive, got d_in={d_in}, d_hidden={d_hidden}"
        )


def _uniform(key, shape, d_hidden, dtype):
    """U(-1/sqrt(H), 1/sqrt(H)), torch's default for recurrent layers."""
    bound = 1.0 / jnp.sqrt(jnp.asarray(d_hidden, dtype))
    return jax.random.uniform(key, shape, dtype, -bound, bound)


def _project(params, x, bias_key):
    """x [..., D] @ w_x [D, G*H] + b [G*H] -> [..., G*H]."""
    w_x = params["w_x"]
    if x.shape[-1] != w_x.shape[0]:
        raise ValueError(f"input feature size {x.shape[-1]} does not match w_x rows {w_x.shape[0]}")
    return x @ w_x + params[bias_key]


# --------------------------------------------------------------------------- RNN


def init_rnn(key, d_in, d_hidden, dtype=jnp.float32):
    """Vanilla RNN parameters: {'w_x': [D, H], 'w_h': [H, H], 'b': [H]}."""
    _check_dims(d_in, d_hidden)
    kx, kh = jax.random.split(key)
    return declare(
        {
            "w_x": _uniform(kx, (d_in, d_hidden), d_hidden, dtype),
            "w_h": _uniform(kh, (d_hidden, d_hidden), d_hidden, dtype),
            "b": jnp.zeros((d_hidden,), dtype),
        },
        CELL_AXES,
    )


def rnn_project(params, x):
    """Input projection x [..., D] -> x @ w_x + b [..., H]."""
    return _project(params, x, "b")


def rnn_recur(params, carry, xw):
    """One RNN step from the projected input xw [B, H]: h' = tanh(xw + h @ w_h)."""
    h = jnp.tanh(xw + carry @ params["w_h"])
    return h, h


def rnn_cell(params, carry, x):
    """Elman RNN cell.

        h_t = tanh(x_t W_x + h_{t-1} W_h + b)

    Args: params from ``init_rnn``; carry = h [B, H]; x [B, D].
    Returns: (h_t, h_t), both [B, H].
    """
    return rnn_recur(params, carry, rnn_project(params, x))


def rnn_zero_carry(batch, d_hidden, dtype=jnp.float32):
    """Initial RNN carry: h = 0 [B, H]."""
    return jnp.zeros((batch, d_hidden), dtype)


# -------------------------------------------------------------------------- LSTM


def init_lstm(key, d_in, d_hidden, forget_bias=1.0, dtype=jnp.float32):
    """LSTM parameters: {'w_x': [D, 4H], 'w_h': [H, 4H], 'b': [4H]}, gate order i, f, g, o.

    The forget-gate slice of ``b`` is set to ``forget_bias``; the rest is zero.
    """
    _check_dims(d_in, d_hidden)
    kx, kh = jax.random.split(key)
    b = jnp.zeros((4, d_hidden), dtype).at[1].set(forget_bias)  # [4, H], row 1 = forget gate
    return declare(
        {
            "w_x": _uniform(kx, (d_in, 4 * d_hidden), d_hidden, dtype),
            "w_h": _uniform(kh, (d_hidden, 4 * d_hidden), d_hidden, dtype),
            "b": b.reshape(4 * d_hidden),  # [4H]
        },
        CELL_AXES,
    )


def lstm_project(params, x):
    """Input projection x [..., D] -> x @ w_x + b [..., 4H] (gates i, f, g, o)."""
    return _project(params, x, "b")


def lstm_update(c, gates):
    """The LSTM's elementwise part: cell state c [B, H] and pre-activations gates [B, 4H]
    (x W_x + h W_h + b, order i, f, g, o) -> LSTMState(h, c) of the step; see ``lstm_cell``."""
    i, f, g, o = jnp.split(gates, 4, axis=-1)  # 4 x [B, H]
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return LSTMState(h, c)


def lstm_recur(params, carry, xw):
    """One LSTM step from the projected input xw [B, 4H]; see ``lstm_cell``."""
    h, c = carry
    new = lstm_update(c, xw + h @ params["w_h"])  # [B, 4H], one fused matmul
    return new, new.h


def lstm_cell(params, carry, x):
    """LSTM cell (Hochreiter & Schmidhuber 1997, with forget gate; torch's layout).

        [a_i, a_f, a_g, a_o] = x_t W_x + h_{t-1} W_h + b      (each [B, H])
        i = σ(a_i)   f = σ(a_f)   g = tanh(a_g)   o = σ(a_o)
        c_t = f ⊙ c_{t-1} + i ⊙ g
        h_t = o ⊙ tanh(c_t)

    Args: params from ``init_lstm``; carry = LSTMState(h [B, H], c [B, H]); x [B, D].
    Returns: (LSTMState(h_t, c_t), h_t).
    """
    return lstm_recur(params, carry, lstm_project(params, x))


def lstm_zero_carry(batch, d_hidden, dtype=jnp.float32):
    """Initial LSTM carry: LSTMState(h=0, c=0), each [B, H]."""
    z = jnp.zeros((batch, d_hidden), dtype)
    return LSTMState(z, z)


# --------------------------------------------------------------------------- GRU


def init_gru(key, d_in, d_hidden, dtype=jnp.float32):
    """GRU parameters: {'w_x': [D, 3H], 'w_h': [H, 3H], 'b_x': [3H], 'b_h': [3H]}, gates r, z, n.

    Two biases as in torch: b_h's n slice sits inside the reset gate's product.
    """
    _check_dims(d_in, d_hidden)
    kx, kh = jax.random.split(key)
    return declare(
        {
            "w_x": _uniform(kx, (d_in, 3 * d_hidden), d_hidden, dtype),
            "w_h": _uniform(kh, (d_hidden, 3 * d_hidden), d_hidden, dtype),
            "b_x": jnp.zeros((3 * d_hidden,), dtype),
            "b_h": jnp.zeros((3 * d_hidden,), dtype),
        },
        CELL_AXES,
    )


def gru_project(params, x):
    """Input projection x [..., D] -> x @ w_x + b_x [..., 3H] (gates r, z, n)."""
    return _project(params, x, "b_x")


def gru_recur(params, carry, xw, *, reset_after=True):
    """One GRU step from the projected input xw [B, 3H]; see ``gru_cell``."""
    h = carry
    xr, xz, xn = jnp.split(xw, 3, axis=-1)  # 3 x [B, H]
    w_h, b_h = params["w_h"], params["b_h"]
    n_hidden = h.shape[-1]
    if reset_after:
        hw = h @ w_h + b_h  # [B, 3H], one fused matmul
        hr, hz, hn = jnp.split(hw, 3, axis=-1)
        r = jax.nn.sigmoid(xr + hr)
        z = jax.nn.sigmoid(xz + hz)
        n = jnp.tanh(xn + r * hn)
    else:
        # r must be known before the n matmul: one fused [H, 2H] matmul, then [H, H].
        hw = h @ w_h[:, : 2 * n_hidden] + b_h[: 2 * n_hidden]  # [B, 2H]
        hr, hz = jnp.split(hw, 2, axis=-1)
        r = jax.nn.sigmoid(xr + hr)
        z = jax.nn.sigmoid(xz + hz)
        n = jnp.tanh(xn + (r * h) @ w_h[:, 2 * n_hidden :] + b_h[2 * n_hidden :])
    h = (1.0 - z) * n + z * h
    return h, h


def gru_cell(params, carry, x, *, reset_after=True):
    """GRU cell (Cho et al. 2014), gate order r, z, n.

        r = σ(x_t W_xr + b_xr + h_{t-1} W_hr + b_hr)
        z = σ(x_t W_xz + b_xz + h_{t-1} W_hz + b_hz)
        reset_after=True  (default; torch.nn.GRU, cuDNN, flax.linen.GRUCell):
            n = tanh(x_t W_xn + b_xn + r ⊙ (h_{t-1} W_hn + b_hn))
        reset_after=False (the original paper):
            n = tanh(x_t W_xn + b_xn + (r ⊙ h_{t-1}) W_hn + b_hn)
        h_t = (1 - z) ⊙ n + z ⊙ h_{t-1}

    Args: params from ``init_gru``; carry = h [B, H]; x [B, D].
    Returns: (h_t, h_t), both [B, H].
    """
    return gru_recur(params, carry, gru_project(params, x), reset_after=reset_after)


def gru_paper_recur(params, carry, xw):
    """``gru_recur`` with reset_after=False (Cho et al. 2014)."""
    return gru_recur(params, carry, xw, reset_after=False)


def gru_paper_cell(params, carry, x):
    """``gru_cell`` with reset_after=False: n = tanh(x W_xn + b_xn + (r ⊙ h) W_hn + b_hn)."""
    return gru_cell(params, carry, x, reset_after=False)


def gru_zero_carry(batch, d_hidden, dtype=jnp.float32):
    """Initial GRU carry: h = 0 [B, H]."""
    return jnp.zeros((batch, d_hidden), dtype)


# ----------------------------------------------------- the fused layers (one matmul per step)


_LSTM = FusedCell(
    pre=lambda xw, hw: xw + hw,  # gates [B, 4H], saved as they are
    update=lambda carry, gates: lstm_update(carry.c, gates),
    emit=lambda gates: gates,
    rebuild=lambda _, gates: gates,
    needs_xw=False,
    d_x=lambda dz: dz,
    d_h=lambda dz: dz,
    hidden=lambda carry: carry.h,
    with_hidden=lambda carry, h: carry._replace(h=h),
)


def _gru_update(h, s):
    """cells.gru_recur (reset_after=True) from s = (gx, gh) = (x W_x + b_x, h W_h + b_h)."""
    gx, gh = s
    xr, xz, xn = jnp.split(gx, 3, axis=-1)  # 3 x [B, H]
    hr, hz, hn = jnp.split(gh, 3, axis=-1)
    r = jax.nn.sigmoid(xr + hr)
    z = jax.nn.sigmoid(xz + hz)
    n = jnp.tanh(xn + r * hn)
    return (1.0 - z) * n + z * h


_GRU = FusedCell(
    pre=lambda xw, hw: (xw, hw),
    update=_gru_update,
    emit=lambda s: s[1],  # gh; gx is the input projection (the hoisted buffer, or stacked)
    rebuild=lambda xw, hw: (xw, hw),
    needs_xw=True,
    d_x=lambda ds: ds[0],
    d_h=lambda ds: ds[1],
    hidden=lambda h: h,
    with_hidden=lambda _, h: h,
)


@functools.partial(jax.jit, static_argnames=("reverse", "hoist"))
def run_lstm(params, xs, *, lengths=None, carry0=None, reverse=False, hoist=True):
    """``scan.run('lstm', params, xs, lengths=..., carry0=..., reverse=..., hoist=...)`` with
    the one-matmul-per-step backward pass (module doc). hoist=True: the input projection as
    one matmul before the scan; False: inside each step (and its gradients after the backward
    scan). Returns (final LSTMState, ys [B, T, H])."""
    xs = jnp.asarray(xs)
    check_inputs(params, xs, lengths)
    if carry0 is None:
        dtype = jnp.result_type(xs.dtype, params["w_h"].dtype)
        carry0 = lstm_zero_carry(xs.shape[0], params["w_h"].shape[0], dtype)
    return run_fused(
        _LSTM, lstm_project, "b", None, params, xs, lengths, LSTMState(*carry0), reverse, hoist
    )


@functools.partial(jax.jit, static_argnames=("reverse", "hoist"))
def run_gru(params, xs, *, lengths=None, carry0=None, reverse=False, hoist=True):
    """``scan.run('gru', params, xs, lengths=..., carry0=..., reverse=..., hoist=...)`` (the
    reset_after=True GRU of cells.gru_recur; params w_x [D, 3H], w_h [H, 3H], b_x, b_h [3H])
    with the one-matmul-per-step backward pass (module doc): the backward scan does
    dh_{t-1} += dgh_t W_hᵀ only; dW_h, d b_h (and with hoist=False dx, dW_x, d b_x) are large
    matmuls / sums after it. Returns (final h [B, H], ys [B, T, H])."""
    xs = jnp.asarray(xs)
    check_inputs(params, xs, lengths)
    if carry0 is None:
        dtype = jnp.result_type(xs.dtype, params["w_h"].dtype)
        carry0 = gru_zero_carry(xs.shape[0], params["w_h"].shape[0], dtype)
    return run_fused(_GRU, None, "b_x", "b_h", params, xs, lengths, carry0, reverse, hoist)


# ------------------------------------------------------------------------ the registrations

RNN_SPEC = cell_mixer(cell_spec(globals(), "rnn", identity))
LSTM_SPEC = cell_mixer(cell_spec(globals(), "lstm", carry_h, fused=run_lstm))
GRU_SPEC = cell_mixer(cell_spec(globals(), "gru", identity, fused=run_gru))
GRU_PAPER_CELL = cell_spec(globals(), "gru_paper", identity, shares="gru")  # a cell only
