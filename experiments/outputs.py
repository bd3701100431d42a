"""How every experiment writes into its workdir: results.json (plain JSON), markdown tables
with one number format, report.md, PNG plots. experiments/record.py puts them together into
the tail every run() shares."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import math
import os
from collections.abc import Iterable, Sequence
from typing import Any

from anatomy import paths


def jsonable(x: Any) -> Any:
    """Turn numpy / jax scalars and arrays into plain JSON; non-finite floats into null."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if hasattr(x, "tolist"):  # numpy / jax arrays and scalars
        return jsonable(x.tolist())
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def write_json(workdir: str, results: dict, name: str = "results.json") -> str:
    """Write `results` as indented JSON into `workdir/name` (a local folder or a gs:// one:
    anatomy.paths); returns the path."""
    paths.makedirs(workdir)
    path = paths.join(workdir, name)
    # never leave a half-written results.json
    paths.write_text(path, json.dumps(jsonable(results), indent=2, sort_keys=False), atomic=True)
    return path


def format_number(v: Any) -> str:
    """How every table prints a value. Floats: whole numbers as integers (2000, not 2e+03),
    10 and above with one decimal (BLEU 95.97 -> 96.0, never rounded up to a bare 96), below 10
    to 3 significant digits, 10,000 and above without decimals; NaN/inf as a dash."""
    if isinstance(v, float):
        if not math.isfinite(v):
            return "—"
        if v == int(v):
            return str(int(v))
        return f"{v:.0f}" if abs(v) >= 1e4 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}"
    return str(v)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-markdown table, each value printed by format_number."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(format_number(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write_report(
    workdir: str, title: str, sections: Sequence[tuple[str, str]], name: str = "report.md"
) -> str:
    """Write a markdown report: `# title`, then `## heading` + body per section."""
    parts = [f"# {title}", ""]
    for heading, body in sections:
        parts += [f"## {heading}", "", body.rstrip(), ""]
    path = paths.join(workdir, name)
    paths.write_text(path, "\n".join(parts))
    return path


def images(pngs: Sequence[str]) -> str:
    """Markdown showing each PNG (a path relative to report.md), its name as the alt text."""
    return "\n\n".join(f"![{os.path.splitext(os.path.basename(p))[0]}]({p})" for p in pngs)


def new_figure(*args, **kwargs):
    """A matplotlib figure on the non-interactive Agg backend (no screen here or in CI)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


_STAMP: contextvars.ContextVar[tuple] = contextvars.ContextVar("plot_stamp", default=())
STAMP_KEYS = ("anatomy-result", "anatomy-digest")  # the PNG text chunks save_plot writes


def result_digest(result: dict) -> str:
    """A digest of a result as JSON (sorted keys): what a committed plot says it was drawn
    from (experiments.publish stamps it; tests/test_docs.py checks it)."""
    text = json.dumps(jsonable(result), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@contextlib.contextmanager
def stamping(name: str, result: dict):
    """Every plot saved inside carries the result it is drawn from: its name
    ('rnn_vs_attn/seeds') and result_digest(result), as PNG text chunks."""
    token = _STAMP.set(((STAMP_KEYS[0], name), (STAMP_KEYS[1], result_digest(result))))
    try:
        yield
    finally:
        _STAMP.reset(token)


def read_stamp(png_path) -> dict:
    """The text chunks of a PNG that save_plot stamped ({} when there are none)."""
    from PIL import Image

    with Image.open(png_path) as im:
        return {k: v for k, v in (im.text or {}).items() if k in STAMP_KEYS}


def close(fig) -> None:
    """Close a figure that is not saved."""
    import matplotlib.pyplot as plt

    plt.close(fig)


def save_plot(fig, workdir: str, name: str) -> str:
    """Save a figure as `workdir/name` (PNG, through anatomy.paths: a gs:// workdir too) and
    close it; returns the file name. Inside `stamping(...)` the PNG names the result it is
    drawn from; no date or software version is written, so the same figure is the same bytes."""
    fig.tight_layout()
    meta = {"Software": None, **dict(_STAMP.get())}
    with paths.path(workdir).joinpath(name).open("wb") as f:
        fig.savefig(f, format="png", dpi=110, metadata=meta)
    close(fig)
    return name


def grid_ticks(ax, values) -> None:
    """Label a log x-axis at the grid values only (no overlapping minor labels)."""
    from matplotlib.ticker import NullFormatter

    ax.set_xticks(list(values))
    ax.set_xticklabels([str(v) for v in values])
    ax.xaxis.set_minor_formatter(NullFormatter())


def plot_series(ax, series, y, *, x="n", scale=1.0, loglog=True, dotted=()) -> None:
    """One line per named series ({name: [row dict, ...]}): row[y]·scale against row[x], on
    log-log axes (loglog=False: linear), in each name's look (experiments.style), dotted for
    names in `dotted`."""
    from experiments import style

    draw = ax.loglog if loglog else ax.plot
    for name, rows in series.items():
        look = style.line(name) | ({"linestyle": ":"} if name in dotted else {})
        draw([r[x] for r in rows], [r[y] * scale for r in rows], label=name, **look)
