"""depth's report tables, from what results.json holds (string depth keys, null = NaN)."""

from __future__ import annotations

import numpy as np

from experiments import outputs
from experiments.depth import claims


def _depths(results) -> list[str]:
    return [str(d) for d in results["config"]["depths"]]


def loss_table(results) -> str:
    """Validation loss mean ± std over seeds per variant and depth, failed seeds counted."""
    depths = _depths(results)
    rows = []
    for name, v in results["variants"].items():
        stats = claims.depth_stats(results, name)
        cells = []
        for d in depths:
            s = stats.get(int(d))
            if s is None:
                cells.append("—")
                continue
            fail = f" ({s['failed']}/{s['seeds']} failed)" if s["failed"] else ""
            cells.append(f"{s['mean']:.3f} ± {s['std']:.3f}{fail}")
        rows.append([v["label"], *cells])
    head = ["variant", *(f"L={d}" for d in depths)]
    unigram = results["data"]["unigram_loss"]
    return (
        outputs.markdown_table(head, rows)
        + f"\n\nUnigram loss of the same validation characters: {unigram:.3f} nats; "
        f"{results['data']['valid_characters']} characters scored."
    )


def _mean(values) -> float:
    arr = np.array([np.nan if x is None else x for x in values], np.float64)
    return float(np.nanmean(arr)) if np.isfinite(arr).any() else float("nan")


def grad_table(results) -> str:
    """The last layer's gradient norm at init (mean over seeds) per depth, and its slope."""
    depths = _depths(results)
    rows = []
    for name, v in results["variants"].items():
        fit = v["xiong_fit"]
        cells = [
            _mean(v["depths"][d]["init_grad_xiong"]) if d in v["depths"] else "—" for d in depths
        ]
        slope = f"{fit['exponent']:+.3f} (r² {fit['r2']:.2f})" if fit else "—"
        ratio = claims.bottom_over_top(results, name)
        rows.append([v["label"], *cells, slope, f"{ratio[1]:.3g}" if ratio else "—"])
    head = ["variant", *(f"L={d}" for d in depths), "slope against L", "layer 1 / layer L"]
    return (
        outputs.markdown_table(head, rows)
        + "\n\nTransformer: ‖∂loss/∂W^{2,L}‖, the last block's second FFN weight (Xiong et al. "
        "2020, Theorem 1: slope 0 post-LN, -1/2 pre-LN); LSTM: the last layer's cell "
        "parameters (no theorem). Layer 1 / layer L: the first layer's gradient norm over the "
        "last's, at the deepest L (below 1: the gradient shrinks on its way down the stack). "
        "Every layer's norm is in results.json (init_grad_layers) and in grad_norms_at_init.png."
    )


def cost_table(results) -> str:
    """Parameters, time per step (reported, not judged) and compile time per variant and L."""
    depths = _depths(results)
    rows = []
    for v in results["variants"].values():
        for d in depths:
            r = v["depths"].get(d)
            if r is None:
                continue
            rows.append(
                [
                    v["label"],
                    int(d),
                    r["params"],
                    1e3 * r["seconds_per_step"],
                    r["compile_s"],
                ]
            )
    head = ["variant", "L", "params", "ms per step", "compile s"]
    serial = []
    for family, by_depth in results["serial_steps"].items():
        for d, s in by_depth.items():
            serial.append([family, s["variant"], int(d), s["n"], s["hlo"], s["jaxpr"]])
    return (
        outputs.markdown_table(head, rows)
        + "\n\nms per step: one run (one seed), the median over the seeds; post-LN with and "
        "without warmup share one compiled program. Times move with the machine's load: they "
        "are reported, never judged.\n\nSerial steps of the forward program (one window of N "
        "characters), read from the compiled HLO and from the jaxpr:\n\n"
        + outputs.markdown_table(["family", "variant", "L", "N", "HLO", "jaxpr"], serial)
    )


def sections(results) -> list[tuple[str, str]]:
    return [
        ("Validation loss against depth", loss_table(results)),
        ("Gradient norms at initialisation", grad_table(results)),
        ("Cost: time per step and serial steps", cost_table(results)),
    ]
