"""Greedy and beam-search decoding over any Translator's pure step function.

Both run the model one token at a time (model.encode once, model.init_state, then
model.step per token) inside one jax.lax.while_loop, jit-compiled per (model, max_len,
beam size). Outputs are the tokens after bos: [B, L] int32, the first eos included and
pad (0) after it; a sequence that never emits eos fills all L slots. Neither decoder ever
generates pad, bos or unk: their logits are set to -inf at every step, so every score
below is a log-probability under the model renormalised over the other tokens.

Beam search ranks hypotheses by the GNMT length-normalised score
    score(y) = log p(y | x) / lp(|y|),   lp(n) = ((5 + n) / 6) ** alpha
with |y| counting the eos. It keeps two pools of K per example: K live beams and the K
best finished hypotheses (fairseq / T5X style). At step i (new length n = i + 1), with
C = {live beam + token w} the K·V candidates ranked by log p:
    finished <- top-K by score of  finished ∪ {c in top-K(C) ending in eos}
    live     <- top-K by log p of  {c in C not ending in eos}
so a live candidate can never push a finished hypothesis out. A live beam's log p only
falls, so the best score it can still reach is  log p / max(lp(n + 1), lp(max_len))
(log p <= 0, lp monotonic); an example stops once that bound cannot beat its best
finished score. The result is the best finished hypothesis, or the best live beam when
none finished. The memory is tiled K times (row b*K + k is beam k of example b) and
after each step the decoder state is reordered by gathering rows along the batch axis
(every state leaf is batch-leading). With K = 1 and alpha = 0 beam search is greedy
decoding (with alpha > 0 it may return a longer hypothesis that scores higher); with
K >= V**L it keeps every prefix and so finds the exhaustive optimum.

Decoder states holding KV caches (anatomy.attention.kv_cache) are checked after decoding:
if any cache overflowed, greedy and beam_search raise RuntimeError (init_state is given
max_len, so a model that sizes its caches by it never overflows).
"""

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np

from anatomy.attention.kv_cache import any_overflow, raise_on_overflow
from anatomy.tokens import BOS, EOS, PAD, UNK

__all__ = ["greedy", "beam_search", "exhaustive_search", "length_penalty", "NEVER_GENERATED"]

NEVER_GENERATED = (PAD, BOS, UNK)  # token ids no decoder emits (pad only fills after eos)


def length_penalty(length, alpha):
    """GNMT's lp(n) = ((5 + n) / 6) ** alpha, elementwise over integer lengths."""
    return ((5.0 + jnp.asarray(length, jnp.float32)) / 6.0) ** alpha


def mask_never_generated(logits):
    """logits [..., V] with the NEVER_GENERATED ids set to -inf."""
    banned = jnp.isin(jnp.arange(logits.shape[-1]), jnp.asarray(NEVER_GENERATED))  # [V]
    return jnp.where(banned, -jnp.inf, logits)


def log_probs(logits):
    """log p(w | y_<i, x) [..., V] float32 over the generated tokens: log_softmax of the
    logits with NEVER_GENERATED masked (-inf there; the rest renormalised)."""
    return jax.nn.log_softmax(mask_never_generated(logits.astype(jnp.float32)))


def _check(model, src, src_len, max_len):
    if src.ndim != 2 or src_len.shape != (src.shape[0],):
        raise ValueError(
            f"decode: want src [B,S] and src_len [B], got {src.shape}, {src_len.shape}"
        )
    if int(max_len) < 1:
        raise ValueError(f"decode: max_len must be >= 1, got {max_len}")


def greedy(model, params, src, src_len, max_len):
    """Greedy decoding: argmax token at each step until eos (per example) or max_len.

        y_i = argmax_{w not in {pad, bos, unk}} p(w | y_<i, x)

    Args:
      model: a Translator. params: its parameters.
      src: [B, S] int32 source ids (pad 0). src_len: [B] int source lengths.
      max_len: int, the most tokens generated (static: one compilation per value).
    Returns:
      tokens [B, max_len] int32 (after bos; eos, then pad 0).
    Raises:
      RuntimeError if a KV cache in the decoder state overflowed.
    """
    src, src_len = jnp.asarray(src, jnp.int32), jnp.asarray(src_len, jnp.int32)
    _check(model, src, src_len, max_len)
    tokens, overflow = _greedy(model, params, src, src_len, int(max_len))
    raise_on_overflow(overflow, f"greedy decoding with {model.name}")
    return tokens


