"""The convolution of Vaswani et al.'s Table 1, for the complexity probe (restricted
self-attention, the table's other non-attention row, is anatomy.attention.sliding_window).

Letters: b batch, t positions, k kernel width, i/o input/output channels.

    conv1d:     y[b,t,o] = Σ_{k,i} x[b, t+k-(K-1)/2, i] · w[k,i,o] + bias[o]    O(K·N·d²)
"""

import jax
import jax.numpy as jnp


def init_conv1d(key, d_in, d_out, width):
    """{'w': [K, d_in, d_out] ~ N(0, 1/(K·d_in)), 'b': zeros [d_out]}."""
    if width < 1:
        raise ValueError(f"init_conv1d: width must be >= 1, got {width}")
    w = jax.random.normal(key, (width, d_in, d_out), jnp.float32) / jnp.sqrt(width * d_in)
    return {"w": w, "b": jnp.zeros((d_out,), jnp.float32)}


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
