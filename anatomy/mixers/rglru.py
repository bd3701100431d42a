"""The RG-LRU and Griffin's recurrent block (De et al. 2024, "Griffin"; Hawk is a stack of them).

Letters: b batch, t positions, m model width, w the recurrence width (expand · m), n gate
blocks (the gates are block-diagonal: n blocks of w/n).

    g_t = GeLU(x_t W_y + b_y)                        [b, t, w]   the gate branch
    u_t = x_t W_x + b_x                              [b, t, w]   the recurrent branch
    r_t = σ(u_t W_a + b_a)    i_t = σ(u_t W_i + b_i) [b, t, w]   recurrence and input gates
    log a_t = -c · r_t ⊙ softplus(Λ)                 [b, t, w]   c = 8; a_t in (0, 1)
    h_t = a_t ⊙ h_{t-1} + √(1 - a_t²) ⊙ (i_t ⊙ u_t)  [b, t, w]   the RG-LRU
    out_t = (h_t ⊙ g_t) W_o + b_o                    [b, t, m]

Λ starts where the base exp(-softplus(Λ)), which a_t raises to the power c·r_t, is uniform
on the ring [0.9, 0.999] by area (recurrentgemma's rnn_param_init); √(1 - a²) is computed as √(-expm1(2 log a)). The RG-LRU is
a diagonal linear_scan with a vector state [w]: every form of anatomy.scan.linear_scan applies.

Left out of Griffin's block: the width-4 temporal convolution between W_x and the RG-LRU (a
mixer takes the short convolution in front of it instead, on x: anatomy.mixers' conv
option), the document resets, and recurrentgemma's clipped gradient of √ (the plain √ here
has a finite gradient: 1 - a² > 0 since r_t > 0 and softplus(Λ) > 0).
"""

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from anatomy.axes import declare
from anatomy.errors import BadInputError
from anatomy.layers import dense, init_dense
from anatomy.mixers.spec import MixerSpec, fn_apply, fn_step, zero
from anatomy.scan.linear import CHUNK, check_form, linear_scan

C = 8.0  # the fixed scale c of log a_t
RADIUS = (0.9, 0.999)  # the ring the base exp(-softplus(Λ)) is drawn on at initialisation


class RGLRUState(NamedTuple):
    """h [b, w]: the RG-LRU's state."""

    h: jax.Array


def init_rglru(key, d_model, expand=1, n_blocks=1):
    """{'x', 'y', 'out': dense, 'w_a', 'w_i': [n, w/n, w/n], 'b_a', 'b_i': [w], 'lam': [w]}."""
    width = int(expand * d_model)
    if width < 1 or n_blocks < 1 or width % n_blocks:
        raise BadInputError(
            f"rglru: the width expand·d_model={width} must be a positive multiple of "
            f"n_blocks={n_blocks}"
        )
    ks = jax.random.split(key, 6)
    blk = width // n_blocks
    block = lambda k: jax.random.normal(k, (n_blocks, blk, blk), jnp.float32) / math.sqrt(blk)
    unif = jax.random.uniform(ks[5], (width,), jnp.float32)
    lo, hi = RADIUS
    log_base = 0.5 * jnp.log(unif * (hi**2 - lo**2) + lo**2)  # log exp(-softplus(Λ))
    gates = {
        "w_a": block(ks[3]),
        "w_i": block(ks[4]),
        "b_a": jnp.zeros((width,), jnp.float32),
        "b_i": jnp.zeros((width,), jnp.float32),
        "lam": jnp.log(jnp.expm1(-log_base)),  # softplus⁻¹(-log base)
    }
    axes = {"w_a": ("heads", None, None), "w_i": ("heads", None, None)}
    axes.update(b_a=("hidden",), b_i=("hidden",), lam=("hidden",))
    return {
        "x": init_dense(ks[0], d_model, width, axes=("embed", "hidden")),
        "y": init_dense(ks[1], d_model, width, axes=("embed", "hidden")),
        "out": init_dense(ks[2], width, d_model, axes=("hidden", "embed")),
        **declare(gates, axes),
    }


def _block_diag(u, w, b):
    """u [..., w] through n diagonal blocks w [n, w/n, w/n], + b."""
    n, blk = w.shape[:2]
    ub = u.reshape(u.shape[:-1] + (n, blk))
    return jnp.einsum("...ni,nij->...nj", ub, w).reshape(u.shape) + b


def _coefficients(params, x):
    """(a, b, g): h_t = a ⊙ h_{t-1} + b, and the gate branch g; each [..., w]."""
    g = jax.nn.gelu(dense(params["y"], x))
    u = dense(params["x"], x)
    r = jax.nn.sigmoid(_block_diag(u, params["w_a"], params["b_a"]))
    i = jax.nn.sigmoid(_block_diag(u, params["w_i"], params["b_i"]))
    log_a = -C * r * jax.nn.softplus(params["lam"])
    return jnp.exp(log_a), jnp.sqrt(-jnp.expm1(2.0 * log_a)) * (i * u), g


def rglru_zero_state(params, batch, dtype=jnp.float32):
    """h = 0 [b, w]."""
    return RGLRUState(jnp.zeros((batch, params["lam"].shape[0]), dtype))


def rglru(params, x, state=None, *, form="sequential", chunk=CHUNK, lengths=None):
    """Griffin's recurrent block over x [b, t, m] -> (out [b, t, m], RGLRUState after it).

    state: an RGLRUState to continue from or None (zeros); form: a linear_scan form.
    """
    check_form(form, what="rglru: form")
    a, b, g = _coefficients(params, x)
    hs, h_last = linear_scan(
        a, b, None if state is None else state.h, form=form, chunk=chunk, lengths=lengths
    )
    return dense(params["out"], hs * g), RGLRUState(h_last)


def rglru_step(params, state, x_t):
    """One position: x_t [b, m] -> (out [b, m], state)."""
    a, b, g = _coefficients(params, x_t)
    h = a * state.h + b
    return dense(params["out"], h * g), RGLRUState(h)


# ------------------------------------------------------------------------- the registration

SPEC = MixerSpec(
    name="rglru",
    init=lambda key, m, c: init_rglru(key, m, c.expand, c.n_blocks),
    apply=fn_apply(rglru),
    step=fn_step(rglru_step),
    zero_state=zero(rglru_zero_state),
    knobs=("expand", "n_blocks"),
    defaults={"conv": 4},
)
