"""launch.py: bad input (unknown experiment, config field, impossible config, the project's own
BadInputError) is one clear error line; any other exception is a bug and keeps its traceback."""

import os
import re
import subprocess
import sys

from conftest import ROOT, launch


def _launch(*args):
    return launch(*args, timeout=120, check=False)


def test_unknown_experiment(tmp_path):
    out = _launch("--experiment=no_such_thing", f"--workdir={tmp_path}")
    assert out.returncode != 0
    assert "unknown --experiment='no_such_thing'" in out.stderr and "rnn_vs_attn" in out.stderr
    assert "Traceback" not in out.stderr


def test_every_experiment_is_a_package_with_a_config():
    """launch.py finds an experiment by its package (experiments/NAME/__init__.py, with a run)
    and its config file (experiments/configs/NAME.py)."""
    import importlib

    code = "import launch; print(' '.join(launch.available_experiments()))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    names = out.stdout.split()
    configs = {p.stem for p in (ROOT / "experiments" / "configs").glob("*.py")} - {"__init__"}
    assert set(names) == configs and {"report", "recipe_sweep", "translate"} <= set(names)
    for name in names:
        assert (ROOT / "experiments" / name / "__init__.py").is_file(), name
        assert callable(importlib.import_module(f"experiments.{name}").run), name


def test_unknown_config_field(tmp_path):
    out = _launch("--experiment=rnn_vs_attn", "--config.train.num_stepz=3", f"--workdir={tmp_path}")
    assert out.returncode != 0
    assert out.stderr.strip().splitlines()[0] == (
        "launch.py: unknown field train.num_stepz (did you mean num_steps?); the fields are "
        "in experiments/configs/rnn_vs_attn.py"
    ), out.stderr
    assert "Traceback" not in out.stderr and "KeyError" not in out.stderr
    assert not os.listdir(tmp_path)  # nothing ran


def test_an_unknown_field_is_named_with_the_closest_one():
    import ml_collections

    import launch as cli

    c = ml_collections.ConfigDict({"train": {"num_steps": 1, "seed": 0}, "models": ("a",)})
    assert cli.unknown_field(c, "train.num_steps") is None
    assert cli.unknown_field(c, "train.num_stepz") == (
        "unknown field train.num_stepz (did you mean num_steps?)"
    )
    assert cli.unknown_field(c, "trian.seed") == (
        "unknown field trian.seed (no group trian; did you mean train?)"
    )
    assert (
        cli.unknown_field(c, "train.zzzz") == "unknown field train.zzzz (train has num_steps, seed)"
    )
    assert cli.unknown_field(c, "models.x") == (
        "unknown field models.x (models is a value, not a group of fields)"
    )


def test_help_exits_0_and_a_grid_without_a_preset_is_one_line(tmp_path):
    """--help prints the usage and exits 0; recipe_sweep has no default grid, so without a
    preset it names its presets in one line and starts nothing."""
    for flag in ("--help", "-h"):
        out = _launch(flag)
        assert out.returncode == 0 and "--experiment" in out.stdout, (flag, out.stderr)
    import launch as cli

    out = _launch("--experiment=recipe_sweep", f"--workdir={tmp_path}")
    line = "launch.py: recipe_sweep has no default; choose a preset: --preset=NAME, one of "
    assert out.returncode != 0 and out.stderr.strip() == line + ", ".join(
        cli.presets_of("recipe_sweep")
    ), out.stderr
    own = ["launch.py", "--experiment=recipe_sweep", "--config=experiments/configs/recipe_sweep.py"]
    assert cli.check_command_line(own).startswith(line)
    assert cli.check_command_line([*own[:2], "--preset=budget"]) is None
    assert not os.listdir(tmp_path)


