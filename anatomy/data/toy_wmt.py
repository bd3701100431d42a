"""toy_wmt: a seeded English-like -> German-like translation task with an exact oracle.

A sentence is a tree grown at random until its source reaches a drawn length; both sides are
read off the same tree, so the oracle translation is exact and every error is the model's.

Source (English-like, SVO)                  Target (German-like)
  the man sees the dog .                      der Mann sieht den Hund .
  today the man sees the dog .                heute sieht der Mann den Hund .      (verb second)
  the man has seen the dog .                  der Mann hat den Hund gesehen .      (verb bracket)
  the man says that the dog sees the cat .    der Mann sagt , dass der Hund die Katze sieht .
                                                                                   (verb final)
  the man who sees the dogs runs .            der Mann , der die Hunde sieht , läuft .
                                              (the verb agrees with 'man' across the clause)
  because dogs run , the man sleeps .         weil Hunde laufen , schläft der Mann .
Content words are pseudo-words from `lexicon.py`; separable verbs split in main clauses
(ruft ... an / anruft), compounds fuse, articles and adjective endings follow gender and case.

Grammar (the source side; every construction is recursive through NPs and clauses):
  S      -> MAIN ( ', and' | ', but' | ', or' MAIN )*        (at most 3 main clauses)
  MAIN   -> [ADV | PP ',' | SUB ','] CLAUSE                  (one fronted element: V2 inversion)
  CLAUSE -> NP [ADV] VG (NP | 'that' CLAUSE | -) [SUB]       (SUB only in main/that-clauses)
  SUB    -> ('because' | 'when' | ...) CLAUSE
  NP     -> [DET] ADJ* NOUN [PP | RC] | BARE 'and' BARE      (coordination makes it plural)
  RC     -> 'who' [ADV] VG [NP] | 'who' BARE [ADV] VG         (subject / object relative)
  VG     -> VERB | ('has'|'have') PARTICIPLE
The restrictions (bare coordinands, one post-modifier per noun, commas before fronted main
clauses' subjects) keep the source unambiguous, so a perfect translation exists.
"""

import random

from anatomy.data import defaults
from anatomy.data import lexicon as lx
from anatomy.data.toy_grammar import NP, RC, Clause, Grower
from anatomy.data.toy_oracle import src_sentence, tgt_sentence, translate
from anatomy.errors import BadInputError

__all__ = [  # the grammar and the oracle live in toy_grammar.py / toy_oracle.py
    "DEFAULT_LENGTH_WEIGHTS",
    "LENGTH_BUCKETS",
    "NP",
    "RC",
    "Clause",
    "Grower",
    "bucket_label",
    "generate_pairs",
    "generate_splits",
    "generate_stratified",
    "length_bucket",
    "src_sentence",
    "tgt_sentence",
    "translate",
]

LENGTH_BUCKETS = ((1, 10), (11, 20), (21, 30), (31, 40), (41, 50), (51, 60), (61, None))
DEFAULT_LENGTH_WEIGHTS = (0.14, 0.18, 0.18, 0.16, 0.12, 0.10, 0.12)


def length_bucket(n):
    """Index into LENGTH_BUCKETS of a source with n tokens."""
    for i, (_, hi) in enumerate(LENGTH_BUCKETS):
        if hi is None or n <= hi:
            return i
    return len(LENGTH_BUCKETS) - 1


def bucket_label(lo, hi):
    """'1-10', ..., '61+'."""
    return f"{lo}+" if hi is None else f"{lo}-{hi}"


# ---- corpora ----


def _target_length(rng, bucket, max_src_len):
    lo, hi = LENGTH_BUCKETS[bucket]
    hi = max_src_len if hi is None else min(hi, max_src_len)
    return rng.randint(lo, max(lo, hi))


