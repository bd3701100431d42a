"""recall's blocks (its claims table, Zoology's and Based's findings beside them, the frontier
and length tables, its learning rates) and plots, in the shape experiments/lab/publish.py
reads.
"""

from __future__ import annotations

import functools

from experiments.configs.recall import GRID
from experiments.lab.pages import claims_table, render_rates, table_of

# KEY -> (committed result, renderer(doc))
RENDERERS = {
    "recall/default": ("recall/default", claims_table()),
    # Zoology's and Based's findings beside recall's claims, point by point
    "recall/papers": ("recall/default", table_of("experiments.recall.plots", "comparison")),
    "recall/frontier": ("recall/default", table_of("experiments.recall.plots", "frontier_table")),
    "recall/lengths": ("recall/default", table_of("experiments.recall.plots", "lengths_table")),
    "recall/rates": ("recall/default", functools.partial(render_rates, middle=GRID[1])),
}

# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {
    "recall/default": (
        "experiments.recall.plots",
        {"recall_frontier.png": "recall_frontier.png", "recall_lengths.png": "recall_lengths.png"},
    ),
}
