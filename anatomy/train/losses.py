"""Token-level losses and accuracy for teacher-forced sequence models.

Letters: b batch, t target positions, v vocabulary.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from anatomy.tokens import PAD


def smoothed_cross_entropy(logits, targets, mask, label_smoothing: float = 0.0):
    """Per-token cross entropy against label-smoothed targets.

    logits [b,t,v] (any float dtype; computed in float32), targets [b,t] int, mask [b,t] bool.
    With ε = label_smoothing and V = vocabulary size the target distribution is
        q = (1 - ε)·onehot(y) + ε / V          (optax.smooth_labels)
    and the loss per token is  -Σ_v q_v · log softmax(logits)_v.
    Returns (loss [b,t] float32, zero where mask is False, and nll [b,t]: the
    unsmoothed -log p(y), also masked).
    """
    logits = logits.astype(jnp.float32)
    logp = log_softmax(logits)  # [b,t,v]
    nll = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]  # [b,t]
    uniform = -jnp.mean(logp, axis=-1)  # [b,t]: -Σ_v logp_v / V
    loss = (1.0 - label_smoothing) * nll + label_smoothing * uniform
    maskf = mask.astype(jnp.float32)
    return loss * maskf, nll * maskf


# --- the row max and argmax over v, by blocks ----------------------------------------------
# XLA:CPU runs jnp.argmax as a variadic (value, index) reduction, a scalar loop: over
# v = 8,000 it was what put our Transformer train step behind flax.linen's (BENCHMARKS.md;
# flax's step computes no accuracy). XLA's own max reduction (jnp.max) goes to a
# library kernel that reads its input from memory, so the bias add producing the logits is
# written out first, one more [b, t, v] array; and XLA splits any reduction longer than 32
# into windows it does not fuse. Here the one pass over all of x is a max over blocks of
# w <= 32 entries with a reducer XLA does not recognise (_max_or_nan): it fuses with its
# producer, reading the logits as they are made. The row max and the argmax both come from
# those block maxima.


def _max_or_nan(a, b):
    """max(a, b), NaN if either is NaN (jnp.max's value) in a form XLA does not recognise."""
    return jnp.where(jnp.isnan(a) | (a >= b), a, b)


def _block(v):
    """The largest block width w <= 32 dividing v, or None below 8 (then jnp's own ops)."""
    w = max(d for d in range(1, 33) if v % d == 0)
    return w if w >= 8 else None


def max_and_argmax(x):
    """(jnp.max(x, -1, keepdims=True) [..., 1], jnp.argmax(x, -1) int32 [...]) over x [..., v],
    without a tangent (a max here is only ever a shift or an index), in two levels over
    v = n·w blocks of w entries:

        top_j = max of block j (NaN if it holds one)        [..., n]
        j*    = jnp.argmax(top)                             the first block holding the max
        max   = top_j*;  argmax = j*·w + jnp.argmax(x[..., j*, :])

    The scalar argmax sees n + w entries per row instead of v. The same integers as
    jnp.argmax (ties, infinities and NaNs included: the first NaN wins) and the same max as
    jnp.max, but NaN in a row holding a NaN (where jnp.max's value depends on the kernel;
    log_softmax is NaN over that row either way); tests/anatomy/train/test_train.py.
    """
    x = jax.lax.stop_gradient(x)
    w = _block(x.shape[-1])
    if w is None:
        return jnp.max(x, axis=-1, keepdims=True), jnp.argmax(x, axis=-1).astype(jnp.int32)
    xb = x.reshape(x.shape[:-1] + (x.shape[-1] // w, w))  # [..., n, w]
    top = jax.lax.reduce(xb, jnp.array(-jnp.inf, x.dtype), _max_or_nan, (xb.ndim - 1,))
    j = jnp.argmax(top, axis=-1)[..., None]  # [..., 1]
    inside = jnp.take_along_axis(xb, j[..., None], axis=-2)[..., 0, :]  # [..., w]
    index = j[..., 0] * w + jnp.argmax(inside, axis=-1)
    return jnp.take_along_axis(top, j, axis=-1), index.astype(jnp.int32)


def argmax(x):
    """jnp.argmax(x, axis=-1), int32 [...]: max_and_argmax's index."""
    return max_and_argmax(x)[1]


def log_softmax(x):
    """jax.nn.log_softmax(x, axis=-1), the same operations, its shift by max_and_argmax:

    shifted = x - max_v x ;  log_softmax(x) = shifted - log Σ_v exp(shifted)
    """
    shifted = x - max_and_argmax(x)[0]
    return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=-1, keepdims=True))


def sequence_loss(logits, batch, label_smoothing: float = 0.0):
    """Mean smoothed loss over real target tokens of a batch, and metrics.

    logits [b,t,v]; batch['tgt_out'] [b,t] int32 (target + eos, pad = 0).
    Returns (loss scalar, metrics dict: 'loss', 'nll' (unsmoothed mean), 'accuracy'
    (argmax == target over real tokens), 'tokens' (count of real target tokens)).
    """
    targets = batch["tgt_out"]
    mask = targets != PAD  # [b,t]
    loss, nll = smoothed_cross_entropy(logits, targets, mask, label_smoothing)
    tokens = jnp.maximum(jnp.sum(mask), 1).astype(jnp.float32)
    correct = (argmax(logits) == targets) & mask
    mean_loss = jnp.sum(loss) / tokens
    metrics = {
        "loss": mean_loss,
        "nll": jnp.sum(nll) / tokens,
        "accuracy": jnp.sum(correct) / tokens,
        "tokens": jnp.sum(mask).astype(jnp.float32),
    }
    return mean_loss, metrics
