"""complexity's blocks (its claims table, the chapter's per-layer cost row) and plot, in the
shape experiments/lab/publish.py reads.
"""

from __future__ import annotations

from experiments.lab.pages import claims_table, source, verdict


def render_chapter_complexity(doc: dict) -> str:
    """Row 4: the fitted FLOP exponents of the LSTM layer and the attention core."""
    e = lambda k, ax: f"{doc['result']['fits'][k][ax]['exponent']:.2f}"
    return (
        f"{verdict(doc, 'complexity/per_layer')}: FLOPs ∝ N^{e('recurrent', 'N')}·"
        f"d^{e('recurrent', 'd')} for the LSTM, N^{e('attention_core', 'N')}·"
        f"d^{e('attention_core', 'd')} for attention ({source(doc)})"
    )


# KEY -> (committed result, renderer(doc))
RENDERERS = {
    "complexity/default": ("complexity/default", claims_table()),
    "chapter/complexity": ("complexity/default", render_chapter_complexity),
}

# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {
    "complexity/default": ("experiments.complexity.plots", {"complexity.png": "complexity.png"})
}
