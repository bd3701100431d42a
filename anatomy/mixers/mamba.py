"""A Mamba-style selective state-space layer (Gu & Dao 2023, "S6"), simplified, as a cell.

Per channel d < H and state index n < N (A diagonal, one [H, N] matrix):

    [u_t, z_t] = x_t W_in                      (x [B, T, D] -> two [B, T, H] streams)
    u_t = silu(u_t)
    Δ_t = softplus(u_t W_Δ + b_Δ)              [B, T, H]   (input-dependent step size)
    B_t = u_t W_B,   C_t = u_t W_C             [B, T, N]   (input-dependent in/out maps)
    A   = -exp(A_log)                          [H, N]      (negative: a decaying state)
    Ā_t = exp(Δ_t A)                           [B, T, H, N]
    s_t = Ā_t ⊙ s_{t-1} + (Δ_t ⊙ u_t) B_t      [B, T, H, N]  (the only serial part)
    y_t = C_t · s_t + D ⊙ u_t                  [B, T, H]   (sum over n)
    out_t = (y_t ⊙ silu(z_t)) W_out            [B, T, H]   (the Mamba block's gate and
                                                            output projection)

Nothing in Ā_t or the input term reads s, so s_t is a linear recurrence in s, a diagonal
linear_scan with the state [H, N], in any of its forms (``form=``): 'associative'
(``jax.lax.associative_scan``, O(log T) depth), 'sequential' (``jax.lax.scan``, T serial
steps), 'chunked'.

Left out of the Mamba block, exactly: the short causal depthwise convolution (width 4)
before silu(u); the low-rank factorisation of W_Δ (here one full [H, H] matrix); the
residual connection and the RMSNorm around the block; the expansion factor (the inner width
is H, the cell's hidden size). Initialisation follows Mamba: A_log = log n (S4D-real),
D = 1, b_Δ = softplus⁻¹(Δ₀) with Δ₀ log-uniform in [1e-3, 1e-1].

As a cell, ``mamba_cell(params, carry, x) -> (carry, out_t)``; the carry is
MambaState(s [B, H, N], h = the last out [B, H]) so a translator can read h as its query.
As a mixer (``SPEC``, at the end) the cell runs at width m = H = D: x [b, t, m] -> [b, t, m],
its state the carry.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from anatomy.axes import declare
from anatomy.mixers.shared import check_xs, init_dt_bias, last_real, zero_padding
from anatomy.mixers.spec import MixerSpec, carry_h, cell_spec
from anatomy.scan.linear import CHUNK, linear_scan

D_STATE = 16  # N, Mamba's default state size per channel
DT_MIN, DT_MAX = 1e-3, 1e-1  # the range of Δ at initialisation (log-uniform)
# Logical axes (anatomy.axes): channels d < H are 'hidden' where a matrix makes
# them (its output dimension; [H, H] matrices shard one side only), N is never sharded.
MAMBA_AXES = {
    "w_in": (None, "hidden"),
    "w_dt": (None, "hidden"),
    "b_dt": ("hidden",),
    "w_b": (None, None),
    "w_c": (None, None),
    "a_log": ("hidden", None),
    "d": ("hidden",),
    "w_out": (None, "hidden"),
}


class MambaState(NamedTuple):
    """Selective-SSM carry: the state s [B, H, N] and the last output h [B, H]."""

    s: jax.Array
    h: jax.Array


def init_mamba(key, d_in, d_hidden, d_state=D_STATE, dtype=jnp.float32):
    """Parameters: {'w_in': [D, 2H] (blocks u, z), 'w_dt': [H, H], 'b_dt': [H], 'w_b': [H, N],
    'w_c': [H, N], 'a_log': [H, N], 'd': [H], 'w_out': [H, H]}; matrices ~ U(±1/sqrt(fan_in))."""
    if int(d_in) < 1 or int(d_hidden) < 1 or int(d_state) < 1:
        raise ValueError(
            f"d_in, d_hidden and d_state must be positive, got {d_in}, {d_hidden}, {d_state}"
        )
    ks = jax.random.split(key, 6)

    def uniform(k, shape):
        bound = 1.0 / jnp.sqrt(jnp.asarray(shape[0], dtype))
        return jax.random.uniform(k, shape, dtype, -bound, bound)

    h, n = d_hidden, d_state

    params = {
        "w_in": uniform(ks[0], (d_in, 2 * h)),
        "w_dt": uniform(ks[1], (h, h)),
        "b_dt": init_dt_bias(ks[4], h, (DT_MIN, DT_MAX), dtype),  # softplus⁻¹(Δ₀)
        "w_b": uniform(ks[2], (h, n)),
        "w_c": uniform(ks[3], (h, n)),
        "a_log": jnp.log(jnp.broadcast_to(jnp.arange(1, n + 1, dtype=dtype), (h, n))),
        "d": jnp.ones((h,), dtype),
        "w_out": uniform(ks[5], (h, h)),
    }
    return declare(params, MAMBA_AXES)


def mamba_project(params, x):
    """Everything that reads x only: x [..., D] -> [u, z, Δ, B, C] [..., 3H + 2N]."""
    if x.shape[-1] != params["w_in"].shape[0]:
        raise ValueError(f"mamba: input size {x.shape[-1]} != w_in rows {params['w_in'].shape[0]}")
    u, z = jnp.split(x @ params["w_in"], 2, axis=-1)
    u = jax.nn.silu(u)
    delta = jax.nn.softplus(u @ params["w_dt"] + params["b_dt"])
    return jnp.concatenate([u, z, delta, u @ params["w_b"], u @ params["w_c"]], axis=-1)


def _unpack(params, xw):
    """[..., 3H + 2N] -> u, z, Δ [..., H], B, C [..., N]."""
    h = params["d"].shape[0]
    return jnp.split(xw, [h, 2 * h, 3 * h, 3 * h + params["a_log"].shape[1]], axis=-1)


def _coefficients(params, u, delta, b_in):
    """Ā = exp(Δ A) and Δ u B, each [..., H, N]: s_t = Ā ⊙ s_{t-1} + Δ u B."""
    a = -jnp.exp(params["a_log"])  # [H, N]
    return jnp.exp(delta[..., None] * a), (delta * u)[..., None] * b_in[..., None, :]


def _readout(params, s, u, z, c_out):
    """out = ((C · s) + D ⊙ u) ⊙ silu(z) W_out: s [..., H, N] -> [..., H]."""
    y = jnp.sum(s * c_out[..., None, :], axis=-1) + params["d"] * u
    return (y * jax.nn.silu(z)) @ params["w_out"]


def mamba_recur(params, carry, xw):
    """One step from the projected input xw [B, 3H + 2N]; see the module docstring."""
    u, z, delta, b_in, c_out = _unpack(params, xw)
    a_bar, bu = _coefficients(params, u, delta, b_in)  # [B, H, N] each
    s = a_bar * carry.s + bu
    h = _readout(params, s, u, z, c_out)
    return MambaState(s, h), h


def mamba_cell(params, carry, x):
    """One selective-SSM step: x [B, D] -> (MambaState, out_t [B, H])."""
    return mamba_recur(params, carry, mamba_project(params, x))


def mamba_zero_carry(batch, d_hidden, dtype=jnp.float32, d_state=D_STATE):
    """Initial carry: s = 0 [B, H, N], h = 0 [B, H]."""
    return MambaState(
        jnp.zeros((batch, d_hidden, d_state), dtype), jnp.zeros((batch, d_hidden), dtype)
    )


def mamba_from_hidden(params, h0):
    """A carry that starts from a given output h0 [B, H] (the state s at zero)."""
    return MambaState(jnp.zeros(h0.shape + params["a_log"].shape[1:], h0.dtype), h0)


def mamba(params, xs, carry0=None, *, lengths=None, form="associative", chunk=CHUNK):
    """The selective SSM over a whole sequence.

    Args: params from ``init_mamba``; xs [B, T, D]; carry0 a MambaState or None (zeros);
      lengths [B] or None (past its length a sequence's state stays frozen); form: any
      linear_scan form ('associative', 'sequential', 'chunked'), the same values; chunk: the
      chunked form's C.
    Returns: (MambaState after the last real step, outs [B, T, H], zero past each length).
    """
    xs = check_xs(xs, params["w_in"].shape[0], "mamba")
    u, z, delta, b_in, c_out = _unpack(params, mamba_project(params, xs))
    a_bar, bu = _coefficients(params, u, delta, b_in)  # [B, T, H, N] each
    batch, _, h, n = a_bar.shape
    if carry0 is None:
        carry0 = mamba_zero_carry(batch, h, a_bar.dtype, n)
    ss, _ = linear_scan(
        a_bar, bu, carry0.s, form=form, chunk=chunk, lengths=lengths
    )  # [B, T, H, N], frozen past each length
    outs = _readout(params, ss, u, z, c_out)  # [B, T, H]
    return MambaState(ss[:, -1], last_real(outs, lengths, carry0.h)), zero_padding(outs, lengths)


# ------------------------------------------------------------------------- the registration


def _apply(p, x, s, c, form, lengths):
    state, outs = mamba(p, x, s, lengths=lengths, form=form, chunk=c.chunk)
    return outs, state


def _step(p, s, x, c):
    state, out = mamba_cell(p, s, x)
    return out, state


SPEC = MixerSpec(
    name="mamba",
    init=lambda key, m, c: init_mamba(key, m, m, c.d_state),
    apply=_apply,
    step=_step,
    zero_state=lambda p, batch, max_len, c, dtype: mamba_zero_carry(
        batch, p["d"].shape[0], dtype, p["a_log"].shape[1]
    ),
    knobs=("d_state",),
    cell=cell_spec(globals(), "mamba", carry_h, sequence=mamba, from_hidden=mamba_from_hidden),
)
