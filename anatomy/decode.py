"""Greedy and beam-search decoding over any Translator's pure step function.

Both run the model one token at a time (model.encode once, model.init_state, then
model.step per token) inside one jax.lax.while_loop, jit-compiled per (model, max_len,
beam size). Outputs are the tokens after bos: [B, L] int32, the first eos included and
pad (0) after it; a sequence that never emits eos fills all L slots.

Beam search ranks hypotheses by the GNMT length-normalised score
    score(y) = log p(y | x) / lp(|y|),   lp(n) = ((5 + n) / 6) ** alpha
with |y| counting the eos. It keeps K beams per example; the memory is tiled K times
(row b*K + k is beam k of example b) and after each step the decoder state is reordered
by gathering rows along the batch axis (every state leaf is batch-leading). A finished
beam keeps its score and competes with the live ones; it is extended with pad at zero
cost. With K = 1 beam search is greedy decoding (for any alpha); with K >= V**L it
keeps every prefix and so finds the exhaustive optimum.
"""
import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np

from anatomy.seq2seq.base import BOS, EOS, PAD

__all__ = ["greedy", "beam_search", "exhaustive_search", "length_penalty"]


def length_penalty(length, alpha):
    """GNMT's lp(n) = ((5 + n) / 6) ** alpha, elementwise over integer lengths."""
    return ((5.0 + jnp.asarray(length, jnp.float32)) / 6.0) ** alpha


def _check(model, src, src_len, max_len):
    if src.ndim != 2 or src_len.shape != (src.shape[0],):
        raise ValueError(f"decode: want src [B,S] and src_len [B], got {src.shape}, {src_len.shape}")
    if int(max_len) < 1:
        raise ValueError(f"decode: max_len must be >= 1, got {max_len}")


def greedy(model, params, src, src_len, max_len):
    """Greedy decoding: argmax token at each step until eos (per example) or max_len.

    Args:
      model: a Translator. params: its parameters.
      src: [B, S] int32 source ids (pad 0). src_len: [B] int source lengths.
      max_len: int, the most tokens generated (static: one compilation per value).
    Returns:
      tokens [B, max_len] int32 (after bos; eos, then pad 0).
    """
    src, src_len = jnp.asarray(src, jnp.int32), jnp.asarray(src_len, jnp.int32)
    _check(model, src, src_len, max_len)
    return _greedy(model, params, src, src_len, int(max_len))


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
        nxt = jnp.where(done, PAD, jnp.argmax(logits, axis=-1).astype(jnp.int32))  # [B]
        out = out.at[:, i].set(nxt)
        return i + 1, state, nxt, out, done | (nxt == EOS)

    init = (jnp.int32(0), state, jnp.full((b,), BOS, jnp.int32), out, jnp.zeros((b,), bool))
    return jax.lax.while_loop(cond, body, init)[3]


def beam_search(model, params, src, src_len, *, beam_size, max_len, alpha=0.6):
    """Batched beam search with the GNMT length penalty.

    Args:
      model: a Translator. params: its parameters.
      src: [B, S] int32. src_len: [B] int.
      beam_size: K >= 1 (static). max_len: most tokens generated (static).
      alpha: length-penalty exponent (0 = plain log-probability); traced, no recompile.
    Returns:
      (tokens [B, max_len] int32 of the best hypothesis (eos then pad 0),
       scores [B] float32 its log p / lp(length)).
    """
    src, src_len = jnp.asarray(src, jnp.int32), jnp.asarray(src_len, jnp.int32)
    _check(model, src, src_len, max_len)
    if int(beam_size) < 1:
        raise ValueError(f"beam_search: beam_size must be >= 1, got {beam_size}")
    return _beam_search(model, params, src, src_len, jnp.float32(alpha),
                        beam_size=int(beam_size), max_len=int(max_len))


def _tile(tree, k):
    """Repeat every leaf k times along axis 0: [B, ...] -> [B*K, ...] (row b*K + j)."""
    return jax.tree_util.tree_map(lambda x: jnp.repeat(x, k, axis=0), tree)


