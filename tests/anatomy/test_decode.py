"""Greedy and beam search against slow twins, on a hand-made Translator.

The toy's step is a fixed random bigram table plus a source-dependent bias plus a term
that depends on a hashed history held in the state, so reordering the state between
beams matters. No layers are involved: these tests only exercise anatomy/decode.py.
The twins: a Python-loop greedy decoder, exhaustive search, and a plain-Python beam
search with the same finished pool over a NumPy float64 copy of the toy.
"""

import collections
import functools
import itertools

import jax.numpy as jnp
import numpy as np
import pytest

from anatomy import decode
from anatomy.attention import append, init_cache
from anatomy.seq2seq import BOS, EOS, PAD, UNK, Translator, freeze_config

N_HIST = 11
BANNED = (PAD, BOS, UNK)  # never generated


def _encode(p, src, src_len):
    valid = (jnp.arange(src.shape[1])[None] < src_len[:, None])[..., None]  # [B, S, 1]
    return {"bias": jnp.sum(p["src"][src] * valid, 1) / src_len[:, None]}  # [B, V]


def _init_state(p, memory, max_len):
    return {"h": jnp.zeros(memory["bias"].shape[:1], jnp.int32)}


def _step(p, memory, state, tokens):
    h = (state["h"] * 7 + tokens) % N_HIST
    return p["bigram"][tokens] + memory["bias"] + p["hist"][h], {"h": h}


@functools.cache
def toy_model(v, src_v):
    """One Translator per vocabulary size (module-level functions: jit caches across seeds)."""
    return Translator("toy", freeze_config({}), src_v, v, None, None, _encode, _init_state, _step)


def make_toy(v, src_v=9, seed=0, eos_bias=0.0, scale=1.0):
    r = np.random.default_rng(seed)
    params = {
        "bigram": jnp.asarray(r.normal(size=(v, v)) * 1.5, jnp.float32),
        "hist": jnp.asarray(r.normal(size=(N_HIST, v)), jnp.float32),
        "src": jnp.asarray(r.normal(size=(src_v, v)), jnp.float32),
    }
    params["bigram"] = params["bigram"].at[:, EOS].add(eos_bias)
    params = {k: x * scale for k, x in params.items()}  # small scale: flat, hard to search
    return toy_model(v, src_v), params


def toy_next_log_probs(params, src, src_len, prefix):
    """The toy in float64 NumPy: log p(. | prefix, x) [V] after feeding bos + prefix."""
    p = {k: np.asarray(x, np.float64) for k, x in params.items()}
    bias = p["src"][np.asarray(src)[:src_len]].sum(0) / src_len  # [V]
    h = 0
    for tok in [BOS] + list(prefix):
        h = (h * 7 + tok) % N_HIST
    logits = p["bigram"][tok] + bias + p["hist"][h]
    logits[list(BANNED)] = -np.inf  # never generated: renormalise over the other tokens
    return logits - (np.log(np.exp(logits - logits.max()).sum()) + logits.max())


def lp_np(n, alpha):
    return ((5.0 + n) / 6.0) ** alpha


def beam_reference(next_log_probs, v, k, max_len, alpha):
    """Plain-Python beam search with a finished pool (the semantics of decode.beam_search).

    Each step ranks every extension (live beam + allowed token) by log p; the eos ones
    among the k best finish (pool: k best by log p / lp(n)), the k best others stay live.
    No early stopping: the pool's best is the same either way when the bound is sound.
    Returns (tokens list incl. eos, score, every hypothesis that ever finished).
    """
    live, pool, ever = [(0.0, [])], [], []
    for i in range(max_len):
        cands = [
            (logp + lp[w], seq + [w])
            for logp, seq in live
            for lp in [next_log_probs(seq)]
            for w in range(v)
            if w not in BANNED
        ]
        cands.sort(key=lambda c: -c[0])  # stable: ties keep (beam, token) order
        done = [(logp / lp_np(i + 1, alpha), seq) for logp, seq in cands[:k] if seq[-1] == EOS]
        ever += done
        pool = sorted(pool + done, key=lambda f: -f[0])[:k]
        live = [c for c in cands if c[1][-1] != EOS][:k]
    if pool:
        score, seq = pool[0]
    else:
        logp, seq = live[0]
        score = logp / lp_np(max_len, alpha)
    return seq, score, ever


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
        logits[:, list(BANNED)] = -np.inf  # never generated: renormalise over the others
        lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
        out.append(logits[np.arange(n), seqs[:, t]] - lse)
        prev = seqs[:, t]
    return np.stack(out, 1)


