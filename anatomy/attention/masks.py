"""Attention masks and the masked softmax every attention in this package uses.

Convention: a mask is boolean and True means "this query may attend to this key".
Masks broadcast against attention logits of shape [b, h, q, k]
(b batch, h heads, q query positions, k key positions).
"""

import jax
import jax.numpy as jnp


def padding_mask(lengths, k_len):
    """Key-padding mask from sequence lengths.

    Args:
      lengths: [b] int, number of valid keys per sequence.
      k_len: int, padded key length k.
    Returns:
      [b, 1, 1, k] bool, True where key position < length.
    """
    lengths = jnp.asarray(lengths)
    if lengths.ndim != 1:
        raise ValueError(f"padding_mask: lengths must be [b], got shape {lengths.shape}")
    valid = jnp.arange(k_len)[None, :] < lengths[:, None]  # [b, k]
    return valid[:, None, None, :]  # [b, 1, 1, k]


def causal_mask(q_len, k_len, offset=0):
    """Causal (look-back only) mask.

    Query i sits at absolute position i + offset and may attend to keys j <= i + offset.
    offset = k_len - q_len aligns the last query with the last key.

    Returns:
      [1, 1, q, k] bool.
    """
    q_pos = jnp.arange(q_len)[:, None] + offset  # [q, 1]
    k_pos = jnp.arange(k_len)[None, :]  # [1, k]
    return (k_pos <= q_pos)[None, None]  # [1, 1, q, k]


def band_mask(q_len, k_len, radius):
    """Band (sliding-window) mask: query i may attend to keys j with |i - j| <= radius.

    combine_masks(band_mask(q, k, r), causal_mask(q, k)) keeps j in [i - r, i].

    Returns:
      [1, 1, q, k] bool.
    """
    if radius < 0:
        raise ValueError(f"band_mask: radius must be >= 0, got {radius}")
    dist = jnp.arange(q_len)[:, None] - jnp.arange(k_len)[None, :]  # [q, k], i - j
    return (jnp.abs(dist) <= radius)[None, None]  # [1, 1, q, k]


def as_mask4(mask, shape, who="mask"):
    """A mask broadcastable to [b, h, q, k] = shape, as 4-D bool whose axes are 1 or full.

    Raises ValueError (naming `who`) for a mask of more axes or an axis that is neither.
    """
    m = jnp.asarray(mask, bool)
    if m.ndim > 4:
        raise ValueError(f"{who}: mask must broadcast to [b, h, q, k], got {m.shape}")
    m = m.reshape((1,) * (4 - m.ndim) + m.shape)
    for axis, (got, want) in enumerate(zip(m.shape, shape)):
        if got not in (1, want):
            raise ValueError(
                f"{who}: mask shape {jnp.shape(mask)} does not broadcast to "
                f"[b, h, q, k] = {list(shape)} (axis {axis})"
            )
    return m


def combine_masks(*masks):
    """Logical AND of masks (None entries skipped); None if all are None."""
    masks = [m for m in masks if m is not None]
    if not masks:
        return None
    out = jnp.asarray(masks[0], bool)
    for m in masks[1:]:
        out = jnp.logical_and(out, m)
    return out


def masked_softmax(logits, mask=None, axis=-1):
    """Numerically stable softmax over `axis` that honours a boolean mask.

    weights = exp(l - max) * mask / sum(exp(l - max) * mask), with the max taken over
    allowed entries only. Masked entries get exactly 0. A row with every entry masked
    yields all zeros (not NaN, not uniform), so its attention output is the zero vector.

    Args:
      logits: float array, any shape.
      mask: bool array broadcastable to logits.shape (True = allowed), or None.
    Returns:
      weights, same shape and dtype as logits.
    """
    if mask is None:
        return jax.nn.softmax(logits, axis=axis)
    mask = jnp.broadcast_to(jnp.asarray(mask, bool), logits.shape)
    neg = jnp.finfo(logits.dtype).min
    masked = jnp.where(mask, logits, neg)
    # The shift cancels in the ratio, so it needs no gradient.
    shift = jax.lax.stop_gradient(jnp.max(masked, axis=axis, keepdims=True))
    e = jnp.where(mask, jnp.exp(jnp.where(mask, masked - shift, 0.0)), 0.0)
    denom = jnp.sum(e, axis=axis, keepdims=True)
    return e / jnp.where(denom > 0, denom, 1.0)
