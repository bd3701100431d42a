"""gradient_decay's blocks (its claims table, the chapter's gradients row) and plots, in the
shape experiments/lab/publish.py reads.
"""

from __future__ import annotations

from experiments.lab.pages import claims_table, quote

# KEY -> (committed result, renderer(doc))
RENDERERS = {
    "gradient_decay/default": ("gradient_decay/default", claims_table()),
    "chapter/gradients": ("gradient_decay/default", quote("gradient_decay/gradients")),
}

# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {
    "gradient_decay/default": (
        "experiments.gradient_decay.plots",
        {
            "gradient_decay.png": "gradient_decay.png",
            "rates.png": "gradient_decay_rates.png",
            "clipping.png": "gradient_decay_clipping.png",
        },
    ),
}
