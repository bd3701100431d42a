"""report: the chapter's closing table (CHAPTER.md), regenerated from our own measurements.

Gathers the results of gradient_decay, long_range, parallelism, complexity, decode_cost and
rnn_vs_attn (collects each workdir's results.json, or runs the experiment in-process when it
is missing or config.rerun is set), turns their numbers into one row per property of the
chapter's table with a verdict computed from explicit thresholds (module constants below),
and writes results.json (rows + sources), report.md and the sub-experiments' plots.
"""

from __future__ import annotations

import glob
import importlib
import json
import os
import shutil
from typing import NamedTuple

from anatomy.errors import BadInputError
from anatomy.probes.claims import CAVEAT, FAILS, HOLDS, MISSING, NOT_SHOWN, VERDICTS  # noqa: F401
from experiments import common
from experiments.thresholds import (  # noqa: F401  (the report's names, until the split)
    ABOVE_CHANCE,
    ENC_DROP,
    ENC_SHORT_FLOOR,
    _finite,
    bottleneck_verdict,
    decay_verdict,
    exponent_verdict,
    quality_cost_verdict,
    recall_ok,
    speedup_verdict,
    steps_verdict,
    thresholds_markdown,
)

# ---- the rows: each reads its sources' results (keys from the experiments' run()) --------


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


