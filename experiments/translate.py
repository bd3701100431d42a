"""translate: translate sentences with a model trained by rnn_vs_attn, one per line to stdout.

Reads the model's hyperparameters (<workdir>/<model>/model.json), the vocabularies the data
package saved in <workdir>, and the latest checkpoint of <workdir>/<model>/checkpoints.
Sentences come from config.sentences ('|'-separated) or stdin (one per line).
"""

from __future__ import annotations

import json
import os
import sys

import jax
import numpy as np

from anatomy import train as T
from anatomy.data import detokenize, load_vocab
from anatomy.seq2seq import build_model

_VOCAB_FILES = [
    ("shared_vocab.txt", "shared_vocab.txt"),
    ("src_vocab.txt", "tgt_vocab.txt"),
    ("shared_spm.model", "shared_spm.model"),
    ("src_spm.model", "tgt_spm.model"),
]


def _vocabs(workdir):
    for s, t in _VOCAB_FILES:
        if os.path.exists(os.path.join(workdir, s)) and os.path.exists(os.path.join(workdir, t)):
            return load_vocab(os.path.join(workdir, s)), load_vocab(os.path.join(workdir, t))
    raise FileNotFoundError(
        f"No vocabulary files in {workdir} (expected one of {_VOCAB_FILES}); "
        "is it an rnn_vs_attn workdir?"
    )


def load_trained(workdir, name):
    """(model, params, src_vocab, tgt_vocab) of model `name` trained in an rnn_vs_attn workdir."""
    mdir = os.path.join(workdir, name)
    spec = os.path.join(mdir, "model.json")
    if not os.path.exists(spec):
        have = (
            sorted(
                d
                for d in os.listdir(workdir)
                if os.path.exists(os.path.join(workdir, d, "model.json"))
            )
            if os.path.isdir(workdir)
            else []
        )
        raise FileNotFoundError(f"No trained model {name!r} in {workdir} (models there: {have})")
    with open(spec) as f:
        cfg = json.load(f)
    src_vocab, tgt_vocab = _vocabs(workdir)
    model = build_model(cfg["name"], cfg["model_config"], src_vocab.size, tgt_vocab.size)
    ckpt = T.Checkpointer(os.path.join(mdir, "checkpoints"))
    params = ckpt.restore_params(jax.eval_shape(model.init, jax.random.key(0)))
    return model, params, src_vocab, tgt_vocab


def run(config, workdir):
    """Translate config.sentences (or stdin); print one translation per line; return them."""
    source = config.from_workdir or workdir
    model, params, src_vocab, tgt_vocab = load_trained(source, config.model)
    lines = config.sentences.split("|") if config.sentences else sys.stdin.read().splitlines()
    lines = [s.strip() for s in lines if s.strip()]
    ids = [np.asarray(src_vocab.encode(s), np.int32) for s in lines]
    out, stats = T.decode_ids(
        model,
        params,
        ids,
        batch_size=config.batch_size,
        beam_size=config.beam_size,
        extra_len=config.extra_len,
    )
    hyps = [detokenize(tgt_vocab.decode([int(t) for t in x])) for x in out]
    for h in hyps:
        print(h, flush=True)
    return {"sources": lines, "translations": hyps, "decode": stats}
