"""Test-suite setup: 8 fake CPU devices for the sharding tests; helpers shared by the tests.

XLA reads this flag when the CPU backend initialises, so it must be set before
anything imports jax (conftest is imported before every test module).

Layout: tests/ mirrors the code (tests/anatomy/<package>/, tests/experiments/<name>/,
tests/benchmarks/); tests/ itself holds what spans several, and the shared conftest.py,
helpers.py and without_torch.py (pyproject's pythonpath puts tests/ on sys.path, so any test
file imports them by name); every test file's name is unique in the tree (SLOW_FILES goes by it).

Shared helpers (import them: `from conftest import ROOT, launch`): ROOT, the repository
root; launch(*args), `python launch.py ...` run from it; the `rng` fixture.
"""

import collections
import os
import pathlib
import subprocess
import sys

_FLAG = "--xla_force_host_platform_device_count=8"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()

# XLA:CPU's backend (LLVM) at optimisation level 0 in every test process and every process a
# test starts (launch.py runs, the tour's kernel; not those given DEFAULT_LEVEL_ENV below): the
# suite's programs are tiny and compiling them is most of its time, which level 0 shortens.
# The level changes the machine code, not the HLO program: values agree to rounding (LLVM
# fuses fewer multiply-adds at 0), so every equivalence and tolerance holds as at the default
# level, but a training trajectory that sits on a knife's edge can take the other side
# (test_seq2seq_linear's overfit says how it copes); no test compares a digit with a committed
# result made at the default level. An XLA_FLAGS that sets the level wins.
_LEVEL0 = "--xla_backend_optimization_level=0"
_SET_LEVEL = "xla_backend_optimization_level" not in os.environ["XLA_FLAGS"]
if _SET_LEVEL:
    os.environ["XLA_FLAGS"] += " " + _LEVEL0

# JAX's persistent compilation cache, shared by both xdist workers and every process a test
# starts (launch.py runs, the tour's kernel inherit the environment): most of this suite's time
# is XLA compiling the same tiny programs in several processes. A cached executable is the
# same compiled program (its HLO's source-file table aside), so no result changes. Under
# .pytest_cache (git-ignored); JAX keys entries by program, devices, flags and version. Every
# program is cached, however fast it compiled (at backend level 0 most take well under 0.2 s).
os.environ.setdefault(
    "JAX_COMPILATION_CACHE_DIR",
    str(pathlib.Path(__file__).resolve().parents[1] / ".pytest_cache" / "jax"),
)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")

import jax  # noqa: E402  (after the flag, on purpose)

# The 8 fake devices are this process's (and each xdist worker's): XLA read the flag when the
# backend started, here. The processes a test starts (launch.py runs, the quick report, the
# tour's kernel) see the host's one CPU device, as a user's run on this machine does: on 8 fake
# devices every launched training step is an 8-way data-parallel program on 2 cores (slower
# than on one device, and its checkpoints save 8 shards of every array). Sharded training is
# tested in process (test_sharding_models, test_elastic_resume, test_distributed); no
# launch.py run in the suite trains on a mesh. FAKE_DEVICES_ENV is this process's own XLA flags, for a child whose
# numbers a test compares with this process's (test_train's sigkill resume).
jax.devices()
FAKE_DEVICES_ENV = dict(os.environ)
os.environ["XLA_FLAGS"] = " ".join(f for f in os.environ["XLA_FLAGS"].split() if f != _FLAG)
# A child whose time is running programs, not compiling them, at XLA's default backend level:
# the real-text presets' tiny runs decode a test split of up to 320 pieces per sentence, where
# the default level's faster code outweighs its slower compiling (the quick report, all
# compilation, is the other way round).
DEFAULT_LEVEL_ENV = {
    **os.environ,
    "XLA_FLAGS": " ".join(
        f for f in os.environ["XLA_FLAGS"].split() if not (_SET_LEVEL and f == _LEVEL0)
    ),
}
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from filelock import FileLock  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def launch(*args, timeout=600, check=True, stdin=None, env=None):
    """`python launch.py *args` from the repository root, output captured as text, as on an
    install without torch (tests/without_torch.py: the README's first install has no test
    extra, and no experiment may need it; the quick report runs every quick preset so).

    check: assert it exited 0, showing the end of its stderr. Returns the CompletedProcess.
    """
    cmd = [sys.executable, str(ROOT / "tests" / "without_torch.py"), "launch.py", *args]
    proc = subprocess.run(
        cmd, cwd=ROOT, input=stdin, env=env, capture_output=True, text=True, timeout=timeout
    )
    if check:
        assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


