"""Quasi-recurrent cells (SRU, Lei et al. 2017; QRNN, Bradbury et al. 2017): heavy gates for
all steps at once, a cheap elementwise linear recurrence left, computed in O(log T) depth with
``jax.lax.associative_scan`` by default.

    SRU    [z_t, a_f, a_r] = x_t W,  f_t = σ(a_f + b_f),  r_t = σ(a_r + b_r)   W [D, 3H]
           c_t = f_t ⊙ c_{t-1} + (1 - f_t) ⊙ z_t,  h_t = r_t ⊙ tanh(c_t) + (1 - r_t) ⊙ x_t W_skip
    QRNN   [a_z, a_f, a_o] = x_t W + x_{t-1} W_prev + b                     W, W_prev [D, 3H]
           c_t = f_t ⊙ c_{t-1} + (1 - f_t) ⊙ z_t,  h_t = o_t ⊙ c_t          (c, h [B, H])

The linear recurrence c_t = a_t ⊙ c_{t-1} + b_t composes associatively:
    (a1, b1) ∘ (a2, b2) = (a1 ⊙ a2, a2 ⊙ b1 + b2)      (apply 1 first, then 2)
so all prefixes come out of one parallel scan; ``linear_recurrence_sequential`` is
its serial twin with ``jax.lax.scan``. Both are anatomy.scan.linear_scan, the one entry point
every linear recurrence runs on, in the form asked (``form=``: 'associative', 'sequential',
'chunked').

SRU and QRNN are also cells, ``cell(params, carry, x) -> (carry, y)`` with the split
``*_project`` (every matmul, hoistable over time) / ``*_recur`` (one elementwise step), for
decoding one token at a time; ``*_sequence`` is the same layer over a whole sequence (the
parallel or the serial scan). Their carries keep the last output h beside the state c, so
a translator can read h (its attention query) from the carry as it does for an LSTM. They are
cells only, no mixers: their registrations (SRU_CELL, QRNN_CELL) end the file.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from anatomy.axes import declare
from anatomy.mixers.shared import check_xs, last_real, zero_padding
from anatomy.mixers.spec import carry_h, cell_spec
from anatomy.scan.linear import linear_scan

# Logical axes (anatomy.axes): the gate dimension is 'hidden', the input one unsharded.
SRU_AXES = {"w": (None, "hidden"), "b": ("hidden",), "w_skip": (None, "hidden")}
QRNN_AXES = {"w": (None, "hidden"), "w_prev": (None, "hidden"), "b": ("hidden",)}


def linear_recurrence(a, b, c0=None, *, lengths=None, form="associative"):
    """c_t = a_t ⊙ c_{t-1} + b_t for all t: anatomy.scan.linear_scan's states, by default in its
    associative form (``jax.lax.associative_scan``, O(log T) depth).

    Args: a, b [B, T, H]; c0 [B, H] or None (zeros); lengths [B] int or None: past its
      length a sequence's state stays frozen (a = 1, b = 0 there); form: a linear_scan form.
    Returns: cs [B, T, H], the state after every step (cs[:, -1] is the final state).
    """
    return linear_scan(a, b, c0, form=form, lengths=lengths)[0]


def linear_recurrence_sequential(a, b, c0=None, *, lengths=None):
    """The serial twin of ``linear_recurrence`` with ``jax.lax.scan`` (same args, same result)."""
    return linear_recurrence(a, b, c0, lengths=lengths, form="sequential")


def quasi_recurrence(f, z, c0=None, *, lengths=None, form="associative"):
    """QRNN f-pooling / SRU state: c_t = f_t ⊙ c_{t-1} + (1 - f_t) ⊙ z_t.

    Args: f (forget gate, in (0, 1)), z (candidate), both [B, T, H]; c0 [B, H] or None;
      lengths [B] or None; form: a linear_scan form ('associative': jax.lax.associative_scan,
      'sequential': jax.lax.scan, 'chunked').
    Returns: cs [B, T, H].
    """
    return linear_recurrence(f, (1.0 - f) * z, c0, lengths=lengths, form=form)


def init_sru(key, d_in, d_hidden, dtype=jnp.float32):
    """SRU parameters: {'w': [D, 3H] (blocks z, f, r), 'b': [2H] (f, r)}, plus 'w_skip' [D, H]
    when D != H (the highway connection then needs a projection). Weights ~ U(±1/sqrt(D))."""
    if int(d_in) < 1 or int(d_hidden) < 1:
        raise ValueError(
            f"d_in and d_hidden must be positive, got d_in={d_in}, d_hidden={d_hidden}"
        )
    k1, k2 = jax.random.split(key)
    bound = 1.0 / jnp.sqrt(jnp.asarray(d_in, dtype))
    params = {
        "w": jax.random.uniform(k1, (d_in, 3 * d_hidden), dtype, -bound, bound),
        "b": jnp.zeros((2 * d_hidden,), dtype),
    }
    if d_in != d_hidden:
        params["w_skip"] = jax.random.uniform(k2, (d_in, d_hidden), dtype, -bound, bound)
    return declare(params, SRU_AXES)


# ----------------------------------------------------------------------------- SRU


class SRUState(NamedTuple):
    """SRU carry: state c [B, H] and the last output h [B, H] (h does not feed back)."""

    c: jax.Array
    h: jax.Array


def sru_project(params, x):
    """Every matmul of the SRU: x [..., D] -> [z, a_f, a_r, skip] [..., 4H], skip = x W_skip
    (or x itself when D = H)."""
    if x.shape[-1] != params["w"].shape[0]:
        raise ValueError(f"sru: input size {x.shape[-1]} != w rows {params['w'].shape[0]}")
    skip = x @ params["w_skip"] if "w_skip" in params else x
    return jnp.concatenate([x @ params["w"], skip], axis=-1)


def _sru_gates(params, xw):
    """xw [..., 4H] -> z, f, r, skip (each [..., H])."""
    z, a_f, a_r, skip = jnp.split(xw, 4, axis=-1)
    b_f, b_r = jnp.split(params["b"], 2)
    return z, jax.nn.sigmoid(a_f + b_f), jax.nn.sigmoid(a_r + b_r), skip


def sru_recur(params, carry, xw):
    """One SRU step from the projected input xw [B, 4H]; see ``sru``."""
    z, f, r, skip = _sru_gates(params, xw)
    c = f * carry.c + (1.0 - f) * z
    h = r * jnp.tanh(c) + (1.0 - r) * skip
    return SRUState(c, h), h


def sru_cell(params, carry, x):
    """One SRU step, x [B, D] -> (SRUState(c_t, h_t), h_t); the formulas are ``sru``'s."""
    return sru_recur(params, carry, sru_project(params, x))


