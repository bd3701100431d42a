"""long_range's claims table and plot, in the shape experiments/lab/publish.py reads."""

from __future__ import annotations

from experiments.lab.pages import claims_table

# KEY -> (committed result, renderer(doc))
RENDERERS = {"long_range/default": ("long_range/default", claims_table())}

# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {
    "long_range/default": ("experiments.long_range.plots", {"long_range.png": "long_range.png"})
}
