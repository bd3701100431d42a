"""report's rows: the chapter's table (docs/chapter.md), one RowSpec per property.

Each row names the chapter's two claims, the sub-experiments it reads and a measure
function: results by source -> (measured, verdict, why), with the verdict from
experiments/thresholds.py. The keys each one reads are listed in report_sources.REQUIRED.
Translators are grouped by the model registry (anatomy.seq2seq.registry): the bottleneck
row sets the no-attention baseline (rnnenc) against every model whose decoder attends over
the source, the quality row the Transformer against every recurrent model.
"""

from __future__ import annotations

from typing import NamedTuple

from anatomy.errors import BadInputError
from anatomy.probes.claims import CAVEAT, FAILS, MISSING
from anatomy.seq2seq import registry
from experiments import report_rows_conv, report_rows_linear
from experiments.thresholds import (
    CHUNKED_EQUAL_RTOL,
    ENC_DROP,
    ENC_SHORT_FLOOR,
    SPEEDUP_CAVEAT_MIN,
    SPEEDUP_N,
    SPEEDUP_RANGE,
    _finite,
    bottleneck_verdict,
    decay_verdict,
    exponent_verdict,
    quality_cost_verdict,
    recall_ok,
    speedup_verdict,
    steps_verdict,
)


def translators(models, *, family=None, cross_attention=None) -> list[str]:
    """The registered translators among `models` (rnn_vs_attn's names; variants 'NAME-N' left
    out), in registry order, of one family ('recurrent' | 'attention' | 'convolutional')
    and/or with or without cross-attention."""
    return [m for m in registry.names(family, cross_attention=cross_attention) if m in models]


def _distance(r):
    a = r["parallelism"]["analysis"]
    fwd = a["lstm_steps_per_token"] / 2  # the compiled program runs N forward + N backward
    v = steps_verdict(fwd, 1.0, a["attention_max_steps"])
    return (
        f"serial steps in the compiled forward pass = {fwd:.2f}·N (LSTM) vs "
        f"{a['attention_max_steps']} (attention: one layer joins any two positions)",
        v,
        f"forward slope {fwd:.3f} steps/token (half of the fwd+bwd {2 * fwd:.3f}), attention "
        f"loops {a['attention_max_steps']}",
    )


def _complexity(r):
    f = r["complexity"]["fits"]
    got = {(m, a): f[m][a]["exponent"] for m in ("recurrent", "attention_core") for a in ("N", "d")}
    theory = {
        ("recurrent", "N"): 1,
        ("recurrent", "d"): 2,
        ("attention_core", "N"): 2,
        ("attention_core", "d"): 1,
    }
    v, dev = exponent_verdict([(got[k], theory[k]) for k in theory])
    return (
        f"fitted FLOPs ∝ N^{got['recurrent', 'N']:.2f}·d^{got['recurrent', 'd']:.2f} (LSTM) vs "
        f"N^{got['attention_core', 'N']:.2f}·d^{got['attention_core', 'd']:.2f} (attention)",
        v,
        f"XLA cost analysis (LSTM loop-corrected); worst exponent off by {dev:.3f}",
    )


def _restricted(r):
    f = r["complexity"]["fits"]["windowed_core"]
    got = {a: f[a]["exponent"] for a in ("N", "d", "window")}
    v, dev = exponent_verdict([(x, 1.0) for x in got.values()])
    return (
        f"sliding-window attention FLOPs ∝ N^{got['N']:.2f}·d^{got['d']:.2f}·"
        f"(2r+1)^{got['window']:.2f}",
        v,
        f"XLA cost analysis of anatomy.attention.sliding_window_attention (score + value part); "
        f"worst exponent off by {dev:.3f}",
    )


