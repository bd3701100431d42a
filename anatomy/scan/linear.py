"""The one linear recurrence, h_t = a_t ⊙ h_{t-1} + b_t, in three forms proven equal.

Letters: B batch, T time, C chunk length, n chunks (T / C), S the state's shape, P the heads
(any leading state dims), K the key and V the value width of a matrix state h [P, K, V].

    diagonal   h_t = a_t ⊙ h_{t-1} + b_t        a [B, T, *S] or broadcastable to it with
                                                trailing 1s (a scalar per head: a [B, T, P]
                                                against h [P, K, V]); a=None is a_t = 1
    matrix     h_t = A_t h_{t-1} + b_t          A [B, T, P, K, K] acting on the key axis of
                                                h [P, K, V] (DeltaNet's I - β k kᵀ)
    outer b    b_t = k_t v_tᵀ                   b given as the pair (k [B, T, P, K], v
                                                [B, T, P, V]): the rank-1 write of linear
                                                attention, mLSTM and SSD
    readout    y_t = h_tᵀ q_t                   q [B, T, P, K] -> y [B, T, P, V] instead of
                                                every state (a matrix state per step is big)

Forms (``form=``), each the same function of its inputs:

    sequential    jax.lax.scan over T: T serial steps, O(S) work each (recurrentgemma's
                  choice on CPU and GPU, where the scan is memory-bound)
    associative   jax.lax.associative_scan over the pairs (a, b), composed as
                  (a1, b1) ∘ (a2, b2) = (a2 a1, a2 b1 + b2): O(log T) depth, every state
                  materialised (an outer b becomes k vᵀ first), a matrix transition costs
                  a K×K matmul per combine
    chunked       T split into chunks of C: inside a chunk the states are dense products
                  (L[t, s] = a_{s+1} ⋯ a_t, the decays between two steps of one chunk), a
                  sequential scan carries the state across the n chunk boundaries only.
                  With an outer b and a readout, no per-step state is ever formed:
                      y_t = P_t (q_tᵀ h_start) + Σ_{s ≤ t in the chunk} L[t, s] (q_t·k_s) v_s
                      h_end = P_C h_start + Σ_s L[C, s] k_s v_sᵀ       (P_t = a_1 ⋯ a_t)
                  (Mamba-2's SSD, Dao & Gu 2024, chunked linear attention). Diagonal only: a
                  matrix transition has no dense intra-chunk form in general; gated
                  DeltaNet's structured one chunks in its own module (anatomy/mixers/gated_deltanet.py, the UT
                  transform) and carries its state across chunks through this scan.

L is a masked cumulative product, so it is exact for any a (zeros and signs included): no
logarithm, no division by a running product.

``linear_scan(a, b, h0, *, q, transition, form, chunk, lengths) -> (out, h_last)``: out is
every state [B, T, *S] or, with q, every readout [B, T, P, V]; h_last [B, *S] the state after
the last step. lengths [B] freezes a sequence past its length (a = 1, b = 0 there), so h_last
is its state after its last real step.
"""

import math

import jax
import jax.numpy as jnp

from anatomy.errors import BadInputError

FORMS = ("sequential", "associative", "chunked")
TRANSITIONS = ("diagonal", "matrix")
CHUNK = 64  # default chunk length of the chunked form (clipped to T)


def check_form(form, forms=FORMS, what="form"):
    """``form`` if it is one of ``forms``, else BadInputError naming the choices."""
    if form not in forms:
        raise BadInputError(f"{what} must be one of {', '.join(map(repr, forms))}; got {form!r}")
    return form


# ------------------------------------------------------------------------- the algebra


def outer(k, v):
    """k [..., K], v [..., V] -> k vᵀ [..., K, V]."""
    return k[..., :, None] * v[..., None, :]


def readout(h, q):
    """y = hᵀ q: h [..., K, V], q [..., K] -> [..., V]."""
    return jnp.einsum("...kv,...k->...v", h, q)