def exhaustive(model, params, src, src_len, max_len, alpha):
    """Best length-penalised hypothesis over ALL sequences of up to max_len allowed tokens:
    the best one ending in eos (one without eos only if none can end)."""
    words = [w for w in range(model.tgt_vocab_size) if w not in BANNED]
    seqs = np.array(list(itertools.product(words, repeat=max_len)))
    lp = log_probs_np(model, params, src, src_len, seqs)
    best = ((False, -np.inf), None)
    for seq, row in zip(seqs, lp):
        stop = np.flatnonzero(seq == EOS)
        n = stop[0] + 1 if stop.size else max_len
        key = (bool(stop.size), row[:n].sum() / ((5 + n) / 6) ** alpha)
        if key > best[0]:
            best = (key, np.concatenate([seq[:n], np.zeros(max_len - n, int)]))
    return best[0][1], best[1]


def greedy_np(model, params, src, src_len, max_len):
    """Python-loop greedy decoding of one example."""
    memory = model.encode(params, src[None], jnp.asarray([src_len]))
    state = model.init_state(params, memory, max_len)
    tok, out = BOS, []
    for _ in range(max_len):
        logits, state = model.step(params, memory, state, jnp.asarray([tok], jnp.int32))
        row = np.asarray(logits)[0].copy()
        row[list(BANNED)] = -np.inf
        tok = int(np.argmax(row))
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
            assert (row[stop[0] + 1 :] == PAD).all()


def reference_rows(params, src, src_len, k, max_len, alpha, v):
    """beam_reference for every row of a batch: [(tokens padded to max_len, score, ever)]."""
    out = []
    for row, n in zip(np.asarray(src), np.asarray(src_len)):
        seq, score, ever = beam_reference(
            lambda prefix, row=row, n=n: toy_next_log_probs(params, row, int(n), prefix),
            v,
            k,
            max_len,
            alpha,
        )
        out.append((np.array(seq + [PAD] * (max_len - len(seq))), score, ever))
    return out


def test_beam_of_one_is_greedy_without_length_penalty(batch):
    src, src_len = batch
    model, params = make_toy(12, eos_bias=1.0)
    tokens, scores = decode.beam_search(
        model, params, src, src_len, beam_size=1, max_len=10, alpha=0.0
    )
    np.testing.assert_array_equal(tokens, decode.greedy(model, params, src, src_len, 10))
    assert np.isfinite(np.asarray(scores)).all()


def test_beam_of_one_with_length_penalty_is_never_worse_than_greedy(batch):
    """With alpha > 0 a longer hypothesis found after greedy's eos may score higher."""
    src, src_len = batch
    model, params = make_toy(12, eos_bias=1.0)
    alpha = 0.6
    tokens, scores = decode.beam_search(
        model, params, src, src_len, beam_size=1, max_len=10, alpha=alpha
    )
    greedy = np.asarray(decode.greedy(model, params, src, src_len, 10))
    for b, (seq, score, _) in enumerate(reference_rows(params, src, src_len, 1, 10, alpha, 12)):
        np.testing.assert_array_equal(tokens[b], seq)
        np.testing.assert_allclose(scores[b], score, rtol=1e-5)
        row = greedy[b]
        n = np.flatnonzero(row == EOS)[0] + 1 if (row == EOS).any() else 10
        lp = log_probs_np(model, params, src[b], int(src_len[b]), row[None])[0, :n].sum()
        assert scores[b] >= lp / lp_np(n, alpha) - 1e-5


