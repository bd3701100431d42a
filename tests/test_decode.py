"""Greedy and beam search against slow twins, on a hand-made Translator.

The toy's step is a fixed random bigram table plus a source-dependent bias plus a term
that depends on a hashed history held in the state, so reordering the state between
beams matters. No layers are involved: these tests only exercise anatomy/decode.py.
"""
import itertools

import jax.numpy as jnp
import numpy as np
import pytest

from anatomy import decode
from anatomy.seq2seq import BOS, EOS, PAD, Translator, freeze_config

N_HIST = 11


def make_toy(v, src_v=9, seed=0, eos_bias=0.0, scale=1.0):
    r = np.random.default_rng(seed)
    params = {"bigram": jnp.asarray(r.normal(size=(v, v)) * 1.5, jnp.float32),
              "hist": jnp.asarray(r.normal(size=(N_HIST, v)), jnp.float32),
              "src": jnp.asarray(r.normal(size=(src_v, v)), jnp.float32)}
    params["bigram"] = params["bigram"].at[:, EOS].add(eos_bias)
    params = {k: x * scale for k, x in params.items()}  # small scale: flat, hard to search

    def encode(p, src, src_len):
        valid = (jnp.arange(src.shape[1])[None] < src_len[:, None])[..., None]  # [B, S, 1]
        return {"bias": jnp.sum(p["src"][src] * valid, 1) / src_len[:, None]}  # [B, V]

    def init_state(p, memory, max_len):
        return {"h": jnp.zeros(memory["bias"].shape[:1], jnp.int32)}

    def step(p, memory, state, tokens):
        h = (state["h"] * 7 + tokens) % N_HIST
        return p["bigram"][tokens] + memory["bias"] + p["hist"][h], {"h": h}

    model = Translator("toy", freeze_config({}), src_v, v, None, None, encode, init_state, step)
    return model, params


def log_probs_np(model, params, src, src_len, seqs):
    """Per-position log p(y_t | y_<t, x) [N, L] for full sequences seqs [N, L] (float64)."""
    n = seqs.shape[0]
    memory = model.encode(params, jnp.repeat(src[None], n, 0), jnp.full((n,), src_len))
    state = model.init_state(params, memory, seqs.shape[1])
    prev = np.full((n,), BOS)
    out = []
    for t in range(seqs.shape[1]):
        logits, state = model.step(params, memory, state, jnp.asarray(prev, jnp.int32))
        logits = np.asarray(logits, np.float64)
        lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
        out.append(logits[np.arange(n), seqs[:, t]] - lse)
        prev = seqs[:, t]
    return np.stack(out, 1)


def exhaustive(model, params, src, src_len, max_len, alpha):
    """Best length-penalised hypothesis over ALL token sequences of up to max_len tokens."""
    v = model.tgt_vocab_size
    seqs = np.array(list(itertools.product(range(v), repeat=max_len)))
    lp = log_probs_np(model, params, src, src_len, seqs)
    best = (-np.inf, None)
    for seq, row in zip(seqs, lp):
        stop = np.flatnonzero(seq == EOS)
        n = stop[0] + 1 if stop.size else max_len
        score = row[:n].sum() / ((5 + n) / 6) ** alpha
        if score > best[0]:
            best = (score, np.concatenate([seq[:n], np.zeros(max_len - n, int)]))
    return best


def greedy_np(model, params, src, src_len, max_len):
    """Python-loop greedy decoding of one example."""
    memory = model.encode(params, src[None], jnp.asarray([src_len]))
    state = model.init_state(params, memory, max_len)
    tok, out = BOS, []
    for _ in range(max_len):
        logits, state = model.step(params, memory, state, jnp.asarray([tok], jnp.int32))
        tok = int(np.argmax(np.asarray(logits)[0]))
        out.append(tok)
        if tok == EOS:
            break
    return np.array(out + [PAD] * (max_len - len(out)))


