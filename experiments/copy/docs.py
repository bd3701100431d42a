"""copy's blocks (its claims table, exact match by length, its learning rates) and plot, in the
shape experiments/lab/publish.py reads.
"""

from __future__ import annotations

import functools

from experiments.configs.recall import GRID
from experiments.lab.pages import claims_table, render_rates, table_of

# KEY -> (committed result, renderer(doc))
RENDERERS = {
    "copy/default": ("copy/default", claims_table()),
    "copy/exact": ("copy/default", table_of("experiments.copy.plots", "exact_table")),
    "copy/rates": ("copy/default", functools.partial(render_rates, middle=GRID[1])),
}

# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {"copy/default": ("experiments.copy.plots", {"copy_length.png": "copy_length.png"})}
