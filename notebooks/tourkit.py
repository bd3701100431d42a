"""The tour's plumbing (notebooks/tour.py imports it), so the notebook's cells read like the
chapter: showing a figure or a PNG, running an experiment quietly, rendering its claims and the
committed results as tables.

Everything an experiment prints goes to a buffer (its progress lines and markdown tables would
otherwise fill the notebook); what the tour shows is rendered: the claims of its report.md, the
committed plots under docs/img (drawn from results/ by experiments.lab.publish) and the closing
table regenerated from the committed results.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import tempfile

import matplotlib

matplotlib.use("Agg")  # figures are shown as PNGs, the same in Jupyter, Colab and CI
import matplotlib.pyplot as plt
from IPython.display import Image, Markdown, display
from PIL import Image as PILImage

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = tempfile.mkdtemp(prefix="anatomy_tour_")  # every experiment the tour runs writes here


def show(fig, dpi=72):
    """Show a matplotlib figure as a modest PNG (and close it)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    display(Image(buf.getvalue()))


def show_png(path, width=900):
    """Show a PNG, scaled down to `width` pixels."""
    img = PILImage.open(path)
    if img.width > width:
        img = img.resize((width, round(img.height * width / img.width)), PILImage.LANCZOS)
    buf = io.BytesIO()
    img.convert("RGB").save(buf, format="png", optimize=True)
    display(Image(buf.getvalue()))


def show_committed(image, width=900):
    """Show a committed plot, docs/img/<image>: drawn from its committed result."""
    show_png(os.path.join(ROOT, "docs", "img", image), width)


def run_experiment(name, preset="quick", **overrides):
    """experiments.<name>.run(get_config(preset) + overrides, workdir), what launch.py does,
    with what it prints kept out of the notebook. Returns (results, workdir).

    overrides: dotted config fields with '__' for '.', e.g. train__num_steps=300.
    """
    module = importlib.import_module(f"experiments.{name}")
    config = importlib.import_module(f"experiments.configs.{name}").get_config(preset)
    config.update_from_flattened_dict({k.replace("__", "."): v for k, v in overrides.items()})
    workdir = os.path.join(WORK, name)
    os.makedirs(workdir, exist_ok=True)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        results = module.run(config, workdir)
    return results, workdir


def report_section(workdir, heading="Claims"):
    """One section of an experiment's report.md (its claims table, with verdicts), rendered."""
    text = open(os.path.join(workdir, "report.md"), encoding="utf-8").read()
    m = re.search(rf"^## {heading}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    body = m.group(1) if m else text
    display(Markdown(re.sub(r"!\[[^]]*\]\([^)]*\)", "", body)))


def block_markdown(key) -> str:
    """A block of the docs as experiments.lab.publish renders it from the committed results
    (e.g. 'chapter/closing', 'chapter/claim/stackability'), its image links dropped."""
    from experiments.lab import publish

    return re.sub(r"!\[[^]]*\]\([^)]*\)", "", publish.render(key))


def committed_block(key):
    """block_markdown(key), rendered as markdown."""
    display(Markdown(block_markdown(key)))
