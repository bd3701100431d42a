"""Chunked attention with an online softmax (Milakov & Gimelshein 2018; Dao et al. 2022).

Exact softmax(Q Kᵀ / √d) V computed one key block at a time, never holding the [q, k]
weights. Letters: b batch, q query positions, k key positions, h heads, d head dim; j a key
block of block_k keys, s_j = Q K_jᵀ / √d its logits (masked entries -inf). Per query row:

    m_j   = max(m_{j-1}, max s_j)                         running max      (m_0 = -inf)
    l_j   = e^{m_{j-1} - m_j} l_{j-1} + Σ e^{s_j - m_j}   running sum      (l_0 = 0)
    acc_j = e^{m_{j-1} - m_j} acc_{j-1} + e^{s_j - m_j} V_j                (acc_0 = 0)
    out   = acc_J / l_J,    lse = m_J + log l_J

The rescaling e^{m_{j-1} - m_j} is what makes one pass exact. The backward is the Flash one:
it keeps only out and lse, and recomputes each block's weights P_j = e^{s_j - lse}:

    D = rowsum(dO ∘ O),  dS_j = P_j ∘ (dO V_jᵀ - D),  dQ = Σ_j dS_j K_j / √d,
    dK_j = dS_jᵀ Q / √d,  dV_j = P_jᵀ dO.

Memory is O(N·d) plus one [q_block, k_block] tile per head, forward and backward; serial
steps are ceil(k / block_k) key blocks (times ceil(q / block_q) when queries are also
blocked). Query blocks are independent (Flash's parallel grid): block_q=None processes all
queries at once, an int processes them block after block (smaller tiles, more serial steps).
Lengths that are not multiples of the block are padded, and padded keys masked. A query with
no allowed key gets an output of zero, as in scaled_dot_product.
"""

import functools
import numbers

import jax
import jax.numpy as jnp

from anatomy.attention.masks import as_mask4


def _check_block(name, n):
    if n is not None and (not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < 1):
        raise ValueError(f"chunked_attention: {name} must be a positive int or None, got {n!r}")


def _pad_axis(x, axis, size, value=0):
    if x.shape[axis] in (1, size):
        return x
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, size - x.shape[axis])
    return jnp.pad(x, pad, constant_values=value)


def _slice(x, axis, start, size):
    """x's block [start, start+size) along axis, or x itself where that axis broadcasts."""
    if x.shape[axis] == 1:
        return x
    return jax.lax.dynamic_slice_in_dim(x, start, size, axis)


def _allowed(static, mask, kv_lengths, q0, k0, bq, bk):
    """The [b|1, h|1, bq, bk] mask of the tile whose first query is q0 and first key k0."""
    q_len, k_len, causal = static[:3]
    qpos = q0 + jnp.arange(bq)[:, None]  # [bq, 1]
    kpos = k0 + jnp.arange(bk)[None, :]  # [1, bk]
    ok = (kpos < k_len) & (qpos < q_len)  # padded keys and queries take no part
    if causal:
        ok = ok & (kpos <= qpos)
    ok = ok[None, None]  # [1, 1, bq, bk]
    if kv_lengths is not None:
        ok = ok & (kpos[None, None] < kv_lengths[:, None, None, None])  # [b, 1, bq, bk]
    if mask is not None:
        ok = ok & _slice(_slice(mask, 2, q0, bq), 3, k0, bk)
    return ok


def _tile_logits(q_blk, k_blk, ok):
    scale = 1.0 / jnp.sqrt(jnp.asarray(q_blk.shape[-1], q_blk.dtype))
    s = jnp.einsum("bqhd,bkhd->bhqk", q_blk, k_blk) * scale  # [b, h, bq, bk]
    return jnp.where(ok, s, -jnp.inf), scale