def _memory(r):
    res = r["attention_memory"]
    h = res["config"]["heads_grid"][-1]
    full = res["fits"][f"full forward+backward h={h}"]["exponent"]
    chunked = res["fits"][f"chunked forward+backward h={h}"]["exponent"]
    # every fit (forward and forward+backward, each head count): full N², chunked N
    pairs = [(f["exponent"], 2.0 if k.startswith("full") else 1.0) for k, f in res["fits"].items()]
    v, dev = exponent_verdict(pairs)
    if not max(res["equality"].values()) <= CHUNKED_EQUAL_RTOL:  # the same numbers, or nothing
        v = FAILS
    n = res["config"]["n_grid"][-1]
    at_n = {
        x["impl"]: x["temp"]
        for x in res["raw"]
        if (x["mode"], x["heads"], x["n"]) == ("forward+backward", h, n)
    }
    return (
        f"compiled temp memory of attention fwd+bwd ∝ N^{full:.2f} (full) vs N^{chunked:.2f} "
        f"(chunked, online softmax); {at_n['full'] / at_n['chunked']:.0f}x less at N={n}, {h} heads",
        v,
        f"XLA memory_analysis of the compiled programs, forward and forward+backward; worst "
        f"exponent off by {dev:.3f}; chunked equals full to "
        f"{max(res['equality'].values()):.1g} (relative)",
    )


def _parallel(r):
    a = r["parallelism"]["analysis"]
    cores = r["parallelism"]["raw"]["lstm"][0].get("cores", 1)
    util = a["utilisation_at_ratio_n"]
    busy = (util["lstm"] * cores, util["attention"] * cores)
    v = steps_verdict(a["lstm_steps_per_token"], 2.0, a["attention_max_steps"], cores=busy)
    load = a.get("load_average_before_after")
    return (
        f"serial steps = {a['lstm_steps_per_token']:.2f}·N (LSTM, fwd+bwd) vs "
        f"{a['attention_max_steps']} (attention); busy cores at N={a['ratio_n']}: "
        f"{busy[0]:.2f} vs {busy[1]:.2f} of {cores}",
        v,
        "steps from the compiled HLO's while loops; busy cores = CPU time / wall time"
        + ("" if v != CAVEAT else "; caveat: attention did not keep more cores busy here")
        + (
            f"; 1-minute load average before / after the run {load[0]:.1f} / {load[1]:.1f} "
            f"on {cores} cores"
            if load and _finite(*load)
            else ""
        ),
    )


def _long_range(r):
    g, lr = r["gradient_decay"], r["long_range"]
    dist = g["config"]["fit_max_distance"]
    sat = [c for c in g["rnn"].values() if c["regime"] == "saturating"]
    if not sat:
        raise BadInputError("report: gradient_decay results have no 'saturating' RNN curve")
    rnn = min(sat, key=lambda c: abs(c["sigma"] - 1.0))
    rates = {
        "RNN": rnn["fit"]["rate"],
        "LSTM": g["rates"]["lstm"],
        "attention": g["rates"]["attention"],
    }
    k = max(lr["k_grid"])
    acc = {n: m["accuracy"][lr["k_grid"].index(k)] for n, m in lr["models"].items()}
    rec = {n: a for n, a in acc.items() if n != "transformer"}
    recalled = recall_ok(acc.get("transformer", float("nan")), list(rec.values()), lr["chance"])
    v = decay_verdict(rates["RNN"], rates["attention"], dist, recalled)
    grad = ", ".join(f"{n} {x**dist:.2g}" for n, x in rates.items())
    accs = ", ".join(f"{n} {a:.2f}" for n, a in acc.items())
    return (
        f"gradient kept over {dist} steps: {grad}; recall of x(t−{k}): {accs} "
        f"(chance {lr['chance']:.2f})",
        v,
        f"per-step gradient rates {', '.join(f'{n} {x:.4f}' for n, x in rates.items())} "
        f"(RNN: tanh, σ_max={rnn['sigma']:g}, saturating); recall "
        + ("agrees" if recalled else "does not put attention ahead, well above chance")
        + f" at k={k}",
    )


