"""translate: translate sentences with a model trained by rnn_vs_attn, one per line to stdout.

Reads the model's hyperparameters (<workdir>/<model>/model.json), the vocabularies the data
package saved in <workdir>, and the latest checkpoint of <workdir>/<model>/checkpoints.
Sentences come from config.sentences ('|'-separated) or stdin (one per line).

Output line i is the translation of input line i, so a translated file lines up with its
source: an empty (or blank) input line gives an empty output line, and so does a line the
model cannot take at all (longer than a learned position table, ConvS2S's max_positions; a
warning names it). On stderr, warnings name the source words that are not in the vocabulary
(they read as <unk>: a line of unknown words is translated into fluent nonsense) and the lines
longer than any source the model was trained on (the bound is read from the checkpoint's
fingerprint: data.max_len, data.train_max_src_len, a '<model>-N' limit, toy_wmt's
toy.max_src_len; else from the workdir's vocab_fingerprint.json).

Without a trained model it says in one line what to run first, read from the workdir's own
command (launch.py's command.json: the preset, config file and overrides it was trained
with; else the preset its results.json recorded): a real-text workdir is told its own
preset, never the toy corpus's. It writes nothing, and a workdir that is not there is not made.
"""

from __future__ import annotations

import json
import shlex
import sys

import jax
import numpy as np

from anatomy import paths, train
from anatomy.data import load_vocab
from anatomy.data.corpus import VOCAB_FINGERPRINT
from anatomy.errors import BadInputError
from anatomy.seq2seq import build_model
from anatomy.tokens import UNK
from anatomy.train.evaluate import round_up
from experiments.configs.translate import DEFAULT_WORKDIR
from experiments.lab.provenance import COMMAND_FILE

_VOCAB_FILES = [
    ("shared_vocab.txt", "shared_vocab.txt"),
    ("src_vocab.txt", "tgt_vocab.txt"),
    ("shared_spm.model", "shared_spm.model"),
    ("src_spm.model", "tgt_spm.model"),
]
TRAIN_FIRST = "python launch.py --experiment=rnn_vs_attn"  # what makes a workdir translate reads
LEN_MULTIPLE = 32  # decode_ids pads each batch's sources to a multiple of this
MAX_NAMED = 20  # unknown words named in the warning (then "and N more")


def _saved_command(workdir):
    """The workdir's command.json (launch.py's record of the run that made it), {} if none."""
    path = paths.join(workdir, COMMAND_FILE)
    try:
        return json.loads(paths.read_text(path)) if paths.exists(path) else {}
    except (OSError, ValueError):
        return {}


def _recorded_preset(workdir):
    """The preset the workdir's results.json recorded (an rnn_vs_attn run's setup.provenance),
    '' for the default, a config of no preset or no results.json."""
    path = paths.join(workdir, "results.json")
    try:
        doc = json.loads(paths.read_text(path)) if paths.exists(path) else {}
    except (OSError, ValueError):
        return ""
    preset = ((doc.get("setup") or {}).get("provenance") or {}).get("preset") or ""
    return "" if preset in ("default", "custom") else preset


def train_command(workdir, name=None):
    """The command that trains model `name` (all of the config's models: None) into `workdir`
    the way the workdir was made: its saved command's preset, config file and overrides
    (--config.models replaced), else the preset its results.json recorded, else the default."""
    parts = [TRAIN_FIRST]
    saved = _saved_command(workdir)
    if saved.get("experiment") == "rnn_vs_attn":
        preset, config = saved.get("preset") or "", saved.get("config") or ""
        # the config's own file (a string the command recorded, not a workdir path)
        own = not config or config.replace("\\", "/").endswith("experiments/configs/rnn_vs_attn.py")
        if own:
            parts += [f"--preset={preset}"] if preset else []
        else:
            parts.append(shlex.quote(f"--config={config}" + (f":{preset}" if preset else "")))
        keep = [o for o in saved.get("overrides") or [] if not o.startswith("--config.models=")]
        parts += [shlex.quote(o) for o in keep]
    elif _recorded_preset(workdir):
        parts.append(f"--preset={_recorded_preset(workdir)}")
    if name is not None:
        parts.append(f"--config.models=\"('{name}',)\"")
    return " ".join([*parts, f"--workdir={workdir}"])


