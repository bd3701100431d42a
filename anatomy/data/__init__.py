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

Config (embedded by experiments as ``config.data``)
    default_config() -> ml_collections.ConfigDict with fields
        name          'toy_wmt' | 'tsv' | 'text_pair' | 'tfds'
        seed          int; corpus generation + shuffling seed
        # toy_wmt
        toy.train_size, toy.valid_size, toy.test_per_bucket, toy.max_src_len,
        toy.length_weights (one weight per LENGTH_BUCKETS entry, train/valid length mix),
        toy.n_nouns, toy.n_verbs, toy.n_adjectives, ... (lexicon sizes)
        # tsv: train_path, valid_path, test_path ('' = none; valid/test split off train if empty)
        # text_pair: train_src, train_tgt, valid_src, valid_tgt, test_src, test_tgt
        # tfds: tfds_name (e.g. 'wmt14_translate/de-en'), tfds_data_dir, src_key, tgt_key,
        #       max_train_examples (0 = all)
        vocab         'word' | 'sentencepiece'
        vocab_size    int (sentencepiece size; word vocab cap, 0 = no cap)
        shared_vocab  bool: one vocabulary for source and target
        max_len       int: pairs with more tokens on either side (target counts + eos) are
                      filtered and counted (never truncated)
        token_budget  int: tokens per padded batch (B * padded_len <= token_budget)
        bucket_boundaries  tuple of padded lengths (ascending); () = automatic multiples of 8

Corpus
    load_corpus(config, workdir=None) -> Corpus
        Corpus fields: name, splits: dict split -> list[(src_str, tgt_str)] (splits 'train',
        'valid', 'test'), src_vocab, tgt_vocab (Vocab; the same object when shared), report: dict
        (counts of skipped / filtered lines, first bad line numbers, sizes, timings).
        Vocab files are saved in ``workdir`` (src_vocab.txt / tgt_vocab.txt or *.model for
        sentencepiece) and reused when present.
        Corpus.test_by_bucket(split='test') -> dict label -> list[(src, tgt)] grouped by
            LENGTH_BUCKETS of the source token count (raw reference strings for sacrebleu).
        Corpus.encode(split) -> list[(src_ids, tgt_ids)] (np.int32 arrays, no bos/eos)

Toy corpus (anatomy.data.toy_wmt)
    make_lexicon(seed, **sizes) -> Lexicon
    generate_pairs(n, *, seed, lexicon, length_weights, max_src_len) -> list[(src, tgt)]
    generate_splits(seed=0, **toy_config) -> dict split -> list[(src, tgt)]
    translate(src_sentence_tree) is the oracle; see toy_wmt.py for the grammar.

Vocabularies (anatomy.data.vocab)
    Vocab: .encode(text) -> list[int] (no bos/eos), .decode(ids) -> str (stops at eos, drops
        pad/bos), .size, .pad/.bos/.eos/.unk, .save(path), load_vocab(path) -> Vocab
    build_word_vocab(texts, max_size=0, min_count=1) -> Vocab
    train_sentencepiece(texts_iterable, vocab_size, model_prefix) -> Vocab
    detokenize(tokens_or_str) -> str   plain string for sacrebleu

Batching (anatomy.data.batching)
    Batcher(encoded_pairs, *, token_budget, boundaries, seed, max_len, shuffle=True)
        .batch_at(k) -> batch dict; pure function of (seed, k): resumed runs see the same batches
        .iterate(start_step=0) -> infinite iterator of batches k = start_step, start_step+1, ...
        .dataset(start_step=0) -> grain.MapDataset whose item i is batch_at(start_step + i)
        .shapes -> list of (batch_size, padded_len) the jitted step will see
        .steps_per_epoch
    make_batcher(corpus, split='train', *, token_budget=None, seed=None) -> Batcher
    eval_batches(corpus, split, *, token_budget) -> list of batch dicts in corpus order
        (each with 'index' [B] int32 = position in the split, -1 for padding rows)

Batch layout: dict of numpy int32 arrays, pad = 0, every array of a bucket has a fixed shape
    src      [B, L]  source ids, no bos/eos
    src_len  [B]     true source lengths (0 for padding rows)
    tgt_in   [B, L]  bos + target ids        (decoder input)
    tgt_out  [B, L]  target ids + eos        (labels; loss mask = tgt_out != 0)
    tgt_len  [B]     len(target) + 1          (number of valid tgt_out positions)
    L is the bucket's padded length (>= max(src_len, tgt_len)), B = token_budget // L.
"""
