"""Vocabularies: word-level (toy_wmt, whitespace tokens) and sentencepiece (user corpora).

Both share the special ids pad=0, bos=1, eos=2, unk=3, encode text to a list of ids without
bos/eos, decode ids back to a string (stopping at eos), and give sacrebleu plain text: `text(ids)`
for an output, `plain(reference)` for a reference (word vocabularies detokenise whitespace-
tokenised text such as toy_wmt's; sentencepiece's decoding is plain text already and a raw
reference is left as it is). Vocabulary
files are read and written through anatomy.paths (etils.epath): a gs:// workdir holds them
too (sentencepiece trains in a local temporary folder; its model is loaded from bytes).
"""

import collections
import os
import re
import tempfile

from anatomy import paths
from anatomy.errors import BadInputError
from anatomy.tokens import BOS, EOS, PAD, SPECIALS, UNK


class CorpusError(BadInputError):
    """Bad input data: the message names the file (and line) at fault."""


class Vocab:
    """Word-level vocabulary: tokens[i] is the word of id i; ids 0..3 are the specials."""

    kind = "word"
    pad, bos, eos, unk = PAD, BOS, EOS, UNK

    def __init__(self, tokens):
        tokens = list(tokens)
        if tuple(tokens[:4]) != SPECIALS:
            tokens = list(SPECIALS) + [t for t in tokens if t not in SPECIALS]
        self.tokens = tokens
        self.index = {t: i for i, t in enumerate(tokens)}

    @property
    def size(self):
        return len(self.tokens)

    def encode(self, text):
        """str -> list[int] (whitespace tokens; unknown words -> unk; no bos/eos)."""
        get = self.index.get
        return [get(w, UNK) for w in text.split()]

    def decode(self, ids):
        """ids (any int sequence) -> str; stops at the first eos, drops pad and bos."""
        return " ".join(
            self.tokens[i] if 0 <= i < len(self.tokens) else SPECIALS[UNK] for i in content_ids(ids)
        )

    def text(self, ids):
        """ids -> the plain string sacrebleu expects: decode, then detokenize."""
        return detokenize(self.decode(ids))

    def plain(self, text):
        """A reference string as sacrebleu expects it (detokenised, as `text` makes outputs)."""
        return detokenize(text)

    def save(self, path):
        paths.write_text(path, "\n".join(self.tokens) + "\n")


def content_ids(ids):
    """The ids a decoder prints: up to the first eos, without pad and bos (plain ints)."""
    out = []
    for i in ids:
        i = int(i)
        if i == EOS:
            break
        if i not in (PAD, BOS):
            out.append(i)
    return out


class SentencePieceVocab:
    """A sentencepiece model with the same special ids and encode/decode contract as Vocab."""

    kind = "sentencepiece"
    pad, bos, eos, unk = PAD, BOS, EOS, UNK

    def __init__(self, model_path):
        import sentencepiece as spm

        self.path = model_path
        self.sp = spm.SentencePieceProcessor(model_proto=paths.read_bytes(model_path))

    @property
    def size(self):
        return self.sp.get_piece_size()

    def encode(self, text):
        return self.sp.encode(text)

    def decode(self, ids):
        return self.sp.decode(content_ids(ids))

    def text(self, ids):
        """ids -> plain text: sentencepiece's decoding is already detokenised."""
        return self.decode(ids)

    def plain(self, text):
        """A reference string as sacrebleu expects it: the raw text, untouched."""
        return text

    def save(self, path):
        if paths.absolute(path) != paths.absolute(self.path):
            paths.write_bytes(path, paths.read_bytes(self.path))


def build_word_vocab(texts, max_size=0, min_count=1):
    """Word vocabulary from an iterable of strings: most frequent first (ties alphabetical).

    max_size counts the 4 specials; 0 means no cap.
    """
    counts = collections.Counter(w for t in texts for w in t.split())
    words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    if max_size:
        words = words[: max(0, max_size - len(SPECIALS))]
    return Vocab(list(SPECIALS) + words)


def train_sentencepiece(texts, vocab_size, model_prefix, model_type="unigram"):
    """Train sentencepiece from an iterable of strings; writes model_prefix.model; returns it.

    Falls back to the largest size the data allows when vocab_size is too big for it. A
    model_prefix on an object store (gs://...): trained in a local temporary folder, then
    model_prefix.model and .vocab are copied there (sentencepiece writes local files only).
    """
    import sentencepiece as spm

    texts = [t for t in texts if t.strip()]
    if not texts:
        raise CorpusError(f"no text to train sentencepiece {model_prefix}")
    kwargs = dict(
        model_prefix=model_prefix,
        model_type=model_type,
        pad_id=PAD,
        bos_id=BOS,
        eos_id=EOS,
        unk_id=UNK,
        character_coverage=1.0,
        minloglevel=2,
        hard_vocab_limit=False,
        num_threads=2,
    )
    if not paths.is_remote(model_prefix):
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(texts), vocab_size=vocab_size, **kwargs
        )
        return SentencePieceVocab(model_prefix + ".model")
    with tempfile.TemporaryDirectory() as tmp:
        kwargs["model_prefix"] = local = os.path.join(tmp, "spm")
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(texts), vocab_size=vocab_size, **kwargs
        )
        for ext in (".model", ".vocab"):
            paths.write_bytes(model_prefix + ext, paths.read_bytes(local + ext))
    return SentencePieceVocab(model_prefix + ".model")


def load_vocab(path):
    """Load a vocabulary saved by Vocab.save (text, one token a line) or a sentencepiece .model."""
    if not paths.exists(path):
        raise CorpusError(f"vocabulary file not found: {path}")
    if os.fspath(path).endswith(".model"):
        return SentencePieceVocab(path)
    lines = paths.read_text(path).split("\n")
    return Vocab([line for line in lines if line])


_SPACE_BEFORE_PUNCT = re.compile(r" ([.,;:!?])(?= |$)")


def detokenize(tokens):
    """Tokens (list of str) or a tokenised string -> plain string for sacrebleu.

    Word-level toy_wmt text is whitespace-tokenised ("die Katze , die schläft ."): this drops
    specials and re-attaches punctuation to the word before it ("die Katze, die schläft."),
    the plain text sacrebleu expects; its own 13a tokeniser then splits both sides alike.
    """
    if isinstance(tokens, str):
        tokens = tokens.split()
    text = " ".join(t for t in tokens if t not in SPECIALS)
    return _SPACE_BEFORE_PUNCT.sub(r"\1", text)