def _no_workdir(workdir):
    """The one line for a workdir that is not there: where the Quick start trains, or how to
    train into the workdir named."""
    first = TRAIN_FIRST if workdir == DEFAULT_WORKDIR else f"{TRAIN_FIRST} --workdir={workdir}"
    where = (
        f"the README's Quick start trains into {DEFAULT_WORKDIR}, translate's default workdir"
        if workdir == DEFAULT_WORKDIR
        else f"or pass --workdir=<a workdir rnn_vs_attn trained>; the default is {DEFAULT_WORKDIR}"
    )
    return BadInputError(
        f"No trained model: {workdir} does not exist; train first: `{first}` ({where})"
    )


def _vocabs(workdir):
    for s, t in _VOCAB_FILES:
        if paths.exists(paths.join(workdir, s)) and paths.exists(paths.join(workdir, t)):
            return load_vocab(paths.join(workdir, s)), load_vocab(paths.join(workdir, t))
    raise BadInputError(
        f"No vocabulary files in {workdir} (expected one of {_VOCAB_FILES}): it is not a "
        f"trained rnn_vs_attn workdir; train one first, e.g. `{train_command(workdir)}`"
    )


def load_trained(workdir, name):
    """(model, params, src_vocab, tgt_vocab) of model `name` trained in an rnn_vs_attn workdir."""
    if not paths.exists(workdir):
        raise _no_workdir(workdir)
    mdir = paths.join(workdir, name)
    spec = paths.join(mdir, "model.json")
    if not paths.exists(spec):
        root = paths.path(workdir)
        have = (
            sorted(d.name for d in root.iterdir() if (d / "model.json").exists())
            if root.is_dir()
            else []
        )
        raise BadInputError(
            f"No trained model {name!r} in {workdir} (models there: {have}); train it first: "
            f"`{train_command(workdir, name)}`"
        )
    cfg = json.loads(paths.read_text(spec))
    src_vocab, tgt_vocab = _vocabs(workdir)
    model = build_model(cfg["name"], cfg["model_config"], src_vocab.size, tgt_vocab.size)
    ckpt = train.Checkpointer(paths.join(mdir, "checkpoints"))
    params = ckpt.restore_params(jax.eval_shape(model.init, jax.random.key(0)))
    return model, params, src_vocab, tgt_vocab


def _positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0


def trained_src_len(workdir, name):
    """(n, why): no training source of model `name` had more than n tokens; why names the
    setting that bounds it ('data.max_len=96'). Read from the latest checkpoint's fingerprint
    (the data config and the model's '<model>-N' limit it was trained with), else from the
    workdir's vocab_fingerprint.json (the data config without max_len: toy_wmt's
    toy.max_src_len only); (None, '') when neither records a bound."""
    fp = {}
    try:
        meta = train.Checkpointer(paths.join(workdir, name, "checkpoints")).read_meta()
        fp = meta.get("fingerprint") or {}
    except (BadInputError, OSError, train.CorruptCheckpointError):
        pass
    data = dict(fp.get("data") or {})
    if not data and paths.exists(paths.join(workdir, VOCAB_FINGERPRINT)):
        data = json.loads(paths.read_text(paths.join(workdir, VOCAB_FINGERPRINT)))
    limits = [
        (data.get("max_len"), "data.max_len"),
        (data.get("train_max_src_len"), "data.train_max_src_len"),
        (fp.get("train_max_src_len"), "-N"),
    ]
    if data.get("name") == "toy_wmt":
        limits.append((data.get("toy.max_src_len"), "data.toy.max_src_len"))
    limits = [(int(n), what) for n, what in limits if _positive(n)]
    if not limits:
        return None, ""
    n, what = min(limits)
    return n, (f"the -{n} in {name!r}" if what == "-N" else f"{what}={n}")


def _unknown_words(vocab, line):
    """The whitespace words of `line` that the vocabulary cannot encode (they become <unk>)."""
    return [w for w in line.split() if UNK in vocab.encode(w)]


def _lines_list(numbers, limit=10):
    """'line 3' / 'lines 1, 4 and 2 more' (1-based) for 0-based line numbers."""
    shown = ", ".join(str(i + 1) for i in numbers[:limit])
    more = f" and {len(numbers) - limit} more" if len(numbers) > limit else ""
    return ("line " if len(numbers) == 1 else "lines ") + shown + more


def _warn(message):
    print(f"translate: warning: {message}", file=sys.stderr, flush=True)


