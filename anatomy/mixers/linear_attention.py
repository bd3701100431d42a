"""Linear attention (Katharopoulos et al. 2020, "Transformers are RNNs") as a mixer.

Letters: b batch, t positions, m model width, h heads, k feature (key) width, v value width.

    q_t = φ(x_t W_q), k_t = φ(x_t W_k)      [b, t, h, k]   φ the feature map: elu(x) + 1
    v_t = x_t W_v                           [b, t, h, v]   (or relu, or Based's 'taylor',
                                                            whose k is 1 + d + d² for d_key d)
    S_t = S_{t-1} + k_t v_tᵀ                [b, h, k, v]   no decay: a running sum
    z_t = z_{t-1} + k_t                     [b, h, k]      the normaliser
    y_t = S_tᵀ q_t / (z_tᵀ q_t + ε)         [b, t, h, v]
    out = Σ_{h,v} y_t W_o                   [b, t, m]

The normaliser rides in the state as one more value column: with v' = [v, 1], S' = [S | z]
[h, k, v + 1] obeys S'_t = S'_{t-1} + k_t v'_tᵀ and S'ᵀq = [Sᵀq, zᵀq]. So the state is one
linear_scan outer write with a = 1, in every form of anatomy.scan.linear_scan, plus 'quadratic':
(QKᵀ ⊙ causal mask) V', the paper's causal attention without a softmax. The state, the
whole memory of the past, is h · k · (v + 1) numbers whatever the length.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from anatomy.errors import BadInputError
from anatomy.mixers import shared as hd
from anatomy.mixers.spec import MixerSpec, fn_apply, fn_step, heads_init
from anatomy.scan.linear import (
    CHUNK,
    FORMS,
    check_form,
    linear_scan,
    outer,
    quadratic,
    readout,
)


def taylor(x):
    """Based's second-order Taylor feature map (Arora et al. 2024): x [..., d] ->
    [1, x / d^¼, vec(x xᵀ) / (√2 √d)] [..., 1 + d + d²], so that φ(q)·φ(k) = 1 + s + s²/2
    with s = q·k/√d, the first three terms of exp(s): a softmax-like kernel whose feature
    width (the state's k) grows as d²."""
    d = x.shape[-1]
    outer_xx = (x[..., :, None] * x[..., None, :]).reshape(x.shape[:-1] + (d * d,))
    one = jnp.ones(x.shape[:-1] + (1,), x.dtype)
    return jnp.concatenate([one, x / d**0.25, outer_xx / (2**0.5 * d**0.5)], axis=-1)


FEATURE_MAPS = {"elu": lambda x: jax.nn.elu(x) + 1.0, "relu": jax.nn.relu, "taylor": taylor}
FEATURE_WIDTH = {"taylor": lambda d: 1 + d + d * d}  # the others keep the width d
LINEAR_ATTENTION_FORMS = (*FORMS, "quadratic")
EPS = 1e-6  # added to the normaliser zᵀq


class LinearAttentionState(NamedTuple):
    """s [b, h, k, v + 1]: Σ k vᵀ with the normaliser Σ k as its last column."""

    s: jax.Array


def init_linear_attention(key, d_model, n_heads=4, d_key=None, d_value=None):
    """{'w_q', 'w_k': [m, h, k], 'w_v': [m, h, v], 'w_o': [h, v, m]}; k = v = m / h by default."""
    d_key, d_value = hd.head_sizes("linear_attention", d_model, n_heads, d_key, d_value)
    kq, kk, kv, ko = jax.random.split(key, 4)
    return {
        "w_q": hd.init_heads(kq, d_model, n_heads, d_key),
        "w_k": hd.init_heads(kk, d_model, n_heads, d_key),
        "w_v": hd.init_heads(kv, d_model, n_heads, d_value),
        "w_o": hd.init_merge(ko, n_heads, d_value, d_model),
    }


def _feature_map(name):
    if name not in FEATURE_MAPS:
        choices = ", ".join(map(repr, FEATURE_MAPS))
        raise BadInputError(f"linear_attention: feature_map must be one of {choices}; got {name!r}")
    return FEATURE_MAPS[name]


def _inputs(params, x, feature_map):
    """q, k [..., h, k] (features), v' = [v, 1] [..., h, v + 1]."""
    phi = _feature_map(feature_map)
    v = hd.project(x, params["w_v"])
    ones = jnp.ones(v.shape[:-1] + (1,), v.dtype)
    q, k = phi(hd.project(x, params["w_q"])), phi(hd.project(x, params["w_k"]))
    return q, k, jnp.concatenate([v, ones], axis=-1)


def _out(params, y1):
    """[Sᵀq, zᵀq] [..., h, v + 1] -> the normalised, merged output [..., m]."""
    return hd.merge(y1[..., :-1] / (y1[..., -1:] + EPS), params["w_o"])


def linear_attention_zero_state(params, batch, dtype=jnp.float32, feature_map="elu"):
    """S' = 0 [b, h, k', v + 1], k' the feature width (d_key, or 1 + d + d² for 'taylor')."""
    _, h, k = params["w_q"].shape
    k = FEATURE_WIDTH.get(feature_map, lambda d: d)(k)
    return LinearAttentionState(jnp.zeros((batch, h, k, params["w_v"].shape[-1] + 1), dtype))


def linear_attention(
    params, x, state=None, *, feature_map="elu", form="sequential", chunk=CHUNK, lengths=None
):
    """x [b, t, m] -> (out [b, t, m], the state after the last (real) step).

    state: a LinearAttentionState to continue from, or None (zeros). form: a linear_scan
    form or 'quadratic'. lengths [b] or None: the state stops at each length.
    """
    check_form(form, LINEAR_ATTENTION_FORMS, "linear_attention: form")
    q, k, v1 = _inputs(params, x, feature_map)
    s0 = None if state is None else state.s
    if form == "quadratic":
        if lengths is not None:
            raise BadInputError("linear_attention: form='quadratic' takes no lengths")
        y1, s_last = quadratic(q, k, v1, None, s0)
    else:
        y1, s_last = linear_scan(None, (k, v1), s0, q=q, form=form, chunk=chunk, lengths=lengths)
    return _out(params, y1), LinearAttentionState(s_last)


def linear_attention_step(params, state, x_t, *, feature_map="elu"):
    """One position: x_t [b, m] -> (out [b, m], state). S' += k v'ᵀ, then read with q."""
    q, k, v1 = _inputs(params, x_t, feature_map)
    s = state.s + outer(k, v1)
    return _out(params, readout(s, q)), LinearAttentionState(s)


# ------------------------------------------------------------------------- the registration

SPEC = MixerSpec(
    name="linear_attention",
    init=heads_init(init_linear_attention),
    apply=fn_apply(linear_attention, "feature_map"),
    step=fn_step(linear_attention_step, "feature_map"),
    zero_state=lambda p, batch, max_len, c, dtype: linear_attention_zero_state(
        p, batch, dtype, c.feature_map
    ),
    knobs=("n_heads", "d_key", "d_value", "feature_map"),
    forms=LINEAR_ATTENTION_FORMS,
)
