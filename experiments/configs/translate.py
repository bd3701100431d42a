"""Config of translate: translate sentences with a model trained by rnn_vs_attn.

    python launch.py --experiment=translate --workdir=runs/rnn_vs_attn \
        --config.model=transformer --config.sentences='the gost tourks .|no droubrirk recks .'
    printf 'the weackbroungs flond the grollgoops .\n\na grungplall drounpunds no skarkpust .\n' \
        | python launch.py --experiment=translate --workdir=runs/rnn_vs_attn

The sentences are toy_wmt's invented language (from its test split, lexicon_scale 0.1, the
default run's vocabulary): English words such as 'cat' are not in that vocabulary, and a warning
on stderr names every source word that is not. A model trained on real text (rnn_vs_attn's
gettext_enfr preset: sentencepiece in and out) takes plain English:

    echo 'cannot open file %s' | python launch.py --experiment=translate \
        --workdir=runs/rnn_vs_attn_gettext_enfr --config.model=rnnsearch --config.beam_size=4

One output line per input line (an empty line for an empty one); a warning also names the
lines longer than any source the model trained on. Without --workdir it reads runs/rnn_vs_attn,
where `python launch.py --experiment=rnn_vs_attn` trains; a workdir without the model says
what to run first, from the command the workdir was trained with (its command.json).
"""

import os

import ml_collections

PRESETS = ("",)  # none: translate reads what an rnn_vs_attn run trained
# Where launch.py points translate without a --workdir: where the README's Quick start
# (`python launch.py --experiment=rnn_vs_attn`) trains. translate only reads a workdir, so
# launch.py makes none for it (a mistyped --workdir stays a one-line error, not an empty folder).
DEFAULT_WORKDIR = os.path.join("runs", "rnn_vs_attn")
READS_WORKDIR = True


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.from_workdir = ""  # the rnn_vs_attn workdir; '' = the --workdir given to launch.py
    c.model = "transformer"  # which model subfolder of that workdir (rnnenc / rnnsearch / ...)
    c.sentences = ""  # sentences separated by '|' ; '' = read one per line from stdin
    c.beam_size = 0  # > 1: beam search (GNMT length penalty), else greedy
    c.extra_len = 16  # output budget = padded source length + extra_len tokens
    c.batch_size = 32  # sentences decoded together
    if preset not in (None, ""):
        raise ValueError(f"Unknown preset {preset!r} for translate (it has none)")
    return c
