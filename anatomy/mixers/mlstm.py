"""The mLSTM (Beck et al. 2024, "xLSTM"): a matrix memory with exponential input gates, its
normaliser and its stabiliser; the recurrent form and the paper's parallel form (here
'quadratic', the name every mixer gives its attention-like T x T form), equal.

Letters: b batch, t / s positions, m model width, h heads, k key width, v value width.

    q_t = x_t W_q,  k_t = x_t W_k / √k,  v_t = x_t W_v        [b, t, h, k|v]
    ĩ_t = x_t w_i + b_i,  log f_t = log σ(x_t w_f + b_f)      [b, t, h]   (one per head)
    C_t = f_t C_{t-1} + exp(ĩ_t) k_t v_tᵀ                     [b, h, k, v]
    n_t = f_t n_{t-1} + exp(ĩ_t) k_t                          [b, h, k]
    h̃_t = C_tᵀ q_t / max(|n_tᵀ q_t|, 1)                       [b, t, h, v]
    out_t = (σ(x_t W_o) ⊙ RMSNorm(h̃_t)) W_out                 [b, t, m]   (per-head norm)

exp(ĩ) overflows, so the state is kept stabilised (the paper's eqs. 15-17):

    m_t = max(log f_t + m_{t-1}, ĩ_t)                         the stabiliser [b, h]
    C_t ← exp(-m_t) C_t, n_t ← exp(-m_t) n_t, and the floor 1 becomes exp(-m_t):
    C_t = exp(log f_t + m_{t-1} - m_t) C_{t-1} + exp(ĩ_t - m_t) k_t v_tᵀ

The stabilised update is again linear in (C, n) once m is known, with a decay a_t =
exp(log f_t + m_{t-1} - m_t) <= 1 and a write exp(ĩ_t - m_t) k_t v_tᵀ <= k vᵀ: m is computed
first (a max-plus scan, m_t = max(log f_t + m_{t-1}, ĩ_t), associative like the linear one),
then (C, n) is one linear_scan outer write with n the last column of C (v' = [v, 1]), in any
of its forms. A fresh state has m_0 = -∞ (no history), so m_t = max_{s<=t} D̃_ts exactly as
in the paper's parallel form:

    D̃_ts = Σ_{r=s+1..t} log f_r + ĩ_s (s <= t),  m_t = max_s D̃_ts,  D = exp(D̃ - m_t)
    h̃ = ((Q Kᵀ) ⊙ D) V / max(|((Q Kᵀ) ⊙ D) 1|, exp(-m_t))      'quadratic' (eqs. 19-27)

Initialisation follows xLSTM: forget-gate biases from 3 to 6 over the heads (f near 1), input
gates at 0.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from anatomy.layers import init_rms_norm, rms_norm
from anatomy.mixers import shared as hd
from anatomy.mixers.spec import MixerSpec, fn_apply, fn_step, heads_init, zero
from anatomy.scan.linear import (
    CHUNK,
    FORMS,
    check_form,
    linear_scan,
    outer,
    readout,
    segment_sums,
)

MLSTM_FORMS = (*FORMS, "quadratic")
FORGET_BIAS = (3.0, 6.0)  # the forget gates' initial biases, linearly over the heads


class MLSTMState(NamedTuple):
    """c [b, h, k, v + 1]: the stabilised C with n as its last column; m [b, h] the stabiliser."""

    c: jax.Array
    m: jax.Array


def init_mlstm(key, d_model, n_heads=4, d_key=None, d_value=None):
    """{'w_q', 'w_k': [m, h, k], 'w_v', 'w_o': [m, h, v], 'i', 'f': per-head gates,
    'norm': {'scale': [h, v]}, 'w_out': [h, v, m]}; k = v = m / h by default."""
    d_key, d_value = hd.head_sizes("mlstm", d_model, n_heads, d_key, d_value)
    ks = jax.random.split(key, 7)
    return {
        "w_q": hd.init_heads(ks[0], d_model, n_heads, d_key),
        "w_k": hd.init_heads(ks[1], d_model, n_heads, d_key),
        "w_v": hd.init_heads(ks[2], d_model, n_heads, d_value),
        "w_o": hd.init_heads(ks[3], d_model, n_heads, d_value),
        "i": hd.init_gate(ks[4], d_model, n_heads, 0.0),
        "f": hd.init_gate(ks[5], d_model, n_heads, jnp.linspace(*FORGET_BIAS, n_heads)),
        "norm": init_rms_norm((n_heads, d_value), ("heads", "head_dim")),
        "w_out": hd.init_merge(ks[6], n_heads, d_value, d_model),
    }


def _inputs(params, x, lengths=None):
    """q, k/√k [..., h, k], v' = [v, 1] [..., h, v + 1], ĩ, log f [..., h], o [..., h, v].
    Past each length (x [b, t, m] only): log f = 0 and ĩ = -∞, so nothing moves."""
    q, k, v = (hd.project(x, params[w]) for w in ("w_q", "w_k", "w_v"))
    k = k / jnp.sqrt(jnp.asarray(k.shape[-1], k.dtype))
    v1 = jnp.concatenate([v, jnp.ones(v.shape[:-1] + (1,), v.dtype)], axis=-1)
    i_tilde, log_f = hd.gate(params["i"], x), jax.nn.log_sigmoid(hd.gate(params["f"], x))
    if lengths is not None:
        valid = (jnp.arange(x.shape[1])[None, :] < jnp.asarray(lengths)[:, None])[..., None]
        i_tilde, log_f = jnp.where(valid, i_tilde, -jnp.inf), jnp.where(valid, log_f, 0.0)
    return q, k, v1, i_tilde, log_f, jax.nn.sigmoid(hd.project(x, params["w_o"]))


def _out(params, y1, m, o):
    """[C̃ᵀq, ñᵀq] [..., h, v + 1] and m [..., h] -> the gated, normed, merged output [..., m]."""
    denom = jnp.maximum(jnp.abs(y1[..., -1]), jnp.exp(-m))[..., None]
    return hd.merge(o * rms_norm(params["norm"], y1[..., :-1] / denom), params["w_out"])


def stabiliser(log_f, i_tilde, m0, form="sequential"):
    """m_t = max(log f_t + m_{t-1}, ĩ_t) for every t: log_f, i_tilde [b, t, h], m0 [b, h] ->
    m [b, t, h]. A max-plus linear recurrence: jax.lax.scan for form='sequential', else
    jax.lax.associative_scan over (Σ log f, m) pairs, (g1, m1) ∘ (g2, m2) = (g1 + g2,
    max(m1 + g2, m2))."""
    first = jnp.maximum(log_f[:, 0] + m0, i_tilde[:, 0])
    if form == "sequential":

        def step(m, gi):
            m = jnp.maximum(gi[0] + m, gi[1])
            return m, m

        _, ms = jax.lax.scan(
            step, first, (jnp.swapaxes(log_f[:, 1:], 0, 1), i_tilde[:, 1:].swapaxes(0, 1))
        )
        return jnp.concatenate([first[:, None], jnp.swapaxes(ms, 0, 1)], axis=1)

    def combine(left, right):
        (g1, m1), (g2, m2) = left, right
        return g1 + g2, jnp.maximum(m1 + g2, m2)

    _, ms = jax.lax.associative_scan(combine, (log_f, i_tilde.at[:, 0].set(first)), axis=1)
    return ms


def mlstm_zero_state(params, batch, dtype=jnp.float32):
    """C = n = 0 [b, h, k, v + 1], m = -∞ [b, h] (no history)."""
    _, h, k = params["w_q"].shape
    v1 = params["w_v"].shape[-1] + 1
    return MLSTMState(jnp.zeros((batch, h, k, v1), dtype), jnp.full((batch, h), -jnp.inf, dtype))


def _quadratic(q, k, v1, i_tilde, log_f, c0, m0):
    """The paper's parallel form, 'quadratic' (with a starting state): (y1, m, c_last, m_last)."""
    seg = segment_sums(jnp.moveaxis(log_f, 1, -1))  # [b, h, t, s]: Σ_{r=s+1..t} log f_r
    d_tilde = seg + jnp.moveaxis(i_tilde, 1, -1)[..., None, :]  # [b, h, t, s]
    from_start = jnp.moveaxis(jnp.cumsum(log_f, axis=1), 1, -1) + m0[..., None]  # [b, h, t]
    m = jnp.maximum(jnp.max(d_tilde, axis=-1), from_start)  # [b, h, t]
    dmat = jnp.exp(d_tilde - m[..., None])
    scores = jnp.einsum("bthk,bshk->bhts", q, k) * dmat
    start = jnp.exp(from_start - m)  # the starting state's weight [b, h, t]
    y1 = jnp.einsum("bhts,bshv->bthv", scores, v1)
    y1 = y1 + jnp.moveaxis(start, -1, 1)[..., None] * readout(c0[:, None], q)
    c_last = jnp.einsum("bhs,bshk,bshv->bhkv", dmat[..., -1, :], k, v1)
    c_last = c_last + start[..., -1, None, None] * c0
    return y1, jnp.moveaxis(m, -1, 1), c_last, m[..., -1]


