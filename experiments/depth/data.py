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
    valid      the first `eval_windows` windows of N + 1 characters of the validation stream,
               each starting where the last one's predictions ended: every model is scored on
               the same W·N characters (the learning-rate grid's scores)
    test       the same of the test stream: sentences after the validation ones in toy_wmt's
               validation draw (disjoint sources from training), the judged seeds' scores
    unigram    cross-entropy of a split's targets under the training stream's character
               frequencies (add-one): the loss of a model that learned nothing of context,
               the floor a run must beat not to count as failed

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
    """train: int32 [n_train] ids; valid, test: int32 [W, N + 1] windows (the last N of each
    are scored); symbols: the characters by id (last: UNK); unigram: {split: nats per
    character}."""

    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    symbols: tuple
    unigram: dict

    def windows(self, split: str) -> np.ndarray:
        """The [W, N + 1] windows of 'valid' or 'test'."""
        return {"valid": self.valid, "test": self.test}[split]

    @property
    def vocab_size(self) -> int:
        return len(self.symbols)

    def summary(self) -> dict:
        return {
            "vocab_size": self.vocab_size,
            "train_characters": int(self.train.size),
            "eval_characters": int(self.valid[:, 1:].size),  # per split
            "unigram_loss": dict(self.unigram),  # {split: nats}
        }


def _stream(pairs) -> str:
    return "".join(tgt + "\n" for _, tgt in pairs)


def _windows(ids: np.ndarray, n_windows: int, length: int) -> np.ndarray:
    """The first n_windows windows of length + 1 ids, each starting where the last one's
    predictions ended: [n_windows, length + 1]."""
    starts = np.arange(n_windows) * length  # [W]
    return ids[starts[:, None] + np.arange(length + 1)]  # [W, N + 1]


def load(cfg, length: int, seed: int) -> CharCorpus:
    """The corpus of config.data (fields in experiments/configs/depth.py) at window `length`."""
    splits = toy_wmt.generate_splits(
        seed=seed,
        train_size=cfg.train_sentences,
        valid_size=cfg.valid_sentences + cfg.test_sentences,
        test_per_bucket=1,  # toy_wmt always draws its stratified test split; depth never reads it
        lexicon_scale=cfg.lexicon_scale,
    )
    held_out = splits["valid"]  # one draw, cut in two: its first sentences validate, the rest test
    texts = {
        "valid": _stream(held_out[: cfg.valid_sentences]),
        "test": _stream(held_out[cfg.valid_sentences :]),
    }
    train_text = _stream(splits["train"])
    symbols = tuple(sorted(set(train_text))) + (UNK,)
    index = {c: i for i, c in enumerate(symbols)}
    unk = len(symbols) - 1
    train = np.array([index[c] for c in train_text], np.int32)
    counts = np.bincount(train, minlength=len(symbols)) + 1.0  # add-one: UNK gets one count
    log_probs = np.log(counts / counts.sum())
    windows, unigram = {}, {}
    for split, text in texts.items():
        ids = np.array([index.get(c, unk) for c in text], np.int32)
        n_windows = (len(ids) - 1) // length
        if n_windows < cfg.eval_windows or len(train) <= length + 1:
            raise BadInputError(
                f"depth data: {len(ids)} {split} characters give {n_windows} windows of "
                f"{length}, data.eval_windows asks for {cfg.eval_windows} (or the training "
                f"stream of {len(train)} is shorter than a window); raise "
                f"data.{split}_sentences or data.train_sentences"
            )
        windows[split] = _windows(ids, cfg.eval_windows, length)
        unigram[split] = float(-np.mean(log_probs[windows[split][:, 1:]]))
    return CharCorpus(train=train, symbols=symbols, unigram=unigram, **windows)


def batch(train, key, batch_size: int, length: int):
    """batch_size random windows of N + 1 characters of train (a device array [n]), [B, N + 1]."""
    starts = jax.random.randint(key, (batch_size,), 0, train.shape[0] - length)  # [B]
    return train[starts[:, None] + jnp.arange(length + 1)]  # [B, N + 1]
