"""Mamba-2 (Dao & Gu 2024, "Transformers are SSMs"): the SSD layer, a scalar decay per head;
its scan forms and its quadratic, attention-like form, equal (as mamba's ssd_minimal.py shows).

Letters: b batch, t / s positions, m model width, e = expand · m the inner width, h heads,
p head width (e = h p), n state size per head (d_state).

    [z, x, B, C, dt] = x_t W_in                     [b, t, e | e | n | n | h]
    x, B, C ← silu(x), silu(B), silu(C)             (Mamba-2 applies silu after its conv)
    Δ_t = softplus(dt_t + b_Δ)                      [b, t, h]
    a_t = exp(Δ_t A),  A = -exp(A_log)              [b, t, h]      one decay per head
    h_t = a_t h_{t-1} + (Δ_t B_t) x_tᵀ              [b, h, n, p]   the state
    y_t = h_tᵀ C_t + D ⊙ x_t                        [b, t, h, p]
    out_t = RMSNorm(y_t ⊙ silu(z_t)) W_out          [b, t, m]      (the gated norm)

The state is one linear_scan outer write (k = Δ B, v = x, q = C, a scalar decay per head) in
any of its forms, and 'quadratic' is SSD's dual form, a masked attention with the decay
matrix L_ts = exp(Σ_{r=s+1..t} Δ_r A) (linear_scan.quadratic):

    Y = (L ⊙ C Bᵀ) (Δ ⊙ X)

Left out of the Mamba-2 block: the width-4 convolution over (x, B, C) (a mixer takes the
short convolution in front of it, on its input: anatomy.mixers' conv option) and B/C groups
(one group: B and C shared by every head). Initialisation as Mamba-2: A uniform in [1, 16],
Δ₀ = softplus(b_Δ) log-uniform in [1e-3, 1e-1], D = 1.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from anatomy.axes import declare
from anatomy.errors import BadInputError
from anatomy.layers import dense, init_dense, init_rms_norm, rms_norm
from anatomy.mixers.shared import init_dt_bias
from anatomy.mixers.spec import MixerSpec, fn_apply, fn_step, zero
from anatomy.scan.linear import (
    CHUNK,
    FORMS,
    check_form,
    linear_scan,
    outer,
    quadratic,
    readout,
)

MAMBA2_FORMS = (*FORMS, "quadratic")
DT_RANGE = (1e-3, 1e-1)  # Δ₀ at initialisation, log-uniform
A_RANGE = (1.0, 16.0)  # -A at initialisation, uniform


class SSDState(NamedTuple):
    """h [b, h, n, p]: the SSD state per head."""

    h: jax.Array


def init_mamba2(key, d_model, expand=2, head_dim=16, d_state=16):
    """{'in': dense [m, 2e + 2n + h], 'b_dt', 'a_log', 'd': [h], 'norm': {'scale': [e]},
    'out': dense [e, m]}."""
    inner = int(expand * d_model)
    if min(inner, head_dim, d_state) < 1 or inner % head_dim:
        raise BadInputError(
            f"mamba2: the inner width expand·d_model={inner} must be a positive multiple of "
            f"head_dim={head_dim}, and d_state={d_state} positive"
        )
    n_heads = inner // head_dim
    k_in, k_out, k_dt, k_a = jax.random.split(key, 4)
    a = jax.random.uniform(k_a, (n_heads,), jnp.float32, *A_RANGE)
    per_head = {
        "b_dt": init_dt_bias(k_dt, n_heads, DT_RANGE),  # softplus⁻¹(Δ₀)
        "a_log": jnp.log(a),
        "d": jnp.ones((n_heads,), jnp.float32),
    }
    return {
        "in": init_dense(k_in, d_model, 2 * inner + 2 * d_state + n_heads, axes=("embed", None)),
        **declare(per_head, {name: ("heads",) for name in per_head}),
        "norm": init_rms_norm(inner, ("hidden",)),
        "out": init_dense(k_out, inner, d_model, axes=("hidden", "embed")),
    }


def _sizes(params):
    """(e, h, p, n) from the parameters' shapes."""
    inner, n_heads = params["out"]["w"].shape[0], params["a_log"].shape[0]
    d_state = (params["in"]["w"].shape[1] - 2 * inner - n_heads) // 2
    return inner, n_heads, inner // n_heads, d_state


