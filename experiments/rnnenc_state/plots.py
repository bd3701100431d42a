"""rnnenc_state's plot (BLEU on the longest sentences against the state the decoder reads, and
BLEU by length) and report tables, read from results.json as stored."""

import numpy as np

from anatomy.tables import markdown_table
from experiments.lab import outputs, style


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return float(np.mean(xs)) if xs else float("nan")


def _all(results):
    """[(label, row, the model its look is (experiments/lab/style.py), grows with the
    sentence)]: baselines, variants."""
    out = [(n, r, n, n != "rnnenc") for n, r in results["baselines"].items()]
    out += [(f"rnnenc_mixer {n}", r, r["model_config"]["mixer"], False)
            for n, r in results["variants"].items()]  # fmt: skip
    return out


def _corpus(results) -> str:
    """The corpus its runs train on: rnn_vs_attn's, of the preset they start from."""
    from experiments.configs import rnn_vs_attn

    base = rnn_vs_attn.get_config(results["config"].get("base_preset") or None)
    return style.corpus_label(base.data.to_dict())


def draw(results, workdir) -> list[str]:
    buckets = results["buckets"]
    long = buckets[-1]
    fig, (a, b) = outputs.new_figure(1, 2, figsize=(13, 4.8))
    for label, r, family, grows in _all(results):
        look = style.line(family)
        colour, marker = look["color"], look["marker"]
        x = r["memory_bytes"]
        y = r["bleu_by_length"][long]
        a.scatter([x] * len(y), y, color=colour, marker=marker, alpha=0.35, s=18)
        a.plot([x], [_mean(y)], marker=marker, color=colour, ms=9, ls="none",
               mfc="none" if grows else colour,
               label=label + (" (memory grows with the sentence)" if grows else ""))  # fmt: skip
        b.plot(buckets, [_mean(r["bleu_by_length"][k]) for k in buckets], "-", color=colour,
               marker=marker, label=label)  # fmt: skip
    a.set_xscale("log", base=2)
    a.set(xlabel=f"bytes the decoder reads of a {results['config']['memory_length']}-token source",
          ylabel=f"BLEU on {long}", title="RNNenc's bottleneck against state size (open: grows)")  # fmt: skip
    a.legend(fontsize=7)
    b.set(xlabel="source length (tokens)", ylabel="BLEU",
          title=f"BLEU by source length on {_corpus(results)}")  # fmt: skip
    b.tick_params(axis="x", labelrotation=30)
    b.legend(fontsize=7)
    return [outputs.save_plot(fig, workdir, "rnnenc_state.png")]


def bleu_table(results) -> str:
    buckets = results["buckets"]
    header = ["model", "params", "state / memory bytes", "seeds", "BLEU"] + buckets
    rows = []
    for label, r, _, grows in _all(results):
        mem = f"{r['memory_bytes']:,}" + (" (grows)" if grows else "")
        rows.append([label, r["params"], mem, len(r["bleu"]), _mean(r["bleu"])]
                    + [_mean(r["bleu_by_length"][k]) for k in buckets])  # fmt: skip
    return "Mean over seeds.\n\n" + markdown_table(header, rows)


def wiring() -> str:
    return (
        "RNNenc's decoder starts from the encoder's final vector h_S and generates from it "
        "alone. With a mixer's state the wiring is the same, the state larger: the encoder "
        "(a stack of one recurrent mixer) stops at the source's last real token, and every "
        "decoder layer (the same mixer, its own parameters) starts from the encoder's final "
        "state of that layer. A matrix memory S [heads, d_k, d_v] is read by content at every "
        "target step: the decoder's query q_t (from the target prefix) reads S_tᵀ q_t, while "
        "its keys and values keep writing to it, as RNNenc's decoder reads and updates h. "
        "There is no attention over source positions: nothing of the source reaches the "
        "decoder but that state, whose bytes do not grow with the sentence "
        "(anatomy/seq2seq/rnnenc_mixer.py)."
    )


def notes(results) -> str:
    c = results["config"]
    return (
        "Every variant trained by rnn_vs_attn itself (its default preset: corpus, steps, token "
        "batches, curriculum, test split), reversed source as RNNenc, the recipe every swept "
        f"model chose (peak 6e-3, warmup 400: not swept for it), {c['seeds']} seed(s). The "
        f"baselines: results/{c['baseline_result']}.json, made by `{results['baseline_command']}`, "
        "its data, curriculum and training checked equal to the variants'. Memory: the float "
        f"arrays each translator's encode hands its decoder for a {c['memory_length']}-token "
        "source, each counted once."
    )
