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
    logp = jax.nn.log_softmax(logits, axis=-1)  # [b,t,v]
    nll = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]  # [b,t]
    uniform = -jnp.mean(logp, axis=-1)  # [b,t]: -Σ_v logp_v / V
    loss = (1.0 - label_smoothing) * nll + label_smoothing * uniform
    maskf = mask.astype(jnp.float32)
    return loss * maskf, nll * maskf


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
    correct = (jnp.argmax(logits, axis=-1) == targets) & mask
    mean_loss = jnp.sum(loss) / tokens
    metrics = {
        "loss": mean_loss,
        "nll": jnp.sum(nll) / tokens,
        "accuracy": jnp.sum(correct) / tokens,
        "tokens": jnp.sum(mask).astype(jnp.float32),
    }
    return mean_loss, metrics
