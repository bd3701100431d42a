"""rnn_vs_attn's plots (BLEU by length, training and validation loss, cross-attention) and
report.md, written by process 0."""

from __future__ import annotations

import sys

import numpy as np

from anatomy.data import describe_corpus_report
from experiments import outputs
from experiments.rnn_vs_attn.seeds import STD, bleu_table, results_table


def _style(name: str, colors: dict) -> dict:
    """One colour per architecture (rnnsearch-30 and rnnsearch-50 share it); '-30' dashed."""
    base, _, limit = name.partition("-")
    color = colors.setdefault(base, f"C{len(colors)}")
    return {"color": color, "linestyle": "--" if limit and int(limit) < 50 else "-"}


def draw_by_length(ax, models: dict, labels, key: str = "bleu_by_length") -> int:
    """One line per model of models[m][key] over the length buckets (the mean over seeds) and,
    with several seeds, the min-max range over them as a band; returns the number of seeds."""
    x, colors = np.arange(len(labels)), {}
    n_seeds = max(r.get("n_seeds", 1) for r in models.values())
    for name, r in models.items():
        style = _style(name, colors)
        ax.plot(
            x,
            [r[key].get(lab, np.nan) for lab in labels],
            marker="o",
            label=name,
            **style,
        )
        seeds = r.get("seeds", [])
        if len(seeds) > 1:
            per = np.array([[s[key].get(lab, np.nan) for lab in labels] for s in seeds])
            ax.fill_between(x, per.min(0), per.max(0), color=style["color"], alpha=0.15, lw=0)
    ax.set_xticks(x, labels)
    return n_seeds


def plot_bleu(models: dict, labels, workdir: str) -> str:
    fig, ax = outputs.new_figure(figsize=(6.5, 4.2))
    n_seeds = draw_by_length(ax, models, labels)
    band = f"; band: min-max over {n_seeds} seeds" if n_seeds > 1 else ""
    ax.set(
        xlabel="source length (tokens)",
        ylabel="test BLEU",
        ylim=(0, 100),
        title=f"BLEU against source length (cf. Bahdanau et al. 2015, Fig. 2){band}",
    )
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    return outputs.save_plot(fig, workdir, "bleu_by_length.png")


def _curves(histories: dict, xkey: str, ykey: str, ax) -> None:
    """Every seed of every model as a line (one colour per model, one legend entry)."""
    colors = {}
    for name, seeds in histories.items():
        style = _style(name, colors)
        for s, recs in enumerate(seeds):
            recs = [r for r in recs if r.get(ykey) is not None]
            ax.plot(
                [r[xkey] for r in recs],
                [r[ykey] for r in recs],
                alpha=1.0 if s == 0 else 0.5,
                label=name if s == 0 else None,
                **style,
            )


def plot_curves(histories: dict, workdir: str) -> list[str]:
    """loss_vs_steps/time.png (training loss) and valid_loss(_vs_time).png (when validated).

    histories: model -> [metrics.jsonl records of seed 0, of seed 1, ...].
    """
    names = []
    for ykey, ylabel, plots in (
        (
            "loss",
            "training loss (label-smoothed)",
            (("step", "loss_vs_steps.png"), ("wall_time", "loss_vs_time.png")),
        ),
        (
            "valid_loss",
            "validation loss (teacher-forced, unsmoothed)",
            (("step", "valid_loss.png"), ("wall_time", "valid_loss_vs_time.png")),
        ),
    ):
        if not any(ykey in r for seeds in histories.values() for recs in seeds for r in recs):
            continue
        for xkey, fname in plots:
            fig, ax = outputs.new_figure(figsize=(6, 4))
            _curves(histories, xkey, ykey, ax)
            xlabel = (
                "optimiser step" if xkey == "step" else "training time (s; validation excluded)"
            )
            ax.set(xlabel=xlabel, ylabel=ylabel, yscale="log")
            ax.legend(fontsize=8)
            names.append(outputs.save_plot(fig, workdir, fname))
    return names


