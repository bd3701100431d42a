"""Workdir fingerprints: what a saved artefact was made from, so a changed config never reuses it.

    fp = run_fingerprint(config.train, model, data=corpus.fingerprint)   # {'train', 'model', 'data'}
    check("checkpoint in runs/x", saved=meta.get("fingerprint"), current=fp, fresh="...")

A fingerprint is a JSON-able dict of the config values an artefact depends on. Three artefacts
carry one:
    vocabulary (workdir/vocab_fingerprint.json)   the data config that builds the vocabulary
    checkpoint (meta of every checkpoint)         data + model + train config of the run
    eval cache (eval.json's key)                  the run's fingerprint + eval config + step
On a mismatch `check` raises FingerprintMismatchError with ONE line naming every field that
differs (old -> new) and how to start fresh; it never reuses silently.

Train fields that may change on resume (TRAIN_FIELDS_FREE) are left out: they decide what is
logged, saved or evaluated and when, never which steps are taken. num_steps is left out only
when the schedule does not depend on it (decay 'constant' or 'rsqrt'): with 'linear' or
'cosine' decay the steps already taken used a learning rate computed from num_steps.
"""

from __future__ import annotations

import json

from anatomy import paths
from anatomy.errors import BadInputError

# Free to change on resume: logging, checkpoint cadence and retention, the progress line,
# periodic validation (reads the state only), and the wall-clock budget while it is off (on,
# it lays out the schedule: train_fingerprint keeps it).
TRAIN_FIELDS_FREE = (
    "log_every",
    "checkpoint_every",
    "keep_checkpoints",
    "progress",
    "eval_every",
    "max_train_seconds",
)
# Schedules whose learning rate at step s does not depend on num_steps.
DECAYS_WITHOUT_HORIZON = ("constant", "rsqrt")


class FingerprintMismatchError(BadInputError):
    """A workdir artefact was made from another config than the one given now."""


def _plain(value):
    """A JSON round trip: tuples become lists, ConfigDicts dicts, so saved and new compare equal."""
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def flatten(tree, prefix: str = "") -> dict:
    """{'a.b.c': leaf} for a nested dict (lists stay leaves)."""
    out = {}
    for key, value in (tree or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def differences(saved: dict, current: dict) -> list[str]:
    """['train.num_steps: 2000 -> 4000', 'data.toy.lexicon_scale: 0.1 -> 1.0', ...], sorted."""
    old, new = flatten(_plain(saved)), flatten(_plain(current))
    missing = "(absent)"
    return [
        f"{k}: {old.get(k, missing)!r} -> {new.get(k, missing)!r}"
        for k in sorted(set(old) | set(new))
        if old.get(k, missing) != new.get(k, missing)
    ]


def check(what: str, saved: dict | None, current: dict, *, fresh: str) -> None:
    """Raise FingerprintMismatchError (one line) unless `saved` equals `current`.

    `what` names the artefact ("the checkpoint in runs/x/transformer"); `fresh` says how to
    start over on purpose ("use another --workdir or delete runs/x"). saved=None (an artefact
    written before fingerprints existed) is a mismatch too: nothing says what made it.
    """
    if saved is None:
        raise FingerprintMismatchError(
            f"{what} has no fingerprint (written before fingerprints existed), so nothing says "
            f"which config made it; {fresh}"
        )
    diff = differences(saved, current)
    if diff:
        raise FingerprintMismatchError(
            f"{what} was made with another config ({'; '.join(diff)}); {fresh}"
        )


def train_fingerprint(train_config) -> dict:
    """config.train without TRAIN_FIELDS_FREE (and num_steps when the decay ignores it)."""
    c = _plain(train_config)
    free = set(TRAIN_FIELDS_FREE)
    if c.get("decay") in DECAYS_WITHOUT_HORIZON:
        free.add("num_steps")
    if float(c.get("max_train_seconds") or 0.0) > 0:  # the schedule is laid out over it
        free.discard("max_train_seconds")
    return {k: v for k, v in c.items() if k not in free}


def run_fingerprint(train_config, model, **parts) -> dict:
    """{'train': train_fingerprint, 'model': {'name', 'config'}, **parts} for a checkpointed run.

    parts: what else decides the run, e.g. data=corpus.fingerprint and the batch shapes.
    """
    fp = {
        "train": train_fingerprint(train_config),
        "model": {
            "name": getattr(model, "name", None),
            "config": _plain(getattr(model, "config", None)),
        },
    }
    fp.update({k: _plain(v) for k, v in parts.items()})
    return fp


def read(path: str) -> dict | None:
    """The fingerprint saved at `path` (local or gs://: anatomy.paths), or None when there is none."""
    if not paths.exists(path):
        return None
    return json.loads(paths.read_text(path))


def write(path: str, fingerprint: dict) -> None:
    """Save `fingerprint` at `path` (atomically: a temporary file renamed)."""
    paths.write_text(path, json.dumps(_plain(fingerprint), indent=1, sort_keys=True), atomic=True)
