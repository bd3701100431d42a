"""Batch-major sequence helpers shared by the scan runner (runner.py) and the fused engine
(fused.py): reversing each sequence within its length, and checking a runner's inputs.
"""

import jax.numpy as jnp


def reverse_padded(xs, lengths=None):
    """Reverse each sequence within its own length (a per-sequence permutation of time).

    Position t < L_b goes to L_b - 1 - t; padding positions t >= L_b stay where they
    are. The permutation is its own inverse. Without lengths it is a flip of axis 1.

    Args: xs [B, T, ...]; lengths [B] int or None.
    Returns: [B, T, ...], same shape.
    """
    if lengths is None:
        return jnp.flip(xs, axis=1)
    n_time = xs.shape[1]
    t = jnp.arange(n_time)[None, :]  # [1, T]
    lens = lengths[:, None]  # [B, 1]
    idx = jnp.where(t < lens, lens - 1 - t, t)  # [B, T]
    idx = idx.reshape(idx.shape + (1,) * (xs.ndim - 2))  # [B, T, 1, ...]
    return jnp.take_along_axis(xs, idx, axis=1)


def check_inputs(params, xs, lengths):
    """ValueError unless xs [B, T, D] matches params' w_x and lengths is [B] of ints."""
    if xs.ndim != 3:
        raise ValueError(f"xs must be batch-major [B, T, D], got shape {xs.shape}")
    if "w_x" not in params or "w_h" not in params:
        raise ValueError(f"params must hold 'w_x' and 'w_h', got keys {sorted(params)}")
    if xs.shape[-1] != params["w_x"].shape[0]:
        raise ValueError(
            f"xs feature size {xs.shape[-1]} does not match params w_x rows {params['w_x'].shape[0]}"
        )
    if lengths is not None:
        if lengths.shape != (xs.shape[0],):
            raise ValueError(f"lengths must have shape [B]=({xs.shape[0]},), got {lengths.shape}")
        if not jnp.issubdtype(lengths.dtype, jnp.integer):
            raise ValueError(f"lengths must be integers, got dtype {lengths.dtype}")
