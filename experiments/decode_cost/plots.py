"""decode_cost's plot (decode_cost.png) and report.md's tables and prose, every number in them
read from the measurements."""

from anatomy.tables import markdown_table
from experiments.lab import outputs, style


def _latency_note(raw) -> str:
    """'rnn 0.012 ms, kv_cache 0.030 ms, ...': each decoder's median latency at the largest N."""
    return ", ".join(f"{k} {rows[-1]['median_s'] * 1e3:.3g} ms" for k, rows in raw.items())


def plot(cfg, raw, workdir):
    fig, axes = outputs.new_figure(1, 2, figsize=(12, 4.5))
    outputs.plot_series(axes[0], raw, "flops", dotted=("kv_fixed",))
    outputs.plot_series(axes[1], raw, "median_s", scale=1e3, dotted=("kv_fixed",))
    panels = (
        (
            "position N of the generated token",
            "FLOPs per token (XLA)",
            f"cost of generating token N: d={cfg.d}, {cfg.n_heads} heads, batch {cfg.batch}",
        ),
        (
            "position N",
            "latency per token (ms, median)",
            f"latency of generating token N (median of {cfg.repeats}; load-dependent)",
        ),
    )
    ns = [r["n"] for r in raw["kv_cache"]]
    # the N-dependent part the claims fit: the KV cache's N^1 and recomputation's N^2
    style.reference_slope(axes[0], ns, raw["kv_cache"][0]["flops"], 1, "reference N^1")
    style.reference_slope(axes[0], ns, raw["recompute"][0]["flops"], 2, "reference N^2")
    for ax, (xlabel, ylabel, title) in zip(axes, panels):
        ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
        ax.title.set_fontsize(9)
    for a in axes:
        a.legend(fontsize=7)
        outputs.grid_ticks(a, cfg.n_grid)
    return outputs.save_plot(fig, workdir, "decode_cost.png")


draw = outputs.drawn_by(plot)  # decode_cost.png from results.json alone


def sections(config, raw) -> list[tuple[str, str]]:
    """report.md's sections after the claims: the measurements and how they were made."""
    table = markdown_table(
        ("N",) + tuple(f"{k} FLOPs" for k in raw) + tuple(f"{k} ms" for k in raw),
        [
            (raw["rnn"][i]["n"],)
            + tuple(raw[k][i]["flops"] for k in raw)
            + tuple(raw[k][i]["median_s"] * 1e3 for k in raw)
            for i in range(len(config.n_grid))
        ],
    )
    notes = (
        "FLOPs per generated token from XLA's cost analysis (no loops in these programs, so no "
        "trip-count correction is needed); latency = median wall time of the jitted step.\n\n"
        "* The 'N-dependent' exponent subtracts the O(d²) projections and FFN, measured as the "
        "same program's FLOPs at N = 1: once for a KV step, N times for a recomputed prefix "
        "(which runs them at every position). What is left is the attention over the cache "
        "(O(N·d)) or over the prefix (O(N²·d)). The totals bend toward these slopes only once "
        "N ≫ d.\n"
        "* **kv_fixed**: a real decoder allocates its cache once at max length; XLA's static "
        "shapes then attend over every slot (masked), so per-token work is O(L_max·d) whatever N "
        "is. O(N·d) per token needs caches sized (or bucketed) to the current length.\n"
        "* Latency slopes are reported, not judged: the RNN and KV steps do microseconds of "
        "work, where a step's dispatch overhead can outweigh it (median latency at the largest "
        f"N: {_latency_note(raw)})."
    )
    return [
        ("Measurements", table),
        ("How it was measured", notes),
    ]
