"""HGRN-2 (Qin et al. 2024, "HGRN2: Gated Linear RNNs with State Expansion") as a mixer.

Letters: b batch, t positions, m model width, h heads, e a head's expanded (key) width,
v = m / h a head's value width, γ the forget gate's lower bound (a knob per layer).

    q_t = silu(x_t W_q)                     [b, t, h, e]   the output gate, read as a query
    f_t = γ + (1 - γ) σ(x_t W_f)            [b, t, h, e]   the forget gate, bounded below by γ
    k_t = 1 - f_t                           [b, t, h, e]   the input gate, tied to the forget
    v_t = x_t W_i                           [b, t, h, v]   the input
    S_t = Diag(f_t) S_{t-1} + k_t v_tᵀ      [b, h, e, v]   the state, expanded from HGRN's
                                                           vector by an outer product
    o_t = S_tᵀ q_t                          [b, t, h, v]
    out = RMSNorm([o_t over heads]) W_o     [b, t, m]

HGRN's elementwise h_t = f_t ⊙ h_{t-1} + (1 - f_t) ⊙ i_t becomes an outer product with no new
parameter, so the state grows from m to h · e · v numbers: gated linear attention whose key
is one minus its forget gate. The decay varies over the key axis, so the recurrence is a
diagonal linear_scan with a per-key decay: the sequential form reads it out step by step,
the associative and chunked forms form every state [b, t, h, e, v] (the chunked form's
readout-only path needs one decay per head). In the paper γ grows with depth (learned, a
cumulative softmax over layers); here it is one number per mixer (0: no bound).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from anatomy.errors import BadInputError
from anatomy.layers import init_rms_norm, rms_norm
from anatomy.mixers import shared as hd
from anatomy.mixers.spec import MixerSpec
from anatomy.scan.linear import CHUNK, FORMS, check_form, linear_scan, outer, readout


class HGRN2State(NamedTuple):
    """s [b, h, e, v]: Σ over the past of its write k vᵀ, each decayed by the forget gates since."""

    s: jax.Array


def init_hgrn2(key, d_model, n_heads=4, d_key=None):
    """{'w_q', 'w_f': [m, h, e], 'w_i': [m, h, v], 'norm': RMSNorm [m], 'w_o': [h, v, m]};
    e = v = m / h by default (fla's expand_ratio is e)."""
    d_key, d_value = hd.head_sizes("hgrn2", d_model, n_heads, d_key, None)
    if d_value * n_heads != d_model:
        raise BadInputError(f"hgrn2: d_model={d_model} must be a multiple of n_heads={n_heads}")
    kq, kf, ki, ko = jax.random.split(key, 4)
    return {
        "w_q": hd.init_heads(kq, d_model, n_heads, d_key),
        "w_f": hd.init_heads(kf, d_model, n_heads, d_key),
        "w_i": hd.init_heads(ki, d_model, n_heads, d_value),
        "norm": init_rms_norm(d_model),
        "w_o": hd.init_merge(ko, n_heads, d_value, d_model),
    }


def _check_bound(lower_bound):
    if not 0.0 <= lower_bound < 1.0:
        raise BadInputError(f"hgrn2: lower_bound must be in [0, 1), got {lower_bound!r}")
    return lower_bound


def _gates(params, x, lower_bound):
    """q, f, k = 1 - f [..., h, e] and v [..., h, v] from x [..., m]."""
    q = jax.nn.silu(hd.project(x, params["w_q"]))
    f = lower_bound + (1.0 - lower_bound) * jax.nn.sigmoid(hd.project(x, params["w_f"]))
    return q, f, 1.0 - f, hd.project(x, params["w_i"])


def _out(params, o):
    """o [..., h, v] -> RMSNorm over the heads' concatenation, then W_o: [..., m]."""
    lead, (h, v) = o.shape[:-2], o.shape[-2:]
    o = rms_norm(params["norm"], o.reshape(lead + (h * v,))).reshape(lead + (h, v))
    return hd.merge(o, params["w_o"])


def hgrn2_zero_state(params, batch, dtype=jnp.float32):
    """S = 0 [b, h, e, v]."""
    _, h, e = params["w_q"].shape
    return HGRN2State(jnp.zeros((batch, h, e, params["w_i"].shape[-1]), dtype))


def hgrn2(params, x, state=None, *, lower_bound=0.0, form="sequential", chunk=CHUNK, lengths=None):
    """x [b, t, m] -> (out [b, t, m], the state after the last (real) step).

    state: an HGRN2State to continue from, or None (zeros). form: a linear_scan form; the
    sequential one reads each state out as it goes, the associative and chunked ones form
    every state (their readout-only paths need one decay per head, and f_t has one per key).
    """
    check_form(form, FORMS, "hgrn2: form")
    q, f, k, v = _gates(params, x, _check_bound(lower_bound))
    write = (k, v) if form == "sequential" else outer(k, v)  # [b, t, h, e, v]
    s0 = None if state is None else state.s
    o, s_last = linear_scan(f, write, s0, q=q, form=form, chunk=chunk, lengths=lengths)
    return _out(params, o), HGRN2State(s_last)


def hgrn2_step(params, state, x_t, *, lower_bound=0.0):
    """One position: x_t [b, m] -> (out [b, m], state). S = Diag(f) S + k vᵀ, read with q."""
    q, f, k, v = _gates(params, x_t, _check_bound(lower_bound))
    s = f[..., None] * state.s + outer(k, v)
    return _out(params, readout(s, q)), HGRN2State(s)


# ------------------------------------------------------------------------- the registration


def _init(key, m, c):
    _check_bound(c.lower_bound)  # a floor out of [0, 1) is refused before any parameter is made
    return init_hgrn2(key, m, c.n_heads, int(c.d_key) or None)


SPEC = MixerSpec(
    name="hgrn2",
    init=_init,
    apply=lambda p, x, s, c, form, lengths: hgrn2(
        p, x, s, lower_bound=c.lower_bound, form=form, chunk=c.chunk, lengths=lengths
    ),
    step=lambda p, s, x, c: hgrn2_step(p, s, x, lower_bound=c.lower_bound),
    zero_state=lambda p, batch, max_len, c, dtype: hgrn2_zero_state(p, batch, dtype),
    knobs=("n_heads", "d_key"),
    own_knobs={"lower_bound": (0.0, "HGRN-2's floor γ on the forget gate, in [0, 1)")},
)
