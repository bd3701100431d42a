"""parallelism's blocks (its claims table, the chapter's serial-steps and speed-up rows) and
plot, in the shape experiments/lab/publish.py reads.
"""

from __future__ import annotations

from experiments.lab.pages import claims_table, f, prov, source, verdict


def render_chapter_steps(doc: dict) -> str:
    """Row 3: serial steps read from the compiled programs (exact counts)."""
    a = doc["result"]["analysis"]
    return (
        f"{verdict(doc, 'parallelism/distance')}: {a['lstm_steps_per_token'] / 2:.2f}·N serial "
        f"steps for the LSTM (forward; {a['lstm_steps_per_token']:.2f}·N with the backward), "
        f"{a['attention_max_steps']} for attention ({source(doc)})"
    )


def render_chapter_speedup(doc: dict) -> str:
    """Row 5: the measured LSTM/attention training-time ratio at N = 512, with its load."""
    a = doc["result"]["analysis"]
    load = a.get("load_average_before_after") or [None, None]
    cores = prov(doc["result"]).get("cpus", "?")
    return (
        f"{verdict(doc, 'parallelism/speedup')} on this CPU: at N = {a['ratio_n']} attention's "
        f"forward+backward speed is {a['ratio_lstm_over_attention']:.2f}x the LSTM's on {cores} "
        f"cores (1-minute load {f(float(load[0] or 'nan'))} before, {f(float(load[1] or 'nan'))} "
        f"after); not run on a GPU ({source(doc)})"
    )


# KEY -> (committed result, renderer(doc))
RENDERERS = {
    "parallelism/default": ("parallelism/default", claims_table()),
    "chapter/steps": ("parallelism/default", render_chapter_steps),
    "chapter/speedup": ("parallelism/default", render_chapter_speedup),
}

# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {
    "parallelism/default": (
        "experiments.parallelism.plots",
        {"parallelism.png": "parallelism.png"},
    ),
}
