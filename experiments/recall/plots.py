"""recall's plots and report tables, read from results.json as stored. Each family keeps its
look from experiments/lab/style.py, as in every figure.
"""

import numpy as np

from anatomy.tables import markdown_table, mean_std
from experiments.lab import outputs, style
from experiments.recall import claims


def _mean(xs):
    vals = [x for x in np.ravel(np.asarray(xs, dtype=object)) if x is not None]
    return float(np.mean(np.asarray(vals, float))) if vals else float("nan")


def _by_family(contenders):
    out = {}
    for name, e in contenders.items():
        out.setdefault(e["family"], []).append(name)
    return out


def _acc_at(entry, n_index):
    """Mean accuracy over K and seeds at the N of n_index."""
    return _mean(entry["accuracy"][n_index])


def draw(results, workdir) -> list[str]:
    """The frontier (accuracy against state bytes at each N, log axis, one curve per family;
    attention's KV cache at that N) and accuracy against N and K; returns their file names."""
    front = results["frontier"]
    c, ns, ks = front["contenders"], front["seq_lens"], front["pair_counts"]
    r = results["readers"]
    fig, axes = outputs.new_figure(1, len(ns), figsize=(4.6 * len(ns), 4.5), squeeze=False)
    for i, (n, ax) in enumerate(zip(ns, axes[0])):
        for family, members in _by_family(c).items():
            members = sorted(members, key=lambda m: c[m]["state_bytes"][i])
            x = [c[m]["state_bytes"][i] for m in members]
            y = [_acc_at(c[m], i) for m in members]
            label = family + (" (KV cache at N)" if family in claims.GROWING else "")
            ax.plot(x, y, label=label, **style.line(family))
        ax.axhline(claims.SOLVED, color="gray", ls=":", lw=1, label=f"solved ({claims.SOLVED:g})")
        ax.axhline(max(_mean(r["position"][i]), _mean(r["bag"][i])), color="gray", ls="--",
                   lw=1, label="best reader without recall")  # fmt: skip
        ax.set_xscale("log", base=10)
        ax.set(xlabel="state bytes (float32, all layers)", ylim=(-0.02, 1.02),
               title=f"N = {n}, K = {', '.join(map(str, ks[i]))}")  # fmt: skip
        if i == 0:
            ax.set_ylabel("MQAR accuracy (mean over K)")
            ax.legend(fontsize=7)
    fig.suptitle("recall against state size, trained on one mixture of N (Based, Fig. 2)")
    names = [outputs.save_plot(fig, workdir, "recall_frontier.png")]

    fig, (a, b) = outputs.new_figure(1, 2, figsize=(12, 4.5))
    for name, e in c.items():
        look = style.line(e["family"])
        a.plot(ns, [_acc_at(e, i) for i in range(len(ns))], label=name, alpha=0.8, **look)
        b.plot(ks[-1], [_mean(x) for x in e["accuracy"][-1]], label=name, alpha=0.8, **look)
    a.axhline(claims.SOLVED, color="gray", ls=":", lw=1)
    a.set_xscale("log", base=2)
    outputs.grid_ticks(a, ns)
    a.set(xlabel="sequence length N (K = N/16, N/8, N/4)", ylabel="MQAR accuracy (mean over K)",
          ylim=(-0.02, 1.02), title="accuracy against N")  # fmt: skip
    a.legend(fontsize=6)
    b.set_xscale("log", base=2)
    outputs.grid_ticks(b, ks[-1])
    b.set(xlabel="key-value pairs K", ylabel="MQAR accuracy", ylim=(-0.02, 1.02),
          title=f"accuracy against K at N = {ns[-1]}")  # fmt: skip
    names.append(outputs.save_plot(fig, workdir, "recall_lengths.png"))
    return names


def frontier_table(results) -> str:
    front = results["frontier"]
    ns, ks = front["seq_lens"], front["pair_counts"]
    header = ["contender", "family", "params", "state bytes", "lr", "learned (acc × K)"] + [
        f"N={n}, K={k}" for n, kk in zip(ns, ks) for k in kk
    ]
    rows = []
    for name, e in front["contenders"].items():
        b = e["state_bytes"]
        state = f"{b[0]:,}" if len(set(b)) == 1 else " / ".join(f"{x:,}" for x in b)
        cells = [mean_std(x) for row in e["accuracy"] for x in row]
        rows.append([name, e["family"], f"{e['params']:,}", state, e["learning_rate"],
                     f"{claims.recalled(results, name):.2f}"] + cells)  # fmt: skip
    return (
        "Every contender trained on one mixture of N; accuracy at each (N, K), mean ± std over "
        f"seeds. State bytes: at N = {', '.join(map(str, ns))} where they grow with N. Learned: "
        f"accuracy × K at the smallest K of the smallest N (the gate is {claims.LEARNED:g}; the "
        "plateau about 1).\n\n" + markdown_table(header, rows)
    )


