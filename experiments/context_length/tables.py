"""context_length's report tables and notes, read from results.json as stored."""

from anatomy.tables import markdown_table, mean_std
from experiments.context_length import claims


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
            [name, r["stage"], r["params"], mean_std(claims.closed(results, name), ddof=1)]
            + [mean_std(claims.excess(results, name, m), ddof=1) for m in results["lengths"]]
        )
    return markdown_table(header, rows)


def _probe_at(results, length) -> str:
    i = results["probe_lengths"].index(length)
    ks = results["k_grid"][i]
    n = results["train_length"]
    header = ["model"] + [f"k={k}" + (" (beyond L)" if k > n else "") for k in ks]
    rows = [
        [name] + [mean_std(seeds, ddof=1) for seeds in claims._floats(r["probe"][i])]
        for name, r in results["models"].items()
    ]
    return f"At N = {length} ({length // n}L):\n\n" + markdown_table(header, rows)


def probe(results) -> str:
    """Probe accuracy per model and k (mean ± std over seeds), at each probed length."""
    return (
        f"Chance is 1/V = {results['chance']:.3f}; a key beyond L sits at an absolute "
        f"position >= L.\n\n" + "\n\n".join(_probe_at(results, m) for m in results["probe_lengths"])
    )


def curves(results) -> str:
    """The RoPE family's retrieval beyond L at ft_factor·L along the fine-tune (mean ± std over
    seeds), one column per fine-tune step."""
    rows, steps = [], None
    for name in (claims.CONTROL, *claims.EXTENSIONS.values()):
        got, acc = claims.curve(results, name, claims.beyond(results))
        if not got:
            continue
        steps = got
        rows.append([name] + [mean_std(a, ddof=1) for a in acc])
    if not rows:
        return "No fine-tune curve in this run."
    n, nf = results["train_length"], results["ft_length"]
    return (
        f"Retrieval beyond L (k > {n}) at N = {nf}, after each number of fine-tune steps at "
        f"{nf // n}L (0: the zero-shot model it starts from). The speed-up claim compares the "
        f"extension after s steps with {claims.CONTROL} after {claims.SPEEDUP}s.\n\n"
        + markdown_table(["model"] + [f"{s} steps" for s in steps], rows)
    )


def grid(results) -> str:
    """The learning-rate grid: every model's score at each rate (mean over the design seeds),
    the chosen rate in bold."""

    def block(title, by, score, extra):
        header = ["model", "rate", f"{score[1]} (chosen: lowest)", extra[1]]
        rows = []
        for name, g in by.items():
            for i, lr in enumerate(g["learning_rates"]):
                mark = "**" if lr == g["chosen"] else ""
                rows.append(
                    [
                        g.get("model", name),
                        f"{mark}{lr:g}{mark}",
                        mean_std(g[score[0]][i], ddof=1),
                        mean_std(g[extra[0]][i], ddof=1),
                    ]
                )
        return f"{title}\n\n" + markdown_table(header, rows)

    seeds = list(results["config"]["seeds"])
    return "\n\n".join(
        [
            f"Design seeds {seeds}, design held-out data (eval_seed "
            f"{results['config']['eval_seed']}); {results['criterion']}.",
            block(
                "Pre-training at L:",
                results["pretrain"],
                ("loss_at_L", "held-out value loss at L"),
                ("closed", "gap closed, last quarter of L"),
            ),
            block(
                f"Fine-tune at {results['ft_length']}:",
                results["fine_tune"],
                ("loss_at_ft_length", f"held-out value loss at {results['ft_length']}"),
                ("retrieval_beyond_L", "retrieval beyond L"),
            ),
        ]
    )


def notes(results) -> str:
    c = results["config"]
    n = results["train_length"]
    models = results["models"]
    recipes = "; ".join(
        f"{m} {r['steps']} steps at peak lr {r['learning_rate']:g} ({len(r['seeds'])} seeds)"
        for m, r in models.items()
        if r["from"] == m and "learning_rate" in r
    )
    ft = ", ".join(f"{k} {v:g}" for k, v in c["ft_learning_rate"].items())
    return (
        f"Key-value stream (experiments/context_length/task.py): {c['n_keys']} keys, "
        f"{c['n_values']} values (a table drawn per sequence), at most {c['in_play']} keys in "
        f"play, a key entering play with chance {c['p_new']:g} per pair. Every model is trained "
        f"from scratch at L = {n} tokens on batches of {c['batch']} sequences (the same batches "
        f"for every model of a seed), seeds {list(c['seeds'])} (the encodings outside the "
        f"chapter's claim on the first of them: model_seeds). Each model's own recipe, its peak "
        f"rate chosen on a design seed by the committed grid (results/context_length/"
        f"lr_grid.json): {recipes}; warmup, then cosine decay to a tenth, Adam clipped at 1. "
        f"Transformers: d_model {c['d_model']}, {c['n_layers']} pre-LN blocks, {c['n_heads']} "
        f"heads; the LSTM: {c['lstm_layers']} layer(s) of {c['lstm_hidden']}. Extension to "
        f"{results['ft_length']} = {c['ft_factor']}L: rope_scale = {c['ft_factor']} "
        "(interpolation) or the NTK-aware base "
        f"{models.get('rope+ntk', {}).get('rope_base', float('nan')):.0f}; the fine-tune is "
        f"{results['ft_steps']} steps of {c['ft_batch']} sequences at {results['ft_length']} "
        f"tokens, each at its own rate from the grid ({ft}), its probe measured after "
        f"{list(c['ft_curve'])} steps. Losses: {c['eval_batch']} held-out sequences of "
        f"{results['lengths'][-1]} tokens, the same for every model and seed; the loss at length "
        "N is the mean over the value tokens among the first N (every model is causal, so the "
        f"tokens after N do not change it). Probe: {c['probe_batch']} sequences per (length, "
        f"k), the same for every model and seed. The learned table has {results['lengths'][-1]} "
        f"rows, of which only the first {n} are ever trained. Training and measuring took "
        f"{results['cpu_seconds']:.0f} CPU-seconds (every thread of the process; the wall time "
        "is in the Run line)."
    )