def _rows_forward(static, q_blk, q0, k, v, mask, kv_lengths):
    """One block of queries against every key block: (out [b, bq, h, dv], lse [b, h, bq])."""
    bk = static[4]
    b, bq, h, _ = q_blk.shape
    acc_dt = jnp.result_type(q_blk.dtype, jnp.float32)

    def step(carry, j):
        m, total, acc = carry  # [b,h,bq], [b,h,bq], [b,h,bq,dv]
        k_blk = jax.lax.dynamic_slice_in_dim(k, j * bk, bk, 1)  # [b, bk, h, d]
        v_blk = jax.lax.dynamic_slice_in_dim(v, j * bk, bk, 1)  # [b, bk, h, dv]
        ok = _allowed(static, mask, kv_lengths, q0, j * bk, bq, bk)
        s, _ = _tile_logits(q_blk, k_blk, ok)  # [b, h, bq, bk]
        m_new = jnp.maximum(m, jnp.max(s, axis=-1))  # -inf while a row has seen no key
        m_safe = jnp.where(jnp.isfinite(m_new), m_new, 0.0)
        p = jnp.where(ok, jnp.exp(s - m_safe[..., None]), 0.0)  # [b, h, bq, bk]
        corr = jnp.exp(m - m_safe)  # e^{m_{j-1} - m_j}; 0 while m_{j-1} = -inf
        total = corr * total + jnp.sum(p, axis=-1)
        acc = corr[..., None] * acc + jnp.einsum("bhqk,bkhd->bhqd", p, v_blk.astype(acc_dt))
        return (m_new, total, acc), None

    init = (
        jnp.full((b, h, bq), -jnp.inf, acc_dt),
        jnp.zeros((b, h, bq), acc_dt),
        jnp.zeros((b, h, bq, v.shape[-1]), acc_dt),
    )
    (m, total, acc), _ = jax.lax.scan(step, init, jnp.arange(k.shape[1] // bk))
    seen = total > 0
    out = acc / jnp.where(seen, total, 1.0)[..., None]  # [b, h, bq, dv]; 0 for a row with no key
    lse = jnp.where(seen, m + jnp.log(jnp.where(seen, total, 1.0)), 0.0)  # [b, h, bq]
    return jnp.swapaxes(out, 1, 2).astype(v.dtype), lse


def _rows_backward(static, q_blk, q0, do_blk, lse, delta, k, v, mask, kv_lengths):
    """Gradients from one block of queries: dq [b, bq, h, d], dk [b, k, h, d], dv [b, k, h, dv]."""
    bk = static[4]
    bq = q_blk.shape[1]

    def step(dq, j):
        k_blk = jax.lax.dynamic_slice_in_dim(k, j * bk, bk, 1)  # [b, bk, h, d]
        v_blk = jax.lax.dynamic_slice_in_dim(v, j * bk, bk, 1)  # [b, bk, h, dv]
        ok = _allowed(static, mask, kv_lengths, q0, j * bk, bq, bk)
        s, scale = _tile_logits(q_blk, k_blk, ok)  # [b, h, bq, bk]
        p = jnp.where(ok, jnp.exp(s - lse[..., None]), 0.0)  # the forward's weights
        dp = jnp.einsum("bqhd,bkhd->bhqk", do_blk, v_blk)  # [b, h, bq, bk]
        ds = p * (dp - delta[..., None])  # [b, h, bq, bk]
        dq = dq + (jnp.einsum("bhqk,bkhd->bqhd", ds, k_blk) * scale).astype(dq.dtype)
        dk_blk = jnp.einsum("bhqk,bqhd->bkhd", ds, q_blk) * scale  # [b, bk, h, d]
        dv_blk = jnp.einsum("bhqk,bqhd->bkhd", p, do_blk)  # [b, bk, h, dv]
        return dq, (dk_blk.astype(k.dtype), dv_blk.astype(v.dtype))

    n_blocks = k.shape[1] // bk
    dq, (dk, dv) = jax.lax.scan(step, jnp.zeros_like(q_blk), jnp.arange(n_blocks))
    # [n, b, bk, h, d] -> [b, n·bk, h, d]
    dk = jnp.moveaxis(dk, 0, 1).reshape(k.shape)
    dv = jnp.moveaxis(dv, 0, 1).reshape(v.shape)
    return dq, dk, dv


def _forward(static, q, k, v, mask, kv_lengths):
    bq = static[3]
    if bq == q.shape[1]:
        return _rows_forward(static, q, 0, k, v, mask, kv_lengths)

    def rows(i):
        q_blk = jax.lax.dynamic_slice_in_dim(q, i * bq, bq, 1)
        return _rows_forward(static, q_blk, i * bq, k, v, mask, kv_lengths)

    out, lse = jax.lax.map(rows, jnp.arange(q.shape[1] // bq))  # [n, b, bq, h, dv], [n, b, h, bq]
    out = jnp.moveaxis(out, 0, 1).reshape(q.shape[:3] + v.shape[-1:])  # [b, q, h, dv]
    lse = jnp.moveaxis(lse, 0, 2).reshape(lse.shape[1:3] + (-1,))  # [b, h, q]
    return out, lse


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _attention(static, q, k, v, mask, kv_lengths):
    return _forward(static, q, k, v, mask, kv_lengths)[0]


def _attention_fwd(static, q, k, v, mask, kv_lengths):
    out, lse = _forward(static, q, k, v, mask, kv_lengths)
    return out, (q, k, v, mask, kv_lengths, out, lse)


def _attention_bwd(static, res, d_out):
    q, k, v, mask, kv_lengths, out, lse = res
    bq = static[3]
    delta = jnp.einsum("bqhd,bqhd->bhq", d_out, out)  # D = rowsum(dO ∘ O)  [b, h, q]
    if bq == q.shape[1]:
        dq, dk, dv = _rows_backward(static, q, 0, d_out, lse, delta, k, v, mask, kv_lengths)
    else:

        def rows(carry, i):
            dk, dv = carry
            blk = functools.partial(jax.lax.dynamic_slice_in_dim, start_index=i * bq, slice_size=bq)
            dq_blk, dk_i, dv_i = _rows_backward(
                static,
                blk(q, axis=1),
                i * bq,
                blk(d_out, axis=1),
                blk(lse, axis=2),
                blk(delta, axis=2),
                k,
                v,
                mask,
                kv_lengths,
            )
            return (dk + dk_i, dv + dv_i), dq_blk

        zeros = (jnp.zeros_like(k), jnp.zeros_like(v))
        (dk, dv), dq = jax.lax.scan(rows, zeros, jnp.arange(q.shape[1] // bq))
        dq = jnp.moveaxis(dq, 0, 1).reshape(q.shape)  # [n, b, bq, h, d] -> [b, q, h, d]
    return dq, dk, dv, None, None


_attention.defvjp(_attention_fwd, _attention_bwd)


def chunked_attention(
    q, k, v, mask=None, *, causal=False, kv_lengths=None, block_q=None, block_k=128
):
    """softmax(Q Kᵀ / √d) V one key block at a time (see module doc); equal to scaled_dot_product.

    Args:
      q: [b, q, h, d]; k: [b, k, h, d]; v: [b, k, h, d_v].
      mask: bool broadcastable to [b, h, q, k] (True = may attend), or None. Prefer causal and
        kv_lengths, which are built per tile and cost no [q, k] array.
      causal: query i may attend to keys j <= i (causal_mask(q, k), offset 0).
      kv_lengths: [b] int, valid keys per sequence (padding_mask(kv_lengths, k)), or None.
      block_q: queries per block processed one block after another; None = all at once.
      block_k: keys per block of the online softmax's scan.
    Returns:
      out [b, q, h, d_v] (no weights: never holding them is the point).
    """
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(
            f"chunked_attention: q, k, v must be [b, len, h, d], got {q.shape}, {k.shape}, {v.shape}"
        )
    if q.shape[-1] != k.shape[-1] or k.shape[:3] != v.shape[:3] or q.shape[::2] != k.shape[::2]:
        raise ValueError(
            f"chunked_attention: incompatible shapes q {q.shape}, k {k.shape}, v {v.shape}"
        )
    _check_block("block_q", block_q)
    _check_block("block_k", block_k)
    b, q_len, h, _ = q.shape
    k_len = k.shape[1]
    bq = q_len if block_q is None else min(int(block_q), q_len)
    bk = k_len if block_k is None else min(int(block_k), k_len)
    q_pad, k_pad = -(-q_len // bq) * bq, -(-k_len // bk) * bk
    if kv_lengths is not None:
        kv_lengths = jnp.asarray(kv_lengths)
        if kv_lengths.shape != (b,) or not jnp.issubdtype(kv_lengths.dtype, jnp.integer):
            raise ValueError(
                f"chunked_attention: kv_lengths must be int [b] = [{b}], got "
                f"{kv_lengths.dtype} {kv_lengths.shape}"
            )
    if mask is not None:
        mask = as_mask4(mask, (b, h, q_len, k_len), "chunked_attention")
        mask = _pad_axis(_pad_axis(mask, 2, q_pad, False), 3, k_pad, False)
    static = (q_len, k_len, bool(causal), bq, bk)
    out = _attention(
        static,
        _pad_axis(q, 1, q_pad),
        _pad_axis(k, 1, k_pad),
        _pad_axis(v, 1, k_pad),
        mask,
        kv_lengths,
    )
    return out[:, :q_len]
