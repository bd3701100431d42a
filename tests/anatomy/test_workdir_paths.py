"""Workdirs through etils.epath (anatomy/paths.py): `--workdir=gs://bucket/run` for everything
a run writes, with gs:// routed to a local folder inside the test (no network, no gcsfs).

`local_gcs` swaps etils.epath's gs:// backend for one that maps gs://bucket/x to
<tmp>/gcs/bucket/x and, like a real object store, cannot append; orbax's arrays go through
tensorstore's own driver, so its gs:// kvstore is mapped to the same folder. `refuse_plain_io`
makes a plain open / os.makedirs / os.path.exists / os.replace ... of a gs:// string raise, so
a writer that bypasses epath fails here (on a real bucket it would write a local folder named
'gs:'). A scan of the source keeps new plain file calls out of the writers.
"""

import ast
import builtins
import io
import json
import os
import pathlib
import re
import sys
import types

import pytest
from etils import epath
from etils.epath import backend as epath_backend
from etils.epath import gpath

from anatomy import paths

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUCKET = "gs://anatomy-test/run"


class _LocalGcs(epath_backend._OsPathBackend):
    """epath backend: gs://bucket/x -> <root>/bucket/x (other paths unchanged); no append."""

    def __init__(self, root: str):
        self.root = root

    def _local(self, p):
        p = os.fspath(p)
        return os.path.join(self.root, p[len("gs://") :]) if p.startswith("gs://") else p

    def _uri(self, p):
        p = os.fspath(p)
        return "gs://" + os.path.relpath(p, self.root) if p.startswith(self.root + "/") else p

    def open(self, path, mode):
        if "a" in mode and os.fspath(path).startswith("gs://"):
            raise ValueError(f"an object store cannot append: {path}")
        return super().open(self._local(path), mode)

    def exists(self, path):
        return super().exists(self._local(path))

    def isdir(self, path):
        return super().isdir(self._local(path))

    def listdir(self, path):
        return super().listdir(self._local(path))

    def glob(self, path):
        return [self._uri(p) for p in super().glob(self._local(path))]

    def walk(self, top, *, top_down=True, on_error=None):
        for root, dirs, files in super().walk(self._local(top), top_down=top_down):
            yield self._uri(os.fspath(root)), dirs, files

    def makedirs(self, path, *, exist_ok=False, mode=None):
        return super().makedirs(self._local(path), exist_ok=exist_ok, mode=mode)

    def mkdir(self, path, *, exist_ok=False, mode=None):
        return super().mkdir(self._local(path), exist_ok=exist_ok, mode=mode)

    def rmtree(self, path):
        return super().rmtree(self._local(path))

    def remove(self, path):
        return super().remove(self._local(path))

    def rename(self, path, dst):
        return super().rename(self._local(path), self._local(dst))

    def replace(self, path, dst):
        return super().replace(self._local(path), self._local(dst))

    def copy(self, path, dst, overwrite):
        return super().copy(self._local(path), self._local(dst), overwrite=overwrite)

    def stat(self, path):
        return super().stat(self._local(path))


@pytest.fixture
def local_gcs(tmp_path, monkeypatch):
    """gs:// through epath (and orbax's tensorstore) lands in tmp_path/gcs; returns a function
    gs URI -> local pathlib.Path. The current folder is tmp_path/cwd (checked empty after)."""
    from orbax.checkpoint._src.path import gcs_utils

    root = tmp_path / "gcs"
    root.mkdir()
    fake = _LocalGcs(str(root))
    monkeypatch.setitem(gpath._PREFIX_TO_BACKEND, "gs", fake)
    monkeypatch.setattr(gpath, "_is_tf_installed", lambda: False)

    def kvstore(uri):  # what orbax gives a local folder: OCDBT's base is a folder prefix
        ocdbt = sys._getframe(1).f_code.co_name == "_build_ocdbt_kvstore_tspec"
        return {"driver": "file", "path": fake._local(uri) + ("/" if ocdbt else "")}

    monkeypatch.setattr(gcs_utils, "get_kvstore_for_gcs", kvstore)
    monkeypatch.setattr(
        gcs_utils, "get_bucket", lambda name: types.SimpleNamespace(name=name)
    )  # no hierarchical namespace
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    yield lambda uri: pathlib.Path(fake._local(uri))
    assert not list(cwd.rglob("*")), "a gs:// path was written as a local folder"


