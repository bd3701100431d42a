"""long_range's plot (long_range.png) and the tables and prose of its report.md, drawn and
written from what results.json holds alone (a committed result is redrawn by the same code)."""

import numpy as np

from anatomy.tables import markdown_table
from experiments.lab import outputs, style
from experiments.long_range.claims import accuracies, recall_bar


def _mean(values) -> float:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else float("nan")


def draw(results, workdir) -> list[str]:
    """Every plot of a results.json (as record.stored reads it, or a committed result's
    "result") into workdir: [long_range.png]."""
    return [accuracy_plot(results, workdir)]


def accuracy_plot(results, workdir) -> str:
    """long_range.png: each model's accuracy against k, the mean over the seeds with their
    range as error bars; chance, the recall bar, the readers without recall (dashed) and the
    conv stack's receptive field."""
    cfg, ks = results["config"], results["k_grid"]
    fig, ax = outputs.new_figure(figsize=(7.5, 4.8))
    for name, r in results["models"].items():
        accs = [accuracies(results, name, k) for k in ks]
        mean = np.array([_mean(a) for a in accs])
        lo = mean - np.array([min(a) for a in accs])
        hi = np.array([max(a) for a in accs]) - mean
        ax.errorbar(
            ks,
            mean,
            yerr=[lo, hi],
            capsize=3,
            label=f"{name} ({r['params']} params)",
            **style.line(name),
        )
    for name, marker in (("unigram", "x"), ("position", "+")):
        if name in results.get("readers", {}):
            acc = [_mean(accuracies(results, name, k)) for k in ks]
            ax.plot(
                ks,
                acc,
                "-.",
                marker=marker,
                color="#bdbdbd",
                lw=1,
                label=f"reader by {name} (no recall)",
            )
    style.chance(ax, results["chance"], "chance 1/V")
    ax.axhline(recall_bar(results["chance"]), **style.REFERENCE, label="recall bar")
    if "conv" in results["models"]:
        field = 1 + cfg["conv_layers"] * (cfg["conv_kernel"] - 1)
        ax.axvline(field, color="grey", lw=0.8, alpha=0.6)
        ax.text(field, 0.02, f" conv field F={field}", fontsize=7, color="grey")
    ax.set_xscale("log", base=2)
    outputs.grid_ticks(ax, ks)
    ax.set(
        xlabel="recall distance k",
        ylabel="accuracy",
        ylim=(0, 1.05),
        title=f"recall x_(t-k): {cfg['steps']} Adam steps per point, equal parameter budget, "
        f"{len(cfg['seeds'])} seeds",
    )
    ax.legend(fontsize=7)
    return outputs.save_plot(fig, workdir, "long_range.png")


def accuracy_table(results) -> str:
    """report.md's "Accuracy": mean accuracy over the seeds (min-max) per model and k, then
    the readers without recall."""
    ks = results["k_grid"]

    def cell(values) -> str:
        vals = [v for v in values if v is not None]
        return f"{_mean(vals):.3f} ({min(vals):.3f}-{max(vals):.3f})" if vals else "—"

    rows = [
        (name, r["width"], r["params"], *(cell(accuracies(results, name, k)) for k in ks))
        for name, r in results["models"].items()
    ]
    rows += [
        (f"reader by {name}", "—", 0, *(cell(accuracies(results, name, k)) for k in ks))
        for name in results.get("readers", {})
    ]
    return markdown_table(("model", "width", "params", *(f"k={k}" for k in ks)), rows)


def notes(results) -> str:
    """report.md's "How it was measured"."""
    cfg, chance = results["config"], results["chance"]
    length = max(results["k_grid"]) + cfg["extra_length"]
    return (
        f"Vocabulary {cfg['vocab']} (chance {chance:.3f}), sequence length {length} for every k, "
        f"{cfg['steps']} Adam steps of {cfg['batch']} sequences (lr {cfg['learning_rate']:g}, "
        f"clip 1.0) per (model, k, seed), from scratch; every model sized to "
        f"~{cfg['param_budget']} parameters. Seeds {', '.join(str(s) for s in cfg['seeds'])}: "
        "each fixes, per k, the initial weights, the training stream and the held-out batch "
        f"({cfg['eval_batch']} sequences), the same for every model. Cells: mean over the "
        f"seeds (min-max). The recall bar is {recall_bar(chance):.4f} (1/V + "
        "half the way to perfect); the readers without recall (by position only, by unigram "
        "counts of the prefix) are scored on the same held-out batches. Small, short runs: a "
        "model that fails here might succeed with more steps; the comparison is at equal "
        "budget."
    )
