"""context_length's blocks (its claims table, the chapter's context row) and plots, in the shape
experiments/lab/publish.py reads.
"""

from __future__ import annotations

from experiments.lab.pages import claims_table, quote

# KEY -> (committed result, renderer(doc))
RENDERERS = {
    "chapter/context": ("context_length/default", quote("context_length/context_extension")),
    "context_length/default": ("context_length/default", claims_table()),
}

# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {
    "context_length/default": (
        "experiments.context_length.plots",
        {
            png: png
            for png in (
                "context_length_loss.png",
                "context_length_probe.png",
                "context_length_extension.png",
            )
        },
    ),
}