def mlstm(params, x, state=None, *, form="sequential", chunk=CHUNK, lengths=None):
    """x [b, t, m] -> (out [b, t, m], MLSTMState after the last (real) step).

    state: an MLSTMState to continue from or None (fresh); form: a linear_scan form or
    'quadratic' (the paper's parallel form); lengths [b] or None.
    """
    check_form(form, MLSTM_FORMS, "mlstm: form")
    q, k, v1, i_tilde, log_f, o = _inputs(params, x, lengths)
    if state is None:
        state = mlstm_zero_state(params, x.shape[0], q.dtype)
    if form == "quadratic":
        y1, m, c_last, m_last = _quadratic(q, k, v1, i_tilde, log_f, state.c, state.m)
        return _out(params, y1, m, o), MLSTMState(c_last, m_last)
    m = stabiliser(log_f, i_tilde, state.m, form)  # [b, t, h]
    m_prev = jnp.concatenate([state.m[:, None], m[:, :-1]], axis=1)
    a = jnp.exp(log_f + m_prev - m)[..., None, None]  # [b, t, h, 1, 1], <= 1
    written = jnp.exp(i_tilde - m)[..., None] * k  # exp(ĩ - m) k
    y1, c_last = linear_scan(a, (written, v1), state.c, q=q, form=form, chunk=chunk)
    return _out(params, y1, m, o), MLSTMState(c_last, m[:, -1])


def mlstm_step(params, state, x_t):
    """One position: x_t [b, m] -> (out [b, m], state); the stabilised update above."""
    q, k, v1, i_tilde, log_f, o = _inputs(params, x_t)
    m = jnp.maximum(log_f + state.m, i_tilde)
    a = jnp.exp(log_f + state.m - m)[..., None, None]
    c = a * state.c + outer(jnp.exp(i_tilde - m)[..., None] * k, v1)
    return _out(params, readout(c, q), m, o), MLSTMState(c, m)


# ------------------------------------------------------------------------- the registration

SPEC = MixerSpec(
    name="mlstm",
    init=heads_init(init_mlstm),
    apply=fn_apply(mlstm),
    step=fn_step(mlstm_step),
    zero_state=zero(mlstm_zero_state),
    knobs=("n_heads", "d_key", "d_value"),
    forms=MLSTM_FORMS,
    defaults={"conv": 4},
)