def _act(a, h, matrix):
    """a acting on h: a ⊙ h (diagonal), A h (matrix), h (a None)."""
    if a is None:
        return h
    return jnp.einsum("...ij,...jv->...iv", a, h) if matrix else a * h


def _compose(a1, a2, matrix):
    """The transition of a1 then a2: a2 a1."""
    return jnp.einsum("...ij,...jk->...ik", a2, a1) if matrix else a1 * a2


def _write(b):
    """b_t as an array: an outer pair (k, v) becomes k vᵀ."""
    return outer(*b) if isinstance(b, tuple) else b


# ------------------------------------------------------------------------ input checks


def _state_shape(b):
    if isinstance(b, tuple):
        k, v = b
        if k.ndim < 3 or k.shape[:-1] != v.shape[:-1]:
            raise BadInputError(
                f"linear_scan: an outer b needs k [B, T, *P, K] and v [B, T, *P, V] with the "
                f"same leading dims, got {k.shape} and {v.shape}"
            )
        return k.shape[:2], k.shape[2:] + v.shape[-1:]
    if b.ndim < 3:
        raise BadInputError(f"linear_scan: b must be [B, T, *S], got shape {b.shape}")
    return b.shape[:2], b.shape[2:]


def _check(a, b, h0, q, matrix, lengths):
    """Shapes checked; a padded with trailing 1s to the state's rank (diagonal)."""
    bt, s = _state_shape(b)
    if a is not None:
        if matrix:
            want = bt + s[:-1] + s[-2:-1]
            if a.shape != want:
                raise BadInputError(f"linear_scan: a matrix a must be {want}, got {a.shape}")
        else:
            if a.ndim < 2 or a.ndim > len(s) + 2:
                raise ValueError(f"a and b must both be [B, T, *S], got {a.shape} and {bt + s}")
            a = a.reshape(a.shape + (1,) * (len(s) + 2 - a.ndim))
            if a.shape[:2] != bt or any(x not in (1, y) for x, y in zip(a.shape[2:], s)):
                raise ValueError(f"a and b must both be [B, T, *S], got {a.shape} and {bt + s}")
    elif matrix:
        raise BadInputError("linear_scan: transition='matrix' needs a")
    if h0 is not None and h0.shape != bt[:1] + s:
        raise ValueError(f"c0 must be [B, *S]={bt[:1] + s}, got {h0.shape}")
    if q is not None and q.shape != bt + s[:-1]:
        raise BadInputError(f"linear_scan: q must be [B, T, *P, K]={bt + s[:-1]}, got {q.shape}")
    if lengths is not None and jnp.shape(lengths) != bt[:1]:
        raise ValueError(f"lengths must have shape [B]=({bt[0]},), got {jnp.shape(lengths)}")
    return a, s


def _freeze(a, b, lengths, matrix):
    """Past each length: a = 1 (identity), b = 0, so the state stays where it was."""
    bt = (b[0] if isinstance(b, tuple) else b).shape[:2]
    valid = jnp.arange(bt[1])[None, :] < jnp.asarray(lengths)[:, None]  # [B, T]
    on = lambda x: valid.reshape(bt + (1,) * (x.ndim - 2))
    if isinstance(b, tuple):
        b = (jnp.where(on(b[0]), b[0], 0.0), b[1])
    else:
        b = jnp.where(on(b), b, 0.0)
    if a is None:
        return a, b
    one = jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape) if matrix else 1.0
    return jnp.where(on(a), a, one), b


# --------------------------------------------------------------------------- the forms


def _time_major(x):
    return None if x is None else jax.tree.map(lambda y: jnp.swapaxes(y, 0, 1), x)


