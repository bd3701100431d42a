"""complexity's plot (complexity.png) and report.md's prose, every number in it read from
the measurements."""

import jax

from experiments import outputs


def plot(cfg, raw, workdir, layers):
    """complexity.png: FLOPs of `layers` (and the linear recurrences) against N and d, and of
    the conv and windowed cores against k and 2r+1."""
    fig, axes = outputs.new_figure(1, 3, figsize=(15, 4.5))
    for layer in layers:
        for ax, key in ((axes[0], "n"), (axes[1], "d")):
            pts = raw[layer][key]
            ax.loglog([p[key] for p in pts], [p["flops"] for p in pts], "o-", label=layer)
    for name in (k for k in raw if k not in layers):
        pts = raw[name]["n"]
        style = "--" if name.endswith("_assoc") else ":"
        axes[0].loglog([p["n"] for p in pts], [p["flops"] for p in pts], "o" + style, label=name)
    pts = raw["recurrent"]["n"]
    axes[0].loglog(
        [p["n"] for p in pts],
        [p["flops_uncorrected"] for p in pts],
        "x:",
        color="gray",
        label="recurrent, XLA as-is (loop body once)",
    )
    axes[0].set(
        xlabel="N (sequence length)",
        ylabel="FLOPs (XLA cost analysis)",
        title=f"FLOPs vs N at d={cfg.d_fixed}",
    )
    axes[1].set(xlabel="d (model width)", ylabel="FLOPs", title=f"FLOPs vs d at N={cfg.n_fixed}")
    axes[0].legend(fontsize=7)
    k = raw["conv"]["k"]
    r = raw["windowed_core"]["r"]
    axes[2].loglog([p["k"] for p in k], [p["flops"] for p in k], "o-", label="conv vs k")
    axes[2].loglog(
        [p["window"] for p in r], [p["flops"] for p in r], "s-", label="windowed core vs 2r+1"
    )
    axes[2].set(
        xlabel="kernel width k / window 2r+1",
        ylabel="FLOPs",
        title=f"N={cfg.n_fixed}, d={cfg.d_fixed}",
    )
    axes[2].legend(fontsize=7)
    outputs.grid_ticks(axes[0], cfg.n_grid)
    outputs.grid_ticks(axes[1], cfg.d_grid)
    outputs.grid_ticks(axes[2], sorted(set(cfg.kernel_grid) | {2 * r + 1 for r in cfg.radius_grid}))
    axes[2].tick_params(axis="x", labelsize=7)
    return outputs.save_plot(fig, workdir, "complexity.png")


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
