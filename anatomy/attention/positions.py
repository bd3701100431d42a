"""Sinusoidal positional encoding (Vaswani et al. 2017, section 3.5).

PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))
PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))
"""

import jax.numpy as jnp
import numpy as np


def sinusoidal(length, d_model, dtype=jnp.float32):
    """Positional encodings [length, d_model] (d_model may be odd: the last sin column stays).

    Computed in float64 NumPy (static shapes) and cast, so large positions keep their precision.
    """
    if length < 0 or d_model <= 0:
        raise ValueError(f"sinusoidal: need length >= 0 and d_model > 0, got {length}, {d_model}")
    pos = np.arange(length, dtype=np.float64)[:, None]  # [T, 1]
    two_i = np.arange(0, d_model, 2, dtype=np.float64)[None, :]  # [1, ceil(m/2)]
    angles = pos / np.power(10000.0, two_i / d_model)  # [T, ceil(m/2)]
    pe = np.zeros((length, d_model), np.float64)
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d_model // 2])
    return jnp.asarray(pe, dtype)


def lookup(table, pos):
    """Rows table[pos] [..., d_model] for (traced) int positions pos [...], never clamped.

    A position outside [0, T) of the table [T, d_model] gives a row of NaN instead of the
    nearest row (plain indexing under jit clamps silently), so it cannot go unnoticed.
    """
    pos = jnp.asarray(pos)
    rows = jnp.take(table, pos, axis=0, mode="fill", fill_value=jnp.nan)  # [..., d_model]
    return jnp.where((pos >= 0)[..., None], rows, jnp.nan)