def _sequential(a, b, h0, q, matrix, unroll):
    """jax.lax.scan over T."""

    def step(h, x):
        a_t, b_t, q_t = x
        h = _act(a_t, h, matrix) + _write(b_t)
        return h, (h if q_t is None else readout(h, q_t))

    h_last, out = jax.lax.scan(step, h0, _time_major((a, b, q)), unroll=unroll)
    return _time_major(out), h_last


def _associative(a, b, h0, q, matrix):
    """jax.lax.associative_scan over T (h0 folded into the first write)."""
    b = _write(b)
    b = b.at[:, 0].add(_act(None if a is None else a[:, 0], h0, matrix))
    if a is None:
        hs = jnp.cumsum(b, axis=1)
    else:

        def combine(left, right):
            (a1, b1), (a2, b2) = left, right
            return _compose(a1, a2, matrix), _act(a2, b1, matrix) + b2

        _, hs = jax.lax.associative_scan(combine, (a, b), axis=1)
    return (hs if q is None else readout(hs, q)), hs[:, -1]


def segment_products(a):
    """L[..., t, s] = a_{s+1} ⋯ a_t for s <= t (1 on the diagonal), 0 above it.

    a [..., C] (time last) -> [..., C, C], by a cumulative product down each column of
    M[t, s] = a_t if t > s else 1: exact for any a, no logarithm and no division.
    """
    c = a.shape[-1]
    t = jnp.arange(c)
    later = t[:, None] > t[None, :]  # [C(t), C(s)]
    m = jnp.where(later, a[..., :, None], jnp.ones((), a.dtype))
    return jnp.where(later | (t[:, None] == t[None, :]), jnp.cumprod(m, axis=-2), 0.0)


def segment_sums(x):
    """S[..., t, s] = x_{s+1} + ⋯ + x_t for s <= t (0 on the diagonal), -inf above it.

    x [..., T] -> [..., T, T], by a cumulative sum down each column of the masked x (no
    difference of two running sums, which loses digits as they grow: ssd_minimal's segsum).
    """
    n = x.shape[-1]
    t = jnp.arange(n)
    later = t[:, None] > t[None, :]
    sums = jnp.cumsum(jnp.where(later, x[..., :, None], 0.0), axis=-2)
    return jnp.where(later | (t[:, None] == t[None, :]), sums, -jnp.inf)


def quadratic(q, k, v, log_a=None, h0=None):
    """The outer-write recurrence in its attention-like form (Dao & Gu 2024, SSD's quadratic
    form; Katharopoulos et al. 2020's causal linear attention when log_a is None):

        y_t = Σ_{s<=t} exp(Σ_{r=s+1..t} log a_r) (q_t·k_s) v_s + exp(Σ_{r<=t} log a_r) h0ᵀ q_t

    Args: q, k [B, T, P, K]; v [B, T, P, V]; log_a [B, T, P] (one log-decay per head) or
      None (no decay); h0 [B, P, K, V] or None.
    Returns: (y [B, T, P, V], h_last [B, P, K, V]): the same as linear_scan(exp(log_a), (k, v),
      h0, q=q), with a T x T matrix per head instead of any scan.
    """
    bsz, n_time = k.shape[:2]
    if log_a is None:
        log_a = jnp.zeros(k.shape[:-1], k.dtype)
    seg = segment_sums(jnp.moveaxis(log_a, 1, -1))  # [B, P, T(t), T(s)]
    decay = jnp.exp(seg)  # 0 above the diagonal (exp(-inf))
    scores = jnp.einsum("bthk,bshk->bhts", q, k) * decay
    y = jnp.einsum("bhts,bshv->bthv", scores, v)
    h_last = jnp.einsum("bhs,bshk,bshv->bhkv", decay[..., -1, :], k, v)  # the last row: to T
    total = jnp.cumsum(log_a, axis=1)  # [B, T, P]: Σ_{r<=t} log a_r
    if h0 is not None:
        y = y + jnp.exp(total)[..., None] * readout(h0[:, None], q)
        h_last = h_last + jnp.exp(total[:, -1])[..., None, None] * h0
    return y, h_last