def _parallel(r):
    a = r["parallelism"]["analysis"]
    cores = r["parallelism"]["raw"]["lstm"][0].get("cores", 1)
    util = a["utilisation_at_ratio_n"]
    busy = (util["lstm"] * cores, util["attention"] * cores)
    v = steps_verdict(a["lstm_steps_per_token"], 2.0, a["attention_max_steps"], cores=busy)
    return (
        f"serial steps = {a['lstm_steps_per_token']:.2f}·N (LSTM, fwd+bwd) vs "
        f"{a['attention_max_steps']} (attention); busy cores at N={a['ratio_n']}: "
        f"{busy[0]:.2f} vs {busy[1]:.2f} of {cores}",
        v,
        "steps from the compiled HLO's while loops; busy cores = CPU time / wall time "
        + (
            ""
            if v != CAVEAT
            else "(caveat: attention did not keep more cores busy here; the machine was shared)"
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
    recall = recall_ok(acc.get("transformer", float("nan")), list(rec.values()), lr["chance"])
    v = decay_verdict(rates["RNN"], rates["attention"], dist, recall)
    grad = ", ".join(f"{n} {x**dist:.2g}" for n, x in rates.items())
    recall = ", ".join(f"{n} {a:.2f}" for n, a in acc.items())
    return (
        f"gradient kept over {dist} steps: {grad}; recall of x(t−{k}): {recall} "
        f"(chance {lr['chance']:.2f})",
        v,
        f"per-step gradient rates {', '.join(f'{n} {x:.4f}' for n, x in rates.items())} "
        f"(RNN: tanh, σ_max={rnn['sigma']:g}, saturating); recall "
        + ("agrees" if recall else "does not put attention ahead, well above chance")
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
    attn = [m for m in ("rnnsearch", "luong", "transformer") if m in models]
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
        " (KV), dispatch-bound at these sizes, not judged",
    )


def _wall_clock(r):
    a = r["parallelism"]["analysis"]
    ratio, n = a["ratio_lstm_over_attention"], a["ratio_n"]
    cores = r["parallelism"]["raw"]["lstm"][0].get("cores", "?")
    v = speedup_verdict(ratio, n)
    return (
        f"LSTM/attention fwd+bwd time at N={n}: {ratio:.2f}x ({cores} CPU cores)",
        v,
        "the chapter's figure is for GPUs"
        + ("" if v == HOLDS else f"; here {ratio:.2f}x at N={n} on CPU"),
    )


def _quality_cost(r):
    models = r["rnn_vs_attn"]["models"]
    rnns = [m for m in ("rnnenc", "rnnsearch", "luong") if m in models]
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
    RowSpec("stackability", "—", "residual + LayerNorm stack deeply", (), (), _stack),
)

# keys every collected results.json must have, read from each experiment's run();
# '*' stands for every key of the dict at that level
REQUIRED = {
    "gradient_decay": [
        ("config", "fit_max_distance"),
        ("rates", "lstm"),
        ("rates", "attention"),
        ("rnn", "*", "regime"),
        ("rnn", "*", "sigma"),
        ("rnn", "*", "fit", "rate"),
        ("other", "attention", "far_over_near"),
    ],
    "long_range": [
        ("k_grid",),
        ("chance",),
        ("models", "*", "accuracy"),
        ("models", "*", "params"),
    ],
    "parallelism": [
        ("analysis", k)
        for k in (
            "lstm_steps_per_token",
            "attention_max_steps",
            "ratio_n",
            "ratio_lstm_over_attention",
        )
    ]
    + [
        ("analysis", "utilisation_at_ratio_n", "lstm"),
        ("analysis", "utilisation_at_ratio_n", "attention"),
        ("raw", "lstm"),
    ],
    "complexity": [
        ("fits", layer, axis, "exponent")
        for layer in ("recurrent", "attention_core")
        for axis in ("N", "d")
    ],
    "decode_cost": [
        ("fits", "rnn", "flops_n_dependent", "exponent"),
        ("fits", "kv_cache", "flops_n_dependent", "exponent"),
        ("fits", "recompute", "flops_n_dependent", "exponent"),
        ("fits", "rnn", "latency", "exponent"),
        ("fits", "kv_cache", "latency", "exponent"),
        ("fits", "rnn_vs_d", "exponent"),
    ],
    "rnn_vs_attn": [
        ("models", "*", k)
        for k in (
            "params",
            "train_seconds",
            "tokens_per_second",
            "bleu",
            "bleu_by_length",
            "count_by_length",
        )
    ],
}


class Source(NamedTuple):
    """One sub-experiment's results: where from, how obtained ('collected' | 'ran' | 'missing')."""

    name: str
    workdir: str
    status: str
    results: dict | None


def check_keys(results, name: str, path: str) -> None:
    """Raise ValueError naming the file and the first key of REQUIRED[name] that is missing."""

    def walk(node, keys, trail):
        if not keys:
            return
        key, rest = keys[0], keys[1:]
        if key == "*":
            if not isinstance(node, dict) or not node:
                raise BadInputError(
                    f"report: {path} is malformed: {'.'.join(trail) or 'top level'} "
                    "should be a non-empty dict (written by "
                    f"experiments/{name}.py)"
                )
            for k, v in node.items():
                walk(v, rest, trail + [k])
            return
        if not isinstance(node, dict) or key not in node:
            raise BadInputError(
                f"report: {path} is malformed: missing key {'.'.join(trail + [key])!r} "
                f"(written by experiments/{name}.py; rerun it, or pass "
                f"--config.rerun=True)"
            )
        walk(node[key], rest, trail + [key])

    for keys in REQUIRED.get(name, []):
        walk(results, list(keys), [])


def load_results(name: str, workdir: str) -> dict:
    """workdir/results.json of experiment `name`, checked against REQUIRED (clear errors)."""
    path = os.path.join(workdir, "results.json")
    if not os.path.isfile(path):
        raise BadInputError(f"report: no results file {path} for experiment {name!r}")
    try:
        with open(path) as f:
            results = json.load(f)
    except json.JSONDecodeError as e:
        raise BadInputError(
            f"report: {path} is not valid JSON ({e}); rerun experiment {name!r}"
        ) from e
    check_keys(results, name, path)
    return results


def run_experiment(name: str, preset: str, workdir: str) -> dict:
    """experiments.<name>.run(get_config(preset), workdir), in this process."""
    config = importlib.import_module(f"experiments.configs.{name}").get_config(preset or None)
    os.makedirs(workdir, exist_ok=True)
    importlib.import_module(f"experiments.{name}").run(config, workdir)
    return load_results(name, workdir)  # what was written, read back as a collected one would be


def source_dir(config, name: str, workdir: str) -> str:
    where = config.sources[name] if name in config.sources else ""
    return where or os.path.join(workdir, name)


def gather(config, workdir: str) -> dict[str, Source]:
    """Collect every existing results.json first (a malformed one fails before any run), then run."""
    unknown = [n for n in config.experiments if n not in REQUIRED]
    if unknown:
        raise BadInputError(
            f"report: unknown experiments {unknown}; choose from {sorted(REQUIRED)}"
        )
    sources, to_run = {}, []
    for name in config.experiments:
        sub = source_dir(config, name, workdir)
        if not config.rerun and os.path.isfile(os.path.join(sub, "results.json")):
            sources[name] = Source(name, sub, "collected", load_results(name, sub))
        elif config.rerun or config.run_missing:
            to_run.append((name, sub))
        else:
            sources[name] = Source(name, sub, "missing", None)
    for name, sub in to_run:
        print(
            f"report: running {name} ({config.preset or 'default'} preset) into {sub}", flush=True
        )
        sources[name] = Source(name, sub, "ran", run_experiment(name, config.preset, sub))
    return {n: sources[n] for n in config.experiments}


def publish(src: Source, workdir: str, copy: bool) -> dict:
    """Links (relative to workdir) to the source's PNGs and report.md, copying them if needed.

    A source inside the report's workdir is linked in place; one outside is copied into
    workdir/<name>/ (copy=True) so the report folder stands alone, or linked by relative path.
    """
    sub, here = os.path.abspath(src.workdir), os.path.abspath(workdir)
    files = sorted(glob.glob(os.path.join(sub, "*.png")))
    report = os.path.join(sub, "report.md")
    files += [report] if os.path.isfile(report) else []
    inside = os.path.commonpath([sub, here]) == here
    if copy and not inside:
        dest = os.path.join(here, src.name)
        os.makedirs(dest, exist_ok=True)
        for f in files:
            shutil.copy2(f, dest)
        files = [os.path.join(dest, os.path.basename(f)) for f in files]
    links = [os.path.relpath(f, here) for f in files]
    return {
        "plots": [p for p in links if p.endswith(".png")],
        "report": next((p for p in links if p.endswith("report.md")), None),
    }


def _own_claims(results: dict | None) -> str:
    table = (results or {}).get("table")
    if not table:
        return "—"
    agree = sum(r.get("verdict") == HOLDS for r in table)
    return f"{agree}/{len(table)} hold"


def build_rows(sources: dict[str, Source], links: dict[str, dict]) -> list[dict]:
    """Every row of the table: property, the chapter's two claims, measured, verdict, why, plots."""
    rows = []
    for spec in ROWS:
        have = {
            n: sources[n].results
            for n in spec.sources
            if n in sources and sources[n].results is not None
        }
        absent = [n for n in spec.sources if n not in have]
        if absent:
            measured, verdict, why = "—", "not measured", f"no results from {', '.join(absent)}"
        else:
            try:
                measured, verdict, why = spec.measure(have)
            except (KeyError, IndexError, TypeError) as e:
                files = ", ".join(os.path.join(sources[n].workdir, "results.json") for n in have)
                raise BadInputError(
                    f"report: row {spec.name!r} cannot read {e!r} from {files}; "
                    "rerun those experiments (--config.rerun=True)"
                ) from e
        if verdict not in VERDICTS:
            raise BadInputError(
                f"report: row {spec.name!r} gave verdict {verdict!r}, not one of {VERDICTS}"
            )
        plots = [
            p
            for n in spec.sources
            if n in links
            for p in links[n]["plots"]
            if any(os.path.basename(p).startswith(pre) for pre in spec.plots)
        ]
        rows.append(
            {
                "property": spec.name,
                "rnn": spec.rnn,
                "transformer": spec.transformer,
                "claim": f"RNN/LSTM: {spec.rnn}; Transformer: {spec.transformer}",
                "measured": measured,
                "verdict": verdict,
                "why": why,
                "sources": list(spec.sources),
                "plots": plots,
            }
        )
    return rows


def _link(path: str) -> str:
    """[parent/stem](path): e.g. [rnn_vs_attn/report](rnn_vs_attn/report.md)."""
    label = os.path.splitext(path)[0].replace(os.sep, "/").lstrip("./")
    return f"[{label}]({path})"


def write_markdown(
    workdir: str, rows: list[dict], sources: dict[str, Source], links: dict[str, dict]
) -> str:
    table = common.markdown_table(
        ("", "chapter: RNN/LSTM", "chapter: Transformer", "measured here", "verdict", "plots"),
        [
            (
                r["property"],
                r["rnn"],
                r["transformer"],
                r["measured"],
                f"**{r['verdict']}**",
                ", ".join(_link(p) for p in r["plots"]) or "—",
            )
            for r in rows
        ],
    )
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    summary = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    why = "\n".join(f"* **{r['property']}** ({r['verdict']}): {r['why']}" for r in rows)
    src_table = common.markdown_table(
        ("experiment", "results", "workdir", "its own claims", "its report"),
        [
            (
                s.name,
                s.status,
                f"`{s.workdir}`",
                _own_claims(s.results),
                _link(links[s.name]["report"])
                if s.name in links and links[s.name]["report"]
                else "—",
            )
            for s in sources.values()
        ],
    )
    missing = [s for s in sources.values() if s.results is None]
    if missing:
        src_table += (
            "\n\nNot measured yet: "
            + ", ".join(
                f"`python launch.py --experiment={s.name} --workdir={s.workdir}`" for s in missing
            )
            + ", then run this report again (it collects; nothing else reruns)."
        )
    plots = "\n\n".join(
        f"**{name}**\n\n"
        + "\n\n".join(f"![{name}: {os.path.basename(p)}]({p})" for p in link["plots"])
        for name, link in links.items()
        if link["plots"]
    )
    return common.write_report(
        workdir,
        "Why the Transformer: the chapter's table, measured",
        [
            ("The table", f"{summary}.\n\n{table}"),
            ("Why each verdict", why),
            ("How verdicts are decided", thresholds_markdown()),
            (
                "Sources",
                src_table + "\n\nSmall CPU runs: we reproduce shapes and ratios, not the "
                "literature's absolute numbers. Times were measured on a machine shared with other jobs.",
            ),
            ("Plots", plots or "none"),
        ],
    )


def run(config, workdir):
    """Gather the sub-experiments, build the table, write results.json and report.md."""
    if config.preset not in ("", "quick"):
        raise BadInputError(f"report: preset must be '' or 'quick', got {config.preset!r}")
    os.makedirs(workdir, exist_ok=True)
    sources = gather(config, workdir)
    links = {
        n: publish(s, workdir, config.copy_plots)
        for n, s in sources.items()
        if s.results is not None
    }
    rows = build_rows(sources, links)
    results = {
        "config": config.to_dict(),
        "rows": rows,
        "sources": {
            n: {
                "workdir": s.workdir,
                "status": s.status,
                "results_json": os.path.join(s.workdir, "results.json"),
                **links.get(n, {"plots": [], "report": None}),
            }
            for n, s in sources.items()
        },
    }
    common.write_json(workdir, results)
    write_markdown(workdir, rows, sources, links)
    print(
        "\n"
        + common.markdown_table(
            ("", "measured", "verdict"),
            [(r["property"], r["measured"], r["verdict"]) for r in rows],
        ),
        flush=True,
    )
    return results
