"""recipe_sweep's tables in docs/results.md (every setting and model of a committed sweep,
the choice marked), in the shape experiments/lab/publish.py reads.
"""

from __future__ import annotations

from anatomy.tables import markdown_table


def _sweep_steps(res: dict) -> str:
    """'N steps per run', or the range where a grid sets each setting's steps (equal cost)."""
    steps = sorted({row[res["header"].index("steps")] for row in res["rows"]})
    if len(steps) <= 1:
        return f"{res['num_steps']} steps per run"
    return f"{steps[0]} to {steps[-1]} steps per run (each setting's: the steps column)"


def render_sweep(doc: dict) -> str:
    """Every (setting, model) of the equal-budget sweep, scored on the validation split."""
    res = doc["result"]
    header = res["header"]
    keep = ["setting", "model", "steps", "final acc", "valid loss", "BLEU", "1-10", "61+"]
    idx = [header.index(k) for k in keep]
    chosen = res["chosen"]
    rows = []
    for row in res["rows"]:
        picked = chosen.get(row[header.index("model")]) == row[header.index("setting")]
        rows.append([row[i] for i in idx] + ["chosen" if picked else ""])
    keep = keep[:5] + [f"valid {k}" for k in keep[5:]] + ["choice"]
    commit = ((res.get("provenance") or {}).get("commit") or "?")[:7]
    where = f"at commit {commit}" + ("; the result's `note` says more" if doc.get("note") else "")
    return "\n".join(
        [
            markdown_table(keep, rows),
            "",
            f"Scored on the {res['split']} split ({res['sentences_per_bucket']} sentences per "
            f"length bucket), {_sweep_steps(res)}, one seed."
            + (
                f" Chosen jointly (the best mean valid BLEU over the models, for what they "
                f"share): {res['chosen_jointly']}."
                if res.get("chosen_jointly")
                else ""
            )
            + f" Made by `{doc['command']}` {where}; `results/{doc['name']}.json`.",
        ]
    )


SWEEPS = (
    "budget",
    "rnnenc_800",
    "transformer_2000",
    "transformer_2000b",
    "transformer_arch",
    "gettext_vocab",
    "gettext_budget_sp2000_shared",
)  # the committed sweeps the pages show, results/recipe_sweep/<name>.json

# KEY -> (committed result, renderer(doc))
RENDERERS = {f"recipe_sweep/{s}": (f"recipe_sweep/{s}", render_sweep) for s in SWEEPS}
