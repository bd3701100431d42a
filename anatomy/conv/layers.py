"""1-D convolution over time, its one-step form with an input buffer, and the GLU block.

Letters: b batch, t positions, k kernel slot (K = kernel width), i/o input/output channels,
d block width.

    conv1d:       y[b,t,o] = Σ_{k,i} x[b, t+k-L, i] · w[k,i,o] + bias[o]       O(K·N·i·o)
                  L = K-1 (causal: output t sees inputs t-K+1 .. t)
                  L = (K-1)//2 ('same', centred); inputs outside [0, N) are 0
    conv1d_step:  window = [buffer; x_t]  [b, K, i]   (buffer: the last K-1 inputs, oldest first)
                  y_t[b,o] = Σ_{k,i} window[b,k,i] · w[k,i,o] + bias[o]        O(K·i·o)
                  buffer' = window[:, 1:]
    short_conv:   y[b,t,i] = Σ_k x[b, t+k-K+1, i] · w[k,i] + bias[i]            O(K·N·i)
                  depthwise and causal: each channel its own K taps (the short convolution
                  in front of a linear-recurrence mixer; Mamba, H3, Griffin); its step form
                  keeps the same K-1 input buffer as conv1d_step
    glu:          GLU([A; B]) = A ⊙ σ(B)                     [..., 2d] -> [..., d]
    glu_conv:     h = GLU(conv1d(x))                         [b, t, d] -> [b, t, d] (w [K, d, 2d])
    glu_block:    (h + x) · √0.5                            the residual, variance halved

A causal conv1d stepped through a sequence with a zero buffer equals the sequence form
(the zero buffer is the left padding), so decoding one token costs O(K·d²) per layer
whatever the position: the buffer holds K-1 inputs, not the whole prefix.
"""

import math

import jax
import jax.numpy as jnp

from anatomy.axes import declare

SQRT_HALF = math.sqrt(0.5)


def init_conv1d(key, d_in, d_out, width, gain=1.0, axes=(None, None, None)):
    """{'w': [K, d_in, d_out] ~ N(0, gain/(K·d_in)), 'b': zeros [d_out]}.

    gain = 4(1-p) is Gehring et al.'s init for a conv feeding a GLU (p: dropout on its input).
    axes: the logical axes of w (b takes the last); the default is never sharded.
    """
    if width < 1:
        raise ValueError(f"init_conv1d: width must be >= 1, got {width}")
    if gain <= 0:
        raise ValueError(f"init_conv1d: gain must be > 0, got {gain}")
    std = math.sqrt(gain / (width * d_in))
    w = jax.random.normal(key, (width, d_in, d_out), jnp.float32) * std
    p = {"w": w, "b": jnp.zeros((d_out,), jnp.float32)}
    return declare(p, {"w": tuple(axes), "b": tuple(axes)[2:]})