# The fast tier (`pytest -m "not slow"`, the loop a contributor runs before each commit) keeps
# every test of the library's modules; these files run experiments, launch.py, notebooks,
# several processes or torch twins end to end, and are marked slow as a whole. A test elsewhere
# that took 3 s or more in a fast-tier run (pytest -m "not slow" --durations=0) carries
# @pytest.mark.slow itself; a parametrized one may keep one case in the fast tier with
# @pytest.mark.slow_except("<case id>") (its check stays in the loop, the other cases in CI).
# coverage run --source=anatomy -m pytest -m "not slow" -n 0 shows every module still run.
SLOW_FILES = {
    "test_attention_torch.py",
    "test_benchmarks.py",
    "test_benchmarks_profile.py",
    "test_context_length.py",
    "test_convs2s.py",
    "test_copy.py",
    "test_crossover.py",
    "test_data_workdir.py",
    "test_depth.py",
    "test_distributed.py",
    "test_docs.py",
    "test_elastic_resume.py",
    "test_gradient_decay.py",
    "test_launch.py",
    "test_long_range.py",
    "test_notebook.py",
    "test_publish.py",
    "test_real_text.py",
    "test_recall.py",
    "test_recipe_sweep.py",
    "test_report.py",
    "test_rnn_vs_attn.py",
    "test_rnn_vs_attn_positions.py",
    "test_rnn_vs_attn_workdir.py",
    "test_rnnenc_state.py",
    "test_scaling.py",
    "test_sharding_models.py",
    "test_train_torch.py",
    "test_translate.py",
    "test_walls.py",
    "test_wmt14_presets.py",
    "test_workdir_paths.py",
}


def pytest_collection_modifyitems(config, items):
    """test_report.py first, the other files that read conftest.quick_report last, and in
    between the files with most tests first (xdist's own heuristic, which pyproject's
    --no-loadscope-reorder turns off so that this order holds): with --dist loadfile one worker
    starts the quick report at once while the other runs the independent files, and no worker
    sits waiting on the report's lock early on."""

    def file_of(item):
        return item.nodeid.split("::")[0]

    readers = {file_of(i) for i in items if "quick_report" in getattr(i, "fixturenames", ())}
    counts = collections.Counter(file_of(i) for i in items)

    def rank(item):
        f = file_of(item)
        return (0 if f.endswith("test_report.py") else 2 if f in readers else 1, -counts[f], f)

    items[:] = sorted(items, key=rank)  # stable: each file keeps its own order
    for item in items:
        if os.path.basename(file_of(item)) in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        keep = item.get_closest_marker("slow_except")
        if keep is not None:
            case = getattr(item, "callspec", None)
            if case is None or not set(keep.args) <= set(_case_ids(items, item)):
                raise pytest.UsageError(
                    f"{item.nodeid}: slow_except{keep.args} names no case of this test"
                )
            if case.id not in keep.args:
                item.add_marker(pytest.mark.slow)


def _case_ids(items, item):
    """The case ids (the part in brackets) of every collected case of item's test function."""
    return {i.callspec.id for i in items if getattr(i, "function", None) is item.function}


@pytest.fixture(scope="session")
def quick_report(tmp_path_factory, worker_id):
    """The report's quick preset, run once per test session by whichever xdist worker asks
    first (the others wait on a file lock, then read it): the report in <workdir>, and every
    experiment it gathers run on its own quick preset in <workdir>/<name>/ (results.json,
    report.md, plots), which the experiments' own smoke tests read instead of running again."""
    base = tmp_path_factory.getbasetemp()
    root = (
        base if worker_id == "master" else base.parent
    )  # parent: shared by this session's workers
    workdir = root / "quick_report"
    failed = root / "quick_report.failed"  # one failed run fails every test that needs it
    with FileLock(str(root / "quick_report.lock")):
        if failed.exists():
            pytest.fail(f"the quick report failed earlier in this session:\n{failed.read_text()}")
        if not (workdir / "results.json").exists():
            proc = launch(
                "--experiment=report",
                "--config=experiments/configs/report.py:quick",
                f"--workdir={workdir}",
                timeout=1800,
                check=False,
            )
            if proc.returncode != 0:
                failed.write_text(proc.stderr[-4000:])
                pytest.fail(f"the quick report failed:\n{proc.stderr[-4000:]}")
    return workdir


@pytest.fixture
def rng():
    """A NumPy generator per test, seeded so a failure reproduces."""
    return np.random.default_rng(0)


def pytest_report_header(config):
    return f"jax {jax.__version__}, devices: {len(jax.devices())} x {jax.devices()[0].platform}"