def generate_pairs(
    n,
    *,
    seed,
    lexicon,
    length_weights=DEFAULT_LENGTH_WEIGHTS,
    max_src_len=defaults.MAX_SRC_LEN,
    exclude=frozenset(),
    stream="train",
):
    """n (source, target) string pairs whose source lengths follow length_weights.

    length_weights: one weight per LENGTH_BUCKETS entry; a target length is drawn uniformly
    inside a drawn bucket (61+ means 61..max_src_len) and the tree grows until it reaches it.
    Sources in `exclude` are skipped (keeps splits disjoint). Deterministic in (seed, stream).
    """
    if len(length_weights) != len(LENGTH_BUCKETS):
        raise BadInputError(
            f"length_weights needs {len(LENGTH_BUCKETS)} entries, got {len(length_weights)}"
        )
    rng = random.Random(f"toy_wmt/{seed}/{stream}")
    grower, out = Grower(lexicon, rng), []
    buckets = range(len(LENGTH_BUCKETS))
    while len(out) < n:
        b = rng.choices(buckets, weights=length_weights)[0]
        tree, length = grower.sentence(_target_length(rng, b, max_src_len))
        if length > max_src_len:
            continue
        pair = translate(lexicon, tree)
        if pair[0] not in exclude:
            out.append(pair)
    return out


def generate_stratified(
    per_bucket,
    *,
    seed,
    lexicon,
    max_src_len=defaults.MAX_SRC_LEN,
    exclude=frozenset(),
    stream="test",
):
    """per_bucket pairs in every LENGTH_BUCKETS bucket (by source tokens), distinct sources."""
    rng = random.Random(f"toy_wmt/{seed}/{stream}")
    grower = Grower(lexicon, rng)
    filled = [[] for _ in LENGTH_BUCKETS]
    seen = set(exclude)
    for b in range(len(LENGTH_BUCKETS)):
        if LENGTH_BUCKETS[b][0] > max_src_len:
            raise BadInputError(
                f"max_src_len={max_src_len} leaves bucket {LENGTH_BUCKETS[b]} empty"
            )
        tries = 0
        while len(filled[b]) < per_bucket:
            tries += 1
            if tries > 200 * per_bucket + 1000:
                raise BadInputError(f"cannot fill length bucket {LENGTH_BUCKETS[b]}")
            tree, length = grower.sentence(_target_length(rng, b, max_src_len))
            got = length_bucket(length)
            if length > max_src_len or len(filled[got]) >= per_bucket:
                continue
            pair = translate(lexicon, tree)
            if pair[0] not in seen:
                seen.add(pair[0])
                filled[got].append(pair)
    return [p for bucket in filled for p in bucket]


def generate_splits(
    seed=defaults.SEED,
    train_size=defaults.TRAIN_SIZE,
    valid_size=defaults.VALID_SIZE,
    test_per_bucket=defaults.TEST_PER_BUCKET,
    max_src_len=defaults.MAX_SRC_LEN,
    length_weights=DEFAULT_LENGTH_WEIGHTS,
    lexicon_scale=defaults.LEXICON_SCALE,
    lexicon=None,
):
    """{'train', 'valid', 'test'} -> list of (source, target); test is stratified by length.

    The splits have disjoint sources (test first, then valid, then train). lexicon_scale
    sizes the generated lexicon (lexicon.make_lexicon's scale) unless a lexicon is given.
    """
    lex = lexicon if lexicon is not None else lx.make_lexicon(seed, scale=lexicon_scale)
    test = generate_stratified(test_per_bucket, seed=seed, lexicon=lex, max_src_len=max_src_len)
    seen = {s for s, _ in test}
    kw = dict(seed=seed, lexicon=lex, length_weights=length_weights, max_src_len=max_src_len)
    valid = generate_pairs(valid_size, exclude=seen, stream="valid", **kw)
    seen |= {s for s, _ in valid}
    train = generate_pairs(train_size, exclude=seen, stream="train", **kw)
    return {"train": train, "valid": valid, "test": test}
