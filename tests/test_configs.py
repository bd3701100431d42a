"""Every experiment's config builds from code alone: no config module, and no preset of one,
reads results/ (a committed choice is written into the config, and a test beside the
experiment ties it to the committed file)."""

import builtins
import importlib
import io
import os
import pathlib
import pkgutil

import experiments.configs

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = os.path.join(str(ROOT), "results")


def test_no_config_reads_results_when_built(monkeypatch):
    reads = []

    def watched(fn):
        def call(path, *args, **kwargs):
            if isinstance(path, (str, bytes, os.PathLike)):
                full = os.path.abspath(os.fsdecode(path))
                if full == RESULTS or full.startswith(RESULTS + os.sep):
                    reads.append(f"{fn.__name__}({full})")
            return fn(path, *args, **kwargs)

        return call

    for module, name in [(builtins, "open"), (io, "open"), (os, "stat"), (os, "listdir"),
                         (os, "scandir")]:  # fmt: skip
        monkeypatch.setattr(module, name, watched(getattr(module, name)))
    names = [m.name for m in pkgutil.iter_modules(experiments.configs.__path__)]
    assert {"recall", "rnnenc_state", "rnn_vs_attn"} <= set(names)
    for name in names:
        module = importlib.reload(importlib.import_module(f"experiments.configs.{name}"))
        for preset in getattr(module, "PRESETS", ("", "quick")):
            module.get_config(preset or None)
    assert not reads, reads