def plot_attention(name, w, pair, workdir) -> str:
    src = pair[0].split()
    tgt = pair[1].split() + ["</s>"]
    fig, ax = outputs.new_figure(figsize=(9, 8))
    ax.imshow(w, cmap="gray_r", aspect="auto", vmin=0.0)
    fs = 5 if max(len(src), len(tgt)) > 40 else 7
    if w.shape == (len(tgt), len(src)):  # word vocab: one token per word
        ax.set_xticks(range(len(src)), src, rotation=90, fontsize=fs)
        ax.set_yticks(range(len(tgt)), tgt, fontsize=fs)
    ax.set(
        xlabel="source position",
        ylabel="target position",
        title=f"{name}: cross-attention ({len(src)}-token source)",
    )
    return outputs.save_plot(fig, workdir, f"attention_{name}.png")


def _setup_note(config, meta) -> str:
    counts = meta["test_sentences_per_bucket"]
    split = meta.get("eval_split", "test")
    cap = (
        f"at most {config.eval.max_per_bucket} {split} sentences per bucket"
        if config.eval.max_per_bucket > 0
        else f"the whole {split} split"
    )
    budget = (
        f"for {config.train.max_train_seconds:g} s of training each (equal time; each "
        f"model's schedule laid out over the budget, shaped as over {config.train.num_steps} "
        "steps: the steps and tokens each model reached are in the table; time-based, so not "
        "reproducible to the digit)"
        if config.train.max_train_seconds > 0
        else f"{config.train.num_steps} steps of ~{config.data.token_budget}-token batches "
        "(same token budget)"
    )
    seeds = (
        f" {meta['seeds']} seeds per model (train.seed + s; the data and its order fixed): "
        f"mean ± {STD}."
        if meta["seeds"] > 1
        else " One seed."
    )
    limits = (
        ""
        if not meta.get("train_max_src_len")
        else " Models named `<model>-N` trained only on pairs with at most N source tokens "
        "(Bahdanau et al. 2015) and are tested on every length."
    )
    return (
        f"Corpus `{config.data.name}` ({meta['corpus_sizes']}), vocab {meta['vocab']}; every "
        f"model trained {budget}; BLEU by sacrebleu on {cap} ({counts}), {meta['decode']} "
        f"decoding.{seeds}{limits} Times are wall clock on this machine (shared cores "
        "inflate them); tokens/s is the median over logging intervals (steady state), train "
        "s includes compilation and excludes validation. Validation: teacher-forced loss on "
        f"{meta['valid_batches']} fixed valid batches every {config.train.eval_every} steps."
        + (" " + describe_corpus_report(meta["corpus_report"]) if "corpus_report" in meta else "")
    )


def write_outputs(config, workdir, models, histories, maps, labels, meta) -> list[str]:
    """results.json, the plots and report.md (process 0 only); the tables to stdout."""
    plots = [plot_attention(name, w, pair, workdir) for name, (w, pair) in maps.items()]
    plots = [plot_bleu(models, labels, workdir)] + plot_curves(histories, workdir) + plots
    outputs.write_json(workdir, {"models": models, "setup": meta})
    img = lambda *names: "\n\n".join(f"![]({n})" for n in names if n in plots)
    sections = [
        ("Setup", _setup_note(config, meta)),
        ("Results", results_table(models)),
        ("BLEU by source length", bleu_table(models, labels) + "\n\n" + img("bleu_by_length.png")),
        ("Training loss", img("loss_vs_steps.png", "loss_vs_time.png")),
    ]
    if "valid_loss.png" in plots:
        sections.append(
            (
                "Validation loss (the engineering ledger: loss against seconds)",
                img("valid_loss.png", "valid_loss_vs_time.png"),
            )
        )
    attn = [p for p in plots if p.startswith("attention_")]
    if attn:
        sections.append(("Attention on one long test sentence", img(*attn)))
    outputs.write_report(workdir, "RNN vs attention on " + config.data.name, sections)
    print(
        "\n" + results_table(models) + "\n\n" + bleu_table(models, labels),
        file=sys.stdout,
        flush=True,
    )
    return plots
