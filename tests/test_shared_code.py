"""Shared code lives in the shared place, read from the source with ast: no experiment package
imports another (each imports the library, the pipeline modules of experiments/ and the shared
packages), and what several experiments need is defined once. Every import counts,
module-level or inside a function.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = {"configs", "tasks", "lab"}  # packages of experiments/ every experiment may import
PACKAGES = sorted(p.parent.name for p in (ROOT / "experiments").glob("*/__init__.py"))
EXPERIMENTS = [p for p in PACKAGES if p not in SHARED]


def _imports(path):
    """The experiments.<name> packages one file imports."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        out |= {n.split(".")[1] for n in names if n.startswith("experiments.")}
    return out & set(PACKAGES)


def test_the_reader_sees_the_imports():
    assert "tasks" in _imports(ROOT / "experiments" / "copy" / "__init__.py")
    assert {"tasks", "lab"} <= _imports(ROOT / "experiments" / "rnnenc_state" / "__init__.py")
    assert {"recall", "copy", "depth"} <= set(EXPERIMENTS)


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_no_experiment_imports_another(name):
    """None: what two experiments share lives in experiments/lab/ (the pipeline), in
    experiments/tasks/ (tasks, contenders, the training of translators) or in anatomy."""
    files = (ROOT / "experiments" / name).rglob("*.py")
    found = {other: f for f in files for other in _imports(f) if other in EXPERIMENTS}
    found.pop(name, None)
    extra = {o: str(f.relative_to(ROOT)) for o, f in found.items()}
    assert not extra, f"experiments/{name} imports other experiments: {extra}"


# name -> the one module that defines it (a function, class or constant at module level)
DEFINED_ONCE = {
    "count_params": "anatomy/params.py",
    "compiler_options": "anatomy/compiling.py",
    "FAST_COMPILE": "anatomy/compiling.py",
    "n_cores": "anatomy/probes/timing.py",
    "IGNORE": "anatomy/train/labelled.py",
    "queries": "anatomy/train/labelled.py",
    "logits_at": "anatomy/train/labelled.py",
    "PALETTE": "experiments/lab/style.py",
    "paired": "anatomy/probes/claims.py",
    "mean_std": "anatomy/tables.py",
    "round_up": "anatomy/train/evaluate.py",
    "as_text": "anatomy/data/readers.py",
    "drawn_by": "experiments/lab/outputs.py",
    "made_by": "experiments/lab/pages.py",
    "claims_table": "experiments/lab/pages.py",
    "ENC_SHORT_FLOOR": "experiments/lab/thresholds.py",
    "BLEU_GAP": "experiments/lab/thresholds.py",
    "SPEEDUP_RANGE": "experiments/lab/thresholds.py",
    "SPEEDUP_N": "experiments/lab/thresholds.py",
}


def _defined():
    """{name: [module path]} of every module-level def, class and assignment in DEFINED_ONCE."""
    out = {name: [] for name in DEFINED_ONCE}
    for top in ("anatomy", "experiments", "benchmarks"):
        for path in sorted((ROOT / top).rglob("*.py")):
            for node in ast.parse(path.read_text(), str(path)).body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    names = [node.name]
                elif isinstance(node, ast.Assign):
                    names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                else:
                    continue
                for n in names:
                    if n in out:
                        out[n].append(str(path.relative_to(ROOT)))
    return out


def test_the_shared_helpers_are_defined_once():
    assert _defined() == {name: [where] for name, where in DEFINED_ONCE.items()}