def _is_gs(x):
    s = os.fspath(x) if isinstance(x, (str, os.PathLike)) else ""
    return isinstance(s, str) and ("gs://" in s or "/gs:/" in s or s.startswith("gs:"))


@pytest.fixture
def refuse_plain_io(monkeypatch):
    """Plain file calls on a gs:// string raise (epath's backend gets local paths only)."""

    def guard(fn, name):
        def call(*args, **kwargs):
            if any(_is_gs(a) for a in args[:2]):
                raise AssertionError(
                    f"plain {name}({args[0]!r}) of a gs:// path: use anatomy.paths"
                )
            return fn(*args, **kwargs)

        return call

    monkeypatch.setattr(builtins, "open", guard(builtins.open, "open"))
    monkeypatch.setattr(io, "open", guard(io.open, "io.open"))
    for name in ("makedirs", "mkdir", "replace", "rename", "remove", "listdir", "stat"):
        monkeypatch.setattr(os, name, guard(getattr(os, name), f"os.{name}"))
    for name in ("exists", "isfile", "isdir", "abspath", "getsize"):
        monkeypatch.setattr(os.path, name, guard(getattr(os.path, name), f"os.path.{name}"))


def test_paths_local_strings_unchanged(tmp_path):
    """A str workdir: the same path strings and file bytes as os.path and open gave."""
    for base in ("runs/x", "runs/x/", str(tmp_path), "/a/../b"):
        assert paths.join(base, "m", "results.json") == os.path.join(base, "m", "results.json")
        assert str(paths.absolute(base)) == os.path.abspath(base)
    assert paths.join(BUCKET, "results.json") == BUCKET + "/results.json"
    assert str(paths.absolute(BUCKET)) == BUCKET
    assert paths.is_remote(BUCKET) and not paths.is_remote(str(tmp_path))
    p = tmp_path / "sub" / "f.txt"
    paths.makedirs(p.parent)
    paths.write_text(p, "é\nb\n", atomic=True)
    assert p.read_bytes() == "é\nb\n".encode() and sorted(os.listdir(p.parent)) == ["f.txt"]


def test_writers_same_bytes_local_and_gs(tmp_path, local_gcs, refuse_plain_io, monkeypatch):
    """results.json, report.md, a plot, a fingerprint, metrics (with a resume), a word and a
    sentencepiece vocabulary: the same bytes in a local workdir and in a gs:// one. (A run's
    plot footer names its workdir and the load when drawn: held fixed here, the bytes are the
    writer's.)"""
    import numpy as np

    from anatomy import fingerprint
    from anatomy.data import vocab
    from anatomy.train.metrics import MetricsWriter, read_metrics
    from experiments.lab import jsonio, outputs

    monkeypatch.setattr(outputs, "_drawn_here", lambda workdir: "drawn by a run (footer fixed)")

    local = str(tmp_path / "local")
    texts = [f"w{i % 7} w{i % 5} w{i % 3} x{i % 11}" for i in range(200)]
    pieces = []  # the sentencepiece models (their bytes name the local prefix trained at)
    for wd in (local, BUCKET):
        jsonio.write_json(wd, {"a": np.float32(1.5), "b": [float("nan"), 2]})
        outputs.write_report(wd, "T", [("S", "body é")])
        fig, ax = outputs.new_figure(figsize=(2, 2))
        ax.plot([1, 2, 3], [3, 1, 2])
        outputs.save_plot(fig, wd, "p.png")
        fingerprint.write(paths.join(wd, "fp.json"), {"k": (1, 2)})
        assert fingerprint.read(paths.join(wd, "fp.json")) == {"k": [1, 2]}
        m = MetricsWriter(wd, tensorboard=True)
        for s in (1, 2, 3):
            m.write(s, {"loss": 1.0 / s})
        m.close()
        m = MetricsWriter(wd, resume_step=2, tensorboard=False)  # a resume drops step 3
        m.write(4, {"loss": 0.25})
        assert [r["step"] for r in read_metrics(wd)] == [1, 2, 4]
        v = vocab.build_word_vocab(texts)
        v.save(paths.join(wd, "src_vocab.txt"))
        assert vocab.load_vocab(paths.join(wd, "src_vocab.txt")).tokens == v.tokens
        sp = vocab.train_sentencepiece(texts, 24, paths.join(wd, "shared_spm"))
        back = vocab.load_vocab(paths.join(wd, "shared_spm.model"))
        assert back.encode("w1 x3") == sp.encode("w1 x3") and back.size == sp.size
        pieces.append([back.sp.id_to_piece(i) for i in range(back.size)])
    gs = local_gcs(BUCKET)
    events = [p for p in (gs / "tensorboard").iterdir()]
    assert len(events) == 1 and events[0].stat().st_size > 0
    for name in (
        "results.json",
        "report.md",
        "p.png",
        "fp.json",
        "metrics.jsonl",
        "src_vocab.txt",
    ):
        assert (gs / name).read_bytes() == (pathlib.Path(local) / name).read_bytes(), name
    assert not [p.name for p in gs.iterdir() if ".tmp" in p.name]
    assert pieces[0] == pieces[1] and (gs / "shared_spm.vocab").exists()


