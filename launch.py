"""The one entry point: `python launch.py --experiment=NAME [--preset=PRESET]`.

Thin on purpose: it parses flags, loads the experiment's ml_collections config
(default `experiments/configs/NAME.py`; a preset by name, `--preset=quick`, or as
`--config=file.py:quick`; overrides as `--config.field=value`) and calls
`experiments.NAME.run(config, workdir)`. `python launch.py --list` lists the experiments,
their presets and the wall time of each committed run. A run saves its command line in its
workdir (command.json, experiments.lab.provenance.COMMAND_FILE: translate reads it to say how
to train a model into that workdir).

Several processes (one per host) run the same command; each joins the job through
anatomy.distributed.initialize from --coordinator_address / --num_processes / --process_id,
else the JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID environment variables,
else (--distributed_auto) the cluster's own detection; with none of them it is one process.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import json
import os
import pathlib
import shlex
import sys

from absl import app, flags, logging
from ml_collections import config_flags

from experiments.lab.registry import CONFIG_DIR, ROOT, available_experiments, presets_of

flags.DEFINE_string("experiment", None, "Experiment to run (a package in experiments/).")
flags.DEFINE_string(
    "preset",
    None,
    "A preset of the experiment's config by name (e.g. quick); the same as "
    "--config=experiments/configs/NAME.py:PRESET.",
)
flags.DEFINE_bool("list", False, "List the experiments, their presets and their run times.")
flags.DEFINE_string(
    "workdir",
    None,
    "Output folder, local or a bucket (gs://bucket/run: anatomy/paths.py); default "
    "runs/<experiment> (runs/<experiment>_<preset> for a preset; translate reads "
    "runs/rnn_vs_attn, where the Quick start trains, and writes nothing). Re-using it with "
    "the same config resumes; another config stops, naming the fields "
    "(anatomy/fingerprint.py): pass a new --workdir to start fresh.",
)
flags.DEFINE_bool(
    "traceback",
    False,
    "Show the full traceback of a bad-input error (by default it is one line naming the problem).",
)
flags.DEFINE_string(
    "coordinator_address",
    None,
    "Multi-process: host:port of process 0 (else $JAX_COORDINATOR_ADDRESS).",
)
flags.DEFINE_integer(
    "num_processes", None, "Multi-process: how many processes (else $JAX_NUM_PROCESSES)."
)
flags.DEFINE_integer(
    "process_id", None, "Multi-process: this process, 0..num_processes-1 (else $JAX_PROCESS_ID)."
)
flags.DEFINE_bool(
    "distributed_auto",
    False,
    "Multi-process: let jax.distributed.initialize detect "
    "the cluster (Cloud TPU, SLURM, Open MPI, Kubernetes).",
)
_CONFIG = config_flags.DEFINE_config_file(
    "config", None, "ml_collections config file, optionally `file.py:preset`.", lock_config=True
)
FLAGS = flags.FLAGS


def _flag_from_argv(argv: list[str], flag: str) -> str | None:
    """The value of --flag=VALUE (or --flag VALUE) in argv, None when absent."""
    for i, arg in enumerate(argv):
        if arg.startswith(f"--{flag}="):
            return arg.split("=", 1)[1]
        if arg == f"--{flag}" and i + 1 < len(argv):
            return argv[i + 1]
    return None


HELP_FLAGS = ("--help", "--helpshort", "--helpfull", "--helpxml", "-?", "-h")


def asks_for_help(argv: list[str]) -> bool:
    return any(a in HELP_FLAGS for a in argv[1:])


def _config_arg(argv: list[str]) -> str | None:
    return next(
        (a.split("=", 1)[1] for a in argv if a.startswith("--config=")),
        _flag_from_argv([a for a in argv if not a.startswith("--config.")], "config"),
    )


def check_command_line(argv: list[str]) -> str | None:
    """What is wrong with the command line before anything parses it, in one line (None: fine):
    a missing or unknown --experiment first (before any --config.FIELD it would explain), an
    unknown --preset, --preset beside a --config file, a config file of another experiment."""
    if "--list" in argv or asks_for_help(argv):
        return None
    choices = available_experiments()
    name = _flag_from_argv(argv, "experiment")
    if name is None:
        return f"launch.py: no --experiment given. Choose one of: {', '.join(choices)}"
    if name not in choices:
        return f"launch.py: unknown --experiment={name!r}. Choose one of: {', '.join(choices)}"
    preset, config = _flag_from_argv(argv, "preset"), _config_arg(argv)
    if preset is not None and config is not None:
        return "launch.py: give a preset by --preset or in --config=FILE:PRESET, not both"
    known = ", ".join(p or "'' (default)" for p in presets_of(name))
    if preset is not None and preset not in presets_of(name):
        return f"launch.py: {name} has no preset {preset!r}; its presets: {known}"
    own = config is None
    if config is not None:
        path = pathlib.Path(config.split(":", 1)[0]).resolve()
        owner = path.stem
        if path.parent == CONFIG_DIR.resolve() and owner in choices and owner != name:
            return (
                f"launch.py: --config={config} is {owner}'s config, not {name}'s; use "
                f"--config=experiments/configs/{name}.py (or --preset=NAME)"
            )
        own = path == (CONFIG_DIR / f"{name}.py").resolve() and ":" not in config
    if own and preset is None and "" not in presets_of(name):
        return f"launch.py: {name} has no default; choose a preset: --preset=NAME, one of {known}"
    return None


def with_default_config(argv: list[str]) -> list[str]:
    """Insert `--config=experiments/configs/NAME.py[:PRESET]` when the user gave no config file
    (a --preset names the preset).

    config_flags applies `--config.field=value` overrides only to a config file
    named on the command line, so the per-experiment default is named here.
    """
    name = _flag_from_argv(argv, "experiment")
    if _config_arg(argv) is not None or name not in available_experiments():
        return argv
    preset = _flag_from_argv(argv, "preset")
    spec = str(CONFIG_DIR / (name + ".py")) + (f":{preset}" if preset else "")
    return [argv[0], f"--config={spec}"] + argv[1:]


def preset_of(argv: list[str]) -> str:
    """The preset the command line asks for ('' for the default)."""
    preset = _flag_from_argv(argv, "preset")
    if preset is not None:
        return preset
    config = _config_arg(argv) or ""
    return config.split(":", 1)[1] if ":" in config else ""


def default_workdir(name: str, preset: str) -> str:
    """runs/<experiment>, or runs/<experiment>_<preset> for a preset (a workdir refuses a run
    made by another config, so each preset gets its own); an experiment that reads another's
    workdir names it in its config file (DEFAULT_WORKDIR: translate reads runs/rnn_vs_attn)."""
    module = importlib.import_module(f"experiments.configs.{name}")
    if getattr(module, "DEFAULT_WORKDIR", None):
        return module.DEFAULT_WORKDIR
    return os.path.join("runs", name + (f"_{preset}" if preset else ""))


def writes_workdir(name: str) -> bool:
    """False for an experiment that only reads its workdir (its config file's READS_WORKDIR:
    translate): launch.py then makes no folder and saves no command there."""
    module = importlib.import_module(f"experiments.configs.{name}")
    return not getattr(module, "READS_WORKDIR", False)


def command_record(argv: list[str], name: str, preset: str) -> dict:
    """What a workdir's command.json (experiments.lab.provenance.COMMAND_FILE) holds: the
    command as typed ('python launch.py ...'), the experiment, its preset ('' for the
    default), the config file when one was named, and the overrides (--config.FIELD=VALUE, in
    order)."""
    config = _config_arg(argv)
    return {
        "command": shlex.join(["python", "launch.py", *argv[1:]]),
        "experiment": name,
        "preset": preset,
        "config": config.split(":", 1)[0] if config else "",
        "overrides": [a for a in argv[1:] if a.startswith("--config.")],
    }


def listing() -> str:
    """The experiments, their presets, and the wall time of every committed run of them
    (results/<experiment>/<name>.json: the run's own record and its load): a preset's run on
    the preset's line, a committed run of another config (its command is in the file) on a
    line of its own, marked *."""
    from experiments.lab import provenance

    rows = []
    for name in available_experiments():
        stems = {p or "default": p or "(default)" for p in presets_of(name)}
        results = ROOT / "results" / name
        for path in sorted(results.glob("*.json")) if results.is_dir() else []:
            stems.setdefault(path.stem, f"{path.stem} *")
        for stem, label in stems.items():
            path = results / f"{stem}.json"
            note = "—"
            if path.exists():
                result = json.loads(path.read_text())["result"]
                note = f"{provenance.run_time(result)}, results/{name}/{path.name}"
            rows.append((name, label, note))
    rows.insert(0, ("experiment", "preset", "committed run (wall clock, 2-core machine)"))
    w0, w1 = (max(len(r[i]) for r in rows) for i in (0, 1))
    lines = [f"{a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows]
    lines.append(
        "* a committed run of another config than the presets' (its command is in the file)."
    )
    lines.append(
        "Run one: python launch.py --experiment=NAME [--preset=PRESET]; every quick preset "
        "is a CI smoke test."
    )
    return "\n".join(lines)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if FLAGS.list:
        print(listing())
        return
    name = FLAGS.experiment
    if not FLAGS["verbosity"].present:  # orbax logs every save at INFO; --verbosity=0 shows it
        logging.set_verbosity(logging.WARNING)
    from anatomy import distributed, paths  # distributed first, before anything touches a device
    from anatomy.errors import BadInputError

    try:
        info = distributed.initialize(
            FLAGS.coordinator_address,
            FLAGS.num_processes,
            FLAGS.process_id,
            auto=FLAGS.distributed_auto,
        )
    except BadInputError as e:  # incomplete or inconsistent settings
        raise app.UsageError(str(e)) from None
    if info.count > 1:
        logging.info(
            "process %d of %d, %d of %d devices local",
            info.index,
            info.count,
            info.local_devices,
            info.devices,
        )
    config = _CONFIG.value
    preset = preset_of(sys.argv)
    workdir = FLAGS.workdir or default_workdir(name, preset)
    if writes_workdir(name):
        paths.makedirs(workdir)
        if info.index == 0:  # what made this workdir (translate's advice reads it)
            from experiments.lab.provenance import COMMAND_FILE

            record = json.dumps(command_record(sys.argv, name, preset), indent=2)
            paths.write_text(paths.join(workdir, COMMAND_FILE), record + "\n", atomic=True)
    if info.index == 0:
        # on stderr: stdout is the experiment's (translate's one line per input line, the
        # cost estimate a paper-scale run prints first)
        print(
            f"launch.py: {name} ({preset or 'default'} preset), workdir {workdir}",
            file=sys.stderr,
            flush=True,
        )
    logging.info("experiment %s, workdir %s\n%s", name, workdir, config)
    module = importlib.import_module(f"experiments.{name}")
    try:
        module.run(config, workdir)
    except BadInputError as e:
        if FLAGS.traceback:
            raise
        # Only the project's bad-input errors (anatomy.errors: an impossible config, a malformed
        # corpus, a NaN loss, a corrupt checkpoint, a workdir trained with another config) are
        # one clear line; any other exception is a bug and keeps its traceback.
        kept = f"workdir {workdir} keeps what was saved; " if writes_workdir(name) else ""
        sys.exit(
            f"launch.py: {name} stopped: {type(e).__name__}: {e}\n"
            f"({kept}--traceback shows where it was raised)"
        )


def _load_config(argv: list[str]):
    """The ConfigDict that --config=FILE[:PRESET] names (FILE's get_config(PRESET)); None
    where it cannot be loaded."""
    spec = _config_arg(argv)
    if not spec:
        return None
    file, _, preset = spec.partition(":")
    try:
        loader = importlib.util.spec_from_file_location("_launch_config", file)
        module = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(module)
        return module.get_config(preset) if preset else module.get_config()
    except Exception:  # explaining an error must not raise another
        return None


def unknown_field(config, path: str) -> str | None:
    """What is wrong with the dotted config path `path` (an override's field) in one phrase:
    'unknown field train.num_stepz (did you mean num_steps?)'; None when the field exists."""
    node, parts = config, path.split(".")
    for i, part in enumerate(parts):
        above = ".".join(parts[:i])
        if not hasattr(node, "keys"):
            return f"unknown field {path} ({above} is a value, not a group of fields)"
        keys = list(node.keys())
        if part not in keys:
            close = difflib.get_close_matches(part, keys, n=1)
            hint = f"did you mean {close[0]}?" if close else f"{above or 'the config'} has "
            hint += "" if close else ", ".join(keys)
            if i < len(parts) - 1:  # a group that is not there
                hint = f"no group {'.'.join(parts[: i + 1])}; {hint}"
            return f"unknown field {path} ({hint})"
        node = node[part]
    return None


def override_problem(argv: list[str], error: Exception) -> str:
    """One line for a --config.FIELD=VALUE that config_flags refused: the first field the
    config does not have, with the closest name it does; else the override and the error's
    own words (a wrong type)."""
    overrides = [a for a in argv if a.startswith("--config.")]
    config = _load_config(argv)
    for arg in overrides:
        path = arg[len("--config.") :].split("=", 1)[0]
        problem = unknown_field(config, path) if config is not None else None
        if problem:
            file = (_config_arg(argv) or "").split(":", 1)[0]
            return f"launch.py: {problem}; the fields are in {os.path.relpath(file)}"
    words = str(error.args[0]) if error.args else str(error)
    if isinstance(error, AttributeError) and isinstance(error.__context__, KeyError):
        words = str(error.__context__.args[0])
    return f"launch.py: bad config override among {' '.join(overrides)}: {words}"


def parse_flags(argv: list[str]) -> list[str]:
    """absl's flag parsing, with a bad flag or config override as one clear line, not a
    traceback; --help (and its kin) print the usage and exit 0."""
    try:
        return FLAGS(argv)
    except SystemExit as e:  # absl's help flags exit 1 after printing the usage
        if asks_for_help(argv) and e.code == 1:
            sys.exit(0)
        raise
    except flags.Error as e:
        sys.exit(f"launch.py: {e}\nPass --helpfull for the flags.")
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        sys.exit(override_problem(argv, e))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    if "-h" in sys.argv[1:]:  # absl knows -? and --help; -h is what most tools take
        sys.argv[sys.argv.index("-h")] = "--help"
    problem = check_command_line(sys.argv)  # before the flags: it is what explains them
    if problem:
        sys.exit(problem)
    app.run(main, argv=with_default_config(sys.argv), flags_parser=parse_flags)
