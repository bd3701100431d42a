"""scaling's blocks (its claims table, the chapter's scaling and predicted speed rows) and plot,
in the shape experiments/lab/publish.py reads.
"""

from __future__ import annotations

from experiments.lab.pages import claims_table, quote

# KEY -> (committed result, renderer(doc))
RENDERERS = {
    "chapter/scaling": ("scaling/default", quote("scaling/structure")),
    "chapter/speedup_predicted": ("scaling/default", quote("scaling/speed_ratio", detail=True)),
    "chapter/time_to_loss_predicted": (
        "scaling/default",
        quote("scaling/time_to_loss", detail=True),
    ),
    "scaling/default": ("scaling/default", claims_table()),
}

# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {"scaling/default": ("experiments.scaling.report", {"scaling.png": "scaling.png"})}