def conv1d(params, x, *, causal=False):
    """1-D convolution over time with 'same' output length.

    Args:
      params: from init_conv1d, w [K, i, o].
      x: [b, t, i].
      causal: pad only on the left (output t sees inputs t-K+1 .. t) instead of centred.
    Returns: [b, t, o].
    """
    if x.ndim != 3 or x.shape[-1] != params["w"].shape[1]:
        raise ValueError(f"conv1d: x must be [b, t, {params['w'].shape[1]}], got {x.shape}")
    width = params["w"].shape[0]
    pad = (width - 1, 0) if causal else ((width - 1) // 2, width // 2)
    y = jax.lax.conv_general_dilated(
        x, params["w"], window_strides=(1,), padding=[pad], dimension_numbers=("NWC", "WIO", "NWC")
    )  # [b, t, o]
    return y + params["b"]


def init_buffer(params, batch, dtype=jnp.float32):
    """The empty decode-time input buffer of a causal conv: zeros [b, K-1, i]."""
    width, d_in = params["w"].shape[:2]
    return jnp.zeros((batch, width - 1, d_in), dtype)


def conv1d_step(params, buffer, x_t):
    """One position of a causal conv1d: (y_t [b, o], buffer' [b, K-1, i]).

    Args: params from init_conv1d (w [K, i, o]); buffer [b, K-1, i], the previous K-1
      inputs oldest first (zeros before the sequence starts); x_t [b, i].
    """
    width, d_in = params["w"].shape[:2]
    if x_t.ndim != 2 or x_t.shape[-1] != d_in:
        raise ValueError(f"conv1d_step: x_t must be [b, {d_in}], got {x_t.shape}")
    if buffer.shape != (x_t.shape[0], width - 1, d_in):
        raise ValueError(
            f"conv1d_step: buffer must be [{x_t.shape[0]}, {width - 1}, {d_in}], got {buffer.shape}"
        )
    window = jnp.concatenate([buffer, x_t[:, None, :]], axis=1)  # [b, K, i]
    y = jnp.einsum("bki,kio->bo", window, params["w"]) + params["b"]  # [b, o]
    return y, window[:, 1:]


def init_short_conv(key, d, width, axes=("hidden",)):
    """{'w': [K, d] ~ N(0, 1/K), 'b': zeros [d]}: a depthwise causal conv of width K over d
    channels; axes: the logical axis of the channels."""
    if width < 1:
        raise ValueError(f"init_short_conv: width must be >= 1, got {width}")
    w = jax.random.normal(key, (width, d), jnp.float32) / math.sqrt(width)
    p = {"w": w, "b": jnp.zeros((d,), jnp.float32)}
    return declare(p, {"w": (None, *axes), "b": tuple(axes)})


def short_conv(params, x, buffer=None):
    """The depthwise causal conv over x [b, t, d] -> (y [b, t, d], buffer' [b, K-1, d]).

    buffer: the K-1 inputs before x (oldest first), or None (zeros: the causal padding); the
    returned buffer holds the last K-1 inputs, so a sequence can continue step by step.
    """
    width, d = params["w"].shape
    if x.ndim != 3 or x.shape[-1] != d:
        raise ValueError(f"short_conv: x must be [b, t, {d}], got {x.shape}")
    if buffer is None:
        buffer = jnp.zeros((x.shape[0], width - 1, d), x.dtype)
    xp = jnp.concatenate([buffer.astype(x.dtype), x], axis=1)  # [b, K-1+t, d]
    n = x.shape[1]
    y = sum(xp[:, k : k + n] * params["w"][k] for k in range(width))  # K shifted copies
    return y + params["b"], xp[:, n:]


def short_conv_step(params, buffer, x_t):
    """One position of short_conv: x_t [b, d], buffer [b, K-1, d] -> (y_t [b, d], buffer')."""
    width, d = params["w"].shape
    if x_t.ndim != 2 or x_t.shape[-1] != d or buffer.shape != (x_t.shape[0], width - 1, d):
        raise ValueError(
            f"short_conv_step: x_t [b, {d}] and buffer [b, {width - 1}, {d}], "
            f"got {x_t.shape} and {buffer.shape}"
        )
    window = jnp.concatenate([buffer, x_t[:, None, :]], axis=1)  # [b, K, d]
    return jnp.einsum("bkd,kd->bd", window, params["w"]) + params["b"], window[:, 1:]


def glu(x):
    """Gated linear unit over the last axis: [..., 2d] -> A ⊙ σ(B), [..., d]."""
    a, b = jnp.split(x, 2, axis=-1)
    return a * jax.nn.sigmoid(b)


def init_glu_block(key, d, width, dropout_rate=0.0):
    """{'conv': init_conv1d(key, d, 2d, width, gain=4(1-p))}: w [K, d, 2d], b [2d].

    Not sharded: GLU splits the 2d output channels in halves A, B (a 'model' split of that
    axis would put A and B on different devices)."""
    return {"conv": init_conv1d(key, d, 2 * d, width, gain=4.0 * (1.0 - dropout_rate))}


def glu_conv(params, x, *, causal):
    """h = GLU(conv1d(x)): [b, t, d] -> [b, t, d] (params from init_glu_block)."""
    return glu(conv1d(params["conv"], x, causal=causal))


def glu_conv_step(params, buffer, x_t):
    """One position of a causal glu_conv: x_t [b, d] -> (h_t [b, d], buffer' [b, K-1, d])."""
    y, buffer = conv1d_step(params["conv"], buffer, x_t)
    return glu(y), buffer


def residual(h, x):
    """(h + x) · √0.5: a residual sum with its variance halved (Gehring et al. §3.5)."""
    return (h + x) * SQRT_HALF


def glu_block(params, x, *, causal):
    """(GLU(conv1d(x)) + x) · √0.5: [b, t, d] -> [b, t, d]."""
    return residual(glu_conv(params, x, causal=causal), x)
