"""Quasi-parallel recurrences (SRU, QRNN): heavy gates for all steps at once, a cheap
elementwise linear recurrence left, computed in O(log T) depth with ``jax.lax.associative_scan``.

The linear recurrence c_t = a_t ⊙ c_{t-1} + b_t composes associatively:
    (a1, b1) ∘ (a2, b2) = (a1 ⊙ a2, a2 ⊙ b1 + b2)      (apply 1 first, then 2)
so all prefixes come out of one parallel scan; ``linear_recurrence_sequential`` is
its serial twin with ``jax.lax.scan``.
"""

import jax
import jax.numpy as jnp


def _prepare(a, b, c0, lengths):
    """Check shapes; fold c0 into step 0 and freeze padded steps (a = 1, b = 0)."""
    if a.shape != b.shape or a.ndim != 3:
        raise ValueError(f"a and b must both be [B, T, H], got {a.shape} and {b.shape}")
    if lengths is not None:
        lengths = jnp.asarray(lengths)
        if lengths.shape != (a.shape[0],):
            raise ValueError(f"lengths must have shape [B]=({a.shape[0]},), got {lengths.shape}")
        valid = (jnp.arange(a.shape[1])[None, :] < lengths[:, None])[..., None]  # [B, T, 1]
        a = jnp.where(valid, a, jnp.ones_like(a))
        b = jnp.where(valid, b, jnp.zeros_like(b))
    if c0 is not None:
        if c0.shape != (a.shape[0], a.shape[2]):
            raise ValueError(f"c0 must be [B, H]=({a.shape[0]}, {a.shape[2]}), got {c0.shape}")
        b = b.at[:, 0].add(a[:, 0] * c0)  # c_0 = a_0 c0 + b_0
    return a, b


def linear_recurrence(a, b, c0=None, *, lengths=None):
    """c_t = a_t ⊙ c_{t-1} + b_t for all t via ``jax.lax.associative_scan`` (parallel).

    Args: a, b [B, T, H]; c0 [B, H] or None (zeros); lengths [B] int or None: past its
      length a sequence's state stays frozen (a = 1, b = 0 there).
    Returns: cs [B, T, H], the state after every step (cs[:, -1] is the final state).
    """
    a, b = _prepare(a, b, c0, lengths)

    def combine(left, right):
        a1, b1 = left
        a2, b2 = right
        return a1 * a2, a2 * b1 + b2

    _, cs = jax.lax.associative_scan(combine, (a, b), axis=1)
    return cs


def linear_recurrence_sequential(a, b, c0=None, *, lengths=None):
    """The serial twin of ``linear_recurrence`` with ``jax.lax.scan`` (same args, same result)."""
    a, b = _prepare(a, b, c0, lengths)

    def step(c, ab):
        c = ab[0] * c + ab[1]
        return c, c

    c_init = jnp.zeros_like(a[:, 0])  # c0 is already folded into b[:, 0]
    _, cs = jax.lax.scan(step, c_init, (jnp.swapaxes(a, 0, 1), jnp.swapaxes(b, 0, 1)))  # [T, B, H]
    return jnp.swapaxes(cs, 0, 1)  # [B, T, H]


def quasi_recurrence(f, z, c0=None, *, lengths=None, parallel=True):
    """QRNN f-pooling / SRU state: c_t = f_t ⊙ c_{t-1} + (1 - f_t) ⊙ z_t.

    Args: f (forget gate, in (0, 1)), z (candidate), both [B, T, H]; c0 [B, H] or None;
      lengths [B] or None; parallel: associative scan (True) or sequential scan (False).
    Returns: cs [B, T, H].
    """
    fn = linear_recurrence if parallel else linear_recurrence_sequential
    return fn(f, (1.0 - f) * z, c0, lengths=lengths)


def init_sru(key, d_in, d_hidden, dtype=jnp.float32):
    """SRU parameters: {'w': [D, 3H] (blocks z, f, r), 'b': [2H] (f, r)}, plus 'w_skip' [D, H]
    when D != H (the highway connection then needs a projection). Weights ~ U(±1/sqrt(D))."""
    if int(d_in) < 1 or int(d_hidden) < 1:
        raise ValueError(
            f"d_in and d_hidden must be positive, got d_in={d_in}, d_hidden={d_hidden}"
        )
    k1, k2 = jax.random.split(key)
    bound = 1.0 / jnp.sqrt(jnp.asarray(d_in, dtype))
    params = {
        "w": jax.random.uniform(k1, (d_in, 3 * d_hidden), dtype, -bound, bound),
        "b": jnp.zeros((2 * d_hidden,), dtype),
    }
    if d_in != d_hidden:
        params["w_skip"] = jax.random.uniform(k2, (d_in, d_hidden), dtype, -bound, bound)
    return params


def sru(params, xs, c0=None, *, lengths=None, parallel=True):
    """Simple Recurrent Unit layer (Lei et al. 2017, the version without v ⊙ c_{t-1} in the gates).

        [z_t, a_f, a_r] = x_t W                  (one [B, T, D] x [D, 3H] matmul for all t)
        f_t = σ(a_f + b_f)     r_t = σ(a_r + b_r)
        c_t = f_t ⊙ c_{t-1} + (1 - f_t) ⊙ z_t    (the only serial part: elementwise)
        h_t = r_t ⊙ tanh(c_t) + (1 - r_t) ⊙ x_t W_skip    (W_skip = I when D = H)

    Args: params from ``init_sru``; xs [B, T, D]; c0 [B, H] or None; lengths [B] or None
      (h is zero past each length, c frozen).
    Returns: (c_final [B, H], hs [B, T, H]).
    """
    xs = jnp.asarray(xs)
    if xs.ndim != 3 or xs.shape[-1] != params["w"].shape[0]:
        raise ValueError(f"xs must be [B, T, D] with D={params['w'].shape[0]}, got {xs.shape}")
    proj = xs @ params["w"]  # [B, T, 3H]
    z, a_f, a_r = jnp.split(proj, 3, axis=-1)  # 3 x [B, T, H]
    b_f, b_r = jnp.split(params["b"], 2)
    f, r = jax.nn.sigmoid(a_f + b_f), jax.nn.sigmoid(a_r + b_r)
    cs = quasi_recurrence(f, z, c0, lengths=lengths, parallel=parallel)
    skip = xs @ params["w_skip"] if "w_skip" in params else xs  # [B, T, H]
    hs = r * jnp.tanh(cs) + (1.0 - r) * skip
    if lengths is not None:
        valid = (jnp.arange(xs.shape[1])[None, :] < jnp.asarray(lengths)[:, None])[..., None]
        hs = jnp.where(valid, hs, jnp.zeros_like(hs))
    return cs[:, -1], hs