def sru_zero_carry(batch, d_hidden, dtype=jnp.float32):
    """Initial SRU carry: SRUState(c=0, h=0), each [B, H]."""
    z = jnp.zeros((batch, d_hidden), dtype)
    return SRUState(z, z)


def sru_sequence(params, xs, carry0=None, *, lengths=None, form="associative"):
    """The SRU over a whole sequence: xs [B, T, D] -> (SRUState after the last real step,
    hs [B, T, H], zero past each length); carry0 an SRUState or None (zeros); form: the
    recurrence's linear_scan form."""
    xs = check_xs(xs, params["w"].shape[0], "sru")
    z, f, r, skip = _sru_gates(params, sru_project(params, xs))  # 4 x [B, T, H]
    h0 = jnp.zeros_like(z[:, 0]) if carry0 is None else carry0.h
    cs = quasi_recurrence(f, z, None if carry0 is None else carry0.c, lengths=lengths, form=form)
    hs = r * jnp.tanh(cs) + (1.0 - r) * skip  # [B, T, H]
    return SRUState(cs[:, -1], last_real(hs, lengths, h0)), zero_padding(hs, lengths)


def sru(params, xs, c0=None, *, lengths=None, form="associative"):
    """Simple Recurrent Unit layer (Lei et al. 2017, the version without v ⊙ c_{t-1} in the gates).

        [z_t, a_f, a_r] = x_t W                  (one [B, T, D] x [D, 3H] matmul for all t)
        f_t = σ(a_f + b_f)     r_t = σ(a_r + b_r)
        c_t = f_t ⊙ c_{t-1} + (1 - f_t) ⊙ z_t    (the only serial part: elementwise)
        h_t = r_t ⊙ tanh(c_t) + (1 - r_t) ⊙ x_t W_skip    (W_skip = I when D = H)

    Args: params from ``init_sru``; xs [B, T, D]; c0 [B, H] or None; lengths [B] or None
      (h is zero past each length, c frozen); form: the recurrence's linear_scan form.
    Returns: (c_final [B, H], hs [B, T, H]).
    """
    carry0 = None if c0 is None else SRUState(jnp.asarray(c0), jnp.zeros_like(c0))
    state, hs = sru_sequence(params, xs, carry0, lengths=lengths, form=form)
    return state.c, hs


# ---------------------------------------------------------------------------- QRNN


class QRNNState(NamedTuple):
    """QRNN carry: state c [B, H], last output h [B, H], and the previous input's share of
    the width-2 convolution, x_{t-1} W_prev [B, 3H] (zero before the first step)."""

    c: jax.Array
    h: jax.Array
    xw_prev: jax.Array


