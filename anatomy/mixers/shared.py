"""What several mixers share: per-head projections in and out of the model width (the
matrix-state mixers), Mamba's step-size bias init, and the padding helpers of a sequence form.

Letters: b batch, t positions, m model width, h heads, k / v a head's key / value width.

    project(x, w)   x [b, t, m] · w [m, h, k] -> [b, t, h, k]   (or x_t [b, m] -> [b, h, k])
    merge(y, w)     y [b, t, h, v] · w [h, v, m] -> [b, t, m]
    l2_normalise(x) x / ‖x‖ over the last axis (DeltaNet's keys and queries)

init_heads(key, m, h, k) draws w [m, h, k] ~ N(0, 1/m) and init_merge(key, h, v, m) w [h, v, m]
~ N(0, 1/(h v)), each with its logical axes (heads split over the mesh's 'model' axis).
init_dt_bias: softplus⁻¹ of a log-uniform Δ₀ (Mamba, Mamba-2, gated DeltaNet). check_xs,
valid_steps, zero_padding, last_real: a [B, T, D] input checked, the steps past each length
zeroed, each sequence's last real step (SRU, QRNN, minGRU, Mamba).
"""

import jax
import jax.numpy as jnp

from anatomy.axes import declare
from anatomy.errors import BadInputError

IN_AXES = ("embed", "heads", "head_dim")  # [m, h, k]
OUT_AXES = ("heads", "head_dim", "embed")  # [h, v, m]


def head_sizes(who, d_model, n_heads, d_key=None, d_value=None):
    """(d_key, d_value), each d_model / n_heads unless given; BadInputError if any is < 1."""
    d_key = d_key or d_model // n_heads
    d_value = d_value or d_model // n_heads
    if min(d_model, n_heads, d_key, d_value) < 1:
        raise BadInputError(
            f"{who}: sizes must be positive, got d_model={d_model}, n_heads={n_heads}, "
            f"d_key={d_key}, d_value={d_value}"
        )
    return d_key, d_value


def init_dt_bias(key, n, dt_range=(1e-3, 1e-1), dtype=jnp.float32):
    """softplus⁻¹(Δ₀) [n] with Δ₀ log-uniform in dt_range: Mamba's initial step sizes, so
    that softplus(x w + b) starts near Δ₀ (Mamba, Mamba-2, gated DeltaNet's gate)."""
    lo, hi = jnp.log(jnp.asarray(dt_range, dtype))
    dt = jnp.exp(jax.random.uniform(key, (n,), dtype, lo, hi))
    return dt + jnp.log(-jnp.expm1(-dt))


def init_heads(key, d_model, n_heads, width):
    """w [m, h, k] ~ N(0, 1/m)."""
    w = jax.random.normal(key, (d_model, n_heads, width), jnp.float32) / jnp.sqrt(d_model)
    return declare(w, IN_AXES)


def init_merge(key, n_heads, width, d_model):
    """w [h, v, m] ~ N(0, 1/(h v))."""
    w = jax.random.normal(key, (n_heads, width, d_model), jnp.float32)
    return declare(w / jnp.sqrt(n_heads * width), OUT_AXES)


def init_gate(key, d_model, n_heads, bias=0.0):
    """A scalar per head from x: {'w': [m, h] ~ N(0, 1/m), 'b': [h] = bias}."""
    w = jax.random.normal(key, (d_model, n_heads), jnp.float32) / jnp.sqrt(d_model)
    b = jnp.broadcast_to(jnp.asarray(bias, jnp.float32), (n_heads,))
    return declare({"w": w, "b": b}, {"w": ("embed", "heads"), "b": ("heads",)})


def gate(p, x):
    """x [..., m] -> x w + b [..., h] (a pre-activation, one per head)."""
    return x @ p["w"] + p["b"]


def project(x, w):
    """x [..., m] · w [m, h, k] -> [..., h, k]."""
    return jnp.einsum("...m,mhk->...hk", x, w)


def merge(y, w):
    """y [..., h, v] · w [h, v, m] -> [..., m]."""
    return jnp.einsum("...hv,hvm->...m", y, w)


def l2_normalise(x, eps=1e-6):
    """x / sqrt(‖x‖² + eps) over the last axis."""
    return x * jax.lax.rsqrt(jnp.sum(jnp.square(x), axis=-1, keepdims=True) + eps)


def check_xs(xs, d_in, name):
    """xs as an array, ValueError unless it is [B, T, D] with D = d_in."""
    xs = jnp.asarray(xs)
    if xs.ndim != 3 or xs.shape[-1] != d_in:
        raise ValueError(f"{name}: xs must be [B, T, D] with D={d_in}, got {xs.shape}")
    return xs


def valid_steps(lengths, n_time):
    """[B, T, 1] bool, True at real steps (t < lengths[b]); None when lengths is None."""
    if lengths is None:
        return None
    return (jnp.arange(n_time)[None, :] < jnp.asarray(lengths)[:, None])[..., None]


def zero_padding(ys, lengths):
    """ys [B, T, ...] with every step past each length set to exactly zero."""
    valid = valid_steps(lengths, ys.shape[1])
    if valid is None:
        return ys
    return jnp.where(valid.reshape(valid.shape + (1,) * (ys.ndim - 3)), ys, jnp.zeros_like(ys))


def last_real(ys, lengths, y0):
    """ys at each sequence's last real step, [B, ...]; y0 [B, ...] where a length is 0.

    Without lengths: ys[:, -1].
    """
    if lengths is None:
        return ys[:, -1]
    lengths = jnp.asarray(lengths)
    idx = jnp.clip(lengths - 1, 0, ys.shape[1] - 1).reshape((-1, 1) + (1,) * (ys.ndim - 2))
    last = jnp.take_along_axis(ys, idx, axis=1)[:, 0]  # [B, ...]
    return jnp.where((lengths > 0).reshape((-1,) + (1,) * (ys.ndim - 2)), last, y0)