def test_refuse_plain_io_catches_a_bypass(local_gcs, refuse_plain_io):
    """The guard is live: a writer that opened or created a gs:// path directly would fail."""
    with pytest.raises(AssertionError, match="plain open"):
        open(paths.join(BUCKET, "x.json"), "w")
    with pytest.raises(AssertionError, match="plain os.makedirs"):
        os.makedirs(BUCKET, exist_ok=True)
    with pytest.raises(ValueError, match="cannot append"):
        epath.Path(BUCKET, "m.jsonl").open("a")


def test_rnn_vs_attn_into_a_gs_workdir(local_gcs, refuse_plain_io, tmp_path, monkeypatch):
    """One tiny model of rnn_vs_attn's quick preset into gs://: vocabulary, checkpoints
    (orbax), metrics, eval cache, model.json, plots, results.json and report.md land in the
    bucket; a rerun resumes from it (read back through epath); translate loads the model
    from it and publish.save copies its results.json."""
    from experiments import rnn_vs_attn, translate
    from experiments.configs import rnn_vs_attn as configs
    from experiments.lab import committed, publish

    c = configs.get_config("quick")
    c.models = ("rnnenc",)
    c.data.toy.train_size, c.data.toy.valid_size, c.data.toy.test_per_bucket = 200, 10, 1
    c.train.num_steps, c.train.checkpoint_every, c.train.log_every = 4, 2, 2
    c.train.eval_every = 0
    c.eval.max_per_bucket = 1
    rnn_vs_attn.run(c, BUCKET)
    gs = local_gcs(BUCKET)
    have = {str(p.relative_to(gs)) for p in gs.rglob("*") if p.is_file()}
    for name in (
        "results.json",
        "report.md",
        "src_vocab.txt",
        "tgt_vocab.txt",
        "vocab_fingerprint.json",
        "rnnenc/model.json",
        "rnnenc/eval.json",
        "rnnenc/metrics.jsonl",
    ):
        assert name in have, (name, sorted(have))
    assert any(n.startswith("rnnenc/checkpoints/4/state/") for n in have), sorted(have)
    assert any(n.startswith("rnnenc/tensorboard/") for n in have)
    assert [n for n in have if n.endswith(".png")]
    results = json.loads((gs / "results.json").read_text())
    assert results["models"]["rnnenc"]["steps"] == 4

    again = rnn_vs_attn.run(c, BUCKET)  # resumes at step 4: nothing trained, BLEU cached
    assert again["models"]["rnnenc"]["resumed_from"] == 4
    assert again["models"]["rnnenc"]["bleu"] == results["models"]["rnnenc"]["bleu"]

    model, params, src_vocab, _ = translate.load_trained(BUCKET, "rnnenc")
    assert src_vocab.size > 4 and jax_tree_size(params) > 0
    monkeypatch.setattr(committed, "RESULTS", str(tmp_path / "results"))
    saved = publish.save("gs_run", BUCKET, "python launch.py ... --workdir=" + BUCKET)
    with builtins.open(saved) as f:
        assert json.load(f)["result"]["models"].keys() == results["models"].keys()