@functools.partial(jax.jit, static_argnames=("model", "beam_size", "max_len"))
def _beam_search(model, params, src, src_len, alpha, *, beam_size, max_len):
    b, k, v = src.shape[0], beam_size, model.tgt_vocab_size
    memory = _tile(model.encode(params, src, src_len), k)  # leaves [B*K, ...]
    state = model.init_state(params, memory, max_len)
    neg_inf = jnp.float32(-jnp.inf)
    # Only beam 0 is alive at the start, so the K beams do not start as K copies.
    logp = jnp.where(jnp.arange(k) == 0, 0.0, neg_inf)[None].repeat(b, 0)  # [B, K]
    pad_row = jnp.where(jnp.arange(v) == PAD, 0.0, neg_inf)  # a finished beam's only move
    rows = (jnp.arange(b) * k)[:, None]  # [B, 1]

    def cond(c):
        i, _, _, _, logp, _, done = c
        return (i < max_len) & ~jnp.all(done | jnp.isneginf(logp))

    def body(c):
        i, state, tokens, seqs, logp, lengths, done = c
        logits, state = model.step(params, memory, state, tokens.reshape(b * k))  # [B*K, V]
        lp = jax.nn.log_softmax(logits.astype(jnp.float32)).reshape(b, k, v)  # [B, K, V]
        lp = jnp.where(done[..., None], pad_row, lp)
        cand_logp = (logp[..., None] + lp).reshape(b, k * v)  # [B, K*V]
        cand_len = jnp.where(done, lengths, i + 1)  # [B, K]
        cand_score = cand_logp.reshape(b, k, v) / length_penalty(cand_len, alpha)[..., None]
        _, flat = jax.lax.top_k(cand_score.reshape(b, k * v), k)  # [B, K]
        parent, tok = flat // v, (flat % v).astype(jnp.int32)  # [B, K] each

        def pick(x):  # x [B, K, ...] -> rows of the parents
            idx = parent.reshape(parent.shape + (1,) * (x.ndim - 2))
            return jnp.take_along_axis(x, idx, axis=1)

        seqs = pick(seqs).at[:, :, i].set(tok)  # [B, K, L]
        lengths, done = pick(cand_len), pick(done) | (tok == EOS)
        logp = jnp.take_along_axis(cand_logp, flat, axis=1)  # [B, K]
        order = (rows + parent).reshape(b * k)  # [B*K] rows of the tiled batch
        state = jax.tree_util.tree_map(lambda x: x[order], state)
        return i + 1, state, tok, seqs, logp, lengths, done

    init = (jnp.int32(0), state, jnp.full((b, k), BOS, jnp.int32),
            jnp.zeros((b, k, max_len), jnp.int32), logp,
            jnp.zeros((b, k), jnp.int32), jnp.zeros((b, k), bool))
    _, _, _, seqs, logp, lengths, _ = jax.lax.while_loop(cond, body, init)
    scores = logp / length_penalty(lengths, alpha)  # [B, K]
    best = jnp.argmax(scores, axis=1)  # [B]
    tokens = jnp.take_along_axis(seqs, best[:, None, None], axis=1)[:, 0]  # [B, L]
    return tokens, jnp.take_along_axis(scores, best[:, None], axis=1)[:, 0]


def exhaustive_search(model, params, src, src_len, max_len, alpha=0.6):
    """The exact optimum beam search approximates: slow, for tests on tiny models.

    Scores EVERY token sequence of max_len tokens (V**max_len of them, at most 2**16) by
    stepping the model, truncates each at its first eos, and returns the hypothesis with
    the best log p / lp(length) (float64 sums of the float32 log-probabilities).

    Returns: (tokens [B, max_len] int32 numpy (eos then pad 0), scores [B] float64 numpy).
    """
    v = model.tgt_vocab_size
    if v ** max_len > 2 ** 16:
        raise ValueError(f"exhaustive_search: {v}**{max_len} sequences is too many")
    seqs = np.array(list(itertools.product(range(v), repeat=max_len)), np.int32)  # [N, L]
    stop = np.where((seqs == EOS).any(1), (seqs == EOS).argmax(1) + 1, max_len)  # [N] lengths
    tokens, scores = [], []
    for row, length in zip(np.asarray(src, np.int32), np.asarray(src_len, np.int32)):
        logp = np.asarray(_all_log_probs(model, params, row, length, jnp.asarray(seqs)),
                          np.float64)  # [N, L]
        total = np.where(np.arange(max_len)[None] < stop[:, None], logp, 0.0).sum(1)
        score = total / ((5.0 + stop) / 6.0) ** alpha
        best = int(np.argmax(score))
        tokens.append(np.where(np.arange(max_len) < stop[best], seqs[best], PAD))
        scores.append(score[best])
    return np.stack(tokens).astype(np.int32), np.array(scores)


@functools.partial(jax.jit, static_argnames=("model",))
def _all_log_probs(model, params, src_row, length, seqs):
    """log p(y_t | y_<t, x) [N, L] for every row of seqs [N, L] given one source row [S]."""
    n = seqs.shape[0]
    memory = model.encode(params, jnp.broadcast_to(src_row, (n,) + src_row.shape),
                          jnp.full((n,), length, jnp.int32))
    state = model.init_state(params, memory, seqs.shape[1])
    prev = jnp.concatenate([jnp.full((n, 1), BOS, jnp.int32), seqs[:, :-1]], axis=1)  # [N, L]

    def body(state, xs):
        tokens, targets = xs  # [N] each
        logits, state = model.step(params, memory, state, tokens)
        lp = jax.nn.log_softmax(logits.astype(jnp.float32))  # [N, V]
        return state, jnp.take_along_axis(lp, targets[:, None], axis=1)[:, 0]

    _, logp = jax.lax.scan(body, state, (prev.T, seqs.T))  # [L, N]
    return logp.T
