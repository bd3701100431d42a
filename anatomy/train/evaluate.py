"""Evaluation: decode a test split and score it with sacrebleu (BLEU and chrF), overall and
per length bucket; choose the beam size and length penalty on a validation split."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """sacrebleu corpus BLEU (default 13a tokenisation) of detokenised strings; nan if empty."""
    import sacrebleu

    if not hypotheses:
        return float("nan")
    return float(sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score)


def corpus_chrf(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """sacrebleu corpus chrF (character 6-grams, beta 2: Popović 2015, sacrebleu's defaults)
    of detokenised strings; nan if empty. The second metric for morphologically rich targets:
    it credits a right stem with a wrong ending, which BLEU's word n-grams do not."""
    import sacrebleu

    if not hypotheses:
        return float("nan")
    return float(sacrebleu.corpus_chrf(list(hypotheses), [list(references)]).score)


def round_up(n: int, m: int) -> int:
    """n rounded up to a multiple of m, at least m: the source length decode_ids pads a batch
    whose longest source has n tokens to (len_multiple m)."""
    return max(m, -(-n // m) * m)


def decode_ids(
    model,
    params,
    sources: Sequence[np.ndarray],
    *,
    batch_size: int = 64,
    extra_len: int = 10,
    len_multiple: int = 32,
    beam_size: int = 0,
    length_penalty: float = 0.6,
    decode_fn: Callable | None = None,
) -> tuple[list[np.ndarray], dict]:
    """Translate token-id sequences; returns (list of output id arrays, stats).

    sources: list of int arrays (no bos/eos). Sentences are sorted by length and decoded in
    batches of `batch_size`, padded to a multiple of `len_multiple` (few distinct shapes, so
    few compilations); the output budget is padded_len + extra_len tokens. beam_size > 1 uses
    anatomy.decode.beam_search with GNMT length penalty exponent `length_penalty` (alpha), else
    greedy. Outputs are cut at the first eos.
    stats: {'sentences', 'output_tokens', 'seconds', 'tokens_per_second'} (compile included).
    """
    from anatomy import decode

    eos = 2
    order = np.argsort([len(s) for s in sources], kind="stable")
    out: list = [None] * len(sources)
    n_tokens, t0 = 0, time.perf_counter()
    for i in range(0, len(order), batch_size):
        idx = order[i : i + batch_size]
        s_len = round_up(max(len(sources[j]) for j in idx), len_multiple)
        src = np.zeros((batch_size, s_len), np.int32)  # [B, S], padding rows kept
        src_len = np.zeros((batch_size,), np.int32)
        for r, j in enumerate(idx):
            src[r, : len(sources[j])] = sources[j]
            src_len[r] = len(sources[j])
        src_len[len(idx) :] = 1  # dummy rows: one pad token
        max_len = s_len + extra_len
        if decode_fn is not None:
            tokens = decode_fn(model, params, src, src_len, max_len)
        elif beam_size and beam_size > 1:
            tokens, _ = decode.beam_search(
                model,
                params,
                src,
                src_len,
                beam_size=beam_size,
                max_len=max_len,
                alpha=length_penalty,
            )
        else:
            tokens = decode.greedy(model, params, src, src_len, max_len)
        tokens = np.asarray(tokens)  # [B, L]
        for r, j in enumerate(idx):
            row = tokens[r]
            stop = np.flatnonzero(row == eos)
            row = row[: stop[0]] if stop.size else row
            out[j] = row[row != 0]
            n_tokens += len(out[j]) + 1
    seconds = time.perf_counter() - t0
    return out, {
        "sentences": len(sources),
        "output_tokens": n_tokens,
        "seconds": seconds,
        "tokens_per_second": n_tokens / max(seconds, 1e-9),
    }


def evaluate_bleu(
    model,
    params,
    pairs_by_bucket: dict,
    src_vocab,
    tgt_vocab,
    *,
    max_per_bucket: int = 0,
    batch_size: int = 64,
    beam_size: int = 0,
    length_penalty: float = 0.6,
    extra_len: int = 10,
    len_multiple: int = 32,
    decode_fn: Callable | None = None,
) -> dict:
    """BLEU of `model` on (source, reference) string pairs grouped by source-length bucket.

    pairs_by_bucket: label -> list[(src_str, ref_str)] (anatomy.data Corpus.test_by_bucket()).
    max_per_bucket > 0 caps the sentences decoded per bucket (the first ones, a fixed subset).
    decode_fn(model, params, src, src_len, max_len) -> tokens replaces greedy / beam search.
    Outputs and references are scored as plain text (tgt_vocab.text / tgt_vocab.plain: toy_wmt's
    whitespace-tokenised words detokenised, sentencepiece's text as decoded, raw references).
    Returns {'bleu': overall corpus BLEU, 'bleu_by_length': label -> BLEU, 'chrf' and
    'chrf_by_length' (the same for chrF), 'count_by_length': label -> sentences,
    'decode_tokens_per_second', 'examples': a few (src, ref, hyp)}.
    """
    labels, pairs = [], []
    for label, items in pairs_by_bucket.items():
        items = list(items)[:max_per_bucket] if max_per_bucket > 0 else list(items)
        labels += [label] * len(items)
        pairs += items
    sources = [np.asarray(src_vocab.encode(s), np.int32) for s, _ in pairs]
    ids, stats = decode_ids(
        model,
        params,
        sources,
        batch_size=batch_size,
        beam_size=beam_size,
        length_penalty=length_penalty,
        extra_len=extra_len,
        len_multiple=len_multiple,
        decode_fn=decode_fn,
    )
    hyps = [tgt_vocab.text([int(t) for t in x]) for x in ids]
    refs = [tgt_vocab.plain(t) for _, t in pairs]
    by_len, chrf_by_len, counts = {}, {}, {}
    for label in pairs_by_bucket:
        sel = [i for i, lab in enumerate(labels) if lab == label]
        counts[label] = len(sel)
        if sel:
            h, r = [hyps[i] for i in sel], [refs[i] for i in sel]
            by_len[label], chrf_by_len[label] = corpus_bleu(h, r), corpus_chrf(h, r)
    return {
        "bleu": corpus_bleu(hyps, refs),
        "bleu_by_length": by_len,
        "chrf": corpus_chrf(hyps, refs),
        "chrf_by_length": chrf_by_len,
        "count_by_length": counts,
        "decode_tokens_per_second": stats["tokens_per_second"],
        "decode_seconds": stats["seconds"],
        "examples": [
            (pairs[i][0], refs[i], hyps[i]) for i in range(0, len(pairs), max(1, len(pairs) // 5))
        ],
    }


def select_decoding(
    model,
    params,
    valid_by_bucket: dict,
    src_vocab,
    tgt_vocab,
    grid: Sequence[tuple[int, float]],
    **kwargs,
) -> dict:
    """Choose the beam size and length penalty on a validation split: decode valid_by_bucket
    (label -> [(src, ref)], a validation split, never the test split) under every (beam_size,
    length_penalty) of `grid` (beam_size <= 1: greedy, its penalty unused) and keep the one
    with the highest BLEU (the first on a tie). kwargs go to evaluate_bleu (max_per_bucket,
    batch_size, extra_len, len_multiple). Returns {'grid': [[beam, alpha, valid BLEU, valid
    chrF], ...], 'beam_size', 'length_penalty' (the choice), 'valid_bleu'}."""
    if not grid:
        raise ValueError("select_decoding: an empty grid chooses nothing")
    rows = []
    for beam, alpha in grid:
        ev = evaluate_bleu(
            model,
            params,
            valid_by_bucket,
            src_vocab,
            tgt_vocab,
            beam_size=int(beam),
            length_penalty=float(alpha),
            **kwargs,
        )
        rows.append([int(beam), float(alpha), ev["bleu"], ev["chrf"]])
    best = max(range(len(rows)), key=lambda i: (rows[i][2], -i))
    return {
        "grid": rows,
        "beam_size": rows[best][0],
        "length_penalty": rows[best][1],
        "valid_bleu": rows[best][2],
    }
