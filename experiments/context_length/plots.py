"""context_length's plots, drawn from results.json alone: excess loss over the oracle against
position and length (Press et al. 2022, Fig. 1's shape), the retrieval probe against distance,
and RoPE's extension. Every model keeps one colour, marker and line style in every panel of
every figure (STYLES); zero-shot extensions are dashed, fine-tuned models dotted.

Excess loss is drawn on a symmetric-log axis (linear within ±LINTHRESH nats, logarithmic
beyond): the Transformers' excess is hundredths of a nat where the LSTM's is a nat, and a
finite sample can put a model a hair below the oracle.
"""

import numpy as np

from experiments import outputs
from experiments.context_length import claims

LINTHRESH = 0.01  # nats: the symmetric-log axis is linear within this of 0

# one style per model, the same in every panel and figure
STYLES = {
    "sinusoidal": dict(color="#1f77b4", marker="o", ls="-"),
    "learned": dict(color="#ff7f0e", marker="s", ls="-"),
    "rope": dict(color="#2ca02c", marker="^", ls="-"),
    "alibi": dict(color="#d62728", marker="D", ls="-"),
    "none": dict(color="#9467bd", marker="v", ls="-"),
    "lstm": dict(color="#8c564b", marker="X", ls="-"),
    "rope+pi": dict(color="#e377c2", marker="<", ls="--"),
    "rope+ntk": dict(color="#17becf", marker=">", ls="--"),
    "rope+pi+ft": dict(color="#e377c2", marker="<", ls=":"),
    "rope+ntk+ft": dict(color="#17becf", marker=">", ls=":"),
    "rope+ft": dict(color="#2ca02c", marker="^", ls=":"),
    "lstm+ft": dict(color="#8c564b", marker="X", ls=":"),
}
OTHER = dict(color="#7f7f7f", marker=".", ls="-")


def style(name) -> dict:
    return STYLES.get(name, OTHER)


def _floats(xs) -> np.ndarray:
    return np.asarray([[np.nan if x is None else x for x in row] for row in xs], float)


def _binned(values, width):
    """Means of consecutive groups of `width` values: (centres, means)."""
    v = np.asarray([np.nan if x is None else x for x in values], float)
    n = len(v) // width * width
    means = v[:n].reshape(-1, width).mean(1)
    centres = (np.arange(len(means)) + 0.5) * width
    return centres, means


def _excess_by_position(ax, results, names, width):
    """Excess value loss over the oracle against token position (value pair i sits at token
    2i + 1), mean over seeds, binned over `width` tokens."""
    pairs = max(1, width // 2)
    oracle = np.asarray(
        [np.nan if x is None else x for x in results["oracle"]["value_loss_by_position"]]
    )
    for name in names:
        by_pos = np.nanmean(_floats(results["models"][name]["value_loss_by_position"]), axis=0)
        x, y = _binned(by_pos - oracle[: len(by_pos)], pairs)
        ax.plot(2 * x, y, ms=3, label=name, **style(name))
    ax.axhline(0.0, color="black", lw=1, label="oracle")
    ax.axvline(results["train_length"], color="gray", ls=":", lw=1)
    _excess_axis(ax)
    ax.set(xlabel="token position")


def _excess_axis(ax):
    """Symmetric-log y for excess loss, shown from just below 0 (a hair below the oracle)."""
    ax.set_yscale("symlog", linthresh=LINTHRESH)
    ax.set_ylim(bottom=-LINTHRESH)
    ax.set_ylabel("excess value loss over the oracle (nats)")


def _probe(ax, results, names, length):
    i = results["probe_lengths"].index(length)
    ks = results["k_grid"][i]
    for name in names:
        acc = np.nanmean(_floats(results["models"][name]["probe"][i]), axis=1)
        ax.plot(ks, acc, ms=4, label=name, **style(name))
    ax.axhline(results["chance"], color="gray", ls="-.", lw=1, label="chance 1/V")
    n = results["train_length"]
    if length > n:
        ax.axvline(n, color="gray", ls=":", lw=1)
        ax.set_xscale("log", base=2)
        outputs.grid_ticks(ax, ks)
    ax.set(xlabel="distance k of the planted key (tokens)", ylabel="probe accuracy", ylim=(0, 1.05))


def plot(results, workdir):
    """Write the three PNGs from `results` (results.json as stored); returns their names."""
    n = results["train_length"]
    nf = results["ft_length"]
    width = results["config"]["position_bin"]
    pre = [m for m, r in results["models"].items() if r["from"] == m]
    ext = [m for m in results["models"] if m not in pre]
    seeds = len(next(iter(results["models"].values()))["value_loss_by_position"])

    fig, (a, b) = outputs.new_figure(1, 2, figsize=(13, 4.8))
    _excess_by_position(a, results, pre, width)
    a.set_title(f"excess loss against position, trained at L = {n} (dotted: L)", fontsize=10)
    for name in pre:
        excess = [np.nanmean(claims.excess(results, name, m)) for m in results["lengths"]]
        b.plot(results["lengths"], excess, ms=4, label=name, **style(name))
    b.axhline(0.0, color="black", lw=1, label="oracle")
    b.set_xscale("log", base=2)
    _excess_axis(b)
    outputs.grid_ticks(b, results["lengths"])
    b.set(xlabel="evaluation length N")
    b.set_title(
        f"excess loss at length N (Press et al. 2022, Fig. 1; mean of {seeds} "
        f"seed{'' if seeds == 1 else 's'})",
        fontsize=10,
    )
    b.legend(fontsize=8)
    names = [outputs.save_plot(fig, workdir, "context_length_loss.png")]

    fig, axes = outputs.new_figure(1, 3, figsize=(17, 4.8))
    _probe(axes[0], results, pre, n)
    axes[0].set_title(f"pre-trained: retrieval at N = L = {n}", fontsize=10)
    _probe(axes[1], results, pre, nf)
    axes[1].set_title(
        f"pre-trained, zero-shot: retrieval at N = {nf // n}L = {nf} (dotted: k = L)", fontsize=10
    )
    _probe(axes[2], results, ["rope", *ext], nf)
    axes[2].set_title(
        f"RoPE extended (dashed: zero-shot; dotted: fine-tuned at {nf // n}L), the LSTM "
        f"fine-tuned: retrieval at N = {nf}",
        fontsize=10,
    )
    axes[1].legend(fontsize=8)
    axes[2].legend(fontsize=8)
    names.append(outputs.save_plot(fig, workdir, "context_length_probe.png"))

    fig, a = outputs.new_figure(figsize=(9, 4.8))
    _excess_by_position(a, results, ["rope", *ext], width)
    a.axvline(nf, color="gray", ls="-.", lw=1)
    a.set_title(
        f"RoPE extended to {nf}, and the LSTM: excess loss against position (dashed: "
        f"zero-shot; dotted: fine-tuned at {nf // n}L; vertical: L and {nf // n}L)",
        fontsize=10,
    )
    a.legend(fontsize=8)
    names.append(outputs.save_plot(fig, workdir, "context_length_extension.png"))
    return names