def test_incomplete_distributed_flags(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    out = launch(
        "--experiment=rnn_vs_attn",
        "--num_processes=2",
        f"--workdir={tmp_path}",
        timeout=120,
        check=False,
        env=env,
    )
    assert out.returncode != 0
    assert "incomplete" in out.stderr and "coordinator_address" in out.stderr
    assert "Traceback" not in out.stderr and not os.listdir(tmp_path)


def test_impossible_config_is_one_line_and_traceback_on_request(tmp_path):
    # The test suite fakes 8 devices; a 16-device mesh cannot fit, before anything compiles.
    args = (
        "--experiment=rnn_vs_attn",
        "--config=experiments/configs/rnn_vs_attn.py:quick",
        "--config.sharding.mesh_shape=(16,1)",
        f"--workdir={tmp_path}",
    )
    out = _launch(*args)
    assert out.returncode != 0
    assert "mesh shape (16, 1)" in out.stderr and "Traceback" not in out.stderr
    loud = _launch(*args, "--traceback")
    assert loud.returncode != 0 and "Traceback" in loud.stderr


def test_a_bad_model_choice_is_one_line(tmp_path):
    """A model's choice check (seq2seq.base.check_choices) names the field and the choices."""
    out = _launch(
        "--experiment=rnn_vs_attn",
        "--config=experiments/configs/rnn_vs_attn.py:quick",
        "--config.models=('rnnenc',)",
        "--config.model.rnnenc.cell=tcn",
        f"--workdir={tmp_path}",
    )
    assert out.returncode != 0 and "Traceback" not in out.stderr
    assert "rnnenc: cell must be one of rnn/lstm/gru" in out.stderr and "'tcn'" in out.stderr


# Runs launch.main with experiments.rnn_vs_attn.run replaced by one that raises `error`.
_RAISING = """
import sys
sys.path.insert(0, {root!r})
sys.argv = ["launch.py", "--experiment=rnn_vs_attn", "--workdir={workdir}"]
from absl import app
import launch
import experiments.rnn_vs_attn as experiment
from anatomy.errors import BadInputError
def run(config, workdir):
    raise {error}
experiment.run = run
app.run(launch.main, argv=launch.with_default_config(sys.argv), flags_parser=launch.parse_flags)
"""


def _launch_raising(error, workdir):
    code = _RAISING.format(root=str(ROOT), workdir=workdir, error=error)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_bad_input_error_is_one_line(tmp_path):
    out = _launch_raising('BadInputError("data.max_len=3 leaves no pair")', tmp_path)
    assert out.returncode != 0
    assert "BadInputError: data.max_len=3 leaves no pair" in out.stderr
    assert "Traceback" not in out.stderr


def test_other_errors_keep_their_traceback(tmp_path):
    # a genuine bug that happens to be a ValueError (or anything else) is not hidden
    for error in ('ValueError("operands could not be broadcast")', 'KeyError("params")'):
        out = _launch_raising(error, tmp_path)
        assert out.returncode != 0
        assert "Traceback" in out.stderr and error.split("(")[0] in out.stderr, out.stderr[-2000:]
        assert "launch.py: rnn_vs_attn stopped" not in out.stderr


def test_the_command_line_names_what_is_wrong_first(tmp_path):
    """A missing or unknown --experiment is reported before a --config.FIELD it would explain;
    a config file of another experiment, an unknown preset, or a preset given twice is one
    line; nothing runs."""
    cases = [
        (["--config.train.steps=3"], "no --experiment given"),
        (["--experiment=deptth", "--config.train.steps=3"], "unknown --experiment='deptth'"),
        (
            ["--experiment=depth", "--config=experiments/configs/rnn_vs_attn.py"],
            "is rnn_vs_attn's config, not depth's",
        ),
        (["--experiment=depth", "--preset=nope"], "depth has no preset 'nope'"),
        (
            ["--experiment=depth", "--preset=quick", "--config=experiments/configs/depth.py"],
            "not both",
        ),
    ]
    for args, message in cases:
        out = _launch(*args, f"--workdir={tmp_path}")
        assert out.returncode != 0 and message in out.stderr, (args, out.stderr)
        assert "Traceback" not in out.stderr and not os.listdir(tmp_path), args


def test_list_shows_every_experiment_and_preset():
    out = _launch("--list")
    assert out.returncode == 0, out.stderr
    import launch as cli

    for name in cli.available_experiments():
        for preset in cli.presets_of(name):
            assert re.search(rf"^{name}\s+{re.escape(preset or '(default)')}\s", out.stdout, re.M)
    # every committed result is on a line with its time and the file it is read from (a run
    # that recorded no wall clock: its training time summed, a lower bound)
    for path in sorted((ROOT / "results").glob("*/*.json")):
        rel = path.relative_to(ROOT).as_posix()
        (line,) = [x for x in out.stdout.splitlines() if x.endswith(", " + rel)]
        assert re.search(r"  (≥ )?\d+\.\d min", line), line


def test_a_committed_run_time_from_its_record():
    from experiments.lab.provenance import run_time

    prov = {"wall_seconds": 834.0, "loadavg": [0.69, 1.0, 1.0]}
    assert run_time({"provenance": prov}) == "13.9 min (load 0.7)"
    assert run_time({"setup": {"provenance": prov}}) == "13.9 min (load 0.7)"
    sweep = {"header": ["setting", "train s"], "rows": [["a", 60.0], ["b", None], ["c", 30.0]]}
    assert run_time(sweep) == "≥ 1.5 min of training; no wall clock recorded"
    assert run_time({}) == "—"


def test_a_preset_by_name_and_its_own_default_workdir():
    import launch as cli

    argv = ["launch.py", "--experiment=depth", "--preset=quick"]
    assert cli.check_command_line(argv) is None
    assert cli.with_default_config(argv)[1].endswith("experiments/configs/depth.py:quick")
    assert cli.preset_of(argv) == "quick"
    assert cli.default_workdir("depth", "quick") == os.path.join("runs", "depth_quick")
    assert cli.default_workdir("depth", "") == os.path.join("runs", "depth")
    assert cli.preset_of(["launch.py", "--config=experiments/configs/depth.py:quick"]) == "quick"
    # translate reads where the Quick start trains and makes no folder of its own
    assert cli.default_workdir("translate", "") == os.path.join("runs", "rnn_vs_attn")
    assert not cli.writes_workdir("translate") and cli.writes_workdir("depth")
    argv = [*argv, "--config.train.steps=3", "--workdir=w"]
    assert cli.command_record(argv, "depth", "quick") == {
        "command": "python launch.py --experiment=depth --preset=quick --config.train.steps=3 "
        "--workdir=w",
        "experiment": "depth",
        "preset": "quick",
        "config": "",
        "overrides": ["--config.train.steps=3"],
    }