def _warn_unknown(lines, src_vocab):
    """Warn about words outside the source vocabulary; returns the report's fields for them."""
    unknown, with_unknown, all_unknown = {}, [], []
    for i, line in enumerate(lines):
        words = _unknown_words(src_vocab, line)
        for w in words:
            unknown[w] = unknown.get(w, 0) + 1
        if words:
            with_unknown.append(i)
            if len(words) == len(line.split()):
                all_unknown.append(i)
    if unknown:
        named = ", ".join(repr(w) for w in list(unknown)[:MAX_NAMED])
        more = f" and {len(unknown) - MAX_NAMED} more" if len(unknown) > MAX_NAMED else ""
        guess = (
            f"; {_lines_list(all_unknown)}: no known word at all, the translation is a guess"
            if all_unknown
            else ""
        )
        _warn(
            f"{len(with_unknown)} of {len(lines)} lines have words not in the source vocabulary "
            f"({src_vocab.size} entries; each reads as <unk>): {named}{more}{guess}"
        )
    return {
        "unknown_words": list(unknown),
        "lines_with_unknown": with_unknown,
        "lines_all_unknown": all_unknown,
    }


def check_sources(lines, ids, src_vocab, *, name, trained, max_positions, extra):
    """Warn on stderr about what model `name` will not understand; returns its report:
    {'unknown_words': [...], 'lines_with_unknown', 'lines_all_unknown', 'too_long' (longer
    than any training source), 'untranslatable' (too long to take at all: left empty): lists
    of 0-based line numbers; 'trained_src_len': n}. trained: trained_src_len's (n, why)."""
    report = _warn_unknown(lines, src_vocab)
    n, why = trained
    too_long = [i for i, x in enumerate(ids) if n is not None and len(x) > n]
    if too_long:
        _warn(
            f"{len(too_long)} of {len(lines)} lines longer than any source {name} was trained "
            f"on (at most {n} tokens, {why}; the longest here has "
            f"{max(len(ids[i]) for i in too_long)}): {_lines_list(too_long)}; expect a worse "
            "translation"
        )
    skip = []
    if max_positions:
        skip = [
            i
            for i, x in enumerate(ids)
            if len(x) and round_up(len(x), LEN_MULTIPLE) + extra > max_positions
        ]
    if skip:
        cap = (max_positions - extra) // LEN_MULTIPLE * LEN_MULTIPLE
        _warn(
            f"{len(skip)} of {len(lines)} lines too long for {name} to take at all "
            f"(max_positions={max_positions} with extra_len={extra} takes sources of at most "
            f"{cap} tokens): {_lines_list(skip)} left empty"
        )
    report.update(too_long=too_long, untranslatable=skip, trained_src_len=n)
    return report


def run(config, workdir):
    """Translate config.sentences (or stdin); print one translation per input line (an empty
    line for an empty input); warn on stderr about unknown words and over-long sources; return
    {'sources', 'translations', 'decode', 'warnings'} (warnings: check_sources' report)."""
    source = config.from_workdir or workdir
    model, params, src_vocab, tgt_vocab = load_trained(source, config.model)
    lines = config.sentences.split("|") if config.sentences else sys.stdin.read().splitlines()
    lines = [s.strip() for s in lines]
    ids = [np.asarray(src_vocab.encode(s) if s else [], np.int32) for s in lines]
    report = check_sources(
        lines,
        ids,
        src_vocab,
        name=config.model,
        trained=trained_src_len(source, config.model),
        max_positions=model.config.get("max_positions"),
        extra=config.extra_len,
    )
    skip = set(report["untranslatable"])
    todo = [i for i, x in enumerate(ids) if len(x) and i not in skip]
    hyps = [""] * len(lines)
    stats = {"sentences": 0, "output_tokens": 0, "seconds": 0.0, "tokens_per_second": 0.0}
    if todo:
        out, stats = train.decode_ids(
            model,
            params,
            [ids[i] for i in todo],
            batch_size=config.batch_size,
            beam_size=config.beam_size,
            extra_len=config.extra_len,
            len_multiple=LEN_MULTIPLE,
        )
        for i, x in zip(todo, out):
            hyps[i] = tgt_vocab.text([int(t) for t in x])  # plain text, either vocabulary
    for h in hyps:
        print(h, flush=True)
    return {"sources": lines, "translations": hyps, "decode": stats, "warnings": report}