@functools.partial(jax.jit, static_argnames=("model", "max_len"))
def _greedy(model, params, src, src_len, max_len):
    b = src.shape[0]
    memory = model.encode(params, src, src_len)
    state = model.init_state(params, memory, max_len)
    out = jnp.zeros((b, max_len), jnp.int32)

    def cond(c):
        i, _, _, _, done = c
        return (i < max_len) & ~jnp.all(done)

    def body(c):
        i, state, tokens, out, done = c
        logits, state = model.step(params, memory, state, tokens)  # [B, V]
        best = jnp.argmax(mask_never_generated(logits), axis=-1).astype(jnp.int32)  # [B]
        nxt = jnp.where(done, PAD, best)  # [B]
        out = out.at[:, i].set(nxt)
        return i + 1, state, nxt, out, done | (nxt == EOS)

    init = (jnp.int32(0), state, jnp.full((b,), BOS, jnp.int32), out, jnp.zeros((b,), bool))
    _, state, _, out, _ = jax.lax.while_loop(cond, body, init)
    return out, any_overflow(state)


def beam_search(model, params, src, src_len, *, beam_size, max_len, alpha=0.6):
    """Batched beam search with a finished pool and the GNMT length penalty (module doc).

    Args:
      model: a Translator. params: its parameters.
      src: [B, S] int32. src_len: [B] int.
      beam_size: K >= 1 (static). max_len: most tokens generated (static).
      alpha: length-penalty exponent (0 = plain log-probability); traced, no recompile.
    Returns:
      (tokens [B, max_len] int32 of the best hypothesis (eos then pad 0),
       scores [B] float32 its log p / lp(length)).
    Raises:
      RuntimeError if a KV cache in the decoder state overflowed.
    """
    src, src_len = jnp.asarray(src, jnp.int32), jnp.asarray(src_len, jnp.int32)
    _check(model, src, src_len, max_len)
    if int(beam_size) < 1:
        raise ValueError(f"beam_search: beam_size must be >= 1, got {beam_size}")
    tokens, scores, overflow = _beam_search(
        model,
        params,
        src,
        src_len,
        jnp.float32(alpha),
        beam_size=int(beam_size),
        max_len=int(max_len),
    )
    raise_on_overflow(overflow, f"beam search with {model.name}")
    return tokens, scores


def _tile(tree, k):
    """Repeat every leaf k times along axis 0: [B, ...] -> [B*K, ...] (row b*K + j)."""
    return jax.tree_util.tree_map(lambda x: jnp.repeat(x, k, axis=0), tree)


def _gather(x, idx):
    """x [B, N, ...], idx [B, M] -> x[b, idx[b, m], ...] [B, M, ...]."""
    return jnp.take_along_axis(x, idx.reshape(idx.shape + (1,) * (x.ndim - 2)), axis=1)


