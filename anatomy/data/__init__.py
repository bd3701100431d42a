"""Data for anatomy: the toy_wmt corpus, user corpora, vocabularies, fixed-shape batches.

Public API (binding for the training and experiment code)
---------------------------------------------------------
Constants
    PAD, BOS, EOS, UNK = 0, 1, 2, 3
    LENGTH_BUCKETS = ((1, 10), (11, 20), (21, 30), (31, 40), (41, 50), (51, 60), (61, None))
        source-length buckets (tokens, inclusive) for BLEU by length; None = open-ended.
    bucket_label(lo, hi) -> '1-10' ... '61+' ; length_bucket(n_tokens) -> index into LENGTH_BUCKETS

Errors
    CorpusError(ValueError): every bad-input problem (missing file, invalid UTF-8 with file and line,
        no usable line, unknown corpus name) raises this with a message naming the file/line.

Config (embedded by experiments as ``config.data``; every field commented in corpus.py)
    default_config() -> ml_collections.ConfigDict with fields
        name          'toy_wmt' | 'tsv' | 'text_pair' | 'tfds' | 'gettext'
        seed          int; corpus generation, held-out splitting and batch shuffling seed
        # toy_wmt (defaults, anatomy.data.defaults: 30,000 / 1,000 / 7 x 100 pairs, sources of
        # 3..120 tokens)
        toy.train_size, toy.valid_size, toy.test_per_bucket, toy.max_src_len,
        toy.length_weights (one weight per LENGTH_BUCKETS entry: the train/valid length mix),
        toy.lexicon_scale (1.0: 1,063 source words, 2,007 source / 2,941 target word forms;
                           0.5 for an easier language),
        toy.via_tfds (False: generate in memory; True: build the tfds array_record dataset
                      under tfds_data_dir or workdir/tfds and read it with tfds.data_source)
        # tsv: train_path, valid_path, test_path ('' = hold valid_size / test_size pairs out of train)
        # text_pair: train_src, train_tgt, valid_src, valid_tgt, test_src, test_tgt (same rule)
        valid_size, test_size   held-out sizes for user corpora without valid/test files
        # tfds: tfds_name ('wmt14_translate/de-en'), tfds_data_dir, src_key ('en'), tgt_key ('de'),
        #       tfds_valid_split ('validation'), tfds_test_split ('test')
        max_train_examples  cap on training pairs of user / tfds corpora (0 = all)
        # gettext: the machine's own translations (anatomy.data.catalogs): gettext.lang ('fr'),
        #       gettext.dirs (('/usr/share/locale', '/usr/share/locale-langpack')),
        #       gettext.exclude (('iso_*',): names, not messages), gettext.max_words (100),
        #       gettext.valid_per_bucket / test_per_bucket (50 / 100 pairs per LENGTH_BUCKETS
        #       bucket of source words, each at most gettext.held_out_share (1/3) of a bucket)
        vocab         'word' | 'sentencepiece'  (toy_wmt + word = the lexicon's closed word list)
        vocab_size    int (sentencepiece size; word vocab cap for user corpora, 0 = no cap)
        shared_vocab  bool: one vocabulary for source and target
        max_len       int (160): pairs with len(src) > max_len or len(tgt) + 1 > max_len are
                      filtered and counted (never truncated)
        train_max_src_len  int (0): > 0 trains on pairs with at most this many source tokens only
                      (make_batcher of split 'train'; valid and test keep every length)
        token_budget  int (1024): tokens per padded batch (B * padded_len <= token_budget)
        bucket_boundaries  tuple of padded lengths (ascending); () = 8,16,24,32,48,64,96,128,...
                      up to max_len rounded up to a multiple of 8 (one jit shape per bucket)

Corpus
    load_corpus(config, workdir=None) -> Corpus
        Corpus fields: name, splits: dict split -> list[(src_str, tgt_str)] (splits 'train',
        'valid', 'test'), src_vocab, tgt_vocab (Vocab; the same object when shared), report: dict
        (files: per split {path, lines, pairs, skipped {kind: n}, first_bad_lines {kind: [line
        numbers]}, held_out_repeats}; filtered: per split pairs over max_len; sizes; timings),
        fingerprint (data_fingerprint: the data config + sha256 of the user files read).
        Vocab files are saved in ``workdir`` (src_vocab.txt / tgt_vocab.txt or *.model for
        sentencepiece) with vocab_fingerprint.json, and reused only for the same data config
        (batching fields aside); another config raises FingerprintMismatchError naming the fields.
        User corpora without valid/test files: the held-out pairs are distinct and every copy
        of them is left out of train (a repeated line never lands on both sides).
        Corpus.test_by_bucket(split='test') -> dict label -> list[(src, tgt)] grouped by
            LENGTH_BUCKETS of the source word count (whitespace words, whatever the vocabulary;
            raw reference strings for sacrebleu).
        Corpus.encode(split) -> list[(src_ids, tgt_ids)] (np.int32 arrays, no bos/eos)
    corpus_report(corpus) -> dict for results.json (skipped lines by kind with first line numbers,
        held-out repeats, pairs filtered for length per split); describe_corpus_report(it) -> str

Defaults (anatomy.data.defaults): SEED, TOKEN_BUDGET (1024), MAX_LEN (160), TRAIN_SIZE, ...,
    written once and read by default_config(), the batchers and the generators below.

gettext catalogs (anatomy.data.catalogs): the human translations a Debian/Ubuntu machine ships
    read_mo(path) -> (header, [Message]); catalog_pairs(header, messages) -> (pairs, skipped);
    read_gettext(lang, dirs, exclude) -> (pairs, report): one pair per English source, counts
    by catalog; CorpusError (one line: what was found, what to do) without catalogs for lang.

Toy corpus (anatomy.data.toy_wmt; the trees in toy_grammar.py, the oracle in toy_oracle.py)
    make_lexicon(seed=0, scale=1.0, **sizes) -> Lexicon  (anatomy.data.lexicon; CLASS_SIZES)
    generate_pairs(n, *, seed, lexicon, length_weights, max_src_len) -> list[(src, tgt)]
    generate_stratified(per_bucket, *, seed, lexicon, max_src_len) -> list[(src, tgt)]
    generate_splits(seed, train_size, valid_size, test_per_bucket, max_src_len,
                    length_weights, lexicon_scale)   (defaults from anatomy.data.defaults)
        -> {'train','valid','test'} -> pairs
    translate(lexicon, sentence_tree) -> (src, tgt) is the oracle; see toy_wmt.py for the grammar.
    tfds (anatomy.data.toy_wmt_tfds): ToyWmt builder (array_record), build_toy_wmt(data_dir, **p),
        read_toy_wmt(data_dir, **p) -> splits read back with tfds.data_source (no TensorFlow).

Vocabularies (anatomy.data.vocab)
    Vocab: .encode(text) -> list[int] (no bos/eos), .decode(ids) -> str (stops at eos, drops
        pad/bos), .text(ids) / .plain(reference) -> the plain strings sacrebleu scores (word
        vocabularies detokenise, sentencepiece's are plain already), .size, .pad/.bos/.eos/.unk,
        .save(path), load_vocab(path) -> Vocab
    build_word_vocab(texts, max_size=0, min_count=1) -> Vocab
    train_sentencepiece(texts_iterable, vocab_size, model_prefix) -> Vocab
    detokenize(tokens_or_str) -> str   plain string for sacrebleu

Batching (anatomy.data.batching)
    Batcher(encoded_pairs, *, token_budget=TOKEN_BUDGET, boundaries=(), max_len=MAX_LEN, seed=0,
            shuffle=True)
        .batch_at(k) -> batch dict; pure function of (seed, k): resumed runs see the same batches
        .iterate(start_step=0) -> infinite iterator of batches k = start_step, start_step+1, ...
        .dataset(start_step=0) -> grain.MapDataset whose item i is batch_at(start_step + i)
        .shapes -> list of (batch_size, padded_len) the jitted step will see
        .steps_per_epoch
    make_batcher(corpus, split='train', *, token_budget=None, seed=None, max_len=None,
                 boundaries=None, shuffle=True, config=None) -> Batcher
        (unset arguments come from config = the data config, else defaults)
        Training rows are always real examples (a bucket's last batch wraps around).
    eval_batches(corpus, split='test', *, token_budget=None, max_len=None, boundaries=None,
                 config=None) -> list of batch dicts, every pair that fits max_len exactly once,
        grouped by bucket; each has 'index' [B] int32 = position in the split, -1 on padding
        rows (which repeat a real row, so no row is empty). Pairs over max_len are filtered and
        counted in corpus.report['filtered'][split], never truncated.
    eval_batches_from_pairs(encoded_pairs, ...) -> (batches, n_filtered)

Batch layout: dict of numpy int32 arrays, pad = 0, every array of a bucket has a fixed shape
    src      [B, L]  source ids, no bos/eos
    src_len  [B]     true source lengths (0 for padding rows)
    tgt_in   [B, L]  bos + target ids        (decoder input)
    tgt_out  [B, L]  target ids + eos        (labels; loss mask = tgt_out != 0)
    tgt_len  [B]     len(target) + 1          (number of valid tgt_out positions)
    L is the bucket's padded length (>= max(src_len, tgt_len)), B = token_budget // L.
"""

