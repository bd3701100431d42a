"""depth's figures, drawn from what results.json holds alone (string depth keys, null = NaN):
`draw(results, workdir)` redraws a committed result (experiments.lab.publish) the same way a run
draws its own, one or two figures per part the run measured.

the stack (default preset):
loss_vs_depth.png         loss against L per variant (the seeds at each cell's rate): the seed
                          mean, a band from the best to the worst seed, an X at the top where
                          a seed failed; the unigram loss dotted, and anything above it (a
                          diverged run's loss can be hundreds of nats) drawn at the top of the
                          axis. Transformer wirings left, LSTM stacks right, on one shared loss
                          axis. Every variant has its look from experiments/lab/style.py (a warmup
                          variant dashed besides), and the variants of a panel sit a hair apart
                          in L, so a curve under another still shows.
grad_norms_at_init.png    every layer's gradient norm at init (mean over seeds) against its
                          index, at the deepest L, Transformer wirings left, LSTM stacks right.
stability (stability preset):
warmup_curves.png         the training loss against the step of post-LN without and with
                          warmup and DeepNorm (seed mean, band from best to worst seed).
xiong (xiong preset):
xiong_exponents.png       ‖∂loss/∂W^{2,L}‖ at init against L, log-log, each variant's seed mean
                          and band and its exponent with its interval, and the theorem's
                          slopes L^0 and L^-1/2 drawn through post-LN's and pre-LN's first
                          point.
"""

from __future__ import annotations

import numpy as np

from experiments.depth import claims
from experiments.lab import outputs, style

FAMILIES = (("attention", "Transformer blocks"), ("recurrent", "LSTM stacks"))
CEILING = 0.1  # nats above the unigram loss where the loss axis stops
DODGE = 0.04  # log2 units between neighbouring variants' points in L


def _arr(values) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], np.float64)


def _arr2(rows) -> np.ndarray:
    return np.array([_arr(r) for r in rows], np.float64)


def _depths(variant) -> list[int]:
    return sorted(int(d) for d in variant["depths"])


def look(name, variant) -> dict:
    """ax.plot keywords of a variant: style.line's, dashed when it warms up (post-LN + warmup
    beside post-LN: the same wiring, another schedule)."""
    return {**style.line(name), **({"linestyle": "--"} if variant.get("warmup_steps") else {})}


def _family(results, family) -> list[tuple[str, dict]]:
    return [(n, v) for n, v in results["variants"].items() if v["family"] == family]


def loss_vs_depth(results, workdir) -> str:
    fig, axes = outputs.new_figure(1, 2, figsize=(12, 4.6), sharey=True)
    unigram = claims.unigram(results)
    top = unigram + CEILING
    lowest = unigram
    for ax, (family, title) in zip(axes, FAMILIES):
        members = _family(results, family)
        for i, (name, v) in enumerate(members):
            depths = _depths(v)
            shift = 2.0 ** (DODGE * (i - (len(members) - 1) / 2))
            xs = [d * shift for d in depths]
            losses = [_arr(v["depths"][str(d)]["loss"]) for d in depths]
            shown = [np.minimum(np.where(np.isfinite(x), x, top), top) for x in losses]
            kw = look(name, v)
            ax.plot(xs, [x.mean() for x in shown], label=v["label"], ms=6, **kw)
            lo, hi = [x.min() for x in shown], [x.max() for x in shown]
            ax.fill_between(xs, lo, hi, color=kw["color"], alpha=0.15, lw=0)
            lowest = min(lowest, *lo)
            bad = [
                x
                for x, loss in zip(xs, losses)
                if any(claims.failed(y, unigram) for y in loss.tolist())
            ]
            if bad:
                ax.plot(bad, [top] * len(bad), "X", color=kw["color"], ms=10, mec="black", mew=0.6)
        style.chance(ax, unigram, "unigram loss (no context)")
        ax.set_xscale("log", base=2)
        outputs.grid_ticks(ax, _all_depths(results))
        ax.set_xlabel("layers L")
        ax.set_title(f"{title}: {results['split']} loss after the budget, by depth")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylim(lowest - 0.05, top + 0.03)  # shared by both panels
    axes[0].set_ylabel(f"{results['split']} loss (nats / character; X at the top: a failed seed)")
    return outputs.save_plot(fig, workdir, "loss_vs_depth.png")


