"""load_corpus(config) -> Corpus: one entry point for toy_wmt, TSV, text pairs and tfds corpora."""

import collections
import dataclasses
import hashlib
import logging
import os
import random
import time

import ml_collections
import numpy as np

from anatomy import fingerprint as fpr
from anatomy import paths
from anatomy.data import batching, catalogs, defaults, readers, toy_wmt
from anatomy.data import lexicon as lx
from anatomy.data.vocab import (
    SPECIALS,
    CorpusError,
    Vocab,
    build_word_vocab,
    load_vocab,
    train_sentencepiece,
)

NAMES = ("toy_wmt", "tsv", "text_pair", "tfds", "gettext")


def default_config():
    """The data config (experiments embed it as config.data); every field is documented here."""
    c = ml_collections.ConfigDict()
    c.name = "toy_wmt"  # 'toy_wmt' | 'tsv' | 'text_pair' | 'tfds' | 'gettext'
    c.seed = defaults.SEED  # corpus generation, splitting and batch shuffling seed
    c.toy = ml_collections.ConfigDict()
    c.toy.train_size = defaults.TRAIN_SIZE  # training pairs (30,000)
    c.toy.valid_size = defaults.VALID_SIZE  # validation pairs (same length mix as train)
    c.toy.test_per_bucket = defaults.TEST_PER_BUCKET  # test pairs per LENGTH_BUCKETS bucket
    c.toy.max_src_len = defaults.MAX_SRC_LEN  # longest generated source (tokens, with '.')
    c.toy.length_weights = toy_wmt.DEFAULT_LENGTH_WEIGHTS  # train/valid mix over LENGTH_BUCKETS
    c.toy.lexicon_scale = (
        defaults.LEXICON_SCALE
    )  # multiplies every open word class (1.0: 1,063 source words)
    c.toy.via_tfds = False  # True: build the tfds array_record dataset and read it back
    c.train_path = ""  # tsv: `source<TAB>target` UTF-8 files
    c.valid_path = ""  # '' = split valid_size pairs off the training file
    c.test_path = ""  # '' = split test_size pairs off the training file
    c.train_src = ""  # text_pair: aligned files, one sentence a line
    c.train_tgt = ""
    c.valid_src = ""
    c.valid_tgt = ""
    c.test_src = ""
    c.test_tgt = ""
    c.valid_size = defaults.HELD_OUT_SIZE  # user corpora: held-out sizes when no file is given
    c.test_size = defaults.HELD_OUT_SIZE
    c.tfds_name = "wmt14_translate/de-en"  # tfds: dataset name (array_record via data_source)
    c.tfds_data_dir = ""  # '' = tfds default (~/tensorflow_datasets)
    c.src_key = "en"  # tfds feature holding the source
    c.tgt_key = "de"  # tfds feature holding the target
    c.tfds_valid_split = "validation"
    c.tfds_test_split = "test"
    c.max_train_examples = 0  # tfds / user corpora: cap on training pairs (0 = all)
    # gettext: the machine's own translations, English -> gettext.lang (anatomy.data.catalogs)
    c.gettext = ml_collections.ConfigDict()
    c.gettext.lang = "fr"  # the catalogs of <dir>/<lang>/LC_MESSAGES/*.mo
    c.gettext.dirs = defaults.GETTEXT_DIRS  # where to look (a dir that does not exist: skipped)
    c.gettext.exclude = defaults.GETTEXT_EXCLUDE  # catalog file names left out (fnmatch)
    c.gettext.max_words = defaults.GETTEXT_MAX_WORDS  # sources longer than this (words): left out
    # valid and test stratified by source length (LENGTH_BUCKETS, in words): up to this many
    # pairs per bucket each, and never more than held_out_share of a bucket each
    c.gettext.valid_per_bucket = defaults.GETTEXT_VALID_PER_BUCKET
    c.gettext.test_per_bucket = defaults.GETTEXT_TEST_PER_BUCKET
    c.gettext.held_out_share = defaults.GETTEXT_HELD_OUT_SHARE
    c.vocab = "word"  # 'word' | 'sentencepiece'
    c.vocab_size = 8000  # sentencepiece size; cap for word vocabs of user corpora (0 = none)
    c.shared_vocab = False  # one vocabulary for both sides
    c.max_len = (
        defaults.MAX_LEN
    )  # pairs longer than this (tokens; target + eos) are filtered, counted
    c.train_max_src_len = 0  # > 0: train only on pairs with at most this many source tokens
    # (Bahdanau's -30/-50; valid and test keep every length)
    c.token_budget = defaults.TOKEN_BUDGET  # padded tokens per batch: B * L <= token_budget
    c.bucket_boundaries = ()  # padded lengths; () = multiples of 8 up to max_len
    return c


