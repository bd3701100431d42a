"""decode_cost's blocks (its claims table, the chapter's decoding-cost row) and plot, in the
shape experiments/lab/publish.py reads.
"""

from __future__ import annotations

from experiments.lab.pages import claims_table, source, verdict


def render_chapter_decode(doc: dict) -> str:
    """Row 6: the per-token FLOP exponents in N of the RNN step, the KV cache, recomputation."""
    e = lambda k: f"{doc['result']['fits'][k]['flops_n_dependent']['exponent']:.2f}"
    return (
        f"{verdict(doc, 'decode_cost/per_token')}: per-token FLOPs ∝ N^{e('rnn')} (RNN), "
        f"N^{e('kv_cache')} (KV cache), N^{e('recompute')} (recomputation) ({source(doc)})"
    )


# KEY -> (committed result, renderer(doc))
RENDERERS = {
    "decode_cost/default": ("decode_cost/default", claims_table()),
    "chapter/decode_cost": ("decode_cost/default", render_chapter_decode),
}

# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {
    "decode_cost/default": (
        "experiments.decode_cost.plots",
        {"decode_cost.png": "decode_cost.png"},
    ),
}