def init_qrnn(key, d_in, d_hidden, dtype=jnp.float32):
    """QRNN parameters: {'w': [D, 3H] (x_t; blocks z, f, o), 'w_prev': [D, 3H] (x_{t-1}),
    'b': [3H]}. Weights ~ U(±1/sqrt(2D)) (the convolution's fan-in is 2D)."""
    if int(d_in) < 1 or int(d_hidden) < 1:
        raise ValueError(
            f"d_in and d_hidden must be positive, got d_in={d_in}, d_hidden={d_hidden}"
        )
    k1, k2 = jax.random.split(key)
    bound = 1.0 / jnp.sqrt(jnp.asarray(2 * d_in, dtype))
    shape = (d_in, 3 * d_hidden)
    params = {
        "w": jax.random.uniform(k1, shape, dtype, -bound, bound),
        "w_prev": jax.random.uniform(k2, shape, dtype, -bound, bound),
        "b": jnp.zeros((3 * d_hidden,), dtype),
    }
    return declare(params, QRNN_AXES)


def qrnn_project(params, x):
    """Every matmul of the QRNN: x [..., D] -> [x W, x W_prev] [..., 6H]."""
    if x.shape[-1] != params["w"].shape[0]:
        raise ValueError(f"qrnn: input size {x.shape[-1]} != w rows {params['w'].shape[0]}")
    return jnp.concatenate([x @ params["w"], x @ params["w_prev"]], axis=-1)


def _qrnn_gates(params, a):
    """Pre-activations a [..., 3H] (x_t W + x_{t-1} W_prev) -> z, f, o (each [..., H])."""
    a_z, a_f, a_o = jnp.split(a + params["b"], 3, axis=-1)
    return jnp.tanh(a_z), jax.nn.sigmoid(a_f), jax.nn.sigmoid(a_o)


def qrnn_recur(params, carry, xw):
    """One QRNN step from the projected input xw [B, 6H]; see ``qrnn``."""
    cur, prev = jnp.split(xw, 2, axis=-1)  # x_t W, x_t W_prev: each [B, 3H]
    z, f, o = _qrnn_gates(params, cur + carry.xw_prev)
    c = f * carry.c + (1.0 - f) * z
    h = o * c
    return QRNNState(c, h, prev), h


def qrnn_cell(params, carry, x):
    """One QRNN step, x [B, D] -> (QRNNState, h_t [B, H]); the formulas are ``qrnn``'s."""
    return qrnn_recur(params, carry, qrnn_project(params, x))


def qrnn_zero_carry(batch, d_hidden, dtype=jnp.float32):
    """Initial QRNN carry: c = h = 0 [B, H], x_{-1} W_prev = 0 [B, 3H] (causal zero padding)."""
    z = jnp.zeros((batch, d_hidden), dtype)
    return QRNNState(z, z, jnp.zeros((batch, 3 * d_hidden), dtype))


def qrnn(params, xs, carry0=None, *, lengths=None, form="associative"):
    """Quasi-recurrent layer (Bradbury et al. 2017), convolution width 2, fo-pooling.

        [a_z, a_f, a_o] = x_t W + x_{t-1} W_prev + b     (x_0 = 0: a causal convolution)
        z_t = tanh(a_z)   f_t = σ(a_f)   o_t = σ(a_o)
        c_t = f_t ⊙ c_{t-1} + (1 - f_t) ⊙ z_t            (the only serial part: elementwise)
        h_t = o_t ⊙ c_t

    Args: params from ``init_qrnn``; xs [B, T, D]; carry0 a QRNNState or None (zeros; its
      xw_prev stands in for x_0 W_prev); lengths [B] or None (h zero past each length);
      form: the recurrence's linear_scan form.
    Returns: (QRNNState after the last real step, hs [B, T, H]).
    """
    xs = check_xs(xs, params["w"].shape[0], "qrnn")
    cur, prev = jnp.split(qrnn_project(params, xs), 2, axis=-1)  # [B, T, 3H] each
    if carry0 is None:
        carry0 = qrnn_zero_carry(xs.shape[0], cur.shape[-1] // 3, cur.dtype)
    shifted = jnp.concatenate([carry0.xw_prev[:, None], prev[:, :-1]], axis=1)  # x_{t-1} W_prev
    z, f, o = _qrnn_gates(params, cur + shifted)
    cs = quasi_recurrence(f, z, carry0.c, lengths=lengths, form=form)
    hs = o * cs  # [B, T, H]
    final = QRNNState(
        cs[:, -1], last_real(hs, lengths, carry0.h), last_real(prev, lengths, carry0.xw_prev)
    )
    return final, zero_padding(hs, lengths)


# ------------------------------------------------------------------------ the registrations


def _sru_from_hidden(params, h0):
    return SRUState(h0, h0)


def _qrnn_from_hidden(params, h0):
    return QRNNState(h0, h0, jnp.zeros(h0.shape[:-1] + (params["b"].shape[0],), h0.dtype))


SRU_CELL = cell_spec(globals(), "sru", carry_h, sequence=sru_sequence, from_hidden=_sru_from_hidden)
QRNN_CELL = cell_spec(globals(), "qrnn", carry_h, sequence=qrnn, from_hidden=_qrnn_from_hidden)
