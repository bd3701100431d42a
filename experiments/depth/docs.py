"""depth's blocks (its three runs' claims tables, the chapter's stackability row) and plots, in
the shape experiments/lab/publish.py reads.
"""

from __future__ import annotations

from experiments.lab.pages import claims_table, quote

# KEY -> (committed result, renderer(doc))
RENDERERS = {
    "chapter/stackability": ("depth/default", quote("depth/stackability")),
    "depth/default": ("depth/default", claims_table()),
    "depth/stability": ("depth/stability", claims_table()),
    "depth/xiong": ("depth/xiong", claims_table()),
}

# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {
    "depth/default": (
        "experiments.depth.plots",
        {
            "loss_vs_depth.png": "loss_vs_depth.png",
            "grad_norms_at_init.png": "grad_norms_at_init.png",
        },
    ),
    "depth/stability": ("experiments.depth.plots", {"warmup_curves.png": "warmup_curves.png"}),
    "depth/xiong": ("experiments.depth.plots", {"xiong_exponents.png": "xiong_exponents.png"}),
}
