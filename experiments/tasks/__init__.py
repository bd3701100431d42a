"""What several experiments train on and with, so that none imports another:

    mqar.py        multi-query associative recall, Zoology's generator (recall)
    copying.py     repeat a string after a separator, Jelassi et al. 2024 (copy)
    readers.py     the reader every labelled task has: by position only
    contenders.py  the contender strings ('mamba:d_state=8') recall and copy build their
                   language models from

A task labels the positions it asks about and IGNOREs the rest (anatomy.train.labelled, which
trains and reads a model at exactly those positions).
"""
