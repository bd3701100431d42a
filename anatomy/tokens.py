"""Special token ids, defined once: the vocabularies (anatomy.data), the models, decoding and
the loss all import them from here.

    PAD = 0   padding (source and target; the loss masks it)
    BOS = 1   start of the decoder input
    EOS = 2   end of every target
    UNK = 3   a word outside the vocabulary
"""

PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ("<pad>", "<s>", "</s>", "<unk>")  # their strings in a vocabulary file, in id order
