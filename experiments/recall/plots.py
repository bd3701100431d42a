"""recall's plots and report tables, read from results.json as stored.

One colour and marker per family (``style``), the same in recall, copy and crossover.
"""

import numpy as np

from experiments import outputs
from experiments.recall import claims

# family -> (colour, marker): every figure of recall, copy and crossover draws a family so
_STYLES = {
    "attention": ("black", "s"),
    "lstm": ("tab:brown", "v"),
}
_SPARE = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:pink",
          "tab:olive", "tab:cyan", "tab:gray"]  # fmt: skip
_SPARE_MARKERS = ["o", "D", "^", "P", "X", "*", "h", "<", ">"]


def style(family):
    """(colour, marker) of a family: fixed for the known ones, else from a spare list by the
    family's name (stable across figures)."""
    if family in _STYLES:
        return _STYLES[family]
    i = sum(map(ord, family))
    return _SPARE[i % len(_SPARE)], _SPARE_MARKERS[i % len(_SPARE_MARKERS)]


def _mean(xs):
    vals = [x for x in np.ravel(np.asarray(xs, dtype=object)) if x is not None]
    return float(np.mean(np.asarray(vals, float))) if vals else float("nan")


def _pm(xs) -> str:
    xs = np.asarray([x for x in xs if x is not None], float)
    if not len(xs):
        return "—"
    return f"{xs.mean():.3f} ± {xs.std():.3f}" if len(xs) > 1 else f"{xs[0]:.3f}"


def _by_family(contenders):
    out = {}
    for name, e in contenders.items():
        out.setdefault(e["family"], []).append(name)
    return out


def draw(results, workdir) -> list[str]:
    """The frontier (accuracy against state bytes, log axis, one curve per family) and accuracy
    against N and K; returns their file names."""
    names = []
    front = results["frontier"]
    c = front["contenders"]
    fig, (a, b) = outputs.new_figure(1, 2, figsize=(12, 4.5))
    for family, members in _by_family(c).items():
        members = sorted(members, key=lambda m: c[m]["state_bytes"])
        colour, marker = style(family)
        x = [c[m]["state_bytes"] for m in members]
        y = [_mean(c[m]["accuracy"]) for m in members]
        label = family + (" (KV cache at N)" if family in claims.GROWING else "")
        a.plot(x, y, "-", color=colour, marker=marker, label=label)
    a.axhline(claims.SOLVED, color="gray", ls=":", lw=1, label=f"solved ({claims.SOLVED:g})")
    r = results["readers"]
    a.axhline(max(_mean(r["position"]), _mean(r["bag"])), color="gray", ls="--", lw=1,
              label="best reader without recall")  # fmt: skip
    a.set_xscale("log", base=2)
    a.set(
        xlabel="state bytes (float32, all layers)",
        ylabel="MQAR accuracy (mean over K)",
        ylim=(-0.02, 1.02),
        title=f"recall against state size, N = {front['seq_len']} (Based, Fig. 2)",
    )
    a.legend(fontsize=7)
    ks = front["pair_counts"]
    for name, e in c.items():
        colour, marker = style(e["family"])
        b.plot(ks, [np.mean(x) for x in e["accuracy"]], "-", color=colour, marker=marker,
               label=name, alpha=0.8)  # fmt: skip
    b.set_xscale("log", base=2)
    outputs.grid_ticks(b, ks)
    b.set(xlabel="key-value pairs K", ylabel="MQAR accuracy", ylim=(-0.02, 1.02),
          title=f"accuracy against K at N = {front['seq_len']}")  # fmt: skip
    b.legend(fontsize=6)
    names.append(outputs.save_plot(fig, workdir, "recall_frontier.png"))

    lens = results["lengths"]
    if lens["contenders"]:
        fig, a = outputs.new_figure(figsize=(6, 4.5))
        for name, e in lens["contenders"].items():
            colour, marker = style(e["family"])
            a.plot(lens["seq_lens"], [np.mean(x) for x in e["accuracy"]], "-", color=colour,
                   marker=marker, label=name)  # fmt: skip
        a.axhline(claims.SOLVED, color="gray", ls=":", lw=1)
        a.set_xscale("log", base=2)
        outputs.grid_ticks(a, lens["seq_lens"])
        a.set(xlabel="sequence length N (K = N/16, N/8, N/4)", ylabel="MQAR accuracy (mean over K)",
              ylim=(-0.02, 1.02), title="accuracy against N")  # fmt: skip
        a.legend(fontsize=7)
        names.append(outputs.save_plot(fig, workdir, "recall_lengths.png"))
    return names


def frontier_table(results) -> str:
    front = results["frontier"]
    ks = front["pair_counts"]
    header = ["contender", "family", "params", "state bytes", "lr"] + [f"K={k}" for k in ks]
    rows = []
    for name, e in front["contenders"].items():
        rows.append([name, e["family"], e["params"], e["state_bytes"], e["learning_rate"]]
                    + [_pm(x) for x in e["accuracy"]])  # fmt: skip
    return f"N = {front['seq_len']}; mean ± std over seeds.\n\n" + outputs.markdown_table(
        header, rows
    )