def _inputs(params, x, lengths=None):
    """z [..., e], and the write: k = Δ B [..., h, n], v = x [..., h, p], q = C [..., h, n], log a
    [..., h]; past each length k = 0 and log a = 0."""
    inner, n_heads, head_dim, d_state = _sizes(params)
    z, xs, b_in, c_out, dt = jnp.split(
        dense(params["in"], x), [inner, 2 * inner, 2 * inner + d_state, 2 * inner + 2 * d_state], -1
    )
    xs, b_in, c_out = jax.nn.silu(xs), jax.nn.silu(b_in), jax.nn.silu(c_out)
    delta = jax.nn.softplus(dt + params["b_dt"])  # [..., h]
    log_a = -jnp.exp(params["a_log"]) * delta
    v = xs.reshape(xs.shape[:-1] + (n_heads, head_dim))
    k = delta[..., None] * b_in[..., None, :]  # Δ B per head [..., h, n]
    q = jnp.broadcast_to(c_out[..., None, :], k.shape)
    if lengths is not None:
        valid = (jnp.arange(x.shape[1])[None, :] < jnp.asarray(lengths)[:, None])[..., None]
        k, log_a = jnp.where(valid[..., None], k, 0.0), jnp.where(valid, log_a, 0.0)
    return z, k, v, q, log_a


def _out(params, y, v, z):
    """y = hᵀC [..., h, p] + D x, gated and normed, -> [..., m]."""
    y = y + params["d"][:, None] * v
    y = y.reshape(z.shape) * jax.nn.silu(z)
    return dense(params["out"], rms_norm(params["norm"], y))


def mamba2_zero_state(params, batch, dtype=jnp.float32):
    """h = 0 [b, h, n, p]."""
    _, n_heads, head_dim, d_state = _sizes(params)
    return SSDState(jnp.zeros((batch, n_heads, d_state, head_dim), dtype))


def mamba2(params, x, state=None, *, form="chunked", chunk=CHUNK, lengths=None):
    """x [b, t, m] -> (out [b, t, m], SSDState after the last (real) step).

    state: an SSDState to continue from or None (zeros); form: a linear_scan form or
    'quadratic' (SSD's attention-like dual form).
    """
    check_form(form, MAMBA2_FORMS, "mamba2: form")
    z, k, v, q, log_a = _inputs(params, x, lengths)
    h0 = None if state is None else state.h
    if form == "quadratic":
        y, h_last = quadratic(q, k, v, log_a, h0)
    else:
        a = jnp.exp(log_a)[..., None, None]
        y, h_last = linear_scan(a, (k, v), h0, q=q, form=form, chunk=chunk)
    return _out(params, y, v, z), SSDState(h_last)


def mamba2_step(params, state, x_t):
    """One position: x_t [b, m] -> (out [b, m], state)."""
    z, k, v, q, log_a = _inputs(params, x_t)
    h = jnp.exp(log_a)[..., None, None] * state.h + outer(k, v)
    return _out(params, readout(h, q), v, z), SSDState(h)


# ------------------------------------------------------------------------- the registration

SPEC = MixerSpec(
    name="mamba2",
    init=lambda key, m, c: init_mamba2(key, m, c.expand, c.head_dim, c.d_state),
    apply=fn_apply(mamba2),
    step=fn_step(mamba2_step),
    zero_state=zero(mamba2_zero_state),
    knobs=("expand", "head_dim", "d_state"),
    forms=MAMBA2_FORMS,
    defaults={"conv": 4, "expand": 2},
)