def _buckets(models):
    """(shortest, longest) length bucket scored for every model (JSON keeps the bucket order)."""
    common_labels = [
        b
        for b in next(iter(models.values()))["bleu_by_length"]
        if all(b in m["bleu_by_length"] for m in models.values())
    ]
    if not common_labels:
        raise BadInputError("report: rnn_vs_attn results share no scored length bucket")
    return common_labels[0], common_labels[-1]


def _bottleneck(r):
    models = r["rnn_vs_attn"]["models"]
    attn = translators(models, cross_attention=True)
    if "rnnenc" not in models or not attn:
        return "—", MISSING, "needs rnnenc and an attention model in rnn_vs_attn's models"
    short, long = _buckets(models)
    bl = {m: models[m]["bleu_by_length"] for m in ["rnnenc"] + attn}
    enc_short, enc_long = bl["rnnenc"][short], bl["rnnenc"][long]
    v = bottleneck_verdict(
        enc_short, enc_long, {m: bl[m][short] for m in attn}, {m: bl[m][long] for m in attn}
    )
    names = " vs ".join(bl)
    seeds = models["rnnenc"].get("n_seeds", 1)
    reason = (
        f"rnnenc did not learn short sentences ({enc_short:.1f} BLEU on {short} tokens, "
        f"below the {ENC_SHORT_FLOOR:g} floor), so this run cannot show its collapse; "
        if _finite(enc_short) and enc_short < ENC_SHORT_FLOOR
        else f"rnnenc learned short sentences but fell only {enc_short - enc_long:.1f} BLEU "
        f"(< {ENC_DROP:g}) from {short} to {long} tokens; "
        if _finite(enc_short, enc_long) and enc_short - enc_long < ENC_DROP
        else ""
    )
    reason += f"means of {seeds} seeds; " if seeds > 1 else ""
    return (
        f"BLEU {long} tokens: {names} {' vs '.join(f'{b[long]:.1f}' for b in bl.values())} "
        f"({short}: {' vs '.join(f'{b[short]:.1f}' for b in bl.values())})",
        v,
        reason + f"on {long}-token sources rnnenc scores {enc_long:.1f} BLEU, the attention "
        f"models at least {min(bl[m][long] for m in attn):.1f}; they keep "
        + ", ".join(
            f"{m} {bl[m][long] / bl[m][short]:.0%}" if bl[m][short] > 0 else f"{m} —" for m in attn
        )
        + f" of their {short}-token BLEU",
    )


def _decode(r):
    f = r["decode_cost"]["fits"]
    rn, rd = f["rnn"]["flops_n_dependent"]["exponent"], f["rnn_vs_d"]["exponent"]
    kv, rc = (
        f["kv_cache"]["flops_n_dependent"]["exponent"],
        f["recompute"]["flops_n_dependent"]["exponent"],
    )
    v, dev = exponent_verdict([(rn, 0.0), (rd, 2.0), (kv, 1.0)])
    return (
        f"per-token FLOPs ∝ N^{rn:.2f}·d^{rd:.2f} (LSTM step) vs N^{kv:.2f} (KV cache; "
        f"recompute N^{rc:.2f})",
        v,
        f"XLA FLOPs, N-dependent part; worst exponent off by {dev:.3f}; latency exponents "
        f"{f['rnn']['latency']['exponent']:.2f} (LSTM) vs {f['kv_cache']['latency']['exponent']:.2f}"
        " (KV), reported, not judged",
    )


def _wall_clock(r):
    a = r["parallelism"]["analysis"]
    ratio, n = a["ratio_lstm_over_attention"], a["ratio_n"]
    cores = r["parallelism"]["raw"]["lstm"][0].get("cores", "?")
    device = (r["parallelism"].get("provenance") or {}).get("device_kind") or "device not recorded"
    v = speedup_verdict(ratio, n)
    return (
        f"LSTM/attention fwd+bwd time at N={n}: {ratio:.2f}x ({cores} cores, {device})",
        v,
        f"the chapter's figure is for GPUs at N={SPEEDUP_N}; "
        f"≥ {SPEEDUP_RANGE[0]:g}x there holds, {SPEEDUP_CAVEAT_MIN:g}-{SPEEDUP_RANGE[0]:g}x is a "
        f"caveat, below {SPEEDUP_CAVEAT_MIN:g}x it does not hold",
    )