def lengths_table(results) -> str:
    lens = results["lengths"]
    if not lens["contenders"]:
        return "No lengths stage in this run."
    header = ["contender"] + [
        f"N={n}, K={k}" for n, k in zip(lens["seq_lens"], lens["pair_counts"])
    ]
    rows = [[name] + [_pm(x) for x in e["accuracy"]] for name, e in lens["contenders"].items()]
    return outputs.markdown_table(header, rows)


def readers_table(results) -> str:
    ks = results["frontier"]["pair_counts"]
    r = results["readers"]
    rows = [[name] + r[name] for name in ("lookup", "position", "bag")]
    return (
        "lookup: the value that followed the query's key (recall); position: the value most "
        "often asked at that position in training, without the tokens; bag: the most frequent "
        "value token so far, without their order.\n\n"
        + outputs.markdown_table(["reader"] + [f"K={k}" for k in ks], rows)
    )


def grid_table(results) -> str:
    g = results["lr_grid"]
    header = ["contender"] + [f"lr {r:g}" for r in g["rates"]]
    rows = [[name] + accs for name, accs in g["valid_accuracy"].items()]
    chosen = ", ".join(f"{f}: {r:g}" for f, r in g["chosen"].items())
    return (
        "Validation accuracy (mean over K and design seeds).\n\n"
        + outputs.markdown_table(header, rows)
        + f"\n\nChosen per family: {chosen}."
    )


def papers(results) -> str:
    return (
        comparison(results)
        + "\n\n"
        + (
            "Zoology (Arora et al. 2023, Figure 2, best of 4 learning rates, 64 epochs of 100,000 "
            "examples, V = 8,192): attention solves MQAR at every width 64-512 and N 64-512 "
            "(K = 4-64 pairs); gated convolutions and diagonal SSMs (H3, Hyena, RWKV) fall as N "
            "and K grow and need a much larger width to recover. Based (Arora et al. 2024, "
            "Figure 2): accuracy against recurrent state size draws a frontier, attention at the "
            "top right with a KV cache that grows with N, sliding-window and linear attention "
            "trading recall for state along it."
        )
    )


def notes(results) -> str:
    c = results["config"]
    f = results["frontier"]
    return (
        f"MQAR (experiments/recall/task.py, Zoology's generator): V = {c['vocab']}, query gaps "
        f"with power_a = {c['power_a']}, random fillers = {c['random_non_queries']}. Frontier: "
        f"N = {f['seq_len']}, each batch split evenly over K = {f['pair_counts']}. Every "
        f"contender: {c['n_layers']} layers, no MLP, width {c['d_model']} unless its name says "
        f"otherwise; {c['steps']} AdamW steps of {c['tokens_per_batch']} tokens, warmup "
        f"{c['warmup']}, cosine decay to 0, weight decay {c['weight_decay']}, clipped at 1; "
        "the peak learning rate per family in the lr column (the committed lr_grid run's "
        "choice where there is one, else the grid's middle for every family); "
        f"seeds {list(c['seeds'])}; "
        f"{c['eval_examples']} test examples per (N, K), drawn from seed {c['test_seed']} "
        "(no choice ever read them). State bytes: the floating-point leaves of the model's "
        "decoding state for one sequence of length N (attention: its KV cache of capacity N)."
    )


# the papers' findings, point by point beside our claim that measures the same thing
PAPERS = (
    ("recall/needs_recall", "MQAR measures recall: the gap between attention and gated "
     "convolutions on real text is mostly associative recall (Zoology: 82% of it)"),
    ("recall/attention_every_n", "attention solves MQAR at every width and length tried "
     "(Zoology, Figure 2: widths 64-512, N 64-512)"),
    ("recall/grows_with_state", "recall grows with the recurrent state along a frontier "
     "(Based, Figure 2: feature dimension and window dial the state)"),
    ("recall/falls_with_k", "at a fixed state, recall falls as more key-value pairs must be "
     "held (Zoology: harder with K; Based: the state-recall tradeoff)"),
    ("recall/matrix_vs_diagonal", "a gated or delta-rule matrix state recalls more per byte "
     "than a diagonal decay (gated DeltaNet, mLSTM against Mamba, RG-LRU)"),
    ("recall/hybrid", "a few attention layers among recurrent ones recover most of attention's "
     "recall (Based: linear + sliding-window attention; Griffin, Jamba: hybrids)"),
)  # fmt: skip


def comparison(results) -> str:
    """The papers' findings beside this run's claims, one row each (a claim by id)."""
    judged = {c.id: c for c in claims.table(results)}
    rows = [[finding, judged[cid].verdict, judged[cid].measured] for cid, finding in PAPERS]
    return outputs.markdown_table(["the papers", "here", "measured"], rows)
