"""anatomy: the RNN -> Transformer transition, made measurable.

    anatomy.scan        the scan engines: a cell run over time (lengths, reverse,
                        bidirectional, a fused backward), the one linear recurrence in its
                        forms (sequential, associative, chunked; the quadratic form)
    anatomy.attention   all positions at once: additive, Luong, scaled dot-product and
                        multi-head attention as batched einsums, masks, KV cache, layers
    anatomy.conv        a fixed window: causal / centred 1-D convolutions, GLU blocks (ConvS2S)
    anatomy.mixers      sequence mixers by name behind one interface, one file each (the
                        rnn / lstm / gru cells, SRU, QRNN, minGRU, Mamba, RG-LRU, mLSTM,
                        gated DeltaNet, Mamba-2, linear attention, softmax attention),
                        hybrid stacks
    anatomy.data        toy_wmt corpus, tfds builder, TSV / tfds corpora, vocab, batches
    anatomy.seq2seq     translators: rnnenc, rnnsearch, luong, transformer, convs2s
    anatomy.lm          decoder-only language models of any family or mixer, one interface
    anatomy.decode      greedy and beam search over any translator's step function
    anatomy.train       losses, optimiser, train/eval steps, the loop, checkpoints, BLEU
    anatomy.sharding    mesh + logical axis rules -> NamedSharding
    anatomy.probes      gradient norms, XLA cost analysis, timing

The scan engines and the attention family are imported eagerly; the rest on first use (the data
package pulls in tensorflow-datasets, which is slow to import).
"""

import importlib

from anatomy import attention, scan

__version__ = "0.1.0"

_LAZY = (
    "conv",
    "mixers",
    "data",
    "seq2seq",
    "lm",
    "decode",
    "train",
    "sharding",
    "distributed",
    "probes",
)


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f"anatomy.{name}")
    raise AttributeError(f"module 'anatomy' has no attribute {name!r}")


__all__ = ["attention", "scan", *_LAZY]
