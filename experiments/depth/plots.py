"""depth's two figures, drawn from what results.json holds (string depth keys, null = NaN).

loss_vs_depth.png         validation loss against L per variant: the seed mean, a band from
                          the best to the worst seed, an x where a seed failed; the unigram
                          loss dashed, and anything above it (a diverged run's loss can be
                          hundreds of nats) drawn at the top of the axis. Attention wirings
                          left, LSTM stacks right.
grad_norms_at_init.png    left, middle: every layer's gradient norm at init (mean over seeds)
                          against its index, at the deepest L; right: the last layer's
                          (Xiong's W^{2,L}) against L, log-log, with the theorem's slopes.
"""

from __future__ import annotations

import numpy as np

from experiments import outputs

FAMILIES = (("attention", "Transformer blocks"), ("recurrent", "LSTM stacks"))
CEILING = 0.1  # nats above the unigram loss where the loss axis stops


def _arr(values) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], np.float64)


def _arr2(rows) -> np.ndarray:
    return np.array([_arr(r) for r in rows], np.float64)


def _depths(variant) -> list[int]:
    return sorted(int(d) for d in variant["depths"])


def loss_vs_depth(results, workdir) -> str:
    fig, axes = outputs.new_figure(1, 2, figsize=(11, 4.2))
    unigram = results["data"]["unigram_loss"]
    top = unigram + CEILING
    for ax, (family, title) in zip(axes, FAMILIES):
        lowest = unigram
        for v in results["variants"].values():
            if v["family"] != family:
                continue
            depths = _depths(v)
            losses = [_arr(v["depths"][str(d)]["valid_loss"]) for d in depths]
            shown = [np.minimum(np.where(np.isfinite(x), x, top), top) for x in losses]
            (line,) = ax.plot(depths, [x.mean() for x in shown], marker="o", label=v["label"])
            lo, hi = [x.min() for x in shown], [x.max() for x in shown]
            ax.fill_between(depths, lo, hi, color=line.get_color(), alpha=0.2)
            lowest = min(lowest, *lo)
            bad = [d for d, x in zip(depths, losses) if (~np.isfinite(x) | (x >= unigram)).any()]
            if bad:
                ax.plot(bad, [top] * len(bad), "x", color=line.get_color(), ms=9)
        ax.axhline(unigram, ls="--", color="grey", lw=1, label="unigram")
        ax.set_ylim(lowest - 0.05, top + 0.03)
        ax.set_xscale("log", base=2)
        outputs.grid_ticks(ax, results["config"]["depths"])
        ax.set_xlabel("layers L")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_ylabel("validation loss (nats / character; x: a failed seed)")
    return outputs.save_plot(fig, workdir, "loss_vs_depth.png")


def grad_norms(results, workdir) -> str:
    fig, axes = outputs.new_figure(1, 3, figsize=(15, 4.2))
    for ax, (family, title) in zip(axes, FAMILIES):
        for v in results["variants"].values():
            if v["family"] != family:
                continue
            deepest = _depths(v)[-1]
            per_layer = np.mean(_arr2(v["depths"][str(deepest)]["init_grad_layers"]), axis=0)
            ax.plot(np.arange(1, deepest + 1), per_layer, marker=".", label=v["label"])
        ax.set_yscale("log")
        ax.set_xlabel("layer (1 = nearest the input)")
        ax.set_ylabel("‖∂loss/∂θ_layer‖ at init")
        ax.set_title(f"{title}, per layer at the deepest L")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    ax = axes[2]
    for v in results["variants"].values():
        if v["family"] != "attention":
            continue
        depths = _depths(v)
        last = [np.mean(_arr(v["depths"][str(d)]["init_grad_xiong"])) for d in depths]
        fit = v["xiong_fit"]
        slope = f" (L^{fit['exponent']:+.2f})" if fit else ""
        ax.plot(depths, last, marker="o", label=v["label"] + slope)
    ref = np.array(results["config"]["depths"], np.float64)
    for exponent, style in ((0.0, ":"), (-0.5, "--")):
        ax.plot(ref, ref**exponent * 0.5, style, color="grey", lw=1, label=f"∝ L^{exponent:g}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    outputs.grid_ticks(ax, results["config"]["depths"])
    ax.set_xlabel("layers L")
    ax.set_ylabel("‖∂loss/∂W^{2,L}‖ at init")
    ax.set_title("last layer's FFN weight (Xiong et al. 2020)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return outputs.save_plot(fig, workdir, "grad_norms_at_init.png")


def plot(results, workdir) -> list[str]:
    return [loss_vs_depth(results, workdir), grad_norms(results, workdir)]