@pytest.fixture(scope="module")
def batch():
    r = np.random.default_rng(1)
    src = jnp.asarray(r.integers(4, 9, size=(3, 6)), jnp.int32)
    src_len = jnp.asarray([6, 3, 1], jnp.int32)
    src = jnp.where(jnp.arange(6)[None] < src_len[:, None], src, PAD)
    return src, src_len


def test_greedy_matches_python_loop_and_pads_after_eos(batch):
    src, src_len = batch
    model, params = make_toy(12, eos_bias=1.5)
    out = np.asarray(decode.greedy(model, params, src, src_len, 10))
    assert out.shape == (3, 10) and out.dtype == np.int32
    for b in range(3):
        np.testing.assert_array_equal(out[b], greedy_np(model, params, src[b], int(src_len[b]), 10))
    assert (out == EOS).any(), "the eos bias should make some sequence stop"
    for row in out:
        stop = np.flatnonzero(row == EOS)
        if stop.size:
            assert (row[stop[0] + 1:] == PAD).all()


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_beam_of_one_is_greedy(batch, alpha):
    src, src_len = batch
    model, params = make_toy(12, eos_bias=1.0)
    tokens, scores = decode.beam_search(model, params, src, src_len, beam_size=1, max_len=10,
                                        alpha=alpha)
    np.testing.assert_array_equal(tokens, decode.greedy(model, params, src, src_len, 10))
    assert np.isfinite(np.asarray(scores)).all()


def test_large_beam_finds_exhaustive_optimum(batch):
    src, src_len = batch
    v, max_len, alpha = 5, 4, 0.6
    model, params = make_toy(v, seed=5, scale=0.4)
    greedy = np.asarray(decode.greedy(model, params, src, src_len, max_len))
    tokens, scores = decode.beam_search(model, params, src, src_len, beam_size=v ** max_len,
                                        max_len=max_len, alpha=alpha)
    for b in range(3):
        score, seq = exhaustive(model, params, src[b], int(src_len[b]), max_len, alpha)
        np.testing.assert_array_equal(tokens[b], seq)
        np.testing.assert_allclose(scores[b], score, rtol=1e-5)
    assert (greedy != np.asarray(tokens)).any(), "the optimum should not be the greedy path"
    ex_tokens, ex_scores = decode.exhaustive_search(model, params, src, src_len, max_len, alpha)
    np.testing.assert_array_equal(ex_tokens, tokens)
    np.testing.assert_allclose(ex_scores, scores, rtol=1e-5)


def test_beam_search_batch_rows_are_independent(batch):
    """Each example decoded in a batch equals it decoded alone (tiling and reordering)."""
    src, src_len = batch
    model, params = make_toy(12, seed=5, eos_bias=0.5)
    tokens, scores = decode.beam_search(model, params, src, src_len, beam_size=4, max_len=8)
    for b in range(3):
        t1, s1 = decode.beam_search(model, params, src[b:b + 1], src_len[b:b + 1], beam_size=4,
                                    max_len=8)
        np.testing.assert_array_equal(tokens[b], t1[0])
        np.testing.assert_allclose(scores[b], s1[0], rtol=1e-6)
    # The score is the length-penalised log-probability of the returned tokens.
    lp = log_probs_np(model, params, src[0], int(src_len[0]), np.asarray(tokens[:1]))[0]
    row = np.asarray(tokens[0])
    stop = np.flatnonzero(row == EOS)
    n = stop[0] + 1 if stop.size else len(row)
    np.testing.assert_allclose(scores[0], lp[:n].sum() / ((5 + n) / 6) ** 0.6, rtol=1e-5)


def test_bad_arguments_raise(batch):
    src, src_len = batch
    model, params = make_toy(6)
    with pytest.raises(ValueError, match="beam_size"):
        decode.beam_search(model, params, src, src_len, beam_size=0, max_len=4)
    with pytest.raises(ValueError, match="max_len"):
        decode.greedy(model, params, src, src_len, 0)
    with pytest.raises(ValueError, match="src_len"):
        decode.greedy(model, params, src, src_len[:2], 4)
