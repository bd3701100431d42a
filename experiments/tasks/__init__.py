"""What several experiments train on and with, so that none imports another:

    mqar.py        multi-query associative recall, Zoology's generator (recall)
    copying.py     repeat a string after a separator, Jelassi et al. 2024 (copy)
    readers.py     the reader every labelled task has: by position only
    contenders.py  the contender strings ('mamba:d_state=8') recall and copy build their
                   language models from
    translation/   translators trained and scored on a corpus, over seeds, the one way
                   (rnn_vs_attn, rnnenc_state's variants, recipe_sweep's settings), on the
                   config of experiments/configs/rnn_vs_attn.py

A labelled task labels the positions it asks about and IGNOREs the rest (anatomy.train.labelled, which
trains and reads a model at exactly those positions).
"""
