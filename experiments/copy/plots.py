"""copy's plot (exact match against string length, each fixed-state model's bound drawn) and
report tables, read from results.json as stored. Colours and markers:
experiments/lab/style.py's, a family's members told apart by their line style."""

import numpy as np

from anatomy.tables import markdown_table, mean_std
from experiments.copy import claims
from experiments.lab import outputs, style


def draw(results, workdir) -> list[str]:
    lengths, c = results["lengths"], results["contenders"]
    fig, a = outputs.new_figure(figsize=(8, 4.8))
    dashes = {}
    for name, e in c.items():
        look = style.line(e["family"])
        dashes[e["family"]] = dashes.get(e["family"], -1) + 1
        look["linestyle"] = ["-", "--", ":"][dashes[e["family"]] % 3]
        a.plot(lengths, [np.mean(x) for x in e["exact"]], label=f"{name} ({e['params']:,} params)",
               **look)  # fmt: skip
        if e["bound"] is not None:
            shown = min(e["bound"], lengths[-1] * 1.5)
            a.annotate(f"l* = {e['bound']:,.0f}", (shown, 0.02 + 0.05 * dashes[e["family"]]),
                       color=look["color"], fontsize=7, ha="right")  # fmt: skip
    for reader, ls in (("position", ":"), ("bag", "-.")):
        a.plot(lengths, results["readers"][reader], ls, color="gray", lw=1,
               label=f"{reader} reader (no copying)")  # fmt: skip
    a.axvline(results["train_max"], color="gray", ls=":", lw=1)
    a.axhline(claims.COPIED, color="gray", ls="--", lw=0.8)
    a.set_xscale("log", base=2)
    outputs.grid_ticks(a, lengths)
    a.set(xlabel="string length l (dotted: the longest trained, L)", ylabel="exact match",
          ylim=(-0.02, 1.02),
          title="copying against length; l* = the state's bound b / log2 A (Jelassi et al.)")  # fmt: skip
    a.legend(fontsize=7)
    return [outputs.save_plot(fig, workdir, "copy_length.png")]


def exact_table(results) -> str:
    lengths = results["lengths"]
    header = ["contender", "width", "params", "state bytes (l=L)", "l*"] + [
        f"l={n}" for n in lengths
    ]
    i = lengths.index(results["train_max"]) if results["train_max"] in lengths else 0
    rows = []
    for name, e in results["contenders"].items():
        b = "grows" if e["bound"] is None else f"{e['bound']:,.0f}"
        rows.append([name, e["d_model"], e["params"], e["state_bytes"][i], b]
                    + [mean_std(x) for x in e["exact"]])  # fmt: skip
    return "Exact-match rate, mean ± std over seeds.\n\n" + markdown_table(header, rows)


def readers_table(results) -> str:
    r = results["readers"]
    rows = [[name] + r[name] for name in ("copy", "position", "bag")]
    return markdown_table(["reader"] + [f"l={n}" for n in results["lengths"]], rows)


def grid_table(results) -> str:
    g = results["lr_grid"]
    header = ["contender"] + [f"lr {r:g}" for r in g["rates"]]
    loss = g.get("valid_loss", {})
    rows = []
    for name, accs in g["valid_exact"].items():
        cells = [f"{a:.3f}" for a in accs]
        if name in loss:
            cells = [f"{c} (loss {x:.3g})" for c, x in zip(cells, loss[name])]
        rows.append([name] + cells)
    chosen = ", ".join(f"{f}: {r:g}" for f, r in g["chosen"].items())
    return (
        f"Validation exact match (mean over l = {g['lengths']} and design seeds; the mean "
        "validation loss beside it breaks ties).\n\n"
        + markdown_table(header, rows)
        + f"\n\nChosen per contender: {chosen}."
    )


def paper(results) -> str:
    return (
        "Jelassi et al. 2024 (~160M-parameter models, strings over an alphabet of up to 26 "
        "letters): transformers reach near-perfect copying after far fewer training examples "
        "than Mamba or LSTMs of the same size (their Figure 2); with NoPE or Hard-ALiBi heads "
        "(some heads see a hard window of the last few tokens, the others no positions: their "
        "released hard_alibi_model.py) transformers copy strings longer than any trained on, "
        "while the state-space models fail beyond them (their Figure 3); Theorem 2.7 bounds a "
        "state of b bits to strings of about b / log2 A symbols."
    )


def notes(results) -> str:
    c = results["config"]
    return (
        f"Strings of A = {c['alphabet']} symbols, '$ s | s .' (experiments/tasks/copying.py); "
        f"training lengths U{{1 .. {c['train_max']}}}, {c['steps']} AdamW steps of "
        f"{c['batch']} strings (the same for every contender of a seed), warmup {c['warmup']}, "
        f"cosine decay to 0, weight decay {c['weight_decay']}, each contender's own peak rate "
        f"{dict(c['learning_rate'])} (the committed lr_grid run's choice on the design seed); "
        f"seeds {list(c['seeds'])}; copy/longer reads {results.get('longer', '—')}. Every "
        f"contender: {c['n_layers']} "
        f"layers, no MLP, conv {c['conv']} in front of every mixer, its width matched to "
        f"{c['target_params']:,} parameters. Exact match: every predicted symbol and the final "
        f"'.' right under teacher forcing (the same event as greedy decoding being right), "
        f"{c['eval_examples']} test strings per length from seed {c['test_seed']}. l* = "
        "8·(state bytes) / log2 A, the float32 state read as bits."
    )