def _chunks(x, n, c):
    """[B, T, ...] -> [B, n, C, ...] (T = n C)."""
    return None if x is None else x.reshape(x.shape[:1] + (n, c) + x.shape[2:])


def _pad_time(x, extra, value):
    if x is None or extra == 0:
        return x
    pad = [(0, 0)] * x.ndim
    pad[1] = (0, extra)
    return jnp.pad(x, pad, constant_values=value)


def _across_chunks(decay, inc, h0):
    """The state at every chunk's start and after the last: a sequential scan over the n
    chunk ends h_end = decay ⊙ h_start + inc (decay broadcastable to inc [B, n, *S])."""
    ends, h_last = _sequential(decay, inc, h0, None, False, 1)
    starts = jnp.concatenate([h0[:, None], ends[:, :-1]], axis=1)  # [B, n, *S]
    return starts, h_last


def _chunked(a, b, h0, q, chunk):
    """Dense products inside chunks of C, a sequential scan across them."""
    n_time = (b[0] if isinstance(b, tuple) else b).shape[1]
    c = max(1, min(int(chunk), n_time))
    n = -(-n_time // c)
    extra = n * c - n_time  # padded steps: a = 1, b = 0 leave the state as it was
    a = _pad_time(a, extra, 1.0)
    q = _pad_time(q, extra, 0.0)
    if isinstance(b, tuple) and q is not None:
        k, v = (_pad_time(x, extra, 0.0) for x in b)
        out, h_last = _chunked_outer(a, k, v, q, h0, n, c)
    else:
        out, h_last = _chunked_dense(a, _pad_time(_write(b), extra, 0.0), h0, n, c)
        out = out if q is None else readout(out, q)
    return out[:, :n_time], h_last


def _chunked_dense(a, b, h0, n, c):
    """Every state [B, T, *S]: the decay varies over the state's leading dims A only (a
    [B, T, *A, 1, ..., 1] against b [B, T, *A, *R]), so the intra-chunk products are
    [C, C] per A and the write over R rides along as a matmul."""
    bsz, s = b.shape[0], b.shape[2:]
    if a is None:
        a = jnp.ones((bsz, n * c) + (1,) * len(s), b.dtype)
    lead = max([i + 1 for i, d in enumerate(a.shape[2:]) if d != 1], default=0)
    a = jnp.broadcast_to(a, a.shape[:2] + s[:lead] + a.shape[2 + lead :])
    n_a = math.prod(s[:lead])
    af = _chunks(a.reshape(bsz, n * c, n_a), n, c)  # [B, n, C, A]
    bf = _chunks(b.reshape(bsz, n * c, n_a, -1), n, c)  # [B, n, C, A, R]
    lmat = segment_products(jnp.moveaxis(af, 2, -1))  # [B, n, A, C(t), C(s)]
    intra = jnp.einsum("bnats,bnsar->bntar", lmat, bf)  # every state from a zero chunk start
    prods = jnp.cumprod(af, axis=2)  # P_t = a_1 ⋯ a_t inside each chunk [B, n, C, A]
    h0f = h0.reshape(bsz, n_a, -1)
    starts, h_last = _across_chunks(prods[:, :, -1, :, None], intra[:, :, -1], h0f)
    hs = intra + prods[..., None] * starts[:, :, None]  # [B, n, C, A, R]
    return hs.reshape((bsz, n * c) + s), h_last.reshape((bsz,) + s)


def _chunked_outer(a, k, v, q, h0, n, c):
    """Readouts of an outer-product write with a scalar decay per head (SSD's chunked form)."""
    bsz, p, kd, vd = k.shape[0], k.shape[2:-1], k.shape[-1], v.shape[-1]
    if a is not None and a.shape[-2:] != (1, 1):
        raise BadInputError(
            "linear_scan(form='chunked') with an outer b needs one decay per head, "
            f"a [B, T, *P, 1, 1]; got {a.shape}"
        )
    n_p = math.prod(p)
    flat = lambda x, w: _chunks(x.reshape(bsz, n * c, n_p, w), n, c)  # [B, n, C, P, w]
    kf, vf, qf = flat(k, kd), flat(v, vd), flat(q, kd)
    if a is None:
        af = jnp.ones((bsz, n, c, n_p), k.dtype)
    else:
        af = _chunks(a.reshape(bsz, n * c, n_p), n, c)  # [B, n, C, P]
    lmat = segment_products(jnp.moveaxis(af, 2, -1))  # [B, n, P, C(t), C(s)]
    prods = jnp.cumprod(af, axis=2)  # [B, n, C, P]
    scores = jnp.einsum("bnthk,bnshk->bnhts", qf, kf) * lmat  # [B, n, P, C, C]
    y_intra = jnp.einsum("bnhts,bnshv->bnthv", scores, vf)  # [B, n, C, P, V]
    inc = jnp.einsum("bnhs,bnshk,bnshv->bnhkv", lmat[..., -1, :], kf, vf)  # [B, n, P, K, V]
    h0f = h0.reshape(bsz, n_p, kd, vd)
    starts, h_last = _across_chunks(prods[:, :, -1, :, None, None], inc, h0f)
    y_inter = jnp.einsum("bnthk,bnhkv->bnthv", qf, starts) * prods[..., None]
    y = (y_intra + y_inter).reshape((bsz, n * c) + p + (vd,))
    return y, h_last.reshape((bsz,) + p + (kd, vd))


# -------------------------------------------------------------------------- the entry


def linear_scan(
    a,
    b,
    h0=None,
    *,
    q=None,
    transition="diagonal",
    form="sequential",
    chunk=CHUNK,
    lengths=None,
    unroll=1,
):
    """h_t = a_t ⊙ h_{t-1} + b_t (or A_t h_{t-1} + b_t) for t = 1..T, in the form asked.

    Args (module docstring for the shapes):
      a: [B, T, *S] or broadcastable to it with trailing 1s (diagonal), [B, T, P, K, K]
        (matrix), or None (a_t = 1: a running sum, linear attention's).
      b: [B, T, *S], or the pair (k [B, T, P, K], v [B, T, P, V]) for b_t = k_t v_tᵀ.
      h0: [B, *S] or None (zeros).
      q: None, or [B, T, P, K]: return y_t = h_tᵀ q_t instead of the states.
      transition: 'diagonal' or 'matrix'. form: 'sequential', 'associative' or 'chunked'
        (diagonal only). chunk: the chunked form's C (clipped to T). lengths: [B] or None.
      unroll: the sequential form's jax.lax.scan unroll.
    Returns:
      (states [B, T, *S] or readouts [B, T, P, V], h_last [B, *S]).
    """
    check_form(form, FORMS, "linear_scan: form")
    check_form(transition, TRANSITIONS, "linear_scan: transition")
    matrix = transition == "matrix"
    a, b, q = jax.tree.map(jnp.asarray, (a, b, q))
    a, s = _check(a, b, h0, q, matrix, lengths)
    if matrix and form == "chunked":
        raise BadInputError(
            "linear_scan: form='chunked' needs a diagonal transition (a matrix one chunks by "
            "its own structure, e.g. gated_deltanet.py's UT transform)"
        )
    dtype = jnp.result_type(*jax.tree.leaves(b))
    bsz = jax.tree.leaves(b)[0].shape[0]
    h0 = jnp.zeros((bsz,) + s, dtype) if h0 is None else jnp.asarray(h0, dtype)
    if lengths is not None:
        a, b = _freeze(a, b, lengths, matrix)
    if form == "sequential":
        return _sequential(a, b, h0, q, matrix, unroll)
    if form == "associative":
        return _associative(a, b, h0, q, matrix)
    return _chunked(a, b, h0, q, chunk)
