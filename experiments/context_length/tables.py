"""context_length's report tables and notes, read from results.json as stored."""

import numpy as np

from experiments import outputs
from experiments.context_length import claims


def _pm(xs) -> str:
    """'mean ± std' over the seeds ('—' for none; the value alone for one seed)."""
    xs = np.asarray([x for x in np.ravel(xs) if np.isfinite(x)], float)
    if not len(xs):
        return "—"
    return f"{xs.mean():.3f} ± {xs.std(ddof=1):.3f}" if len(xs) > 1 else f"{xs[0]:.3f}"


def loss(results) -> str:
    """Excess value-token loss over the oracle per model and evaluation length (mean ± std
    over seeds), and on the last quarter of L the fraction of the gap closed."""
    n = results["train_length"]
    header = ["model", "stage", "params", "gap closed, last quarter of L"] + [
        f"excess at {m // n}L = {m}" for m in results["lengths"]
    ]
    rows = [
        ["oracle (its loss)", "—", "—", "1"]
        + [f"{claims.oracle_loss(results, m):.3f}" for m in results["lengths"]],
        [
            f"window reader (first {results['window_reader']['window']} tokens)",
            "—",
            "—",
            f"{claims.reader_closed(results).point:.3f}",
        ]
        + ["—"] * len(results["lengths"]),
    ]
    for name, r in results["models"].items():
        rows.append(
            [name, r["stage"], r["params"], _pm(claims.closed(results, name))]
            + [_pm(claims.excess(results, name, m)) for m in results["lengths"]]
        )
    return outputs.markdown_table(header, rows)


def _probe_at(results, length) -> str:
    i = results["probe_lengths"].index(length)
    ks = results["k_grid"][i]
    n = results["train_length"]
    header = ["model"] + [f"k={k}" + (" (beyond L)" if k > n else "") for k in ks]
    rows = [
        [name] + [_pm(seeds) for seeds in claims._floats(r["probe"][i])]
        for name, r in results["models"].items()
    ]
    return f"At N = {length} ({length // n}L):\n\n" + outputs.markdown_table(header, rows)


def probe(results) -> str:
    """Probe accuracy per model and k (mean ± std over seeds), at each probed length."""
    return (
        f"Chance is 1/V = {results['chance']:.3f}; a key beyond L sits at an absolute "
        f"position >= L.\n\n" + "\n\n".join(_probe_at(results, m) for m in results["probe_lengths"])
    )


def notes(results) -> str:
    c = results["config"]
    n = results["train_length"]
    return (
        f"Key-value stream (experiments/context_length/task.py): {c['n_keys']} keys, "
        f"{c['n_values']} values (a table drawn per sequence), at most {c['in_play']} keys in "
        f"play, a key entering play with chance {c['p_new']:g} per pair. Every model is trained "
        f"from scratch at L = {n} tokens for {c['steps']} Adam steps of {c['batch']} sequences "
        f"(the same batches for every model of a seed), seeds {list(c['seeds'])}; the design "
        f"(task, steps, learning rate) was chosen on other seeds and other held-out data (the "
        f"config's 'dev' preset). Transformers: d_model {c['d_model']}, {c['n_layers']} pre-LN "
        f"blocks, {c['n_heads']} heads; the LSTM: {c['lstm_layers']} layer(s) of "
        f"{c['lstm_hidden']}; Adam for every model at peak lr {c['learning_rate']:g}, warmup "
        f"{c['warmup']}, cosine decay to a tenth, clipped at 1. Extension to "
        f"{results['ft_length']} = {c['ft_factor']}L: rope_scale = {c['ft_factor']} "
        "(interpolation) or the NTK-aware base "
        f"{results['models'].get('rope+ntk', {}).get('rope_base', float('nan')):.0f}; the "
        f"fine-tune is {results['ft_steps']} steps ({c['ft_fraction']:.0%} of pre-training) of "
        f"{c['ft_batch']} sequences at {results['ft_length']} tokens, lr {c['ft_learning_rate']:g}. "
        f"Losses: {c['eval_batch']} held-out sequences of {results['lengths'][-1]} tokens, the "
        "same for every model and seed; the loss at length N is the mean over the value tokens "
        "among the first N (every model is causal, so the tokens after N do not change it). "
        f"Probe: {c['probe_batch']} sequences per (length, k), the same for every model and "
        f"seed. The learned table has {results['lengths'][-1]} rows, of which only the first "
        f"{n} are ever trained. Training and measuring took {results['cpu_seconds']:.0f} "
        "CPU-seconds (every thread of the process; the wall time is in the Run line)."
    )