def lengths_table(results) -> str:
    front = results["frontier"]
    ns, ks = front["seq_lens"], front["pair_counts"]
    header = ["contender"] + [f"N={n} (K={', '.join(map(str, k))})" for n, k in zip(ns, ks)]
    rows = [
        [name] + [mean_std(np.mean(np.asarray(x, float), axis=0)) for x in e["accuracy"]]
        for name, e in front["contenders"].items()
    ]
    return "Mean over K, mean ± std over seeds.\n\n" + markdown_table(header, rows)


def readers_table(results) -> str:
    front = results["frontier"]
    cols = [f"N={n}, K={k}" for n, kk in zip(front["seq_lens"], front["pair_counts"]) for k in kk]
    r = results["readers"]
    rows = [[name] + [f"{x:.3f}" for row in r[name] for x in row]
            for name in ("lookup", "position", "bag")]  # fmt: skip
    return (
        "lookup: the value that followed the query's key (recall); position: the value most "
        "often asked at that position in training, without the tokens; bag: the most frequent "
        "value token so far, without their order.\n\n" + markdown_table(["reader"] + cols, rows)
    )


def grid_table(results) -> str:
    g = results["lr_grid"]
    header = ["contender"] + [f"lr {r:g}" for r in g["rates"]]
    rows = [[name] + [f"{a:.3f}" for a in accs] for name, accs in g["valid_accuracy"].items()]
    chosen = ", ".join(f"{f}: {r:g}" for f, r in g["chosen"].items())
    return (
        "Validation accuracy (mean over every (N, K) of the mixture and the design seeds).\n\n"
        + markdown_table(header, rows)
        + f"\n\nChosen per family: {chosen}."
    )


def budget(results) -> str:
    """This run's training budget beside Zoology's and Based's, in sequences per model."""
    c = results["config"]
    f = results["frontier"]
    seqs = sum(int(p) * len(k) for k, p in zip(f["pair_counts"], c["mixture"]["per_k"]))
    ours = int(c["steps"]) * seqs
    return (
        f"Budget per model: here {ours:,} sequences ({c['steps']} steps of {seqs}), one rate "
        "per family chosen once on design seeds; Zoology's Figure 2: up to 6.4M per N (100,000 "
        "examples, 64 epochs, stopped at 0.99 validation accuracy), the best of 4 rates per "
        "point; Based's Figure 2: 5.76M (180,000 examples of its mixture, 32 epochs), the best "
        "of 4 rates per point."
    )


def papers(results) -> str:
    return (
        comparison(results)
        + "\n\n"
        + budget(results)
        + "\n\n"
        + (
            "Zoology (Arora et al. 2023, Figure 2, V = 8,192, fillers 0, attention with learned "
            "positions and no conv): attention solves MQAR at every width 64-512 and N 64-256 "
            "with K = N/16; gated convolutions and diagonal SSMs (H3, Hyena, RWKV) fall as N "
            "grows and need a much larger width to recover. Based (Arora et al. 2024, Figure 2, "
            "V = 8,192, random fillers, a short conv before every mixer): trained on one mixture "
            "(N = 64 with K = 4; 128 with 8; 256 with 16, 32, 64), tested to N = 1,024; accuracy "
            "against recurrent state bytes draws a frontier, attention at the top right with a "
            "KV cache that grows with N, Based, Mamba and sliding-window attention trading "
            "recall for state along it."
        )
    )


def notes(results) -> str:
    c = results["config"]
    f = results["frontier"]
    m = c["mixture"]
    shape = ", ".join(
        f"{int(p) * len(k)} at N = {n}" for n, k, p in zip(f["seq_lens"], f["pair_counts"],
                                                        m["per_k"])
    )  # fmt: skip
    seqs = sum(int(p) * len(k) for k, p in zip(f["pair_counts"], m["per_k"]))
    split = "test" if c["split"] == "test" else "validation"
    seed = c["test_seed"] if c["split"] == "test" else c["valid_seed"]
    return (
        f"MQAR (experiments/tasks/mqar.py, Zoology's generator): V = {c['vocab']}, query gaps "
        f"with power_a = {c['power_a']}, random fillers = {c['random_non_queries']}. Training: "
        f"Based's mixture of lengths, every step {seqs} fresh sequences ({shape}), each N split "
        f"evenly over K = {f['pair_counts']}; {c['steps']} AdamW steps "
        f"({int(c['steps']) * seqs:,} sequences per model), warmup {c['warmup']}, cosine decay "
        f"to 0, weight decay {c['weight_decay']}, clipped at 1. Every contender: "
        f"{c['n_layers']} layers, no MLP, width {c['d_model']} unless its name says otherwise, "
        "the short conv in front of every mixer; the peak learning rate per family in the lr "
        "column (the committed lr_grid runs' choice, read as one grid, on the validation set "
        "and design seeds); "
        f"seeds {list(c['seeds'])}; {c['eval_examples']} {split} examples per (N, K), drawn "
        f"from seed {seed}. State bytes: the floating-point leaves of the model's decoding state "
        "for one sequence of length N (attention: its KV cache of capacity N)."
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
    return markdown_table(["the papers", "here", "measured"], rows)
