"""crossover's blocks (its claims table, where each recurrence overtakes dense attention) and
plot, in the shape experiments/lab/publish.py reads.
"""

from __future__ import annotations

from anatomy.probes.claims import claims_markdown
from experiments.crossover import claims
from experiments.lab import record
from experiments.lab.pages import claims_table, made_by


def render_crossover_points(doc: dict) -> str:
    """Where each recurrence overtakes dense attention (its N*, experiments/crossover/claims.py),
    then flash-linear-attention's published GB200 crossover, an estimate for that machine."""
    judged = claims.table(record.stored(doc["result"]))
    skip = {f"crossover/{p}" for p in ("headline", "lstm_serial", "scan_serial", "assoc_serial",
                                        "attention_serial", "memory")}  # fmt: skip
    chosen = [c for c in judged if c.id not in skip]
    return f"{claims_markdown(chosen)}\n\nMade by {made_by(doc)}."


# KEY -> (committed result, renderer(doc))
RENDERERS = {
    "crossover/default": ("crossover/default", claims_table()),
    "crossover/points": ("crossover/default", render_crossover_points),
}

# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {"crossover/default": ("experiments.crossover.plots", {"crossover.png": "crossover.png"})}
