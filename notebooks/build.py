"""Build notebooks/tour.ipynb from notebooks/tour.py (and execute it).

    python notebooks/build.py --execute   # regenerate the committed notebook, outputs included
    python notebooks/build.py             # cells only, no outputs (quick look at the layout)
    python notebooks/build.py --check     # exit 1 if tour.ipynb's cells differ from tour.py

tour.py is the reviewed source, in jupytext's "percent" format: a line `# %%` starts a code
cell, `# %% [markdown]` a markdown cell whose lines are comments (`# ` is stripped). Lines
before the first marker are the file's header (not part of the notebook). jupytext itself is
not a dependency: this converter is the whole format as used here.

Execution runs a fresh python3 (ipykernel) kernel through nbclient, in a scratch directory,
with the repository on PYTHONPATH and no fake-device XLA flags inherited from a test run.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile

import nbformat

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SOURCE = os.path.join(HERE, "tour.py")
NOTEBOOK = os.path.join(HERE, "tour.ipynb")
CELL_TIMEOUT = 600  # seconds any one cell may run before nbclient stops the kernel

_MARKER = re.compile(r"^# %%(?P<md>\s*\[markdown\])?(?P<title>.*)$")


def parse(text: str) -> list[tuple[str, str]]:
    """Percent-format text -> [(kind, source)], kind 'code' or 'markdown'.

    Markdown lines lose their leading '# ' (or a bare '#'); every cell loses leading and
    trailing blank lines; empty cells are dropped. A line that is not a comment inside a
    markdown cell is an error (it would silently vanish from the notebook).
    """
    cells: list[tuple[str, list[str]]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _MARKER.match(line)
        if m:
            cells.append(("markdown" if m.group("md") else "code", []))
        elif cells:
            kind, lines = cells[-1]
            if kind == "markdown":
                if line.strip() and not line.startswith("#"):
                    raise ValueError(f"line {lineno}: markdown cell line is not a comment")
                line = line[2:] if line.startswith("# ") else line[1:]
            lines.append(line)
    out = []
    for kind, lines in cells:
        source = "\n".join(lines).strip("\n")
        if source.strip():
            out.append((kind, source))
    return out


def to_notebook(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    """An nbformat v4 notebook of the cells, for the python3 kernel (and Colab)."""
    nb = nbformat.v4.new_notebook()
    make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}
    nb.cells = [make[kind](source) for kind, source in cells]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"  # stable ids: rebuilding the same source gives the same file
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["colab"] = {"provenance": []}
    return nb


def build(source_path: str = SOURCE) -> nbformat.NotebookNode:
    with open(source_path, encoding="utf-8") as f:
        return to_notebook(parse(f.read()))


def kernel_env() -> dict[str, str]:
    """The environment of the executing kernel: the repository importable, and no fake CPU
    devices (the test suite's 8 would make every experiment shard its batches)."""
    env = dict(os.environ)
    flags = re.sub(r"--xla_force_host_platform_device_count=\S*", "", env.pop("XLA_FLAGS", ""))
    if flags.strip():
        env["XLA_FLAGS"] = " ".join(flags.split())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH", "")) if p)
    env.setdefault("MPLBACKEND", "Agg")
    return env


def execute(nb: nbformat.NotebookNode, cwd: str | None = None, timeout: int = CELL_TIMEOUT):
    """Run every cell top to bottom in a fresh kernel; raises nbclient's CellExecutionError
    on the first cell that raises. Returns the notebook with its outputs."""
    from nbclient import NotebookClient

    with tempfile.TemporaryDirectory(prefix="anatomy_tour_") as scratch:
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": cwd or scratch}},
        )
        client.execute(env=kernel_env())  # env: the kernel process's environment
    return nb


def sources(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source) for c in nb.cells]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--execute", action="store_true", help="run it and keep the outputs")
    parser.add_argument("--check", action="store_true", help="compare tour.ipynb with tour.py")
    parser.add_argument("--out", default=NOTEBOOK)
    args = parser.parse_args(argv)
    nb = build()
    if args.check:
        committed = nbformat.read(args.out, as_version=4)
        if sources(committed) != sources(nb):
            print(f"{args.out} is stale: run python notebooks/build.py --execute")
            return 1
        print(f"{args.out} matches {SOURCE}")
        return 0
    if args.execute:
        execute(nb)
    nbformat.write(nb, args.out)
    print(f"wrote {args.out} ({len(nb.cells)} cells{', executed' if args.execute else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
