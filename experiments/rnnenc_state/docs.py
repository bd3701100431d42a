"""rnnenc_state's claims table and plot, in the shape experiments/lab/publish.py reads."""

from __future__ import annotations

from experiments.lab.pages import claims_table

# KEY -> (committed result, renderer(doc))
RENDERERS = {"rnnenc_state/default": ("rnnenc_state/default", claims_table())}

# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {
    "rnnenc_state/default": (
        "experiments.rnnenc_state.plots",
        {"rnnenc_state.png": "rnnenc_state.png"},
    ),
}
