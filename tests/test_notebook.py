"""The guided tour: notebooks/tour.py runs top to bottom in a fresh kernel, and the committed
notebooks/tour.ipynb is that source, executed (outputs and plots kept).

Regenerate the committed copy with `python notebooks/build.py --execute`.
"""

import importlib.util
import pathlib
import re

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("tour_build", ROOT / "notebooks" / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

_SHOWS = re.compile(r"^\s*show(?:_png)?\(", re.M)  # the tour's two ways to draw a plot


def _check_outputs(nb):
    """Every code cell ran, none raised, and every cell that draws a plot has a PNG in it."""
    assert nb.cells, "empty notebook"
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        assert cell.execution_count is not None, f"cell {i} did not run"
        kinds = [o.output_type for o in cell.outputs]
        assert "error" not in kinds, f"cell {i} raised"
        pngs = sum("image/png" in o.get("data", {}) for o in cell.outputs)
        wanted = len(_SHOWS.findall(cell.source))
        assert pngs >= wanted, f"cell {i} draws {wanted} plots, shows {pngs}"
    return sum(
        "image/png" in o.get("data", {})
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )


def test_percent_format_parses_into_cells():
    text = (
        "# header, not a cell\n"
        "# %% [markdown]\n# # Title\n#\n# text $x$\n"
        "# %%\nimport os\n\nx = 1  # a comment stays\n\n"
        "# %%\n\n"  # empty: dropped
        "# %% [markdown]\n#no space\n"
    )
    assert build.parse(text) == [
        ("markdown", "# Title\n\ntext $x$"),
        ("code", "import os\n\nx = 1  # a comment stays"),
        ("markdown", "no space"),
    ]
    with pytest.raises(ValueError, match="line 3"):
        build.parse("# %% [markdown]\n# fine\nnot a comment\n")
    nb = build.to_notebook(build.parse(text))
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "markdown"]
    assert nb.metadata.kernelspec.name == "python3"
    nbformat.validate(nb)


def test_committed_notebook_is_the_source_executed():
    committed = nbformat.read(ROOT / "notebooks" / "tour.ipynb", as_version=4)
    assert build.sources(committed) == build.sources(build.build()), (
        "notebooks/tour.ipynb is stale: run python notebooks/build.py --execute"
    )
    assert _check_outputs(committed) >= 9  # the tour's plots are visible on a code host


def test_the_committed_tours_blocks_equal_the_docs_blocks_now():
    """Every committed_block(...) output in the committed notebook is the block as the docs
    render it now from the committed results (a re-made result or a changed rule makes the
    tour stale: python notebooks/build.py --execute)."""
    import sys

    sys.path.insert(0, str(ROOT / "notebooks"))
    try:
        import tourkit
    finally:
        sys.path.remove(str(ROOT / "notebooks"))
    committed = nbformat.read(ROOT / "notebooks" / "tour.ipynb", as_version=4)
    seen = 0
    for cell in committed.cells:
        keys = re.findall(r'^committed_block\("([^"]+)"\)', cell.source, re.M)
        if cell.cell_type != "code" or not keys:
            continue
        shown = [
            o["data"]["text/markdown"] for o in cell.outputs if "text/markdown" in o.get("data", {})
        ]
        assert len(shown) == len(keys), cell.source
        for key, text in zip(keys, shown):
            assert text == tourkit.block_markdown(key), (
                f"the tour's {key!r} is stale: python notebooks/build.py --execute"
            )
            seen += 1
    assert seen >= 5


def test_tour_installs_nothing_from_a_placeholder_home():
    """The repository has no public home yet: no install cell, no link to a placeholder owner."""
    text = (ROOT / "notebooks/tour.py").read_text()
    assert "OWNER" not in text and "pip install -q" not in text


# The tour's two training loops at a tenth of their steps: this test checks that every cell
# runs and draws, not what the models learn (the committed notebook shows the full run, and no
# cell asserts on a trained value). Each substitution must hit exactly once.
SHORTER = {
    "V, L_MAX, BATCH, STEPS = 24, 12, 32, 200": "V, L_MAX, BATCH, STEPS = 24, 12, 32, 20",
    "train__num_steps=300,": "train__num_steps=30,",
    "train__warmup_steps=30,": "train__warmup_steps=3,",
    "train__eval_every=100,": "train__eval_every=10,",
    "train__checkpoint_every=300,": "train__checkpoint_every=30,",
}


def shortened(nb):
    for cell in nb.cells:
        for old, new in SHORTER.items():
            cell.source = cell.source.replace(old, new)
    text = "\n".join(c.source for c in nb.cells)
    assert all(text.count(new) == 1 for new in SHORTER.values()), "the tour's steps moved"
    return nb


@pytest.mark.slow
def test_tour_executes_top_to_bottom(tmp_path):
    """The whole tour in a fresh python3 kernel, in a scratch directory, its training loops
    shortened; nbclient raises CellExecutionError (with the cell's traceback) on the first
    failing cell. The kernel inherits the suite's XLA_FLAGS (conftest: backend optimisation
    level 0; the tour alone, from a cold compilation cache: 105.7 s at the default level,
    75.1 s at 0); this test reads no value that the level could change (the committed
    notebook is executed at the default level)."""
    nb = build.execute(shortened(build.build()), cwd=str(tmp_path), timeout=build.CELL_TIMEOUT)
    assert _check_outputs(nb) >= 9
