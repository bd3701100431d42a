"""`python tests/without_torch.py SCRIPT ARGS...`: run SCRIPT as on an install without torch.

torch is the test extra's independent reference (the twins in benchmarks/peers.py and
benchmarks/peers_mixers.py); the library, launch.py and every experiment run on
`pip install -c constraints.txt -e .` alone. conftest.launch runs every launch.py command of the suite through this file, so a module that
imports torch on the way to an experiment fails the suite as it would fail a user's install:
`import torch` (and any torch.*) raises ModuleNotFoundError, as for a package not installed,
whatever is on sys.path. (A None in sys.modules would not do: libraries that probe for torch,
scipy's array-API helpers among them, read sys.modules['torch'] and fail on a None.)
"""

import os
import runpy
import sys


class NoTorch:
    """A finder, first on sys.meta_path, that finds torch nowhere."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def main():
    sys.meta_path.insert(0, NoTorch)
    script, sys.argv = sys.argv[1], sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as `python SCRIPT` would have it
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
