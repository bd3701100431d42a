"""The one way every table prints its numbers: `format_number` for a value, `mean_std` for a
value over seeds, `markdown_table` for a GitHub-markdown table of them. The experiments' reports, the published docs and the
benchmarks' BENCHMARKS.md all print through it, so a number reads the same everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


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


def mean_std(xs, *, ddof: int = 0) -> str:
    """'mean ± std' to 3 decimals over the values of `xs` (nested lists flattened; None and
    NaN are missing and left out), the standard deviation with `ddof`; the value alone for
    one, '—' for none."""
    flat = np.ravel(np.asarray(xs, dtype=object))
    vals = np.asarray([x for x in flat if x is not None and np.isfinite(float(x))], float)
    if not len(vals):
        return "—"
    return f"{vals.mean():.3f} ± {vals.std(ddof=ddof):.3f}" if len(vals) > 1 else f"{vals[0]:.3f}"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-markdown table, each value printed by format_number."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(format_number(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