@functools.partial(jax.jit, static_argnames=("model", "beam_size", "max_len"))
def _beam_search(model, params, src, src_len, alpha, *, beam_size, max_len):
    b, k, v = src.shape[0], beam_size, model.tgt_vocab_size
    memory = _tile(model.encode(params, src, src_len), k)  # leaves [B*K, ...]
    state = model.init_state(params, memory, max_len)
    neg_inf = jnp.float32(-jnp.inf)
    # Only beam 0 is alive at the start, so the K beams do not start as K copies.
    logp = jnp.where(jnp.arange(k) == 0, 0.0, neg_inf)[None].repeat(b, 0)  # [B, K]
    is_eos = jnp.arange(v) == EOS  # [V]
    rows = (jnp.arange(b) * k)[:, None]  # [B, 1]

    def cond(c):
        i, done = c[0], c[-1]
        return (i < max_len) & ~jnp.all(done)

    def body(c):
        i, state, tokens, seqs, logp, fin_seqs, fin_score, _ = c
        logits, state = model.step(params, memory, state, tokens.reshape(b * k))  # [B*K, V]
        lp = log_probs(logits)  # [B*K, V]
        cand = logp[..., None] + lp.reshape(b, k, v)  # [B, K, V] log p of every extension

        # Finished pool: the eos candidates among this step's K best join it; keep K best.
        top_logp, top = jax.lax.top_k(cand.reshape(b, k * v), k)  # [B, K]
        ends = (top % v) == EOS  # [B, K]
        new_score = jnp.where(ends, top_logp / length_penalty(i + 1, alpha), neg_inf)  # [B, K]
        new_seqs = _gather(seqs, top // v).at[:, :, i].set(EOS)  # [B, K, L]
        fin_score, keep = jax.lax.top_k(jnp.concatenate([fin_score, new_score], 1), k)  # [B, K]
        fin_seqs = _gather(jnp.concatenate([fin_seqs, new_seqs], 1), keep)  # [B, K, L]

        # Live beams: the K best candidates that do not end in eos.
        live = jnp.where(is_eos, neg_inf, cand).reshape(b, k * v)  # [B, K*V]
        logp, flat = jax.lax.top_k(live, k)  # [B, K]
        parent, tok = flat // v, (flat % v).astype(jnp.int32)  # [B, K] each
        seqs = _gather(seqs, parent).at[:, :, i].set(tok)  # [B, K, L]
        order = (rows + parent).reshape(b * k)  # [B*K] rows of the tiled batch
        state = jax.tree_util.tree_map(lambda x: x[order], state)

        # Stop once no live beam can beat the best finished score (see the module doc).
        reach = jnp.maximum(length_penalty(i + 2, alpha), length_penalty(max_len, alpha))
        bound = jnp.max(logp, axis=1) / reach  # [B] best score a live beam can still reach
        best_fin = jnp.max(fin_score, axis=1)  # [B]
        done = (jnp.isfinite(best_fin) & (bound <= best_fin)) | jnp.all(jnp.isneginf(logp), 1)
        return i + 1, state, tok, seqs, logp, fin_seqs, fin_score, done

    seqs0 = jnp.zeros((b, k, max_len), jnp.int32)
    init = (
        jnp.int32(0),
        state,
        jnp.full((b, k), BOS, jnp.int32),
        seqs0,
        logp,
        seqs0,
        jnp.full((b, k), neg_inf),
        jnp.zeros((b,), bool),
    )
    steps, state, _, seqs, logp, fin_seqs, fin_score, _ = jax.lax.while_loop(cond, body, init)

    # Prefer the best finished hypothesis; the best live beam only where none finished.
    any_fin = jnp.isfinite(jnp.max(fin_score, axis=1))  # [B]
    live_score = logp / length_penalty(steps, alpha)  # [B, K] (live beams are `steps` long)
    score = jnp.where(any_fin[:, None], fin_score, live_score)  # [B, K]
    pool = jnp.where(any_fin[:, None, None], fin_seqs, seqs)  # [B, K, L]
    best = jnp.argmax(score, axis=1)[:, None]  # [B, 1]
    return _gather(pool, best)[:, 0], _gather(score, best)[:, 0], any_overflow(state)


def exhaustive_search(model, params, src, src_len, max_len, alpha=0.6):
    """The exact optimum beam search approximates: slow, for tests on tiny models.

    Scores EVERY sequence of max_len tokens over the generated vocabulary (all ids but
    NEVER_GENERATED; at most 2**16 sequences) by stepping the model, truncates each at its
    first eos, and returns the hypothesis with the best log p / lp(length) (float64 sums of
    the float32 log-probabilities): the best one that ends in eos, or, where none can, the
    best of max_len tokens without eos (the same preference as beam_search).

    Returns: (tokens [B, max_len] int32 numpy (eos then pad 0), scores [B] float64 numpy).
    """
    words = [w for w in range(model.tgt_vocab_size) if w not in NEVER_GENERATED]
    if len(words) ** max_len > 2**16:
        raise ValueError(f"exhaustive_search: {len(words)}**{max_len} sequences is too many")
    seqs = np.array(list(itertools.product(words, repeat=max_len)), np.int32)  # [N, L]
    ends = (seqs == EOS).any(1)  # [N] finished hypotheses
    stop = np.where(ends, (seqs == EOS).argmax(1) + 1, max_len)  # [N] lengths
    tokens, scores = [], []
    for row, length in zip(np.asarray(src, np.int32), np.asarray(src_len, np.int32)):
        logp = np.asarray(
            _all_log_probs(model, params, row, length, jnp.asarray(seqs)), np.float64
        )  # [N, L]
        total = np.where(np.arange(max_len)[None] < stop[:, None], logp, 0.0).sum(1)
        score = total / ((5.0 + stop) / 6.0) ** alpha  # [N]
        finished = np.isfinite(np.where(ends, score, -np.inf)).any()
        best = int(np.argmax(np.where(ends | ~finished, score, -np.inf)))
        tokens.append(np.where(np.arange(max_len) < stop[best], seqs[best], PAD))
        scores.append(score[best])
    return np.stack(tokens).astype(np.int32), np.array(scores)


@functools.partial(jax.jit, static_argnames=("model",))
def _all_log_probs(model, params, src_row, length, seqs):
    """log p(y_t | y_<t, x) [N, L] for every row of seqs [N, L] given one source row [S]."""
    n = seqs.shape[0]
    memory = model.encode(
        params, jnp.broadcast_to(src_row, (n,) + src_row.shape), jnp.full((n,), length, jnp.int32)
    )
    state = model.init_state(params, memory, seqs.shape[1])
    prev = jnp.concatenate([jnp.full((n, 1), BOS, jnp.int32), seqs[:, :-1]], axis=1)  # [N, L]

    def body(state, xs):
        tokens, targets = xs  # [N] each
        logits, state = model.step(params, memory, state, tokens)
        lp = log_probs(logits)  # [N, V]
        return state, jnp.take_along_axis(lp, targets[:, None], axis=1)[:, 0]

    _, logp = jax.lax.scan(body, state, (prev.T, seqs.T))  # [L, N]
    return logp.T
