"""The library's layering, read from its source with ast: no import cycle among anatomy's
modules, and the layer packages (recurrence, attention, conv, the shared leaves layers.py and
axes.py) import neither the training code, nor anatomy.sharding's package (whose init is the
scale-out machinery), nor the translators. Every import counts, module-level or inside a
function (a lazy import is still a dependency); importing anatomy.a.b.c also imports the
packages anatomy.a and anatomy.a.b, unless the importer lives inside them.
"""

import ast
import importlib
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PKG = ROOT / "anatomy"


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in PKG.rglob("*.py")}
PACKAGES = {_module_name(p) for p in PKG.rglob("__init__.py")}


def _imported(name, node):
    """The anatomy modules one import statement of module `name` names."""
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
    """Module -> the anatomy modules it imports (with the packages that run on the way)."""
    tree = ast.parse(MODULES[name].read_text(), str(MODULES[name]))
    out = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for target in _imported(name, node):
            if target.split(".")[0] != "anatomy":
                continue
            parts = target.split(".")
            for i in range(2, len(parts) + 1):  # anatomy.a, anatomy.a.b, ... (not the root)
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


def test_the_graph_sees_the_imports():
    assert "anatomy.axes" in GRAPH["anatomy.recurrence.cells"]
    assert "anatomy.recurrence.registry" in GRAPH["anatomy.recurrence.scan"]
    assert "anatomy.sharding" in GRAPH["anatomy.train.sharded"]  # the package init runs


def test_no_import_cycle():
    cycles = sorted(name for name in GRAPH if name in _reachable(name))
    assert not cycles, f"modules on an import cycle: {cycles}"


LAYERS = (
    "anatomy.recurrence",
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