from anatomy.data.batching import (
    Batcher,
    bucket_boundaries,
    collate,
    eval_batches,
    eval_batches_from_pairs,
    make_batcher,
)
from anatomy.data.corpus import (
    Corpus,
    corpus_report,
    default_config,
    describe_corpus_report,
    load_corpus,
)
from anatomy.data.lexicon import make_lexicon
from anatomy.data.readers import read_text_pair, read_tfds, read_tsv
from anatomy.data.toy_wmt import (
    LENGTH_BUCKETS,
    bucket_label,
    generate_pairs,
    generate_splits,
    generate_stratified,
    length_bucket,
    translate,
)
from anatomy.data.vocab import (
    BOS,
    EOS,
    PAD,
    UNK,
    CorpusError,
    SentencePieceVocab,
    Vocab,
    build_word_vocab,
    detokenize,
    load_vocab,
    train_sentencepiece,
)

__all__ = [
    "BOS",
    "EOS",
    "PAD",
    "UNK",
    "LENGTH_BUCKETS",
    "Batcher",
    "Corpus",
    "CorpusError",
    "SentencePieceVocab",
    "Vocab",
    "bucket_boundaries",
    "bucket_label",
    "build_word_vocab",
    "collate",
    "corpus_report",
    "default_config",
    "describe_corpus_report",
    "detokenize",
    "eval_batches",
    "eval_batches_from_pairs",
    "generate_pairs",
    "generate_splits",
    "generate_stratified",
    "length_bucket",
    "load_corpus",
    "load_vocab",
    "make_batcher",
    "make_lexicon",
    "read_text_pair",
    "read_tfds",
    "read_tsv",
    "train_sentencepiece",
    "translate",
]
