"""How every experiment writes into its workdir, beside results.json (jsonio.py): report.md and
PNG plots, each plot stamped with what it is drawn from (its tables print through
anatomy.tables). experiments/lab/record.py puts them together into the tail every run()
shares."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import math
import os
import textwrap
from collections.abc import Sequence

from anatomy import paths
from experiments.lab.jsonio import jsonable


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
    from (experiments.lab.publish stamps it; tests/test_docs.py checks it)."""
    text = json.dumps(jsonable(result), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@contextlib.contextmanager
def stamping(name: str, result: dict):
    """Every plot saved inside carries the result it is drawn from: its name
    ('rnn_vs_attn/seeds') and result_digest(result), as PNG text chunks, and a visible footer
    naming results/<name>.json with the commit, machine and load its run recorded."""
    from experiments.lab import provenance

    token = _STAMP.set(((STAMP_KEYS[0], name), (STAMP_KEYS[1], result_digest(result))))
    footer = _FOOTER.set(footer_text(f"results/{name}.json", provenance.of_result(result)))
    try:
        yield
    finally:
        _FOOTER.reset(footer)
        _STAMP.reset(token)


_FOOTER: contextvars.ContextVar[str] = contextvars.ContextVar("plot_footer", default="")
FOOTER_STYLE = {"fontsize": 6.5, "color": "#525252"}
_SEP = " · "


def footer_text(source: str, prov: dict, load_when: str = "") -> str:
    """A figure's footer: the result file it is drawn from, the commit, the machine and the
    load its run recorded, e.g. 'results/rnn_vs_attn/seeds.json · commit 8a41399 · 2 cores,
    AMD EPYC (AVX512) · 1-minute load 1.2 before, 5.1 after'. load_when: how to read a
    single recorded load ('when drawn'); a run's own record says before and after."""
    commit = (prov.get("commit") or "")[:7]
    commit = f"commit {commit}" if commit else "no git commit recorded"
    if prov.get("dirty"):
        commit += " with uncommitted changes"
    cpu = prov.get("cpu") or {}
    machine = f"{prov.get('cpus', '?')} cores"
    if cpu.get("model"):
        machine += f", {cpu['model']}" + (f" ({cpu['isa']})" if cpu.get("isa") else "")
    device = prov.get("device_kind") or ""
    if device and not device.lower().startswith("cpu"):
        machine += f", {device}"
    before, after = prov.get("loadavg"), prov.get("loadavg_after")
    if before and after:
        load = f"1-minute load {before[0]:.1f} before, {after[0]:.1f} after"
    elif before:
        load = f"1-minute load {before[0]:.1f}" + (f" {load_when}" if load_when else "")
    else:
        load = "load not recorded"
    return _SEP.join([source, commit, machine, load])


def _drawn_here(workdir: str) -> str:
    """The footer of a plot drawn by a run (not from a committed result): its workdir's
    results.json, and this checkout's commit, this machine and its load now."""
    from experiments.lab import provenance

    return footer_text(paths.join(workdir, "results.json"), provenance.provenance(), "when drawn")


def _slot(fig, ax, renderer) -> float:
    """The width a title centred on `ax` may take without running into a neighbour's or off
    the figure: twice the distance from the axes' centre to the nearer edge of its slot (the
    figure's edge, or halfway to the next axes in its row)."""
    box = ax.get_window_extent(renderer)
    left, right = fig.bbox.x0, fig.bbox.x1
    for other in fig.axes:
        o = other.get_window_extent(renderer)
        if other is ax or o.y1 <= box.y0 or o.y0 >= box.y1:  # not in this row
            continue
        if o.x1 <= box.x0:
            left = max(left, (o.x1 + box.x0) / 2)
        elif o.x0 >= box.x1:
            right = min(right, (box.x1 + o.x0) / 2)
    centre = (box.x0 + box.x1) / 2
    return 2 * min(centre - left, right - centre) * 0.98


def _wrap_to(text_artist, width: float, renderer) -> bool:
    """Wrap a text artist's lines (at spaces, into lines of about equal length) until it is
    no wider than `width` pixels; returns whether it changed."""
    changed = False
    for _ in range(6):
        have = text_artist.get_window_extent(renderer).width
        if have <= width or not text_artist.get_text().strip():
            return changed
        lines = text_artist.get_text().split("\n")
        longest = max(len(line) for line in lines)
        parts = math.ceil(have / width)  # the longest line in this many, balanced
        chars = max(12, min(longest - 1, math.ceil(longest / parts) + 2))
        text_artist.set_text(
            "\n".join(textwrap.fill(line, chars) if len(line) > chars else line for line in lines)
        )
        changed = True
    return changed


def fit_titles(fig) -> None:
    """Wrap every axes title and the figure's suptitle that would be cut by the figure's edge
    or run into a neighbouring panel's title (tight_layout moves axes, never breaks a line)."""
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        _wrap_to(ax.title, _slot(fig, ax, renderer), renderer)
    if fig._suptitle is not None:
        _wrap_to(fig._suptitle, fig.bbox.width * 0.98, renderer)


def add_footer(fig, text: str) -> None:
    """The footer under everything, at the figure's left edge in small grey type (wrapped
    at ' · ' where it would run off the figure), the axes laid out above it."""
    renderer = fig.canvas.get_renderer()
    note = fig.text(0.01, 0.01, text, ha="left", va="bottom", **FOOTER_STYLE)
    width = fig.bbox.width * 0.98
    if note.get_window_extent(renderer).width > width:
        lines, line = [], ""
        for part in text.split(_SEP):
            trial = line + _SEP + part if line else part
            note.set_text(trial)
            if line and note.get_window_extent(renderer).width > width:
                lines.append(line)
                line = part
            else:
                line = trial
        note.set_text((_SEP.rstrip() + "\n").join([*lines, line]))
        _wrap_to(note, width, renderer)  # a single part still too long
    height = (note.get_window_extent(renderer).height + 6) / fig.bbox.height
    fig.tight_layout(rect=(0, min(height + 0.01, 0.3), 1, 1))


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
    close it; returns the file name. Every figure carries a visible footer (add_footer):
    inside `stamping(...)` the committed result it is drawn from, the commit, machine and load
    its run recorded (and, as PNG text chunks, the result's name and digest); drawn by a run,
    its workdir's results.json, this checkout's commit, this machine and its load when drawn.
    Titles are wrapped to fit (fit_titles). No date or software version is written, so a
    figure drawn from a committed result is the same bytes every time."""
    fig.tight_layout()
    fit_titles(fig)
    add_footer(fig, _FOOTER.get() or _drawn_here(workdir))
    meta = {"Software": None, **dict(_STAMP.get())}
    with paths.path(workdir).joinpath(name).open("wb") as f:
        fig.savefig(f, format="png", dpi=110, metadata=meta)
    close(fig)
    return name


def drawn_by(plot):
    """The draw(results, workdir) of an experiment whose one figure is plot(config, raw,
    workdir): [that PNG] from results.json alone (a run's, or a committed one's), its config
    as a ConfigDict and its raw measurements."""
    import ml_collections

    def draw(results, workdir) -> list[str]:
        return [plot(ml_collections.ConfigDict(results["config"]), results["raw"], workdir)]

    return draw


def grid_ticks(ax, values) -> None:
    """Label a log x-axis at the grid values only (no overlapping minor labels)."""
    from matplotlib.ticker import NullFormatter

    ax.set_xticks(list(values))
    ax.set_xticklabels([str(v) for v in values])
    ax.xaxis.set_minor_formatter(NullFormatter())


def plot_series(ax, series, y, *, x="n", scale=1.0, loglog=True, dotted=()) -> None:
    """One line per named series ({name: [row dict, ...]}): row[y]·scale against row[x], on
    log-log axes (loglog=False: linear), in each name's look (experiments.lab.style), dotted for
    names in `dotted`."""
    from experiments.lab import style

    draw = ax.loglog if loglog else ax.plot
    for name, rows in series.items():
        look = style.line(name) | ({"linestyle": ":"} if name in dotted else {})
        draw([r[x] for r in rows], [r[y] * scale for r in rows], label=name, **look)
