"""rnn_vs_attn's plots (BLEU and chrF by length, training and validation loss, cross-attention)
and report.md, written by process 0."""

from __future__ import annotations

import sys

import numpy as np

from anatomy.data import describe_corpus_report
from experiments.lab import outputs, record, style
from experiments.rnn_vs_attn import claims
from experiments.tasks.translation.seeds import STD, bleu_table, results_table

# what plot_by_length draws: metric -> (results key, its name, the PNG)
BY_LENGTH = {
    "bleu": ("bleu_by_length", "BLEU", "bleu_by_length.png"),
    "chrf": ("chrf_by_length", "chrF", "chrf_by_length.png"),
}


def plot_by_length(
    models: dict, labels, workdir: str, metric="bleu", unit="tokens", corpus=""
) -> str:
    """Test BLEU (or chrF) against source length, a line per model (the mean over seeds) and
    the min-max range over seeds as a band."""
    key, what, png = BY_LENGTH[metric]
    fig, ax = outputs.new_figure(figsize=(6.5, 4.2))
    x = np.arange(len(labels))
    n_seeds = max(r.get("n_seeds", 1) for r in models.values())
    for name, r in models.items():
        look = style.line(name)
        score = [r[key].get(lab, np.nan) for lab in labels]
        ax.plot(x, score, label=name, clip_on=False, zorder=3, **look)  # markers at 100 whole
        seeds = r.get("seeds", [])
        if len(seeds) > 1:
            per = np.array([[s[key].get(lab, np.nan) for lab in labels] for s in seeds])
            ax.fill_between(x, per.min(0), per.max(0), color=look["color"], alpha=0.15, lw=0)
    ax.set_xticks(x, labels)
    band = f"; band: min-max over {n_seeds} seeds" if n_seeds > 1 else ""
    ax.set(
        xlabel=f"source length ({unit})",
        ylabel=f"test {what}",
        ylim=(0, 100),
        title=f"{what} by source length on {corpus or 'its corpus'} "
        f"(cf. Bahdanau et al. 2015, Fig. 2){band}",
    )
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    return outputs.save_plot(fig, workdir, png)


def _curve(row: dict, xkey: str, ykey: str) -> tuple[list, list]:
    """One seed's (x, y) from its results row: ykey 'loss' (train_curve) or 'valid_loss'
    (valid_curve, its times from valid_time); xkey 'step' or 'time' (training seconds)."""
    if ykey == "loss":
        pts = [(s, t, v) for s, t, v in row.get("train_curve") or []]
    else:
        times = row.get("valid_time") or [None] * len(row.get("valid_curve") or [])
        pts = [(s, t, v) for (s, v), t in zip(row.get("valid_curve") or [], times)]
    pts = [p for p in pts if p[2] is not None and (xkey == "step" or p[1] is not None)]
    return [p[0] if xkey == "step" else p[1] for p in pts], [p[2] for p in pts]


def load_note(setup: dict) -> str:
    """The machine's load over the run (time on a shared machine stretches), for a time axis."""
    prov = setup.get("provenance") or {}
    if "loadavg" not in prov:
        return ""
    after = prov.get("loadavg_after") or prov["loadavg"]
    cores = prov.get("cpus", "?")
    return f"; load {prov['loadavg'][0]:.1f} -> {after[0]:.1f} on {cores} cores"


