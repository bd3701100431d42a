"""attention_memory's claims table and plot, in the shape experiments/lab/publish.py reads."""

from __future__ import annotations

from experiments.lab.pages import claims_table

# KEY -> (committed result, renderer(doc))
RENDERERS = {"attention_memory/default": ("attention_memory/default", claims_table())}

# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {
    "attention_memory/default": (
        "experiments.attention_memory",
        {"attention_memory.png": "attention_memory.png"},
    ),
}
