"""Gated DeltaNet (Yang, Kautz & Hatamizadeh 2024): the delta rule with a gate, a matrix
transition; its sequential and associative forms through linear_scan, its chunked form by the
UT transform.

Letters: b batch, t / s positions, m model width, h heads, k key width, v value width,
C chunk length, n chunks. The state is h = Sᵀ [b, h, k, v] (the paper's S is [v, k]).

    q_t = l2(x_t W_q) / √k,  k_t = l2(x_t W_k)            [b, t, h, k]   unit keys
    v_t = x_t W_v                                         [b, t, h, v]
    β_t = σ(x_t w_β + b_β)                                [b, t, h]      the write strength
    log α_t = -exp(A_log) · softplus(x_t w_α + b_α)        [b, t, h]      the gate (Mamba-2's)
    S_t = α_t S_{t-1} (I - β_t k_t k_tᵀ) + β_t v_t k_tᵀ    (the paper)
    h_t = α_t (I - β_t k_t k_tᵀ) h_{t-1} + β_t k_t v_tᵀ    (the same, transposed)
    y_t = h_tᵀ q_t                                        [b, t, h, v]
    out_t = (RMSNorm(y_t) ⊙ silu(x_t W_g)) W_out           [b, t, m]      (per-head norm)

The transition A_t = α_t (I - β_t k_t k_tᵀ) is a matrix, not a diagonal: linear_scan runs it
with transition='matrix' (sequential: one K×K product per step; associative: a K×K by K×K
product per combine, the price of a general transition), and decoding steps it without ever
forming A: h ← α (h - β k (kᵀ h)) + β k vᵀ.

Chunked (the WY / UT representation of flash-linear-attention's chunk_gated_delta_rule, written
here from the algebra). Inside a chunk, with γ_t = α_1 ⋯ α_t and h_0 the chunk's start,
h_t = α_t h_{t-1} + k_t u_tᵀ with u_t = β_t (v_t - α_t h_{t-1}ᵀ k_t), so in matrix form
(rows t of U, V, K):

    (I + diag(β) A) U = diag(β) V - diag(βγ) K h_0,   A_ts = (γ_t/γ_s) k_t·k_s for s < t
    U = Ũ - W h_0,   Ũ = T (β ⊙ V),  W = T (βγ ⊙ K),  T = (I + diag(β) A)⁻¹  (unit lower
                     triangular, formed per chunk and head by recursive halving: matmuls
                     only, as flash-linear-attention forms it; unit_lower_inverse)
    Y = diag(γ) Q h_0 + (Q Kᵀ ⊙ Γ) U,  Γ_ts = γ_t/γ_s for s <= t
    h_C = (γ_C I - K̂ᵀ W) h_0 + K̂ᵀ Ũ,   K̂_s = (γ_C/γ_s) k_s

Every product inside a chunk is dense; across chunks the state obeys h_C = M h_0 + B with a
K×K matrix M per chunk: linear_scan(transition='matrix') over the n chunks carries it.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from anatomy.axes import declare
from anatomy.layers import init_rms_norm, rms_norm
from anatomy.mixers import shared as hd
from anatomy.mixers.spec import MixerSpec, fn_apply, fn_step, heads_init, zero
from anatomy.scan.linear import CHUNK, FORMS, check_form, linear_scan, outer, readout

DT_RANGE = (1e-3, 1e-1)  # softplus(b_α) at initialisation, log-uniform (Mamba-2's Δ)


class DeltaNetState(NamedTuple):
    """h [b, h, k, v]: the transposed fast-weight memory Sᵀ."""

    h: jax.Array


def init_gated_deltanet(key, d_model, n_heads=4, d_key=None, d_value=None):
    """{'w_q', 'w_k': [m, h, k], 'w_v', 'w_g': [m, h, v], 'beta', 'alpha': per-head gates,
    'a_log': [h], 'norm': {'scale': [h, v]}, 'w_out': [h, v, m]}; k = v = m / h by default."""
    d_key, d_value = hd.head_sizes("gated_deltanet", d_model, n_heads, d_key, d_value)
    ks = jax.random.split(key, 9)
    a = jax.random.uniform(ks[7], (n_heads,), jnp.float32, 1.0, 16.0)  # Mamba-2's A range
    return {
        "w_q": hd.init_heads(ks[0], d_model, n_heads, d_key),
        "w_k": hd.init_heads(ks[1], d_model, n_heads, d_key),
        "w_v": hd.init_heads(ks[2], d_model, n_heads, d_value),
        "w_g": hd.init_heads(ks[3], d_model, n_heads, d_value),
        "beta": hd.init_gate(ks[4], d_model, n_heads, 0.0),
        "alpha": hd.init_gate(ks[5], d_model, n_heads, hd.init_dt_bias(ks[6], n_heads, DT_RANGE)),
        "a_log": declare(jnp.log(a), ("heads",)),
        "norm": init_rms_norm((n_heads, d_value), ("heads", "head_dim")),
        "w_out": hd.init_merge(ks[8], n_heads, d_value, d_model),
    }


def _inputs(params, x, lengths=None):
    """q, k [..., h, k], v [..., h, v], β, log α [..., h]; past each length β = 0, log α = 0."""
    q = hd.l2_normalise(hd.project(x, params["w_q"]))
    q = q / jnp.sqrt(jnp.asarray(q.shape[-1], q.dtype))
    k = hd.l2_normalise(hd.project(x, params["w_k"]))
    v = hd.project(x, params["w_v"])
    beta = jax.nn.sigmoid(hd.gate(params["beta"], x))
    log_alpha = -jnp.exp(params["a_log"]) * jax.nn.softplus(hd.gate(params["alpha"], x))
    if lengths is not None:
        valid = (jnp.arange(x.shape[1])[None, :] < jnp.asarray(lengths)[:, None])[..., None]
        beta, log_alpha = jnp.where(valid, beta, 0.0), jnp.where(valid, log_alpha, 0.0)
    return q, k, v, beta, log_alpha


def _out(params, y, x):
    return hd.merge(
        rms_norm(params["norm"], y) * jax.nn.silu(hd.project(x, params["w_g"])), params["w_out"]
    )


def transition(k, beta, log_alpha):
    """A = α (I - β k kᵀ): k [..., k], β, log α [...] -> [..., k, k]."""
    eye = jnp.eye(k.shape[-1], dtype=k.dtype)
    return jnp.exp(log_alpha)[..., None, None] * (eye - beta[..., None, None] * outer(k, k))


def gated_deltanet_zero_state(params, batch, dtype=jnp.float32):
    """h = 0 [b, h, k, v]."""
    _, h, k = params["w_k"].shape
    return DeltaNetState(jnp.zeros((batch, h, k, params["w_v"].shape[-1]), dtype))


def unit_lower_inverse(n):
    """(I + N)⁻¹ for N [..., C, C] strictly lower triangular (the UT transform's T), by
    recursive halving: [[I + Na, 0], [Nc, I + Nb]]⁻¹ = [[Ta, 0], [-Tb Nc Ta, Tb]], the two
    halves inverted together, so the program is log2(C) levels of batched matmuls
    (about (2/3) C³ FLOPs), no loop and no call out of XLA.

    Not jax.scipy.linalg.solve_triangular: on CPU that lowers to LAPACK's trsm
    (lapack_strsm_ffi) in scipy's OpenBLAS, which runs its own thread pool beside XLA's; on
    2 busy cores its threads wait on each other and one call took 0.03-8.6 s for the same
    work (experiments/crossover/GATED_DELTANET.md)."""
    c = n.shape[-1]
    if c == 1:
        return jnp.ones_like(n)
    h = c // 2
    na, nb, nc = n[..., :h, :h], n[..., h:, h:], n[..., h:, :h]
    if 2 * h == c:  # equal halves: one recursive call on both, stacked
        ta, tb = unit_lower_inverse(jnp.stack([na, nb]))
    else:
        ta, tb = unit_lower_inverse(na), unit_lower_inverse(nb)
    off = -(tb @ nc) @ ta
    top = jnp.concatenate([ta, jnp.zeros(ta.shape[:-1] + (c - h,), n.dtype)], axis=-1)
    return jnp.concatenate([top, jnp.concatenate([off, tb], axis=-1)], axis=-2)


def _chunked(q, k, v, beta, log_alpha, h0, chunk):
    """The UT-transform chunked form (module docstring): (y [b, t, h, v], h_last)."""
    bsz, n_time, n_heads, dk = k.shape
    c = max(1, min(int(chunk), n_time))
    n = -(-n_time // c)
    pad = lambda x: jnp.pad(x, [(0, 0), (0, n * c - n_time)] + [(0, 0)] * (x.ndim - 2))
    # padded steps: β = 0, log α = 0, k = 0: the identity transition, no write
    chunks = lambda x: jnp.moveaxis(pad(x).reshape((bsz, n, c) + x.shape[2:]), 3, 2)
    qc, kc, vc = chunks(q), chunks(k), chunks(v)  # [b, n, h, C, k|v]
    bc, gc = chunks(beta), jnp.cumsum(chunks(log_alpha), axis=-1)  # [b, n, h, C]: β, log γ_t
    t = jnp.arange(c)
    diff = gc[..., :, None] - gc[..., None, :]  # log γ_t - log γ_s
    incl = t[:, None] >= t[None, :]
    ratio = jnp.where(incl, jnp.exp(jnp.where(incl, diff, 0.0)), 0.0)  # Γ_ts [.., C, C]
    kk = jnp.einsum("...tk,...sk->...ts", kc, kc)
    strict = jnp.where(t[:, None] > t[None, :], ratio * kk, 0.0)  # A
    t_inv = unit_lower_inverse(bc[..., :, None] * strict)  # T = (I + diag(β) A)⁻¹
    gamma = jnp.exp(gc)  # [b, n, h, C]
    u_tilde = t_inv @ (bc[..., None] * vc)  # Ũ [b, n, h, C, v]
    w = t_inv @ ((bc * gamma)[..., None] * kc)  # W [b, n, h, C, k]
    k_hat = jnp.exp(gc[..., -1:] - gc)[..., None] * kc  # K̂ [b, n, h, C, k]
    eye = jnp.eye(dk, dtype=k.dtype)
    m_chunk = gamma[..., -1, None, None] * eye - jnp.einsum("...sk,...sj->...kj", k_hat, w)
    b_chunk = jnp.einsum("...sk,...sv->...kv", k_hat, u_tilde)
    ends, h_last = linear_scan(m_chunk, b_chunk, h0, transition="matrix")  # [b, n, h, k, v]
    starts = jnp.concatenate([h0[:, None], ends[:, :-1]], axis=1)
    qk = jnp.einsum("...tk,...sk->...ts", qc, kc) * ratio  # Q Kᵀ ⊙ Γ
    u = u_tilde - jnp.einsum("...sk,...kv->...sv", w, starts)  # U = Ũ - W h_0
    y = jnp.einsum("...tk,...kv->...tv", gamma[..., None] * qc, starts)
    y = y + jnp.einsum("...ts,...sv->...tv", qk, u)  # [b, n, h, C, v]
    y = jnp.moveaxis(y, 3, 2).reshape((bsz, n * c, n_heads, -1))
    return y[:, :n_time], h_last


def gated_deltanet(params, x, state=None, *, form="chunked", chunk=CHUNK, lengths=None):
    """x [b, t, m] -> (out [b, t, m], DeltaNetState after the last (real) step).

    state: a DeltaNetState to continue from or None (zeros); form: 'sequential' or
    'associative' (linear_scan with the matrix transition) or 'chunked' (the UT transform).
    """
    check_form(form, FORMS, "gated_deltanet: form")
    q, k, v, beta, log_alpha = _inputs(params, x, lengths)
    h0 = gated_deltanet_zero_state(params, x.shape[0], q.dtype).h if state is None else state.h
    if form == "chunked":
        y, h_last = _chunked(q, k, v, beta, log_alpha, h0, chunk)
    else:
        a = transition(k, beta, log_alpha)  # [b, t, h, k, k]
        y, h_last = linear_scan(
            a, (beta[..., None] * k, v), h0, q=q, transition="matrix", form=form
        )
    return _out(params, y, x), DeltaNetState(h_last)


def gated_deltanet_step(params, state, x_t):
    """One position: x_t [b, m] -> (out [b, m], state), h ← α (h - β k (kᵀ h)) + β k vᵀ."""
    q, k, v, beta, log_alpha = _inputs(params, x_t)
    h = state.h
    kh = jnp.einsum("bhk,bhkv->bhv", k, h)  # kᵀ h
    h = jnp.exp(log_alpha)[..., None, None] * (h - beta[..., None, None] * outer(k, kh))
    h = h + outer(beta[..., None] * k, v)
    return _out(params, readout(h, q), x_t), DeltaNetState(h)


# ------------------------------------------------------------------------- the registration

SPEC = MixerSpec(
    name="gated_deltanet",
    init=heads_init(init_gated_deltanet),
    apply=fn_apply(gated_deltanet),
    step=fn_step(gated_deltanet_step),
    zero_state=zero(gated_deltanet_zero_state),
    knobs=("n_heads", "d_key", "d_value"),
    defaults={"conv": 4},
)