def plot_curves(models: dict, workdir: str, time_note: str = "", corpus="") -> list[str]:
    """loss_vs_steps/time.png (training loss) and valid_loss(_vs_time).png (when validated),
    every seed of every model a line, drawn from results.json's curves alone; time_note is
    added to a time axis's title (load_note)."""
    names = []
    for ykey, ylabel, plots in (
        (
            "loss",
            "training loss (label-smoothed)",
            (("step", "loss_vs_steps.png"), ("time", "loss_vs_time.png")),
        ),
        (
            "valid_loss",
            "validation loss (teacher-forced, unsmoothed)",
            (("step", "valid_loss.png"), ("time", "valid_loss_vs_time.png")),
        ),
    ):
        for xkey, fname in plots:
            drawn = False
            fig, ax = outputs.new_figure(figsize=(6, 4))
            for name, r in models.items():
                for s, row in enumerate(r.get("seeds") or [r]):
                    x, y = _curve(row, xkey, ykey)
                    if x:
                        ax.plot(
                            x,
                            y,
                            alpha=1.0 if s == 0 else 0.5,
                            label=name if s == 0 else None,
                            **style.line(name),
                        )
                        drawn = True
            if not drawn:
                outputs.close(fig)
                continue
            xlabel = (
                "optimiser step" if xkey == "step" else "training time (s; validation excluded)"
            )
            ax.set(
                xlabel=xlabel,
                ylabel=ylabel,
                yscale="log",
                title=f"{ylabel} against "
                + ("steps" if xkey == "step" else "training time" + time_note)
                + (f", {corpus}" if corpus else ""),
            )
            ax.title.set_fontsize(9)
            ax.legend(fontsize=8)
            names.append(outputs.save_plot(fig, workdir, fname))
    return names


def plot_attention(name, example, workdir, corpus="") -> str:
    src = example["src"].split()
    tgt = example["tgt"].split() + ["</s>"]
    w = np.asarray(example["weights"])
    fig, ax = outputs.new_figure(figsize=(9, 8))
    ax.imshow(w, cmap="gray_r", aspect="auto", vmin=0.0)
    fs = 5 if max(len(src), len(tgt)) > 40 else 7
    if w.shape == (len(tgt), len(src)):  # word vocab: one token per word
        ax.set_xticks(range(len(src)), src, rotation=90, fontsize=fs)
        ax.set_yticks(range(len(tgt)), tgt, fontsize=fs)
    ax.set(
        xlabel="source position",
        ylabel="target position",
        title=f"{name}: cross-attention, seed 0, one {len(src)}-token test source"
        + (f" of {corpus}" if corpus else ""),
    )
    return outputs.save_plot(fig, workdir, f"attention_{name}.png")


def draw(results: dict, workdir: str) -> list[str]:
    """Every plot of an rnn_vs_attn result, from results.json alone (a run's, or a committed
    one's: experiments.lab.publish redraws the committed plots with it)."""
    models = results["models"]
    labels = list(next(iter(models.values()))["bleu_by_length"])
    # toy_wmt's words are its tokens; a subword corpus is bucketed by words (Corpus.test_by_bucket)
    data = results.get("setup", {}).get("config", {}).get("data", {})
    unit = "words" if data.get("vocab") == "sentencepiece" else "tokens"
    corpus = style.corpus_label(data)  # in every title: toy_wmt's plots and real text's alike
    metrics = ["bleu"] + (["chrf"] if all("chrf_by_length" in r for r in models.values()) else [])
    pngs = [plot_by_length(models, labels, workdir, m, unit, corpus) for m in metrics]
    pngs += plot_curves(models, workdir, load_note(results.get("setup") or {}), corpus)
    return pngs + [
        plot_attention(name, r["attention_example"], workdir, corpus)
        for name, r in models.items()
        if r.get("attention_example")
    ]


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


def write_outputs(config, workdir, models, labels, meta) -> list[str]:
    """The plots and report.md (process 0 only; results.json is the training's); the tables
    to stdout."""
    plots = draw({"models": models, "setup": meta}, workdir)
    img = lambda *names: "\n\n".join(f"![]({n})" for n in names if n in plots)
    sections = [
        ("Setup", _setup_note(config, meta)),
        ("Results", results_table(models)),
        (
            "BLEU by source length",
            bleu_table(models, labels) + "\n\n" + img("bleu_by_length.png", "chrf_by_length.png"),
        ),
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
    judged = claims.chapter(record.stored({"models": models, "setup": meta}))
    print(record.done_text("rnn_vs_attn", workdir, judged), flush=True)
    return plots
