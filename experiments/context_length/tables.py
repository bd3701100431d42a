"""context_length's report tables and notes, read from results.json as stored."""

import numpy as np

from experiments import outputs
from experiments.context_length import claims


def _pm(xs) -> str:
    xs = np.asarray([x for x in xs if x is not None], float)
    if not len(xs):
        return "—"
    return f"{xs.mean():.3f} ± {xs.std():.3f}" if len(xs) > 1 else f"{xs[0]:.3f}"


def loss(results) -> str:
    """Value-token loss per model and evaluation length (mean ± std over seeds)."""
    n = results["train_length"]
    header = ["model", "stage", "params"] + [f"{m // n}L = {m}" for m in results["lengths"]]
    rows = [["oracle", "—", "—"] + [f"{x:.3f}" for x in results["oracle"]["value_loss"]]]
    for name, r in results["models"].items():
        rows.append([name, r["stage"], r["params"]] + [_pm(seeds) for seeds in r["value_loss"]])
    return outputs.markdown_table(header, rows)


def probe(results) -> str:
    """Probe accuracy per model: within L (at L, every k), beyond L (at ft_factor·L, k > L)
    and at every k of ft_factor·L."""
    n, chance = results["train_length"], results["chance"]
    longest = results["probe_lengths"][-1]
    ks = results["k_grid"][-1]
    header = ["model", "within L", f"beyond L (at {longest // n}L)"] + [
        f"k={k} ({longest // n}L)" for k in ks
    ]
    rows = []
    for name, r in results["models"].items():
        at_longest = [f"{np.mean(seeds):.2f}" for seeds in r["probe"][-1]]
        rows.append(
            [name, f"{claims.within(results, name):.2f}", f"{claims.beyond(results, name):.2f}"]
            + at_longest
        )
    return f"Chance is 1/V = {chance:.3f}.\n\n" + outputs.markdown_table(header, rows)


def notes(results) -> str:
    c = results["config"]
    n = results["train_length"]
    return (
        f"Key-value stream (experiments/context_length/task.py): {c['n_keys']} keys, "
        f"{c['n_values']} values, every value drawn afresh per sequence. Every model is trained "
        f"from scratch at L = {n} tokens for {c['steps']} Adam steps of {c['batch']} sequences "
        f"(the same batches for every model of a seed), seeds {list(c['seeds'])}. Transformers: "
        f"d_model {c['d_model']}, {c['n_layers']} pre-LN blocks, {c['n_heads']} heads; the LSTM: "
        f"{c['lstm_layers']} layer(s) of {c['lstm_hidden']}; Adam for every model at peak lr "
        f"{c['learning_rate']:g}, warmup {c['warmup']}, cosine decay to a tenth, clipped at 1. "
        f"Extension to {results['ft_length']} = {c['ft_factor']}L: rope_scale = {c['ft_factor']} "
        "(interpolation) or the NTK-aware base "
        f"{results['models'].get('rope+ntk', {}).get('rope_base', float('nan')):.0f}; the "
        f"fine-tune is {results['ft_steps']} steps ({c['ft_fraction']:.0%} of pre-training) of "
        f"{c['ft_batch']} sequences at {results['ft_length']} tokens, lr {c['ft_learning_rate']:g}. "
        f"Losses: {c['eval_batch']} held-out sequences of {results['lengths'][-1]} tokens, the "
        "same for every model and seed; the loss at length N is the mean over the value tokens "
        "among the first N (every model is causal, so the tokens after N do not change it). "
        f"Probe: {c['probe_batch']} sequences per (length, k). The learned table has "
        f"{results['lengths'][-1]} rows, of which only the first {n} are ever trained."
    )