@pytest.mark.parametrize("k", [2, 3, 4])
def test_beam_search_matches_python_reference(k):
    """Tokens and scores equal the plain-Python finished-pool beam search over 40 random
    toy models (float logits: ties are improbable), 3 source rows each."""
    v, max_len, alpha = 7, 6, 0.6
    r = np.random.default_rng(100 + k)
    src = jnp.asarray(r.integers(4, 9, size=(3, 5)), jnp.int32)
    src_len = jnp.asarray([5, 2, 1], jnp.int32)
    differs_from_greedy, lengths = 0, collections.Counter()  # length 0: never finished
    for seed in range(40):
        model, params = make_toy(
            v, seed=seed, eos_bias=float(r.uniform(-3.0, 0.5)), scale=float(r.uniform(0.3, 1.0))
        )
        tokens, scores = map(
            np.asarray,
            decode.beam_search(
                model, params, src, src_len, beam_size=k, max_len=max_len, alpha=alpha
            ),
        )
        for b, (seq, score, _) in enumerate(
            reference_rows(params, src, src_len, k, max_len, alpha, v)
        ):
            np.testing.assert_array_equal(tokens[b], seq, err_msg=f"seed {seed} row {b}")
            np.testing.assert_allclose(
                scores[b], score, rtol=1e-5, atol=1e-6, err_msg=f"seed {seed}"
            )
        greedy = np.asarray(decode.greedy(model, params, src, src_len, max_len))
        differs_from_greedy += int((greedy != tokens).any())
        lengths.update(np.where((tokens == EOS).any(1), (tokens == EOS).argmax(1) + 1, 0))
    print(f"K={k}: {differs_from_greedy}/40 models differ from greedy; lengths {lengths}")
    assert differs_from_greedy >= 10, "the models should be hard enough that beams matter"
    assert {1, 2, 3} <= set(lengths), "short and long hypotheses should both occur"


def test_finished_hypotheses_are_never_pushed_out():
    """The result scores at least as high as every hypothesis that ever finished during the
    search, and it ends in eos. The seeds are ones where a search keeping its finished
    hypotheses in the same K slots as the live ones returned a hypothesis without eos scored
    below a finished one."""
    v, k, alpha, max_len = 6, 2, 0.6, 6
    r = np.random.default_rng(1)
    src = jnp.asarray(r.integers(4, 9, size=(3, 6)), jnp.int32)
    src_len = jnp.asarray([6, 3, 1], jnp.int32)
    src = jnp.where(jnp.arange(6)[None] < src_len[:, None], src, PAD)
    for seed in (14, 46, 47):
        model, params = make_toy(v, seed=seed, eos_bias=0.3, scale=0.6)
        tokens, scores = decode.beam_search(
            model, params, src, src_len, beam_size=k, max_len=max_len, alpha=alpha
        )
        for b, (seq, _score, ever) in enumerate(
            reference_rows(params, src, src_len, k, max_len, alpha, v)
        ):
            assert ever, f"seed {seed} row {b}: something should finish"
            assert scores[b] >= max(f[0] for f in ever) - 1e-5, f"seed {seed} row {b}"
            assert (np.asarray(tokens[b]) == EOS).any(), f"seed {seed} row {b}"
            np.testing.assert_array_equal(tokens[b], seq)


