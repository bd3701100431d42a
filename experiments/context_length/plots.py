"""context_length's plots, drawn from results.json alone (draw(results, workdir): a run's or a
committed one's): excess loss over the oracle against position, and its rise past L against
the evaluation length (Press et al. 2022, Fig. 1's shape, beside the bar the claims judge it
by); the retrieval probe against distance; RoPE's extensions. Every model has one look in
every panel of every figure, experiments/lab/style.py's: the extensions keep a colour of their
own, zero-shot dashed (interpolation) or dotted (raised base), fine-tuned dash-dotted.

Losses are drawn on a symmetric-log axis (linear within ±LINTHRESH nats, logarithmic beyond):
the Transformers' excess and rise are hundredths of a nat where a model that did not learn the
task is a nat off the oracle, and a finite sample can put a model a hair below it.
"""

import numpy as np

from experiments.context_length import claims
from experiments.lab import outputs, style

LINTHRESH = 0.01  # nats: the symmetric-log axes are linear within this of 0
MARK = {"color": "#bdbdbd", "linestyle": ":", "linewidth": 1.0}  # a vertical line at L, 4L


def _floats(xs) -> np.ndarray:
    return np.asarray([[np.nan if x is None else x for x in row] for row in xs], float)


def _binned(values, width):
    """Means of consecutive groups of `width` values: (centres, means)."""
    v = np.asarray([np.nan if x is None else x for x in values], float)
    n = len(v) // width * width
    means = v[:n].reshape(-1, width).mean(1)
    centres = (np.arange(len(means)) + 0.5) * width
    return centres, means


def _oracle(results) -> np.ndarray:
    return np.asarray(
        [np.nan if x is None else x for x in results["oracle"]["value_loss_by_position"]]
    )


def _loss_axis(ax, label, floor=True):
    """Symmetric-log y for a loss difference; `floor`: shown from just below 0 (an excess over
    the oracle; a rise can be well below 0)."""
    ax.set_yscale("symlog", linthresh=LINTHRESH)
    if floor:
        ax.set_ylim(bottom=-LINTHRESH)
    ax.set_ylabel(label)