def grad_norms(results, workdir) -> str:
    fig, axes = outputs.new_figure(1, 2, figsize=(12, 4.6))
    for ax, (family, title) in zip(axes, FAMILIES):
        deepest = 0
        for name, v in _family(results, family):
            deepest = _depths(v)[-1]
            per_layer = np.mean(_arr2(v["depths"][str(deepest)]["init_grad_layers"]), axis=0)
            ax.plot(np.arange(1, deepest + 1), per_layer, label=v["label"], ms=4, **look(name, v))
        ax.set_yscale("log")
        ax.set_xlabel("layer (1 = nearest the input)")
        ax.set_ylabel("‖∂loss/∂θ_layer‖ at init (mean over seeds)")
        ax.set_title(f"{title}: each layer's gradient at init, L = {deepest}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return outputs.save_plot(fig, workdir, "grad_norms_at_init.png")


def warmup_curves(results, workdir) -> str:
    names = [n for n in ("post", "post_warmup", "deepnorm") if n in results["variants"]]
    fig, ax = outputs.new_figure(1, 1, figsize=(7.5, 4.6))
    unigram = claims.unigram(results)
    depth = None
    for name in names:
        v = results["variants"][name]
        depth = _depths(v)[-1]
        row = v["depths"][str(depth)]
        steps = np.array(row["curve"]["step"], np.float64)
        curves = _arr2(row["curve"]["loss"])
        shown = np.minimum(np.where(np.isfinite(curves), curves, np.inf), unigram + 1.0)
        kw = look(name, v)
        kw.pop("marker", None)
        label = f"{v['label']} (rate {row['learning_rate']:g})"
        ax.plot(steps, shown.mean(axis=0), label=label, **kw)
        ax.fill_between(
            steps, shown.min(axis=0), shown.max(axis=0), color=kw["color"], alpha=0.15, lw=0
        )
    style.chance(ax, unigram, "unigram loss (no context)")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (nats / character; capped at unigram + 1)")
    ax.set_title(f"post-LN without and with warmup, DeepNorm: L = {depth}, one peak rate")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return outputs.save_plot(fig, workdir, "warmup_curves.png")


def xiong_exponents(results, workdir) -> str:
    fig, ax = outputs.new_figure(1, 1, figsize=(7.5, 4.6))
    labels = (results.get("xiong_detail") or {}).get("labels", {})
    first = {}
    depths_all = set()
    for name, by in results["xiong"].items():
        depths = sorted(int(d) for d in by)
        depths_all |= set(depths)
        g = np.array([_arr(by[str(d)]) for d in depths], np.float64)  # [L, seeds]
        mean = np.nanmean(g, axis=1)
        first[name] = (depths, mean[0])
        a = claims.slopes(results, name)
        slope = f": a = {claims.t_interval(a)}" if a is not None else ""
        kw = style.line(name)
        ax.plot(depths, mean, label=labels.get(name, name) + slope, **kw)
        ax.fill_between(
            depths, np.nanmin(g, axis=1), np.nanmax(g, axis=1), color=kw["color"], alpha=0.15, lw=0
        )
    for name, exponent in (("post", 0.0), ("pre", -0.5)):
        if name in first:
            depths, g0 = first[name]
            label = f"∝ L^{exponent:g} (Theorem 1, {labels.get(name, name)})"
            style.reference_slope(ax, depths, g0, exponent, label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    outputs.grid_ticks(ax, sorted(depths_all))
    ax.set_xlabel("layers L")
    ax.set_ylabel("‖∂loss/∂W^{2,L}‖ at init (seed mean, band: min to max)")
    ax.set_title("W^{2,L} (last block's FFN) at init against L, Xiong et al. 2020")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6.5)
    return outputs.save_plot(fig, workdir, "xiong_exponents.png")


def _all_depths(results) -> list[int]:
    return sorted({int(d) for v in results["variants"].values() for d in v["depths"]})


def draw(results, workdir) -> list[str]:
    """The figures of the parts the run measured into workdir; returns their file names."""
    parts = claims.parts_of(results)
    out = []
    if "stack" in parts:
        out += [loss_vs_depth(results, workdir), grad_norms(results, workdir)]
    if "stability" in parts:
        out.append(warmup_curves(results, workdir))
    if "xiong" in parts:
        out.append(xiong_exponents(results, workdir))
    return out
