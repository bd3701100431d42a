"""context_length's plots: loss against position and length (Press et al. 2022, Fig. 1's
shape), the retrieval probe against distance, and RoPE's extension."""

import numpy as np

from experiments import outputs

PRETRAINED_STYLE = "-"
ZERO_SHOT_STYLE = "--"


def _binned(values, width):
    """Means of consecutive groups of `width` values pairs: (centres, means)."""
    v = np.asarray([np.nan if x is None else x for x in values], float)
    n = len(v) // width * width
    means = v[:n].reshape(-1, width).mean(1)
    centres = (np.arange(len(means)) + 0.5) * width
    return centres, means


def _by_position(ax, results, names, width):
    """Value loss against token position (value pair i sits at token 2i + 1)."""
    n = results["train_length"]
    pairs = max(1, width // 2)
    x, y = _binned(results["oracle"]["value_loss_by_position"], pairs)
    ax.plot(2 * x, y, color="black", lw=1, label="oracle")
    for name in names:
        r = results["models"][name]
        x, y = _binned(r["value_loss_by_position"], pairs)
        ax.plot(
            2 * x, y, ZERO_SHOT_STYLE if r["stage"] == "zero-shot" else PRETRAINED_STYLE, label=name
        )
    ax.axvline(n, color="gray", ls=":", lw=1)
    ax.set(xlabel="token position", ylabel="value-token loss (nats)")


def _probe(ax, results, names, length):
    i = results["probe_lengths"].index(length)
    ks = results["k_grid"][i]
    for name in names:
        r = results["models"][name]
        acc = [np.mean(s) for s in r["probe"][i]]
        ax.plot(
            ks,
            acc,
            "o" + (ZERO_SHOT_STYLE if r["stage"] == "zero-shot" else PRETRAINED_STYLE),
            ms=3,
            label=name,
        )
    ax.axhline(results["chance"], color="gray", ls=":", label="chance 1/V")
    ax.axvline(results["train_length"], color="gray", ls=":", lw=1)
    ax.set(
        xlabel="distance k of the planted key (tokens)",
        ylabel="probe accuracy",
        ylim=(0, 1.05),
        title=f"retrieval at length {length}",
    )


def plot(results, workdir):
    """Write the three PNGs; returns their file names."""
    n = results["train_length"]
    width = results["config"]["position_bin"]
    pre = [m for m, r in results["models"].items() if r["from"] == m]
    ext = [m for m in results["models"] if m not in pre or m == "rope"]
    ext += ["lstm"] if "lstm" in pre else []

    fig, (a, b) = outputs.new_figure(1, 2, figsize=(12, 4.5))
    _by_position(a, results, pre, width)
    a.set_title(f"trained at L = {n}: loss against position (dotted: L)")
    oracle = np.asarray(results["oracle"]["value_loss"])
    b.axhline(0.0, color="black", lw=1, label="oracle")
    for name in pre:
        loss = np.asarray([np.mean(s) for s in results["models"][name]["value_loss"]])
        b.plot(results["lengths"], loss - oracle, "o-", ms=3, label=name)
    b.set_xscale("log", base=2)
    outputs.grid_ticks(b, results["lengths"])
    b.set(
        xlabel="evaluation length N",
        ylabel="loss − oracle's (nats)",
        title="loss − oracle against length N (Press et al. 2022, Fig. 1)",
    )
    b.legend(fontsize=8)
    names = [outputs.save_plot(fig, workdir, "context_length_loss.png")]

    fig, (a, b) = outputs.new_figure(1, 2, figsize=(12, 4.5))
    _probe(a, results, pre, results["ft_length"])
    a.legend(fontsize=8)
    _probe(b, results, ext, results["ft_length"])
    b.legend(fontsize=8)
    names.append(outputs.save_plot(fig, workdir, "context_length_probe.png"))

    fig, a = outputs.new_figure(figsize=(8, 4.5))
    _by_position(a, results, ext, width)
    a.axvline(results["ft_length"], color="gray", ls="-.", lw=1)
    a.set_title(
        f"RoPE extended to {results['ft_length']} (dashed: zero-shot; dotted: L; "
        f"dash-dot: the fine-tune length)"
    )
    a.legend(fontsize=8)
    names.append(outputs.save_plot(fig, workdir, "context_length_extension.png"))
    return names
