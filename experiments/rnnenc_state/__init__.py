"""rnnenc_state: does a bigger state without attention move RNNenc's collapse on long
sentences, and how much per state byte?

Every variant of config.variants is the no-attention translator with a mixer's state
(anatomy/seq2seq/rnnenc_mixer.py: encoder and decoder stacks of one recurrent mixer, each
decoder layer starting from the encoder's final state of that layer and reading it by content,
no attention over source positions), trained as rnn_vs_attn trains its translators
(experiments/tasks/translation: the same corpus, steps, token batches, curriculum, recipe and
test split; workdir/<variant>/) for config.seeds seeds.
Beside them, the baselines as rnn_vs_attn's committed result has them (config.baseline_result:
RNNenc, RNNsearch, the Transformer), their configs checked equal to the one the variants are
trained with (data, curriculum, training: a result made otherwise is refused in one line).

State bytes: what the decoder can read of the source, counted from each translator's own
``encode`` output for one sentence of memory_length tokens (float leaves, each array once):
RNNenc's final (h, c); a variant's final mixer states (fixed, whatever the length); RNNsearch's
annotations and the Transformer's encoder output, which grow with the sentence.
"""

import jax
import jax.numpy as jnp

from anatomy import paths
from anatomy.errors import BadInputError
from anatomy.seq2seq import build_model, rnnenc_mixer
from experiments.configs.rnnenc_state import rnn_vs_attn_config
from experiments.lab import committed, record
from experiments.rnnenc_state import claims, plots
from experiments.tasks import translation
from experiments.tasks.translation.seeds import per_seed

NAME = "rnnenc_state"
TITLE = "RNNenc with a bigger state: a matrix-state encoder without attention"
SAME = ("data", "curriculum", "train")  # what a baseline must share with the variants' config


def differs(theirs, ours) -> bool:
    """Whether the variants' config `ours` differs from the baseline's `theirs` in a field the
    baseline has. A field added to the config after the baseline was made (another corpus's
    sub-config, rnn_vs_attn's data.gettext) is not a difference: its default is the behaviour
    the baseline had."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        return any(k not in ours or differs(v, ours[k]) for k, v in theirs.items())
    return theirs != ours


def memory_bytes(name, model_config, src_vocab, tgt_vocab, length):
    """Bytes of the float arrays `encode` hands the decoder for one sentence of `length`
    tokens (each array counted once: RNNenc's 'context' is its carry's h)."""
    model = build_model(name, model_config, src_vocab, tgt_vocab)
    params = model.init(jax.random.key(0))
    src = jnp.full((1, int(length)), 5, jnp.int32)
    memory = model.encode(params, src, jnp.array([int(length)]))  # eager: shared leaves stay one
    seen = {}
    for leaf in jax.tree_util.tree_leaves(memory):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            seen[id(leaf)] = leaf.size * leaf.dtype.itemsize
    return int(sum(seen.values()))


def _bleu(model):
    """{bucket: [BLEU per seed]} and [overall BLEU per seed] of an rnn_vs_attn model row."""
    buckets = list(model["bleu_by_length"])
    return {b: per_seed(model, "bleu_by_length", b) for b in buckets}, per_seed(model, "bleu")


def baselines(cfg, variant_config):
    """{name: {bleu_by_length, bleu, params, memory_bytes, n_seeds}} from the committed result."""
    if not cfg.baseline_result:
        return {}, None
    doc = committed.load(cfg.baseline_result)
    res = doc["result"]
    theirs = res["setup"]["config"]
    ours = record.stored(variant_config.to_dict())  # as JSON holds it (tuples as lists)
    differ = [k for k in SAME if differs(theirs.get(k), ours.get(k))]
    if differ:
        raise BadInputError(
            f"rnnenc_state: results/{cfg.baseline_result}.json was trained with other {differ} "
            "than the variants would be: rerun it, or compare nothing"
        )
    src_vocab, tgt_vocab = res["setup"]["vocab"]
    out = {}
    for name in cfg.baselines:
        m = res["models"][name]
        by, overall = _bleu(m)
        out[name] = {
            "bleu_by_length": by,
            "bleu": overall,
            "params": m["params"],
            "n_seeds": len(overall),
            "memory_bytes": memory_bytes(
                name, theirs["model"][name], src_vocab, tgt_vocab, cfg.memory_length
            ),  # fmt: skip
        }
    return out, doc["command"]


def run(config, workdir):
    """Train every variant as rnn_vs_attn trains, read the baselines, judge, plot, write."""
    started = record.start(NAME, config, workdir)
    labels = list(config.variants)
    if not labels:
        raise BadInputError("rnnenc_state: config.variants names no encoder")
    base, command = baselines(config, rnn_vs_attn_config(config, labels[0]))
    variants = {}
    for label in labels:
        c = rnn_vs_attn_config(config, label)
        res = translation.train(c, paths.join(workdir, label))
        m = res["models"]["rnnenc_mixer"]
        by, overall = _bleu(m)
        src_vocab, tgt_vocab = res["setup"]["vocab"]
        variants[label] = {
            "model_config": c.model.rnnenc_mixer.to_dict(),
            "state_bytes": rnnenc_mixer.state_bytes(c.model.rnnenc_mixer),
            "memory_bytes": memory_bytes(
                "rnnenc_mixer", c.model.rnnenc_mixer, src_vocab, tgt_vocab, config.memory_length
            ),  # fmt: skip
            "params": m["params"],
            "bleu_by_length": by,
            "bleu": overall,
            "train_seconds": per_seed(m, "train_seconds"),
        }
    results = {
        "config": config.to_dict(),
        "baseline_command": command,
        "baselines": base,
        "variants": variants,
        "buckets": list(next(iter(variants.values()))["bleu_by_length"]),
    }
    return started.finish_drawn(
        results,
        plots.draw,
        claims,
        TITLE,
        lambda plain: [
            ("BLEU by source length", plots.bleu_table(plain)),
            ("How the decoder is given the state", plots.wiring()),
            ("How it was measured", plots.notes(plain)),
        ],
    )
