"""complexity's plot (complexity.png) and report.md's prose, every number in it read from
the measurements."""

import jax
import ml_collections

from experiments.lab import outputs, style


def _series(ax, pts, key, name, label=None):
    """FLOPs against `key` of one named series, in its look (experiments.lab.style)."""
    x, y = [p[key] for p in pts], [p["flops"] for p in pts]
    ax.loglog(x, y, label=label or name, **style.line(name))


def plot(cfg, raw, workdir, layers):
    """complexity.png: FLOPs of `layers` (and the linear recurrences) against N and d, and of
    the conv and windowed cores against k and 2r+1, each panel with the reference slopes the
    claims are judged against."""
    fig, axes = outputs.new_figure(1, 3, figsize=(16, 5.2))
    for layer in layers:
        for ax, key in ((axes[0], "n"), (axes[1], "d")):
            _series(ax, raw[layer][key], key, layer)
    for name in (k for k in raw if k not in layers):
        _series(axes[0], raw[name]["n"], "n", name)
    pts = raw["recurrent"]["n"]
    axes[0].loglog(
        [p["n"] for p in pts],
        [p["flops_uncorrected"] for p in pts],
        "x:",
        color="#969696",
        label="recurrent, XLA as-is (loop body counted once)",
    )
    # each reference slope starts at the first point of the layer it is claimed for
    for ax, key, grid, refs in (
        (axes[0], "n", cfg.n_grid, (("recurrent", 1, "N^1"), ("attention_core", 2, "N^2"))),
        (axes[1], "d", cfg.d_grid, (("recurrent", 2, "d^2"), ("attention_core", 1, "d^1"))),
    ):
        for layer, e, label in refs:
            anchor = raw[layer][key][0]["flops"]
            style.reference_slope(ax, grid, anchor, e, f"reference {label} ({layer})")
    axes[0].set(
        xlabel="N (sequence length)",
        ylabel="FLOPs of one forward pass (XLA cost analysis)",
        title=f"FLOPs against N at d = {cfg.d_fixed}: recurrence N^1, attention N^2",
    )
    axes[1].set(
        xlabel="d (model width)",
        ylabel="FLOPs",
        title=f"FLOPs against d at N = {cfg.n_fixed}: recurrence d^2, attention d^1",
    )
    k = raw["conv"]["k"]
    r = raw["windowed_core"]["r"]
    _series(axes[2], k, "k", "conv", label="conv against its kernel width k")
    axes[2].lines[-1].set_label("conv against its kernel width k")
    axes[2].loglog(
        [p["window"] for p in r],
        [p["flops"] for p in r],
        label="windowed attention core against its window 2r+1",
        **style.line("windowed_core"),
    )
    widths = sorted(set(cfg.kernel_grid) | {2 * x + 1 for x in cfg.radius_grid})
    style.reference_slope(axes[2], [p["k"] for p in k], k[0]["flops"], 1, "reference k^1")
    windows = [p["window"] for p in r]
    style.reference_slope(axes[2], windows, r[0]["flops"], 1, "reference (2r+1)^1")
    axes[2].set(
        xlabel="kernel width k / window 2r+1",
        ylabel="FLOPs",
        title=f"FLOPs against k and r at N = {cfg.n_fixed}, d = {cfg.d_fixed}: both ^1",
    )
    for ax in axes:
        ax.title.set_fontsize(9)
        ax.legend(fontsize=7)
    outputs.grid_ticks(axes[0], cfg.n_grid)
    outputs.grid_ticks(axes[1], cfg.d_grid)
    outputs.grid_ticks(axes[2], widths)
    axes[2].tick_params(axis="x", labelsize=7)
    return outputs.save_plot(fig, workdir, "complexity.png")


def draw(results, workdir) -> list[str]:
    """complexity.png from results.json alone (a run's or a committed one's)."""
    cfg, raw = ml_collections.ConfigDict(results["config"]), results["raw"]
    layers = [name for name, series in raw.items() if "d" in series]
    return [plot(cfg, raw, workdir, layers)]


def notes(config, fits) -> str:
    """report.md's "How it was measured"."""
    return (
        "FLOPs are XLA's own count for one forward pass (`cost_analysis()`, jax "
        f"{jax.__version__}), batch {config.batch}. Exponents are least-squares slopes in "
        "log-log space.\n\n"
        "* **While loops are counted once.** XLA's cost analysis charges a `while` body one "
        "iteration whatever its trip count. The recurrent layer is corrected as "
        "cost(program) + (trip_count − 1)·cost(one recurrent step), with the trip count read "
        "from `known_trip_count` in the compiled HLO (it equals N). Uncorrected, its N-exponent "
        f"is {fits['recurrent_uncorrected']['exponent']:.3f} (only the hoisted input projection grows with N).\n"
        "* **Attention has two terms.** The score+value part (`attention_core`, "
        f"{config.n_heads} head(s)) is O(N²·d); the whole layer adds O(N·d²) projections, so "
        "its expected slope is the formula 4N²d + 8Nd² fitted on the same grid.\n"
        "* **Windowed attention** gathers each query's 2r+1 keys, so its score+value part is "
        "O(r·N·d); with projections the layer is dominated by O(N·d²) at these sizes.\n"
        "* Softmax, bias and LayerNorm-like terms are lower order; they bend the smallest grid "
        "points slightly.\n"
        f"* **Linear recurrences** ({', '.join(config.linear_recurrences) or 'none'}): the whole "
        "layer (projections, gates, recurrence, readout) at d = "
        f"{config.d_fixed}, once by jax.lax.scan (loop-corrected as above) and once by "
        "jax.lax.associative_scan (no loop, so XLA's count is complete); the claim is about "
        "the ratio of the two as N grows."
    )