def _quality_cost(r):
    models = r["rnn_vs_attn"]["models"]
    rnns = translators(models, family="recurrent")
    if "transformer" not in models or not rnns:
        return "—", MISSING, "needs the transformer and an RNN model in rnn_vs_attn's models"
    best = max(rnns, key=lambda m: models[m]["bleu"])
    t, b = models["transformer"], models[best]
    v = quality_cost_verdict(t["bleu"], t["train_seconds"], b["bleu"], b["train_seconds"])
    bleu = " vs ".join(f"{m} {models[m]['bleu']:.1f}" for m in rnns + ["transformer"])
    return (
        f"BLEU {bleu}; train {t['train_seconds']:.0f} s vs {b['train_seconds']:.0f} s "
        f"({best}), {t['tokens_per_second']:.0f} vs {b['tokens_per_second']:.0f} tokens/s",
        v,
        f"same token budget for every model; compared with the best RNN model ({best})",
    )


def _stack(r):
    return (
        "—",
        MISSING,
        "no experiment varies depth; residual + LayerNorm stacking is untested here",
    )


class RowSpec(NamedTuple):
    name: str
    rnn: str  # the chapter's claim for RNN/LSTM
    transformer: str  # ... and for the Transformer
    sources: tuple  # sub-experiments the row reads
    plots: tuple  # file-name prefixes of the plots that support it
    measure: object  # results by source -> (measured, verdict, why)


ROWS = (
    RowSpec(
        "distance between any two positions",
        "O(N) steps",
        "O(1)",
        ("parallelism",),
        ("parallelism",),
        _distance,
    ),
    RowSpec(
        "per-layer time complexity",
        "O(N·d²)",
        "O(N²·d)",
        ("complexity",),
        ("complexity",),
        _complexity,
    ),
    RowSpec(
        "per-layer time complexity, restricted self-attention (window r)",
        "O(N·d²)",
        "O(r·N·d)",
        ("complexity",),
        ("complexity",),
        _restricted,
    ),
    RowSpec(
        "attention memory at long N",
        "—",
        "O(N²) weights; O(N) chunked (online softmax)",
        ("attention_memory",),
        ("attention_memory",),
        _memory,
    ),
    RowSpec(
        "parallel training",
        "no (sequential dependence)",
        "yes",
        ("parallelism",),
        ("parallelism",),
        _parallel,
    ),
    RowSpec(
        "long-range dependency",
        "decays",
        "direct",
        ("gradient_decay", "long_range"),
        ("gradient_decay", "long_range"),
        _long_range,
    ),
    RowSpec(
        "information bottleneck",
        "fixed hidden state",
        "none",
        ("rnn_vs_attn",),
        ("bleu_by_length", "attention_"),
        _bottleneck,
    ),
    RowSpec(
        "incremental decode latency",
        "O(d²)",
        "O(N·d) with KV cache",
        ("decode_cost",),
        ("decode_cost",),
        _decode,
    ),
    RowSpec(
        "wall-clock training at N=512",
        "1x",
        "5-10x faster (GPU)",
        ("parallelism",),
        ("parallelism",),
        _wall_clock,
    ),
    RowSpec(
        "quality at a fraction of the training cost",
        "behind",
        "ahead, cheaper",
        ("rnn_vs_attn",),
        ("loss_vs_time", "bleu_by_length"),
        _quality_cost,
    ),
    *(RowSpec(*row) for row in report_rows_conv.ROWS),  # ConvS2S's convolution
    *(RowSpec(*row) for row in report_rows_linear.ROWS),  # minGRU / Mamba (linear recurrences)
    RowSpec("stackability", "—", "residual + LayerNorm stack deeply", (), (), _stack),
)