def jax_tree_size(tree):
    import jax

    return sum(x.size for x in jax.tree.leaves(tree))


# ------------------------------------------------------------------ no plain file calls

# Plain file calls that never see a workdir path, each with the reason. Any other open(),
# os.makedirs, os.path.exists ... in launch.py, anatomy/ or experiments/ fails the scan: a
# workdir goes through anatomy.paths (etils.epath), so that gs:// works.
NOT_A_WORKDIR = {
    (
        "experiments/crossover/__init__.py",
        "_cpu_seconds",
        "open",
    ): "/proc/stat (the CPU's counters)",
    ("experiments/crossover/gdn_probe.py", "_switches", "glob.glob"): "/proc (context switches)",
    ("experiments/crossover/gdn_probe.py", "_switches", "open"): "/proc (context switches)",
    ("experiments/crossover/gdn_probe.py", "main", "open"): "the probe's own --out file",
    ("experiments/crossover/gdn_probe.py", "openblas", "glob.glob"): "scipy's installed libraries",
    ("experiments/lab/registry.py", "<module>", "pathlib.Path"): "this checkout's experiments",
    ("anatomy/paths.py", "absolute", "os.path.abspath"): "its local branch",
    ("anatomy/data/corpus.py", "_sha256", "open"): "the user's corpus files (data config)",
    ("anatomy/data/corpus.py", "data_fingerprint", "os.path.isfile"): "the user's corpus files",
    ("anatomy/data/corpus.py", "_vocabs", "os.makedirs"): "a temporary folder (no workdir)",
    ("anatomy/data/readers.py", "_check_file", "os.path.isfile"): "the user's corpus files",
    ("anatomy/data/readers.py", "_lines", "open"): "the user's corpus files",
    ("anatomy/probes/hardware.py", "cache_bytes", "glob.glob"): "/sys (the CPU's caches)",
    ("anatomy/probes/hardware.py", "cache_bytes", "open"): "/sys (the CPU's caches)",
    ("experiments/lab/outputs.py", "save_plot", "fig.savefig"): "into a file opened through epath",
    ("experiments/lab/provenance.py", "<module>", "os.path.abspath"): "this checkout",
    ("experiments/lab/provenance.py", "cpu", "open"): "/proc/cpuinfo (the CPU a run ran on)",
    ("experiments/lab/committed.py", "<module>", "os.path.abspath"): "this checkout",
    ("experiments/lab/committed.py", "load", "open"): "this checkout's results/",
    ("experiments/lab/committed.py", "exists", "os.path.exists"): "this checkout's results/",
    (
        "experiments/lab/publish.py",
        "draw_plots",
        "shutil.copyfile",
    ): "into this checkout's docs/img",
    ("experiments/lab/publish.py", "stale_plots", "os.listdir"): "this checkout's docs/img",
    ("experiments/lab/publish.py", "stale_plots", "os.path.exists"): "this checkout's docs/img",
    ("launch.py", "check_command_line", "pathlib.Path"): "a config file path, not a workdir",
    ("experiments/lab/publish.py", "save", "os.makedirs"): "this checkout's results/",
    ("experiments/lab/publish.py", "publish", "open"): "this checkout's README.md and docs/",
    ("experiments/scaling/applied.py", "<module>", "os.path.abspath"): "this checkout",
    ("experiments/scaling/applied.py", "_results_path", "os.path.exists"): "committed results/",
    ("experiments/scaling/applied.py", "steps_to_loss", "open"): "a committed results/ file",
    ("experiments/scaling/gpu_programs.py", "main", "open"): "a local temporary folder",
    ("experiments/scaling/on_device.py", "<module>", "pathlib.Path"): "this checkout (a script)",
    ("experiments/scaling/on_device.py", "main", "open"): "the script's own --out file",
    ("experiments/scaling/structure.py", "spawn", "open"): "a local temporary folder",
    ("experiments/scaling/structure.py", "spawn", "os.path.abspath"): "this checkout",
    ("experiments/scaling/structure.py", "collect", "open"): "a local temporary folder",
    ("experiments/scaling/structure.py", "main", "open"): "a local temporary folder",
    ("anatomy/data/catalogs.py", "catalog_files", "os.listdir"): "the system's locale catalogs",
    ("anatomy/data/catalogs.py", "catalog_files", "os.path.isdir"): "the system's locale catalogs",
    ("anatomy/data/catalogs.py", "languages", "os.listdir"): "the system's locale catalogs",
    ("anatomy/data/catalogs.py", "languages", "os.path.isdir"): "the system's locale catalogs",
    ("anatomy/data/catalogs.py", "read_mo", "open"): "a system .mo catalog file",
    ("experiments/depth/__init__.py", "<module>", "os.path.abspath"): "this checkout",
}
STILL_PLAIN: set = set()  # every workdir reader and writer goes through anatomy.paths
_OS = {"makedirs", "mkdir", "replace", "rename", "remove", "unlink", "listdir", "scandir", "walk"}
_OS_PATH = {"exists", "lexists", "isfile", "isdir", "abspath", "realpath", "normpath", "getsize"}