@pytest.mark.slow
def test_large_beam_finds_exhaustive_optimum(batch):
    src, src_len = batch
    v, max_len, alpha = 7, 4, 0.6
    k = (v - len(BANNED)) ** max_len  # every prefix of allowed tokens fits in the beam
    model, params = make_toy(v, seed=7, scale=0.4, eos_bias=-3.0)
    greedy = np.asarray(decode.greedy(model, params, src, src_len, max_len))
    tokens, scores = decode.beam_search(
        model, params, src, src_len, beam_size=k, max_len=max_len, alpha=alpha
    )
    for b in range(3):
        score, seq = exhaustive(model, params, src[b], int(src_len[b]), max_len, alpha)
        np.testing.assert_array_equal(tokens[b], seq)
        np.testing.assert_allclose(scores[b], score, rtol=1e-5)
    assert (greedy != np.asarray(tokens)).any(), "the optimum should not be the greedy path"
    ex_tokens, ex_scores = decode.exhaustive_search(model, params, src, src_len, max_len, alpha)
    np.testing.assert_array_equal(ex_tokens, tokens)
    np.testing.assert_allclose(ex_scores, scores, rtol=1e-5)


@pytest.mark.slow
def test_pad_bos_unk_are_never_generated(batch):
    """A toy biased towards pad, bos and unk: their raw logits win, yet neither decoder
    emits them (pad only as filler after eos)."""
    src, src_len = batch
    model, params = make_toy(8, seed=3, eos_bias=0.5)
    params = dict(params, bigram=params["bigram"].at[:, list(BANNED)].add(4.0))
    memory = model.encode(params, src, src_len)
    logits, _ = model.step(
        params, memory, model.init_state(params, memory, 1), jnp.full((3,), BOS, jnp.int32)
    )
    assert np.isin(np.asarray(logits).argmax(-1), BANNED).all(), "the bias should bite"
    outs = [decode.greedy(model, params, src, src_len, 8)]
    outs += [
        decode.beam_search(model, params, src, src_len, beam_size=k, max_len=8)[0] for k in (1, 3)
    ]
    for out in map(np.asarray, outs):
        assert not np.isin(out, (BOS, UNK)).any()
        for row in out:
            n = np.flatnonzero(row == EOS)[0] + 1 if (row == EOS).any() else len(row)
            assert (row[:n] != PAD).all() and (row[n:] == PAD).all()


def _cached_init_state(p, memory, max_len):  # one slot too few: the cache must overflow
    b = memory["bias"].shape[0]
    return {
        "h": jnp.zeros((b,), jnp.int32),
        "cache": init_cache(b, max_len - 1, 1, 1, per_row=True),
    }


def _cached_step(p, memory, state, tokens):
    logits, new = _step(p, memory, state, tokens)
    kv = tokens.astype(jnp.float32).reshape(-1, 1, 1, 1)  # [B, 1, 1, 1]
    return logits, dict(new, cache=append(state["cache"], kv, kv))


@pytest.mark.slow
def test_kv_cache_overflow_raises(batch):
    src, src_len = batch
    _, params = make_toy(6, eos_bias=-5.0)  # eos improbable: every step runs
    model = Translator(
        "toy_cached", freeze_config({}), 9, 6, None, None, _encode, _cached_init_state, _cached_step
    )
    with pytest.raises(RuntimeError, match="KV cache overflowed"):
        decode.greedy(model, params, src, src_len, 5)
    with pytest.raises(RuntimeError, match="KV cache overflowed"):
        decode.beam_search(model, params, src, src_len, beam_size=2, max_len=5)
    big = model._replace(init_state=lambda p, m, n: _cached_init_state(p, m, n + 1))
    decode.greedy(big, params, src, src_len, 5)  # capacity max_len: no error
    decode.beam_search(big, params, src, src_len, beam_size=2, max_len=5)


def test_beam_search_batch_rows_are_independent(batch):
    """Each example decoded in a batch equals it decoded alone (tiling and reordering)."""
    src, src_len = batch
    model, params = make_toy(12, seed=5, eos_bias=0.5)
    tokens, scores = decode.beam_search(model, params, src, src_len, beam_size=4, max_len=8)
    for b in range(3):
        t1, s1 = decode.beam_search(
            model, params, src[b : b + 1], src_len[b : b + 1], beam_size=4, max_len=8
        )
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
