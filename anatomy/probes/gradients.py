"""Gradient probes: how ∂L/∂x_t depends on the distance to the loss, and Pascanu's bound.

For a recurrence h_t = φ(h_{t-1} W_h + x_t W_x + b) and a loss at the last step T,

    ∂L/∂x_t = ∂L/∂h_T · Π_{s=t+1..T} ∂h_s/∂h_{s-1} · ∂h_t/∂x_t,
    ||∂h_s/∂h_{s-1}|| = ||diag(φ'(·)) W_hᵀ|| <= γ · σ_max(W_h)        (Pascanu et al. 2013)

with γ the bound on |φ'| (1 for tanh, 1/4 for the sigmoid). σ_max·γ < 1 is sufficient
for vanishing; > 1 is necessary (not sufficient) for exploding.
"""

import jax
import jax.numpy as jnp
import numpy as np

NONLINEARITY_DERIVATIVE_BOUND = {"tanh": 1.0, "sigmoid": 0.25, "relu": 1.0, "identity": 1.0}


def input_grad_norms(loss_fn, xs):
    """Norm of ∂L/∂x_t for every position t.

    Args:
      loss_fn: xs [B, T, D] -> scalar loss (e.g. a readout of the last position).
      xs: [B, T, D] inputs.
    Returns:
      [T] array: ||∂L/∂x[:, t, :]||₂ (Frobenius over batch and features) per position.
    """
    if xs.ndim != 3:
        raise ValueError(f"input_grad_norms: xs must be [B, T, D], got shape {xs.shape}")
    g = jax.grad(loss_fn)(xs)  # [B, T, D]
    return jnp.sqrt(jnp.sum(g * g, axis=(0, 2)))  # [T]


def receptive_field(fn, xs, position):
    """How many input positions output `position` of fn depends on: the support of
    ∂ Σ fn(xs)[:, position] / ∂xs over the positions (exact zeros outside it, so the count
    is exact for a model that does not look there, e.g. a convolution stack's 1 + L·(K-1)).

    Args: fn: xs [B, T, D] -> [B, T', D']. xs: [B, T, D]. position: an index into T'.
    Returns: an int in [0, T].
    """
    if xs.ndim != 3:
        raise ValueError(f"receptive_field: xs must be [B, T, D], got shape {xs.shape}")
    g = jax.grad(lambda x: jnp.sum(fn(x)[:, position]))(xs)  # [B, T, D]
    return int(np.count_nonzero(np.abs(np.asarray(g)).sum(axis=(0, 2))))


def by_distance(norms_per_position):
    """Reorder per-position norms [T] (loss at position T-1) to distance order.

    Returns: (distance [T] = 0..T-1, norms [T]) with norms[k] the norm at position T-1-k.
    """
    norms = np.asarray(norms_per_position)
    return np.arange(len(norms)), norms[::-1].copy()


def sigma_max(w):
    """Largest singular value of a matrix [H, H]."""
    return float(np.linalg.norm(np.asarray(w, np.float64), ord=2))


def spectral_radius(w):
    """Largest |eigenvalue| of a square matrix: the asymptotic per-step rate of a linear map."""
    return float(np.max(np.abs(np.linalg.eigvals(np.asarray(w, np.float64)))))


def pascanu_bound(w_hh, nonlinearity="tanh"):
    """Upper bound on the per-step Jacobian norm: γ · σ_max(W_hh).

    Args: w_hh [H, H]; nonlinearity: one of NONLINEARITY_DERIVATIVE_BOUND's keys.
    Returns: float bound on ||∂h_t/∂h_{t-1}||.
    """
    if nonlinearity not in NONLINEARITY_DERIVATIVE_BOUND:
        raise ValueError(
            f"unknown nonlinearity {nonlinearity!r}; choose one of "
            f"{sorted(NONLINEARITY_DERIVATIVE_BOUND)}"
        )
    return NONLINEARITY_DERIVATIVE_BOUND[nonlinearity] * sigma_max(w_hh)


def scale_to_sigma(w, target):
    """Rescale a matrix so that its largest singular value equals `target`."""
    return w * (target / sigma_max(w))


def random_orthogonal(key, n, dtype=jnp.float32):
    """A random n×n orthogonal matrix (QR of a Gaussian, signs fixed): all σ_i = |λ_i| = 1."""
    q, r = jnp.linalg.qr(jax.random.normal(key, (n, n), jnp.float32))
    return (q * jnp.sign(jnp.diag(r))[None, :]).astype(dtype)


def global_norm(tree):
    """sqrt(Σ over every leaf of Σ x²)."""
    return jnp.sqrt(sum(jnp.sum(jnp.square(x)) for x in jax.tree_util.tree_leaves(tree)))


def clip_by_global_norm(tree, max_norm):
    """Scale a gradient pytree so its global norm is at most max_norm (optax's rule).

    Returns: (clipped tree, the norm before clipping).
    """
    norm = global_norm(tree)
    scale = jnp.minimum(1.0, max_norm / jnp.maximum(norm, 1e-30))
    return jax.tree_util.tree_map(lambda x: x * scale.astype(x.dtype), tree), norm