def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def _plain_call(call):
    """The name of a call that touches the file system without epath, else None."""
    n = _dotted(call.func)
    top, _, rest = n.partition(".")
    if n in ("open", "io.open", "glob.glob", "Path") or top in ("shutil", "pathlib"):
        return n
    if (top == "os" and rest in _OS) or (n.startswith("os.path.") and n[8:] in _OS_PATH):
        return n
    if n.endswith(".savefig") or n in ("np.save", "np.savez"):
        return n
    return None


def _plain_calls():
    """{(file, enclosing def, call name)} over launch.py, anatomy/ and experiments/."""
    found = set()
    files = [ROOT / "launch.py", *(ROOT / "anatomy").rglob("*.py")]
    files += (ROOT / "experiments").rglob("*.py")
    for path in files:
        rel = str(path.relative_to(ROOT))

        def visit(node, scope, rel=rel):
            for child in ast.iter_child_nodes(node):
                inner = scope
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    inner = child.name
                if isinstance(child, ast.Call) and (name := _plain_call(child)):
                    found.add((rel, scope, name))
                visit(child, inner)

        visit(ast.parse(path.read_text(), rel), "<module>")
    return found


def test_no_plain_file_calls_on_workdirs():
    """Every plain file call is one that never sees a workdir (NOT_A_WORKDIR, with its
    reason) or a known leftover (STILL_PLAIN); none of either list is stale."""
    found = _plain_calls()
    new = sorted(found - set(NOT_A_WORKDIR) - STILL_PLAIN)
    assert not new, f"plain file calls (use anatomy.paths for a workdir path): {new}"
    stale = sorted((set(NOT_A_WORKDIR) | STILL_PLAIN) - found)
    assert not stale, f"allowed calls no longer in the source: {stale}"


def test_the_scan_sees_a_plain_writer():
    """The scan's rule catches the calls a workdir writer used to make."""
    src = "def w(workdir):\n    os.makedirs(workdir)\n    open(os.path.join(workdir, 'r'), 'w')\n"
    calls = [_plain_call(c) for c in ast.walk(ast.parse(src)) if isinstance(c, ast.Call)]
    assert {"os.makedirs", "open"} <= set(calls) and "os.path.join" not in calls


def test_report_collects_into_a_gs_workdir(quick_report, local_gcs, refuse_plain_io):
    """The report, collecting the session's quick runs (local), writes its results.json and
    report.md into gs:// and copies every source's plots and report.md beside them; the
    links in report.md point at those copies."""
    from experiments import report
    from experiments.configs import report as report_config

    c = report_config.get_config()
    c.preset = "quick"  # the sources were made by the quick presets
    for name in report_config.EXPERIMENTS:
        c.sources[name] = str(quick_report / name)
    wd = BUCKET + "/report"
    results = report.run(c, wd)
    gs = local_gcs(wd)
    assert json.loads((gs / "results.json").read_text())["rows"] == results["rows"]
    text = (gs / "report.md").read_text()
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert any(x.endswith(".png") for x in links) and any(x.endswith("report.md") for x in links)
    for link in links:
        assert not link.startswith("gs://") and (gs / link).is_file(), link