def _excess_by_position(ax, results, names, width):
    """Excess value loss over the oracle against token position (value pair i sits at token
    2i + 1), mean over seeds, binned over `width` tokens; the window reader's within L."""
    pairs = max(1, width // 2)
    oracle = _oracle(results)
    for name in names:
        by_pos = np.nanmean(_floats(results["models"][name]["value_loss_by_position"]), axis=0)
        x, y = _binned(by_pos - oracle[: len(by_pos)], pairs)
        ax.plot(2 * x, y, ms=3, label=name, **style.line(name))
    reader = results.get("window_reader")
    if reader:
        loss = np.asarray(reader["value_loss_by_position"], float)
        x, y = _binned(loss - oracle[: len(loss)], pairs)
        ax.plot(
            2 * x, y, label=f"window reader (first {reader['window']} tokens)", **style.REFERENCE
        )
    ax.axhline(0.0, color="black", lw=1, label="oracle")
    ax.axvline(results["train_length"], **MARK)
    _loss_axis(ax, "excess value loss over the oracle (nats)")
    ax.set(xlabel="token position")


def _rise_by_length(ax, results, names):
    """The rise of each model's excess loss past L against the evaluation length, mean over
    seeds, beside LOSS_TOLERANCE (flat below it, blowing up above)."""
    for name in names:
        rise = [np.nanmean(claims.rise(results, name, m)) for m in results["lengths"]]
        ax.plot(results["lengths"], rise, ms=4, label=name, **style.line(name))
    ax.axhline(
        claims.LOSS_TOLERANCE,
        label=f"flat ≤ {claims.LOSS_TOLERANCE:g} nats < blows up",
        **style.REFERENCE,
    )
    ax.axhline(0.0, color="black", lw=1)
    ax.set_xscale("log", base=2)
    _loss_axis(ax, "rise of the excess loss over its value at L (nats)", floor=False)
    outputs.grid_ticks(ax, results["lengths"])
    ax.set(xlabel="evaluation length N")


def _probe(ax, results, names, length):
    i = results["probe_lengths"].index(length)
    ks = results["k_grid"][i]
    for name in names:
        acc = np.nanmean(_floats(results["models"][name]["probe"][i]), axis=1)
        ax.plot(ks, acc, ms=4, label=name, **style.line(name))
    style.chance(ax, results["chance"], "chance 1/V")
    n = results["train_length"]
    if length > n:
        ax.axvline(n, **MARK)
        ax.set_xscale("log", base=2)
        outputs.grid_ticks(ax, ks)
        ax.tick_params(axis="x", labelsize=7, labelrotation=45)  # 96 .. 188 sit close
    ax.set(xlabel="distance k of the planted key (tokens)", ylabel="probe accuracy", ylim=(0, 1.05))


def _curves(ax, results):
    """The RoPE family's retrieval beyond L at ft_factor·L against the fine-tune steps (mean
    over seeds, the seeds' spread shaded), beside chance and the bar of 'retrieves'."""
    far = claims.beyond(results)
    for name in (claims.CONTROL, *claims.EXTENSIONS.values()):
        steps, acc = claims.curve(results, name, far)
        if not steps:
            continue
        look = style.line(name)
        mean = np.nanmean(acc, axis=1)
        ax.plot(steps, mean, ms=4, label=name, **look)
        if acc.shape[1] > 1:
            sd = np.nanstd(acc, axis=1, ddof=1)
            ax.fill_between(steps, mean - sd, mean + sd, color=look["color"], alpha=0.12, lw=0)
    style.chance(ax, results["chance"], "chance 1/V")
    bar = claims.retrieves(results["chance"]).lo
    ax.axhline(bar, label=f"retrieves ≥ {bar:.2f}", **style.REFERENCE)
    n, nf = results["train_length"], results["ft_length"]
    ax.set(
        xlabel=f"fine-tune steps at {nf // n}L (0: zero-shot)",
        ylabel=f"retrieval beyond L at N = {nf}",
        ylim=(0, 1.05),
    )
    ax.set_title(
        f"fine-tune curves: plain RoPE against the extensions ({_seeds(results)} of RoPE; "
        "shade: ± one s.d. over seeds)",
        fontsize=9,
    )
    ax.legend(fontsize=7)


def _seeds(results, name="rope") -> str:
    """'mean of 8 seeds' (of `name`), or 'mean over each model's seeds (3 to 8)' when the
    models ran on different numbers of seeds."""
    models = results["models"]
    counts = sorted({len(m["value_loss_by_position"]) for m in models.values()})
    if len(counts) > 1 and name is None:
        return f"mean over each model's seeds ({counts[0]} to {counts[-1]})"
    seeds = len(models.get(name, next(iter(models.values())))["value_loss_by_position"])
    return f"mean of {seeds} seed{'' if seeds == 1 else 's'}"


def draw(results, workdir) -> list[str]:
    """Write the three PNGs from `results` (results.json as stored); returns their names."""
    n = results["train_length"]
    nf = results["ft_length"]
    width = results["config"]["position_bin"]
    pre = [m for m, r in results["models"].items() if r["from"] == m]
    ext = [m for m in results["models"] if m not in pre]
    seeds = _seeds(results, None)

    fig, (a, b) = outputs.new_figure(1, 2, figsize=(13, 4.8))
    _excess_by_position(a, results, pre, width)
    a.set_title(
        f"pre-trained at L = {n}: excess loss against position (dotted: L; {seeds})",
        fontsize=10,
    )
    a.legend(fontsize=7)
    _rise_by_length(b, results, pre)
    b.set_title(
        f"pre-trained at L = {n}: its rise past L against length N (Press et al. 2022, Fig. 1)",
        fontsize=10,
    )
    b.legend(fontsize=7)
    names = [outputs.save_plot(fig, workdir, "context_length_loss.png")]

    fig, axes = outputs.new_figure(1, 3, figsize=(17, 4.8))
    _probe(axes[0], results, pre, n)
    axes[0].set_title(f"pre-trained: retrieval at N = L = {n} ({seeds})", fontsize=10)
    _probe(axes[1], results, pre, nf)
    axes[1].set_title(
        f"pre-trained, zero-shot: retrieval at N = {nf // n}L = {nf} (dotted: k = L)", fontsize=10
    )
    extended = ["rope", *ext]
    _probe(axes[2], results, extended, nf)
    axes[2].set_title(
        f"RoPE extended, and the LSTM fine-tuned at {nf // n}L: retrieval at N = {nf}",
        fontsize=10,
    )
    axes[0].legend(fontsize=7)
    axes[2].legend(fontsize=7)
    names.append(outputs.save_plot(fig, workdir, "context_length_probe.png"))

    fig, (a, b) = outputs.new_figure(1, 2, figsize=(15, 4.8))
    _curves(b, results)
    _excess_by_position(a, results, extended, width)
    a.axvline(nf, **MARK)
    a.set_title(
        f"RoPE extended to {nf}, and the LSTM: excess loss against position\n(dashed, "
        f"dotted: zero-shot; dash-dot: fine-tuned at {nf // n}L; vertical: L and {nf // n}L)",
        fontsize=9,
    )
    a.legend(fontsize=7)
    names.append(outputs.save_plot(fig, workdir, "context_length_extension.png"))
    return names
