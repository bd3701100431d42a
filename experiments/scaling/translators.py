"""The three translators of rnn_vs_attn (RNNenc, RNNsearch, Transformer) as their train steps:
the model and recipe that experiment trains (its config: sizes, per-model learning-rate
recipe, label smoothing; Adam with clipping), one optimiser step on one padded batch of
rows × (source, target) tokens, random tokens with random lengths (never all padding).
"""

import numpy as np
import optax

from anatomy.seq2seq import build_model
from anatomy.train import make_optimizer, make_train_step


def train_config(rva, name):
    """rnn_vs_attn's config.train with its train_by_model[name] recipe applied."""
    c = rva.train.copy_and_resolve_references()
    block = rva.train_by_model.get(name, None) or {}
    c.update({k: v for k, v in block.items() if v is not None})
    return c


def build(rva, name, vocab, compute_dtype: str = "float32"):
    """(model, tx, train_step) of translator `name` under rnn_vs_attn config `rva`, vocabularies
    vocab = (source, target) sizes; train_step(state, batch, rng) is anatomy's pure step
    (float32 master parameters, the forward and backward pass in compute_dtype)."""
    model = build_model(name, rva.model[name], vocab[0], vocab[1])
    tc = train_config(rva, name)
    tx: optax.GradientTransformation = make_optimizer(tc)
    step = make_train_step(
        model, tx, label_smoothing=tc.label_smoothing, compute_dtype=compute_dtype
    )
    return model, tx, step


def batch(rows: int, length: int, vocab, seed: int) -> dict:
    """A padded batch {src, src_len, tgt_in, tgt_out, tgt_len} of int32 numpy arrays [rows,
    length]: tokens drawn from 4..V-1 (0-3 are pad, bos, eos, unk), lengths from length/2 to
    length, the target input shifted right after bos."""
    r = np.random.default_rng(seed)
    src_len = r.integers(length // 2, length + 1, rows).astype(np.int32)
    tgt_len = r.integers(length // 2, length + 1, rows).astype(np.int32)
    pos = np.arange(length)
    src = np.where(pos < src_len[:, None], r.integers(4, vocab[0], (rows, length)), 0)
    tgt_out = np.where(pos < tgt_len[:, None], r.integers(4, vocab[1], (rows, length)), 0)
    tgt_in = np.concatenate([np.ones((rows, 1), np.int64), tgt_out[:, :-1]], axis=1)
    return {
        "src": src.astype(np.int32),
        "src_len": src_len,
        "tgt_in": tgt_in.astype(np.int32),
        "tgt_out": tgt_out.astype(np.int32),
        "tgt_len": tgt_len,
    }
