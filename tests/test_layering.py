"""The code's layering, read from its source with ast. Across anatomy, experiments,
benchmarks and launch.py: no import cycle; nothing imports launch.py (the command line sits
on top); anatomy imports none of the others; benchmarks import nothing of experiments
(experiments may use the benchmark harness: one direction only); experiments/lab, the results
pipeline, imports only itself and anatomy (an experiment's claims, config and docs it reads by
name). Inside anatomy, the layer packages (recurrence, attention, conv, the shared leaves
layers.py and axes.py) import neither the training code, nor anatomy.sharding's package (whose
init is the scale-out machinery), nor the translators. Every import counts, module-level or
inside a function (a lazy import is still a dependency); importing a.b.c also imports the
packages a and a.b, unless the importer lives inside them.
"""

import ast
import importlib
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOPS = ("anatomy", "experiments", "benchmarks")  # the packages; launch.py is a module beside them
PKG = ROOT / "anatomy"


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


FILES = [p for top in TOPS for p in sorted((ROOT / top).rglob("*.py"))] + [ROOT / "launch.py"]
MODULES = {_module_name(p): p for p in FILES}
PACKAGES = {_module_name(p) for p in FILES if p.name == "__init__.py"}
OURS = (*TOPS, "launch")


def _imported(name, node):
    """The modules one import statement of module `name` names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:  # relative: from .x import y
        base = name if name in PACKAGES else name.rsplit(".", 1)[0]
        base = ".".join(base.split(".")[: len(base.split(".")) - node.level + 1])
        target = f"{base}.{node.module}" if node.module else base
    else:
        target = node.module or ""
    subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
    return [target, *subs]


def _edges(name):
    """Module -> the modules of ours it imports (with the packages that run on the way)."""
    tree = ast.parse(MODULES[name].read_text(), str(MODULES[name]))
    out = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for target in _imported(name, node):
            if target.split(".")[0] not in OURS:
                continue
            parts = target.split(".")
            for i in range(1, len(parts) + 1):  # a, a.b, a.b.c: each package's init runs
                mod = ".".join(parts[:i])
                inside = name == mod or name.startswith(mod + ".")
                if mod in MODULES and not (inside and mod in PACKAGES):
                    out.add(mod)
    out.discard(name)
    return out


GRAPH = {name: _edges(name) for name in MODULES}


def _reachable(start):
    seen, todo = set(), [start]
    while todo:
        for nxt in GRAPH[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _within(name, top):
    return name == top or name.startswith(top + ".")


def test_the_graph_sees_the_imports():
    assert "anatomy.axes" in GRAPH["anatomy.mixers.cells"]
    assert "anatomy.scan.sequences" in GRAPH["anatomy.scan.runner"]
    assert "anatomy.sharding" in GRAPH["anatomy.train.sharded"]  # the package init runs
    assert "experiments.lab.provenance" in GRAPH["experiments.lab.outputs"]  # inside a function
    assert "experiments.lab.registry" in GRAPH["launch"]
    assert "benchmarks.timing" in GRAPH["experiments.crossover"]
    assert {"anatomy", "experiments.lab"} <= GRAPH["experiments.crossover"]  # packages' inits
    assert {"experiments", "experiments.lab"}.isdisjoint(GRAPH["experiments.lab.record"])
    assert {name.split(".")[0] for name in GRAPH} == set(OURS)


def test_no_import_cycle():
    """Across anatomy, experiments, benchmarks and launch.py."""
    cycles = sorted(name for name in GRAPH if name in _reachable(name))
    assert not cycles, f"modules on an import cycle: {cycles}"


def test_nothing_imports_launch():
    """launch.py is the command line on top of everything; what it knows (the experiments and
    their presets) lives below it, in experiments/lab/registry.py."""
    assert not sorted(name for name in GRAPH if "launch" in GRAPH[name])


def test_anatomy_imports_none_of_the_others():
    bad = {
        m: sorted(t for t in _reachable(m) if not _within(t, "anatomy"))
        for m in GRAPH
        if _within(m, "anatomy")
    }
    assert not {m: b for m, b in bad.items() if b}


def test_experiments_and_benchmarks_import_each_other_one_way():
    """experiments may use the benchmark harness (crossover times the mixer benchmark's own
    cases); benchmarks import nothing of experiments."""
    across = {
        (a, b): sorted(
            m for m in GRAPH if _within(m, a) and any(_within(t, b) for t in _reachable(m))
        )
        for a, b in (("experiments", "benchmarks"), ("benchmarks", "experiments"))
    }
    assert across[("experiments", "benchmarks")], "the graph lost experiments -> benchmarks"
    assert not across[("benchmarks", "experiments")], "benchmarks import experiments"


def test_the_lab_imports_only_itself_and_anatomy():
    """experiments/lab is the results pipeline every experiment builds on: an experiment's
    claims.py, config and docs.py are read by name, never imported."""
    allowed = ("experiments.lab", "anatomy")
    assert "experiments.lab.publish" in GRAPH
    bad = {
        m: sorted(
            t
            for t in _reachable(m)
            if t != "experiments" and not any(_within(t, a) for a in allowed)
        )
        for m in GRAPH
        if _within(m, "experiments.lab")
    }
    assert not {m: b for m, b in bad.items() if b}


LAYERS = (
    "anatomy.scan",
    "anatomy.attention",
    "anatomy.conv",
    "anatomy.mixers",  # above the three families (a hybrid stack needs two), still a layer
    "anatomy.layers",
)
ABOVE = ("anatomy.train", "anatomy.seq2seq", "anatomy.sharding")  # sharding: its package init


@pytest.mark.parametrize("layer", LAYERS)
def test_layers_import_nothing_above_them(layer):
    mods = [m for m in GRAPH if m == layer or m.startswith(layer + ".")]
    assert mods
    bad = {
        m: sorted(t for t in _reachable(m) if any(t == a or t.startswith(a + ".") for a in ABOVE))
        for m in mods
    }
    assert not {m: b for m, b in bad.items() if b}


def test_the_scan_engines_know_no_mixer():
    for m in (m for m in GRAPH if _within(m, "anatomy.scan")):
        assert {t for t in _reachable(m) if not _within(t, "anatomy.scan")} <= {"anatomy.errors"}


@pytest.mark.parametrize("leaf", ["anatomy.layers", "anatomy.axes"])
def test_the_shared_leaves_import_only_the_axes_and_the_error_type(leaf):
    assert _reachable(leaf) <= {"anatomy.axes", "anatomy.errors"}


@pytest.mark.parametrize(
    "name", ["conv", "mixers", "data", "seq2seq", "decode", "train", "sharding"]
)
def test_every_subpackage_loads_from_the_root(name):
    import anatomy

    assert getattr(anatomy, name) is importlib.import_module(f"anatomy.{name}")
    with pytest.raises(AttributeError):
        anatomy.no_such_subpackage  # noqa: B018


@pytest.mark.slow
def test_sharding_imports_no_training():
    """anatomy.sharding loads without anatomy.train (the sharded steps that glue the two
    live in anatomy.train.sharded)."""
    code = "import sys, anatomy.sharding; assert 'anatomy.train' not in sys.modules"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT, timeout=120)
