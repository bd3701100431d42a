"""Which experiments there are and their presets, read from the tree: an experiment is a
package experiments/NAME/ with a config file experiments/configs/NAME.py, whose PRESETS
tuple names its presets ('' is the default). launch.py checks a command line against it and
the published docs list every experiment from it.
"""

from __future__ import annotations

import importlib
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG_DIR = ROOT / "experiments" / "configs"


def available_experiments() -> list[str]:
    """Every experiment that has both a package (experiments/NAME/__init__.py) and a config
    file (experiments/configs/NAME.py)."""
    return sorted(
        p.stem
        for p in CONFIG_DIR.glob("*.py")
        if not p.stem.startswith("_") and (ROOT / "experiments" / p.stem / "__init__.py").exists()
    )


def presets_of(name: str) -> tuple[str, ...]:
    """The presets experiment `name`'s config file declares (PRESETS; '' is the default)."""
    module = importlib.import_module(f"experiments.configs.{name}")
    return tuple(getattr(module, "PRESETS", ("", "quick")))
