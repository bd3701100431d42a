"""minGRU (Feng et al. 2024, "Were RNNs All We Needed?"): a GRU whose gates read x only.

    z_t = σ(x_t W_z + b_z)                     (update gate, [B, H])
    h̃_t = x_t W_h + b_h                        (candidate, linear: no tanh, no reset gate)
    h_t = (1 - z_t) ⊙ h_{t-1} + z_t ⊙ h̃_t

No gate reads h_{t-1}, so the recurrence is linear, h_t = a_t ⊙ h_{t-1} + b_t with
a_t = 1 - z_t and b_t = z_t ⊙ h̃_t, run by anatomy.scan.linear_scan in any of its forms
(``form=``): 'associative' (``jax.lax.associative_scan``, O(log T) depth), 'sequential'
(``jax.lax.scan``, T serial steps), 'chunked'. This is the paper's plain (not log-space)
minGRU, one layer, without the stacked blocks' norm or residual; as a mixer (``SPEC``) its
inner width w = expand · m and an output projection back to m: x [b, t, m] -> h [b, t, w] ->
y [b, t, m], the state h [b, w].

As a cell: ``mingru_cell(params, h, x) -> (h, h)`` for decoding one token at a time, split
into ``mingru_project`` (x [..., D] -> [a_z, h̃] [..., 2H], hoistable) and ``mingru_recur``.
"""

import jax
import jax.numpy as jnp

from anatomy.axes import declare
from anatomy.layers import dense, init_dense
from anatomy.mixers.shared import check_xs, zero_padding
from anatomy.mixers.spec import MixerSpec, cell_spec, identity
from anatomy.scan.linear import CHUNK, linear_scan

MINGRU_AXES = {"w": (None, "hidden"), "b": ("hidden",)}  # logical axes (anatomy.axes)


def init_mingru(key, d_in, d_hidden, dtype=jnp.float32):
    """minGRU parameters: {'w': [D, 2H] (blocks z, h̃), 'b': [2H]}, w ~ U(±1/sqrt(D)), b = 0."""
    if int(d_in) < 1 or int(d_hidden) < 1:
        raise ValueError(
            f"d_in and d_hidden must be positive, got d_in={d_in}, d_hidden={d_hidden}"
        )
    bound = 1.0 / jnp.sqrt(jnp.asarray(d_in, dtype))
    params = {
        "w": jax.random.uniform(key, (d_in, 2 * d_hidden), dtype, -bound, bound),
        "b": jnp.zeros((2 * d_hidden,), dtype),
    }
    return declare(params, MINGRU_AXES)


def mingru_project(params, x):
    """x [..., D] -> [a_z, h̃] = x W + b [..., 2H]."""
    if x.shape[-1] != params["w"].shape[0]:
        raise ValueError(f"mingru: input size {x.shape[-1]} != w rows {params['w'].shape[0]}")
    return x @ params["w"] + params["b"]


def _coefficients(xw):
    """[a_z, h̃] [..., 2H] -> (a, b) of h_t = a ⊙ h_{t-1} + b: a = 1 - z, b = z ⊙ h̃."""
    a_z, cand = jnp.split(xw, 2, axis=-1)
    z = jax.nn.sigmoid(a_z)
    return 1.0 - z, z * cand


def mingru_recur(params, carry, xw):
    """One step from the projected input xw [B, 2H]: h = (1 - z) ⊙ h + z ⊙ h̃."""
    a, b = _coefficients(xw)
    h = a * carry + b
    return h, h


def mingru_cell(params, carry, x):
    """One minGRU step: carry h [B, H], x [B, D] -> (h_t, h_t)."""
    return mingru_recur(params, carry, mingru_project(params, x))


def mingru_zero_carry(batch, d_hidden, dtype=jnp.float32):
    """Initial carry: h = 0 [B, H]."""
    return jnp.zeros((batch, d_hidden), dtype)


def mingru(params, xs, h0=None, *, lengths=None, form="associative", chunk=CHUNK):
    """The minGRU over a whole sequence.

    Args: params from ``init_mingru``; xs [B, T, D]; h0 [B, H] or None (zeros); lengths [B]
      or None (past its length a sequence's h stays frozen); form: any linear_scan form
      ('associative', 'sequential', 'chunked'), the same values; chunk: the chunked form's C.
    Returns: (h after the last real step [B, H], hs [B, T, H], zero past each length).
    """
    xs = check_xs(xs, params["w"].shape[0], "mingru")
    a, b = _coefficients(mingru_project(params, xs))  # [B, T, H] each
    hs, h_last = linear_scan(a, b, h0, form=form, chunk=chunk, lengths=lengths)  # frozen past
    return h_last, zero_padding(hs, lengths)


# ------------------------------------------------------------------------- the registration


def _init_mixer(key, m, c):
    k1, k2 = jax.random.split(key)
    w = int(c.expand * m)
    return {"cell": init_mingru(k1, m, w), "out": init_dense(k2, w, m, axes=("hidden", "embed"))}


def _apply(p, x, s, c, form, lengths):
    h_last, hs = mingru(p["cell"], x, s, lengths=lengths, form=form, chunk=c.chunk)
    return dense(p["out"], hs), h_last


def _step(p, s, x, c):
    h, _ = mingru_cell(p["cell"], s, x)
    return dense(p["out"], h), h


def _from_hidden(params, h0):
    return h0


SPEC = MixerSpec(
    name="mingru",
    init=_init_mixer,
    apply=_apply,
    step=_step,
    zero_state=lambda p, batch, max_len, c, dtype: mingru_zero_carry(
        batch, p["cell"]["w"].shape[1] // 2, dtype
    ),
    knobs=("expand",),
    cell=cell_spec(globals(), "mingru", identity, sequence=mingru, from_hidden=_from_hidden),
)
