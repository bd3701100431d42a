"""The one entry point: `python launch.py --experiment=NAME`.

Thin on purpose: it parses flags, loads the experiment's ml_collections config
(default `experiments/configs/NAME.py`, a preset as `file.py:quick`, overrides as
`--config.field=value`) and calls `experiments.NAME.run(config, workdir)`.

Several processes (one per host) run the same command; each joins the job through
anatomy.distributed.initialize from --coordinator_address / --num_processes / --process_id,
else the JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID environment variables,
else (--distributed_auto) the cluster's own detection; with none of them it is one process.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import sys

from absl import app, flags, logging
from ml_collections import config_flags

ROOT = pathlib.Path(__file__).resolve().parent
CONFIG_DIR = ROOT / "experiments" / "configs"

flags.DEFINE_string("experiment", None, "Experiment to run (a package in experiments/).")
flags.DEFINE_string(
    "workdir",
    None,
    "Output folder; default runs/<experiment>. Re-using it with "
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


def available_experiments() -> list[str]:
    """Every experiment that has both a package (experiments/NAME/__init__.py) and a config
    file (experiments/configs/NAME.py)."""
    return sorted(
        p.stem
        for p in CONFIG_DIR.glob("*.py")
        if not p.stem.startswith("_") and (ROOT / "experiments" / p.stem / "__init__.py").exists()
    )


def _experiment_from_argv(argv: list[str]) -> str | None:
    for i, arg in enumerate(argv):
        if arg.startswith("--experiment="):
            return arg.split("=", 1)[1]
        if arg == "--experiment" and i + 1 < len(argv):
            return argv[i + 1]
    return None


def with_default_config(argv: list[str]) -> list[str]:
    """Insert `--config=experiments/configs/NAME.py` when the user gave none.

    config_flags applies `--config.field=value` overrides only to a config file
    named on the command line, so the per-experiment default is named here.
    """
    has_config = any(a == "--config" or a.startswith("--config=") for a in argv)
    name = _experiment_from_argv(argv)
    if has_config or name not in available_experiments():
        return argv
    return [argv[0], f"--config={CONFIG_DIR / (name + '.py')}"] + argv[1:]


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    choices = available_experiments()
    name = FLAGS.experiment
    if name not in choices:
        raise app.UsageError(f"Unknown --experiment={name!r}. Choose one of: {', '.join(choices)}")
    if not FLAGS["verbosity"].present:  # orbax logs every save at INFO; --verbosity=0 shows it
        logging.set_verbosity(logging.WARNING)
    from anatomy import distributed  # first, before anything touches a device
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
    workdir = FLAGS.workdir or os.path.join("runs", name)
    os.makedirs(workdir, exist_ok=True)
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
        sys.exit(
            f"launch.py: {name} stopped: {type(e).__name__}: {e}\n"
            f"(workdir {workdir} keeps what was saved; --traceback shows where it was raised)"
        )


def parse_flags(argv: list[str]) -> list[str]:
    """absl's flag parsing, with a bad flag or config override as one clear line, not a traceback."""
    try:
        return FLAGS(argv)
    except flags.Error as e:
        sys.exit(f"launch.py: {e}\nPass --helpfull for the flags.")
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        overrides = [a for a in argv if a.startswith("--config.")]
        sys.exit(
            f"launch.py: bad config override among {overrides}: {e!r} "
            "(unknown field or wrong type; see the experiment's config file for its fields)"
        )


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    app.run(main, argv=with_default_config(sys.argv), flags_parser=parse_flags)
