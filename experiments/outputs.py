"""How every experiment writes into its workdir: results.json (plain JSON), markdown tables
with one number format, report.md, PNG plots. experiments/record.py puts them together into
the tail every run() shares."""

from __future__ import annotations

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


def save_plot(fig, workdir: str, name: str, metadata: dict | None = None) -> str:
    """Save a figure as `workdir/name` (PNG, through anatomy.paths: a gs:// workdir too) and
    close it; returns the file name. metadata: PNG text fields (e.g. {'Source': the committed
    result it is drawn from})."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    with paths.path(workdir).joinpath(name).open("wb") as f:
        fig.savefig(f, format="png", dpi=110, metadata=metadata)
    plt.close(fig)
    return name


def grid_ticks(ax, values) -> None:
    """Label a log x-axis at the grid values only (no overlapping minor labels)."""
    from matplotlib.ticker import NullFormatter

    ax.set_xticks(list(values))
    ax.set_xticklabels([str(v) for v in values])
    ax.xaxis.set_minor_formatter(NullFormatter())


def plot_series(ax, series, y, *, x="n", scale=1.0, loglog=True, dotted=()) -> None:
    """One line per named series ({name: [row dict, ...]}): row[y]·scale against row[x], on
    log-log axes (loglog=False: linear), circles joined by a line, dotted for names in `dotted`."""
    draw = ax.loglog if loglog else ax.plot
    for name, rows in series.items():
        style = "o:" if name in dotted else "o-"
        draw([r[x] for r in rows], [r[y] * scale for r in rows], style, label=name)
