"""The depth experiment's corpus: a character-level language model on toy_wmt's target side.

Why characters of the German-like side: the model must not saturate the corpus at L = 1 on
this budget (the lexicon's ~1,500 pseudo-word forms are spelled out letter by letter, and the
grammar's agreement and verb placement span words), and a 40-odd symbol softmax keeps the
readout from dominating the cost, so time per step grows with the stack, not the vocabulary.

    sentences  toy_wmt.generate_splits(seed, train, valid, lexicon_scale): target strings
    stream     the sentences of a split joined by '\\n' (one more symbol, ending each)
    ids        one id per character of the training stream, sorted; a validation character
               the training stream never had maps to the last id, '<unk>'
    train      random windows of N + 1 characters (N predicted: each from the ones before it),
               drawn on the device by each run's own key, so a run's batches are its seed's
    valid      the first `valid_windows` windows of N + 1 characters of the validation stream,
               each starting where the last one's predictions ended: every model is scored on
               the same W·N characters
    unigram    cross-entropy of those validation targets under the training stream's
               character frequencies (add-one): the loss of a model that learned nothing of
               context, the floor a run must beat not to count as failed

A library candidate (anatomy.data has translation pairs only): nothing here is specific to
depth but the choice of corpus.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from anatomy.data import toy_wmt
from anatomy.errors import BadInputError

UNK = "<unk>"


@dataclasses.dataclass(frozen=True)
class CharCorpus:
    """train: int32 [n_train] ids; valid: int32 [W, N + 1] windows (the last N of each are
    scored); symbols: the characters by id (last: UNK); unigram_loss: nats per character."""

    train: np.ndarray
    valid: np.ndarray
    symbols: tuple
    unigram_loss: float

    @property
    def vocab_size(self) -> int:
        return len(self.symbols)

    def summary(self) -> dict:
        return {
            "vocab_size": self.vocab_size,
            "train_characters": int(self.train.size),
            "valid_characters": int(self.valid[:, 1:].size),
            "unigram_loss": self.unigram_loss,
        }


def _stream(pairs) -> str:
    return "".join(tgt + "\n" for _, tgt in pairs)


def load(cfg, length: int, seed: int) -> CharCorpus:
    """The corpus of config.data (fields in experiments/configs/depth.py) at window `length`."""
    splits = toy_wmt.generate_splits(
        seed=seed,
        train_size=cfg.train_sentences,
        valid_size=cfg.valid_sentences,
        test_per_bucket=1,  # generate_splits always draws a test split; depth never reads it
        lexicon_scale=cfg.lexicon_scale,
    )
    train_text, valid_text = _stream(splits["train"]), _stream(splits["valid"])
    symbols = tuple(sorted(set(train_text))) + (UNK,)
    index = {c: i for i, c in enumerate(symbols)}
    unk = len(symbols) - 1
    train = np.array([index[c] for c in train_text], np.int32)
    valid = np.array([index.get(c, unk) for c in valid_text], np.int32)
    n_windows = (len(valid) - 1) // length
    if n_windows < cfg.valid_windows or len(train) <= length + 1:
        raise BadInputError(
            f"depth data: {len(valid)} validation characters give {n_windows} windows of "
            f"{length}, data.valid_windows asks for {cfg.valid_windows} (or the training "
            f"stream of {len(train)} is shorter than a window); raise data.valid_sentences "
            "or data.train_sentences"
        )
    starts = np.arange(cfg.valid_windows) * length  # [W]
    windows = valid[starts[:, None] + np.arange(length + 1)]  # [W, N + 1]
    counts = np.bincount(train, minlength=len(symbols)) + 1.0  # add-one: UNK gets one count
    probs = counts / counts.sum()
    return CharCorpus(
        train=train,
        valid=windows,
        symbols=symbols,
        unigram_loss=float(-np.mean(np.log(probs[windows[:, 1:]]))),
    )


def batch(train, key, batch_size: int, length: int):
    """batch_size random windows of N + 1 characters of train (a device array [n]), [B, N + 1]."""
    starts = jax.random.randint(key, (batch_size,), 0, train.shape[0] - length)  # [B]
    return train[starts[:, None] + jnp.arange(length + 1)]  # [B, N + 1]
