"""data_stats: look at the data. Exports the corpus as TSV and reports its statistics.

Writes into workdir: train.tsv / valid.tsv / test.tsv (source<TAB>target), lengths.png (source
and target length histograms, test pairs per length bucket), results.json and report.md.
"""

import time

import numpy as np

from anatomy import data, paths
from anatomy.tables import markdown_table
from experiments.lab import outputs, record


def _lengths(pairs, vocab_src, vocab_tgt):
    src = np.asarray([len(vocab_src.encode(s)) for s, _ in pairs])
    tgt = np.asarray([len(vocab_tgt.encode(t)) for _, t in pairs])
    return src, tgt


def _split_stats(pairs, corpus):
    src, tgt = _lengths(pairs, corpus.src_vocab, corpus.tgt_vocab)
    buckets = [int(((src >= lo) & (src <= (hi or 10**9))).sum()) for lo, hi in data.LENGTH_BUCKETS]
    return {
        "pairs": len(pairs),
        "src_tokens": int(src.sum()),
        "tgt_tokens": int(tgt.sum()),
        "src_len_mean": float(src.mean()),
        "src_len_min": int(src.min()),
        "src_len_max": int(src.max()),
        "tgt_len_mean": float(tgt.mean()),
        "tgt_len_max": int(tgt.max()),
        "src_types": len({w for s, _ in pairs for w in s.split()}),
        "tgt_types": len({w for _, t in pairs for w in t.split()}),
        "per_bucket": dict(
            zip((data.bucket_label(lo, hi) for lo, hi in data.LENGTH_BUCKETS), buckets)
        ),
    }


def _plot(corpus, workdir):
    fig, axes = outputs.new_figure(1, 2, figsize=(10, 3.6))
    src, tgt = _lengths(corpus.splits["train"], corpus.src_vocab, corpus.tgt_vocab)
    top = int(max(src.max(), tgt.max())) + 2
    axes[0].hist([src, tgt], bins=np.arange(0, top, 4), label=["source", "target"])
    axes[0].set(xlabel="tokens", ylabel="training pairs", title=f"{corpus.name}: train lengths")
    axes[0].legend()
    groups = corpus.test_by_bucket()
    axes[1].bar(list(groups), [len(v) for v in groups.values()], color="tab:green")
    axes[1].set(xlabel="source length bucket", ylabel="test pairs", title="test set by length")
    return outputs.save_plot(fig, workdir, "lengths.png")


def run(config, workdir):
    """Load config.data, export it, compute statistics; returns the results dict."""
    started = record.start("data_stats", config, workdir)
    paths.makedirs(workdir)
    t0 = time.perf_counter()
    corpus = data.load_corpus(config.data, workdir)
    seconds = time.perf_counter() - t0
    if config.export_tsv:
        for split, pairs in corpus.splits.items():
            with paths.path(workdir).joinpath(f"{split}.tsv").open("w") as f:
                f.writelines(f"{s}\t{t}\n" for s, t in pairs)
    results = {
        "corpus": corpus.name,
        "load_seconds": seconds,
        "src_vocab_size": corpus.src_vocab.size,
        "tgt_vocab_size": corpus.tgt_vocab.size,
        "splits": {k: _split_stats(v, corpus) for k, v in corpus.splits.items()},
        "plot": _plot(corpus, workdir),
    }
    rows = [
        (
            k,
            v["pairs"],
            v["src_len_mean"],
            v["src_len_max"],
            v["tgt_len_mean"],
            v["src_types"],
            v["tgt_types"],
        )
        for k, v in results["splits"].items()
    ]
    table = markdown_table(
        ["split", "pairs", "mean src len", "max src len", "mean tgt len", "src types", "tgt types"],
        rows,
    )
    buckets = markdown_table(
        ["split"] + list(results["splits"]["test"]["per_bucket"]),
        [[k] + list(v["per_bucket"].values()) for k, v in results["splits"].items()],
    )
    examples = "\n".join(
        f"- `{s}`\n  → `{t}`"
        for label, pairs in corpus.test_by_bucket().items()
        for s, t in pairs[: config.examples]
        if label in ("1-10", "11-20")
    )
    summary = (
        f"Loaded in {seconds:.1f} s; vocabularies: source {corpus.src_vocab.size}, "
        f"target {corpus.tgt_vocab.size} ({corpus.src_vocab.kind})."
    )
    sections = [
        ("Summary", summary),
        ("Splits", table),
        ("Pairs per source-length bucket", buckets),
        ("Lengths", "![lengths](lengths.png)"),
        ("Examples (short test pairs)", examples),
    ]
    started.finish(results, None, f"data_stats: {corpus.name}", sections)
    print(summary)
    print(table)
    print(buckets)
    return results