@dataclasses.dataclass
class Corpus:
    """Splits of (source, target) strings plus vocabularies; see load_corpus."""

    name: str
    splits: dict
    src_vocab: object
    tgt_vocab: object
    report: dict
    max_len: int = defaults.MAX_LEN
    fingerprint: dict = None  # data_fingerprint(config): what the splits were made from

    def test_by_bucket(self, split="test"):
        """{'1-10': [(src, tgt), ...], ..., '61+': [...]} by source length in words (whitespace
        tokens, whatever the vocabulary: the sentence length of Bahdanau et al.'s Figure 2;
        toy_wmt's words are its tokens)."""
        out = {toy_wmt.bucket_label(lo, hi): [] for lo, hi in toy_wmt.LENGTH_BUCKETS}
        labels = list(out)
        for src, tgt in self.splits[split]:
            out[labels[toy_wmt.length_bucket(len(src.split()))]].append((src, tgt))
        return out

    def encode(self, split):
        """[(src_ids, tgt_ids)] as int32 arrays without bos/eos, in corpus order."""
        sv, tv = self.src_vocab, self.tgt_vocab
        return [
            (np.asarray(sv.encode(s), np.int32), np.asarray(tv.encode(t), np.int32))
            for s, t in self.splits[split]
        ]


def _hold_out(pairs, n_valid, n_test, seed):
    """(train, valid, test): valid/test drawn from the distinct pairs, and every copy of a
    held-out pair left out of train, so a repeated line never lands on both sides."""
    unique = list(dict.fromkeys(pairs))  # first occurrences, in corpus order
    order = list(range(len(unique)))
    random.Random(f"holdout/{seed}").shuffle(order)
    n_valid = min(n_valid, len(unique) // 10)
    n_test = min(n_test, len(unique) // 10)
    pick = lambda idx: [unique[i] for i in sorted(idx)]
    valid, test = pick(order[:n_valid]), pick(order[n_valid : n_valid + n_test])
    held = set(valid) | set(test)
    return [p for p in pairs if p not in held], valid, test


def _hold_out_by_length(pairs, n_valid, n_test, share, seed):
    """(train, valid, test) of distinct pairs, valid and test stratified by source length in
    words (LENGTH_BUCKETS): from each bucket, in a seeded order, up to n_valid pairs for valid
    and n_test for test, each at most `share` of the bucket, so a long bucket is never empty
    in test (nor all of it there); train keeps the rest, in corpus order."""
    buckets = collections.defaultdict(list)
    for i, (src, _) in enumerate(pairs):
        buckets[toy_wmt.length_bucket(len(src.split()))].append(i)
    rng = random.Random(f"holdout_by_length/{seed}")
    valid, test = [], []
    for b in sorted(buckets):
        idx = buckets[b]
        rng.shuffle(idx)
        cap = int(share * len(idx))
        nv, nt = min(n_valid, cap), min(n_test, cap)
        valid += idx[:nv]
        test += idx[nv : nv + nt]
    held = set(valid) | set(test)
    pick = lambda idx: [pairs[i] for i in sorted(idx)]
    return [p for i, p in enumerate(pairs) if i not in held], pick(valid), pick(test)


def _read_splits(config, workdir):
    """{'train','valid','test'} pairs and per-file reports for config.name."""
    name = config.name
    if name == "toy_wmt":
        # config.toy: toy_wmt.generate_splits's keyword arguments (but seed) and via_tfds
        params = {k: v for k, v in config.toy.items() if k != "via_tfds"}
        params.update(seed=config.seed, length_weights=tuple(params["length_weights"]))
        if config.toy.via_tfds:
            from anatomy.data import toy_wmt_tfds

            data_dir = config.tfds_data_dir or os.path.join(workdir or ".", "tfds")
            return toy_wmt_tfds.read_toy_wmt(data_dir, **params), {}
        return toy_wmt.generate_splits(**params), {}
    if name == "tfds":
        kw = dict(
            data_dir=config.tfds_data_dir or None,
            src_key=config.src_key or None,
            tgt_key=config.tgt_key or None,
        )
        train, r = readers.read_tfds(
            config.tfds_name, "train", max_examples=config.max_train_examples, **kw
        )
        valid, rv = readers.read_tfds(config.tfds_name, config.tfds_valid_split, **kw)
        test, rt = readers.read_tfds(config.tfds_name, config.tfds_test_split, **kw)
        return {"train": train, "valid": valid, "test": test}, {"train": r, "valid": rv, "test": rt}
    if name == "gettext":
        g = config.gettext
        pairs, report = catalogs.read_gettext(g.lang, tuple(g.dirs), tuple(g.exclude))
        if g.max_words:
            keep = [p for p in pairs if len(p[0].split()) <= g.max_words]
            if len(keep) < len(pairs):
                report["skipped"]["over_max_words"] = len(pairs) - len(keep)
            pairs = keep
        train, valid, test = _hold_out_by_length(
            pairs, g.valid_per_bucket, g.test_per_bucket, g.held_out_share, config.seed
        )
        if config.max_train_examples:
            train = train[: config.max_train_examples]
        report["pairs"] = len(pairs)
        return {"train": train, "valid": valid, "test": test}, {"train": report}
    if name == "tsv":
        read = lambda split: readers.read_tsv(config[f"{split}_path"])
        have = {"valid": config.valid_path, "test": config.test_path}
    elif name == "text_pair":
        read = lambda split: readers.read_text_pair(config[f"{split}_src"], config[f"{split}_tgt"])
        have = {"valid": config.valid_src, "test": config.test_src}
    else:
        raise CorpusError(f"unknown corpus name {name!r}; choose one of {NAMES}")
    train, report = read("train")
    if config.max_train_examples:
        train = train[: config.max_train_examples]
    reports = {"train": report}
    held_train, held_valid, held_test = _hold_out(
        train,
        0 if have["valid"] else config.valid_size,
        0 if have["test"] else config.test_size,
        config.seed,
    )
    # training lines left out because they repeat a held-out valid/test pair
    report["held_out_repeats"] = len(train) - len(held_train) - len(held_valid) - len(held_test)
    splits = {"train": held_train}
    for split, held in (("valid", held_valid), ("test", held_test)):
        if have[split]:
            splits[split], reports[split] = read(split)
        else:
            splits[split] = held
    return splits, reports


def _vocab_files(config, workdir):
    tag = "spm" if config.vocab == "sentencepiece" else "vocab"
    ext = ".model" if config.vocab == "sentencepiece" else ".txt"
    if config.shared_vocab:
        path = paths.join(workdir, f"shared_{tag}{ext}")
        return path, path
    return (paths.join(workdir, f"src_{tag}{ext}"), paths.join(workdir, f"tgt_{tag}{ext}"))


def _make_vocab(config, texts, path, closed):
    """One vocabulary: the toy lexicon's closed word list, a word count, or sentencepiece."""
    if config.vocab == "sentencepiece":
        return train_sentencepiece(texts, config.vocab_size, path[: -len(".model")])
    if config.vocab != "word":
        raise CorpusError(f"unknown vocab {config.vocab!r}; choose 'word' or 'sentencepiece'")
    if closed is not None:
        return Vocab(list(SPECIALS) + closed)
    return build_word_vocab(texts, max_size=config.vocab_size)


# Data fields that shape batches only, never the splits or the vocabulary built from them.
BATCHING_FIELDS = (
    "max_len",
    "token_budget",
    "bucket_boundaries",
    "batch_multiple",
    "train_max_src_len",
)
VOCAB_FINGERPRINT = "vocab_fingerprint.json"


def _corpus_files(config):
    """The user files config names for its corpus kind (their contents are fingerprinted);
    for gettext, the catalogs it reads (another machine's catalogs: another corpus)."""
    if config.name == "gettext":
        g = config.gettext
        return catalogs.catalog_files(g.lang, tuple(g.dirs), tuple(g.exclude))[0]
    keys = {
        "tsv": ("train_path", "valid_path", "test_path"),
        "text_pair": ("train_src", "train_tgt", "valid_src", "valid_tgt", "test_src", "test_tgt"),
    }.get(config.name, ())
    return [config[k] for k in keys if config[k]]


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def data_fingerprint(config):
    """What a corpus is made from: the data config, plus the sha256 of every user file it reads
    (an edited file under the same name is another corpus). See anatomy.fingerprint. The
    gettext fields count only for a gettext corpus: every other corpus keeps the fingerprint
    it had before they existed, so its workdirs stay reusable."""
    fp = fpr.flatten(config.to_dict())
    if config.name != "gettext":
        fp = {k: v for k, v in fp.items() if not k.startswith("gettext.")}
    fp["files"] = {p: _sha256(p) for p in _corpus_files(config) if os.path.isfile(p)}
    return fp


def vocab_fingerprint(data_fp):
    """The part of a data fingerprint a vocabulary depends on (not the batching fields)."""
    return {k: v for k, v in data_fp.items() if k not in BATCHING_FIELDS}


def _check_saved_vocab(workdir, files, data_fp):
    """Stop (FingerprintMismatchError, one line) unless the vocab in workdir was built from
    this data config; vocab files without a fingerprint are refused too."""
    fpr.check(
        f"the vocabulary {', '.join(sorted(set(files)))}",
        fpr.read(paths.join(workdir, VOCAB_FINGERPRINT)),
        vocab_fingerprint(data_fp),
        fresh=f"use another --workdir, or delete those files and {VOCAB_FINGERPRINT} "
        "to rebuild the vocabulary (and retrain: the checkpoints use it)",
    )


def _vocabs(config, splits, workdir, data_fp):
    """(src_vocab, tgt_vocab): loaded from workdir when saved there before (for the same data
    config, see _check_saved_vocab), else built and saved with its fingerprint."""
    closed_src = closed_tgt = None
    if config.name == "toy_wmt" and config.vocab == "word":
        lex = lx.make_lexicon(config.seed, scale=config.toy.lexicon_scale)
        closed_src, closed_tgt = lx.source_forms(lex), lx.target_forms(lex)
    if workdir:  # local or gs:// (anatomy.paths)
        paths.makedirs(workdir)
        src_path, tgt_path = _vocab_files(config, workdir)
    else:
        tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"anatomy_vocab_{os.getpid()}")
        os.makedirs(tmp, exist_ok=True)
        src_path, tgt_path = _vocab_files(config, tmp)
    if workdir and paths.exists(src_path) and paths.exists(tgt_path):
        _check_saved_vocab(workdir, (src_path, tgt_path), data_fp)
        src = load_vocab(src_path)
        return src, (src if src_path == tgt_path else load_vocab(tgt_path))
    train = splits["train"]
    if config.shared_vocab:
        closed = None if closed_src is None else sorted(set(closed_src) | set(closed_tgt))
        texts = [s for s, _ in train] + [t for _, t in train]
        src = tgt = _make_vocab(config, texts, src_path, closed)
    else:
        src = _make_vocab(config, [s for s, _ in train], src_path, closed_src)
        tgt = _make_vocab(config, [t for _, t in train], tgt_path, closed_tgt)
    if src.kind == "word":
        src.save(src_path)
        tgt.save(tgt_path)
    if workdir:
        fpr.write(paths.join(workdir, VOCAB_FINGERPRINT), vocab_fingerprint(data_fp))
    return src, tgt


def load_corpus(config=None, workdir=None):
    """Read or generate the corpus named by config (see default_config) and its vocabularies.

    Vocabularies are saved to workdir (src_vocab.txt / tgt_vocab.txt, shared_vocab.txt or
    *_spm.model) with vocab_fingerprint.json, and reused on the next call with the same workdir
    and the same data config; another config stops with FingerprintMismatchError naming the
    fields. report['filtered'][split]: pairs over max_len (never trained on, nor in a
    teacher-forced loss; BLEU decodes the test split whole: Corpus.test_by_bucket).
    """
    base = default_config()
    if config is not None:
        base.update(config)  # missing fields keep their defaults
    config = base
    if config.name not in NAMES:
        raise CorpusError(f"unknown corpus name {config.name!r}; choose one of {NAMES}")
    t0 = time.perf_counter()
    splits, reports = _read_splits(config, workdir)
    t1 = time.perf_counter()
    data_fp = data_fingerprint(config)
    src_vocab, tgt_vocab = _vocabs(config, splits, workdir, data_fp)
    report = {
        "files": reports,
        "sizes": {k: len(v) for k, v in splits.items()},
        "read_seconds": t1 - t0,
        "vocab_seconds": time.perf_counter() - t1,
        "src_vocab_size": src_vocab.size,
        "tgt_vocab_size": tgt_vocab.size,
    }
    logging.info("corpus %s: %s", config.name, report["sizes"])
    corpus = Corpus(
        config.name,
        splits,
        src_vocab,
        tgt_vocab,
        report,
        max_len=config.max_len,
        fingerprint=data_fp,
    )
    # pairs over max_len per split: the batchers filter them (never truncate), counted here once
    report["filtered"] = {
        split: batching.count_too_long(corpus.encode(split), config.max_len) for split in splits
    }
    return corpus


def corpus_report(corpus):
    """What was left out of a corpus, for results.json: per file the lines skipped by kind with
    their first line numbers, training lines repeating a held-out pair, and per split the
    pairs filtered for length (over max_len: never trained on, nor in a teacher-forced loss;
    the test split's BLEU decodes them too)."""
    files = corpus.report.get("files", {})
    out = {
        "skipped": {
            split: {k: r[k] for k in ("path", "lines", "skipped", "first_bad_lines") if k in r}
            for split, r in files.items()
        },
        "held_out_repeats": sum(r.get("held_out_repeats", 0) for r in files.values()),
        "filtered_for_length": dict(corpus.report.get("filtered", {})),
        "max_len": corpus.max_len,
    }
    for r in files.values():  # gettext: what each catalog gave, which were left out
        if "catalogs" in r:
            out.update(catalogs=r["catalogs"], excluded_catalogs=r["excluded"])
    return out


def describe_corpus_report(summary):
    """One paragraph of report.md from corpus_report(...)."""
    parts = []
    for split, r in summary["skipped"].items():
        if r.get("skipped"):
            lines = {k: ", ".join(map(str, v)) for k, v in r["first_bad_lines"].items() if v}
            kinds = "; ".join(
                f"{kind} {n}" + (f" (first at line {lines[kind]})" if kind in lines else "")
                for kind, n in r["skipped"].items()
            )
            parts.append(
                f"{split} `{r['path']}`: {sum(r['skipped'].values())} of {r['lines']} "
                f"lines skipped ({kinds})"
            )
    text = ("Skipped lines: " + ". ".join(parts) + ".") if parts else "No input line was skipped."
    if summary["held_out_repeats"]:
        text += (
            f" {summary['held_out_repeats']} training lines repeated a held-out valid/test "
            "pair and were left out of train."
        )
    if "catalogs" in summary:
        chosen = sorted(summary["catalogs"].items(), key=lambda kv: -kv[1]["chosen"])
        text += (
            f" Pairs taken from each of {len(chosen)} catalogs: "
            + ", ".join(f"{name} {c['chosen']}" for name, c in chosen)
            + f"; left out: {', '.join(summary['excluded_catalogs']) or 'none'}."
        )
    filtered = summary["filtered_for_length"]
    text += (
        f" Pairs over max_len={summary['max_len']} (left out of training and of the"
        " teacher-forced losses, never truncated; BLEU decodes every test pair): "
        + ", ".join(f"{split} {n}" for split, n in filtered.items())
        + "."
    )
    return text
