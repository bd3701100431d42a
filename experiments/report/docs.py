"""The chapter's pages, rendered from the committed results: every block the README,
docs/chapter.md and docs/results.md quote (RENDERERS) and every plot they show (PLOTS), in the
shape experiments/lab/publish.py reads from an experiment's docs.py, which writes them
(`python -m experiments.lab.publish`). Every number is read from a committed result, and every
verdict by its claim's id, as the experiment's claims.py judges it now.
"""

from __future__ import annotations

import importlib
import re

from anatomy.probes.claims import MAX_TIMING_LOAD, claims_markdown, rule_text
from anatomy.tables import format_number, markdown_table
from experiments.lab import committed, provenance, record, registry
from experiments.lab.committed import load
from experiments.report import reasons, scorecard
from experiments.rnn_vs_attn.seeds import mean_pm_std

BUCKETS = ("1-10", "11-20", "21-30", "31-40", "41-50", "51-60", "61+")

f = format_number


def _prov(setup: dict) -> dict:
    return setup.get("provenance") or {}


def _made_by(doc: dict) -> str:
    """'`command` at commit abc1234 (cores, load a -> b, wall time)': where a table is from."""
    setup = doc["result"].get("setup", {})
    p = _prov(setup) or doc["result"].get("provenance") or doc.get("saved_by", {})
    load = p.get("loadavg") or [float("nan")]
    after = p.get("loadavg_after") or [float("nan")]
    bits = [f"{p.get('cpus', '?')} cores ({p.get('device_kind', '?')}, {provenance.isa_text(p)})"]
    bits.append(f"1-minute load {f(float(load[0]))} before, {f(float(after[0]))} after")
    if p.get("wall_seconds") is not None:
        bits.append(f"{f(float(p['wall_seconds']))} s wall clock")
    if p.get("cpu_seconds") is not None:
        bits.append(f"{f(float(p['cpu_seconds']))} s of CPU time")
    commit = (p.get("commit") or "unknown")[:7] + (
        " + uncommitted changes" if p.get("dirty") else ""
    )
    made = f"`{doc['command']}` at commit {commit}; {', '.join(bits)}; `results/{doc['name']}.json`"
    return made + (f" ({doc['note']})" if doc.get("note") else "")


def _bleu_row(name, r, keys=("bleu",)):
    by = r.get("bleu_by_length", {})
    return [name] + [r.get(k) for k in keys] + [by.get(b) for b in BUCKETS]


def _params(r) -> str:
    return f"{r['params'] / 1e6:.2f}M"


def render_default(doc: dict) -> str:
    """The default rnn_vs_attn run: per model params, train s, accuracy, BLEU by length."""
    models = doc["result"]["models"]
    header = ["model", "params", "train s", "train token acc", "valid loss", "BLEU", *BUCKETS]
    rows = [
        [n, _params(r), r["train_seconds"], r["final_accuracy"], r.get("valid_loss")]
        + _bleu_row(n, r)[1:]
        for n, r in models.items()
    ]
    lines = [markdown_table(header, rows), "", f"Made by {_made_by(doc)}."]
    resumed = {n: r["resumed_from"] for n, r in models.items() if r.get("resumed_from")}
    for n, step in resumed.items():  # a checkpoint another run left in the workdir
        lines.append(
            f"{n}: resumed at step {f(step)} from a checkpoint an earlier run left in the workdir "
            "(train s is from the resume; the result's note says what made the checkpoint)."
        )
    return "\n".join(lines)


def render_shows(doc: dict) -> str:
    """The bullets under the default table, every number read from the result."""
    m = doc["result"]["models"]
    by = lambda n, b: m[n]["bleu_by_length"][b]
    out = []
    if {"rnnenc", "rnnsearch", "transformer"} <= set(m):
        out.append(
            f"- **The fixed-vector bottleneck** (Bahdanau et al. 2015, Fig. 2): RNNenc gets "
            f"{f(by('rnnenc', '1-10'))} BLEU on 1-10 tokens and {f(by('rnnenc', '61+'))} on 61+; "
            f"on 61+ RNNsearch gets {f(by('rnnsearch', '61+'))} and the Transformer "
            f"{f(by('transformer', '61+'))}."
        )
        t, s = m["transformer"], m["rnnsearch"]
        out.append(
            f"- **The engineering ledger** (this run, alone on the machine; the plot "
            f"`valid_loss_vs_time.png` is the three-seed run's, on a shared machine): the Transformer ends at "
            f"validation loss {f(t['valid_loss'])} after {f(t['train_seconds'])} s of training, "
            f"RNNsearch at {f(s['valid_loss'])} after {f(s['train_seconds'])} s; steady-state "
            f"{f(t['tokens_per_second'])} vs {f(s['tokens_per_second'])} tokens/s "
            f"({t['tokens_per_second'] / s['tokens_per_second']:.1f}x)."
        )
    return "\n".join(out)


def render_convs2s(doc: dict) -> str:
    r = doc["result"]["models"]["convs2s"]
    by = r["bleu_by_length"]
    return (
        f"ConvS2S gets {f(r['bleu'])} BLEU ({f(by['1-10'])} on 1-10 tokens, {f(by['61+'])} on "
        f"61+; {_params(r)} parameters, {f(r['train_seconds'])} s of training). Made by "
        f"{_made_by(doc)}."
    )


def _sweep_steps(res: dict) -> str:
    """'N steps per run', or the range where a grid sets each setting's steps (equal cost)."""
    steps = sorted({row[res["header"].index("steps")] for row in res["rows"]})
    if len(steps) <= 1:
        return f"{res['num_steps']} steps per run"
    return f"{steps[0]} to {steps[-1]} steps per run (each setting's: the steps column)"


def render_sweep(doc: dict) -> str:
    """Every (setting, model) of the equal-budget sweep, scored on the validation split."""
    res = doc["result"]
    header = res["header"]
    keep = ["setting", "model", "steps", "final acc", "valid loss", "BLEU", "1-10", "61+"]
    idx = [header.index(k) for k in keep]
    chosen = res["chosen"]
    rows = []
    for row in res["rows"]:
        picked = chosen.get(row[header.index("model")]) == row[header.index("setting")]
        rows.append([row[i] for i in idx] + ["chosen" if picked else ""])
    keep = keep[:5] + [f"valid {k}" for k in keep[5:]] + ["choice"]
    commit = ((res.get("provenance") or {}).get("commit") or "?")[:7]
    where = f"at commit {commit}" + ("; the result's `note` says more" if doc.get("note") else "")
    return "\n".join(
        [
            markdown_table(keep, rows),
            "",
            f"Scored on the {res['split']} split ({res['sentences_per_bucket']} sentences per "
            f"length bucket), {_sweep_steps(res)}, one seed."
            + (
                f" Chosen jointly (the best mean valid BLEU over the models, for what they "
                f"share): {res['chosen_jointly']}."
                if res.get("chosen_jointly")
                else ""
            )
            + f" Made by `{doc['command']}` {where}; `results/{doc['name']}.json`.",
        ]
    )


def render_seeds(doc: dict) -> str:
    models = doc["result"]["models"]
    header = ["model", "BLEU", *BUCKETS, "BLEU per seed"]
    rows = [
        [n, mean_pm_std(r, "bleu")]
        + [mean_pm_std(r, "bleu_by_length", b) for b in BUCKETS]
        + [", ".join(f(s["bleu"]) for s in r["seeds"])]
        for n, r in models.items()
    ]
    return f"{markdown_table(header, rows)}\n\nMade by {_made_by(doc)}."


def render_equal_time(doc: dict) -> str:
    """Steps and tokens each model reached in the same training time, and its BLEU; the
    conclusion names the order the numbers give."""
    res = doc["result"]
    models, budget = res["models"], res["setup"]["max_train_seconds"]
    header = ["model", "steps reached", "target tokens seen", "valid loss", "BLEU", "1-10", "61+"]
    rows = [
        [n, r["steps"], r["tokens"], r.get("valid_loss"), r["bleu"]]
        + [r["bleu_by_length"].get(b) for b in ("1-10", "61+")]
        for n, r in models.items()
    ]
    ranked = sorted(models, key=lambda n: -models[n]["bleu"])
    order = " > ".join(f"{n} ({f(models[n]['bleu'])})" for n in ranked)
    pair = ""
    if {"transformer", "rnnsearch"} <= set(models):
        t, s = models["transformer"], models["rnnsearch"]
        pair = (
            f" In the same time the Transformer takes {t['steps'] / s['steps']:.1f}x the steps "
            f"RNNsearch takes and sees {t['tokens'] / s['tokens']:.1f}x the target tokens; it ends "
            f"{'ahead of' if t['bleu'] > s['bleu'] else 'behind'} it by "
            f"{f(abs(t['bleu'] - s['bleu']))} BLEU"
        )
        if t["steps"] > s["steps"] and t["bleu"] < s["bleu"]:
            pair += ": on this machine its extra steps per second do not make up for RNNsearch's "
            pair += "sample efficiency."
        elif t["bleu"] >= s["bleu"]:
            pair += ": at equal time its parallelism pays for itself here."
        else:
            pair += "."
    return (
        f"{markdown_table(header, rows)}\n\n{f(budget)} s of training per model, each "
        f"model's schedule laid out over it. Ranked by BLEU: {order}.{pair} Made by "
        f"{_made_by(doc)}."
    )


# ------------------------------------------------------------------- real text


def _decoding(r) -> str:
    """The beam and length penalty chosen on the validation split, with how many seeds chose
    each ('beam 4, α 1 (3 seeds)'); '—' for a run that did not choose."""
    import collections

    one = lambda d: (
        "greedy" if d["beam_size"] <= 1 else f"beam {d['beam_size']}, α {d['length_penalty']:g}"
    )
    picks = collections.Counter(one(d) for d in (r.get("decoding") or []) if d)
    if len(picks) == 1 and sum(picks.values()) == 1:
        return next(iter(picks))
    return ", ".join(f"{k} ({n} seed{'s' * (n > 1)})" for k, n in picks.items()) or "—"


def _corpus_line(res: dict) -> str:
    """What the corpus was: pairs per split, catalogs, test sentences per length bucket."""
    setup = res["setup"]
    sizes, counts = setup["corpus_sizes"], setup["test_sentences_per_bucket"]
    report = setup.get("corpus_report", {})
    catalogs = report.get("catalogs")
    source = (
        f" from {len(catalogs)} gettext catalogs (iso-codes' name lists left out: "
        f"{len(report.get('excluded_catalogs', []))})"
        if catalogs
        else ""
    )
    vocab = setup["vocab"]
    return (
        f"{f(sizes['train'])} training pairs{source}, {f(sizes['valid'])} validation and "
        f"{f(sizes['test'])} test pairs, the test split stratified by source words ("
        + ", ".join(f"{b}: {n}" for b, n in counts.items())
        + f"); {'one shared' if vocab[0] == vocab[1] else 'a'} sentencepiece vocabulary of "
        f"{f(vocab[1])} pieces"
    )


def render_real_text(doc: dict) -> str:
    """A real-text run (one seed, or the mean ± std of several): params, train s, valid loss,
    BLEU and chrF overall, BLEU by source length, the decoding each chose on validation."""
    res = doc["result"]
    models, seeds = res["models"], res["setup"]["seeds"]
    header = ["model", "params", "train s", "valid loss", "BLEU", "chrF", *BUCKETS]
    rows = [
        [n, _params(r)]
        + [mean_pm_std(r, k) for k in ("train_seconds", "valid_loss", "bleu", "chrf")]
        + [mean_pm_std(r, "bleu_by_length", b) for b in BUCKETS]
        for n, r in models.items()
    ]
    chrf = [[n] + [mean_pm_std(r, "chrf_by_length", b) for b in BUCKETS] for n, r in models.items()]
    over = f"mean ± std over {seeds} seeds" if seeds > 1 else "one seed"
    return "\n".join(
        [
            markdown_table(header, rows),
            "",
            f"chrF by source length ({over}):",
            "",
            markdown_table(["model", *BUCKETS], chrf),
            "",
            f"{_corpus_line(res)}; {over}; decoding: {res['setup']['decode']}; chosen: "
            + "; ".join(f"{n} {_decoding(r)}" for n, r in models.items())
            + f". Made by {_made_by(doc)}.",
        ]
    )


def _still_falling(r) -> float | None:
    """How much seed 0's validation loss fell over its last evaluation interval (None when
    fewer than two were recorded)."""
    curve = (r.get("valid_curve") or [[]])[0]
    if len(curve) < 2:
        return None
    return curve[-2][1] - curve[-1][1]


def render_real_text_shows(doc: dict) -> str:
    """The bullets under the real-text table: the length effect, the Transformer against the
    recurrent models, and whether the validation loss was still falling at the budget's end."""
    res = doc["result"]
    m = res["models"]
    by = lambda n, b: m[n]["bleu_by_length"][b]
    keep = lambda n: by(n, "61+") / by(n, "1-10") if by(n, "1-10") else float("nan")
    out = []
    if {"rnnenc", "rnnsearch"} <= set(m):
        out.append(
            "- **Length**: every model falls with source length; RNNenc keeps "
            f"{keep('rnnenc'):.0%} of its 1-10-word BLEU on 61+ words ({f(by('rnnenc', '1-10'))}"
            f" → {f(by('rnnenc', '61+'))}), "
            + ", ".join(
                f"{n} {keep(n):.0%} ({f(by(n, '1-10'))} → {f(by(n, '61+'))})"
                for n in m
                if n != "rnnenc"
            )
            + "."
        )
    if "transformer" in m:
        best = max((n for n in m if n != "transformer"), key=lambda n: m[n]["bleu"])
        t, b = m["transformer"], m[best]
        out.append(
            f"- **The Transformer against the best other model** ({best}): {f(t['bleu'])} vs "
            f"{f(b['bleu'])} BLEU, {f(t['chrf'])} vs {f(b['chrf'])} chrF, in {f(t['train_seconds'])}"
            f" vs {f(b['train_seconds'])} s of training (validation loss {f(t['valid_loss'])} vs "
            f"{f(b['valid_loss'])})."
        )
    falling = {n: _still_falling(r) for n, r in m.items()}
    if all(v is not None for v in falling.values()):
        every = res["setup"]["eval_every"]
        out.append(
            f"- **A longer budget**: over the last {every} steps the validation loss still fell "
            + ", ".join(f"{f(v)} for {n}" for n, v in falling.items())
            + (
                ": every model was still learning when the budget ended."
                if all(v > 0 for v in falling.values())
                else "."
            )
        )
    return "\n".join(out)


# the real-text result the front page's verdicts, bullets and plot read: three seeds (its
# 15-minute one-seed run, rnn_vs_attn/gettext_enfr, has its own table in docs/results.md)
REAL_TEXT = "rnn_vs_attn/gettext_enfr_seeds"

# rnn_vs_attn's chapter claims the real-text verdicts are set beside toy_wmt's, in order
REAL_TEXT_CLAIMS = (
    "rnn_vs_attn/bottleneck",
    "rnn_vs_attn/retention",
    "rnn_vs_attn/quality_cost",
    "rnn_vs_attn/transformer_wins",
)


def render_real_verdicts(doc: dict, toy: str = committed.VERDICTS_FROM["rnn_vs_attn"]) -> str:
    """rnn_vs_attn's chapter claims judged on both corpora by the one rule: toy_wmt's committed
    result its verdicts read (`toy`) and the real-text `doc`, a row per claim."""
    sides = {"toy": load(toy), "real": doc}
    judged = {k: record.claims_of("rnn_vs_attn", d["result"]) for k, d in sides.items()}
    seeds = lambda d: d["result"]["setup"]["seeds"]
    head = [
        "claim",
        "range",
        f"toy_wmt ({seeds(sides['toy'])} seeds)",
        f"real text ({seeds(doc)} seed{'s' * (seeds(doc) > 1)})",
    ]
    cell = lambda c: f"**{c.verdict}**: {c.measured}"
    rows = [
        [judged["real"][cid].claim, judged["real"][cid].expected]
        + [cell(judged[k][cid]) for k in ("toy", "real")]
        for cid in REAL_TEXT_CLAIMS
    ]
    return "\n".join(
        [
            markdown_table(head, rows),
            "",
            f"From `results/{toy}.json` and {_source(doc)}; the rule is the one every claim on "
            "this page is judged by (an interval over fewer than 3 seeds shows nothing).",
        ]
    )


def render_real_vs_toy(doc: dict, toy: str = committed.VERDICTS_FROM["rnn_vs_attn"]) -> str:
    """Where real text and the invented language agree and where they do not: the same
    quantities read from both committed results (toy_wmt's `toy`, the real-text `doc`),
    means over each result's seeds."""
    toy_doc = load(toy)
    real, inv = doc["result"]["models"], toy_doc["result"]["models"]
    by = lambda m, n, b: m[n]["bleu_by_length"][b]
    keep = lambda m, n: by(m, n, "61+") / by(m, n, "1-10")
    q = {k: keep(m, "rnnenc") / keep(m, "rnnsearch") for k, m in (("toy", inv), ("real", real))}
    both = all(v < 1 for v in q.values())
    gap = {
        k: m["transformer"]["bleu"] - m["rnnsearch"]["bleu"]
        for k, m in (("toy", inv), ("real", real))
    }
    same_sign = (gap["toy"] > 0) == (gap["real"] > 0)
    flat = keep(inv, "rnnsearch"), keep(real, "rnnsearch")
    n = lambda d: d["result"]["setup"]["seeds"]
    over = lambda d: "one seed" if n(d) == 1 else f"means over {n(d)} seeds"
    return "\n".join(
        [
            "- **The bottleneck**: "
            + (
                "on both, RNNenc keeps less of its short-sentence BLEU on the longest "
                "sentences than RNNsearch keeps of its own"
                if both
                else "RNNenc does not keep less of its short-sentence BLEU than RNNsearch on both"
            )
            + f": {q['toy']:.2f} of RNNsearch's share on toy_wmt, {q['real']:.2f} on real text.",
            f"- **Attention against length**: RNNsearch keeps {flat[0]:.0%} of its "
            f"shortest-bucket BLEU on the longest on toy_wmt and {flat[1]:.0%} on real text"
            + (
                ": flat on the invented language, falling on real text, where most training "
                "pairs are short."
                if flat[0] > 0.9 > flat[1]
                else "."
            ),
            f"- **The Transformer against RNNsearch**: {gap['toy']:+.1f} BLEU on toy_wmt, "
            f"{gap['real']:+.1f} on real text ({'the same' if same_sign else 'opposite'} sign).",
            "",
            f"From `results/{toy}.json` (toy_wmt, {over(toy_doc)}) and {_source(doc)} "
            f"({over(doc)}).",
        ]
    )


def _verdict(doc: dict, claim_id: str) -> str:
    """The verdict of claim `claim_id` ('<experiment>/<name>') on the committed result, as its
    experiment judges it (experiments/<experiment>/claims.py)."""
    return record.claims_of(claim_id.split("/")[0], doc["result"])[claim_id].verdict


def _source(doc: dict) -> str:
    return f"`results/{doc['name']}.json`"


def quote(claim_id: str, joint: str = ": ", detail: bool = False):
    """A renderer of '<verdict><joint><measured> (`results/<name>.json`)': a chapter claim,
    read by id, whose measured text says it all (gradient_decay/gradients: Pascanu's bound,
    the gates, attention's flat path; rnn_vs_attn/equal_time: BLEU at equal training time);
    detail=True adds the claim's detail (the assumptions behind a predicted figure)."""

    def render(doc: dict) -> str:
        c = record.claims_of(claim_id.split("/")[0], doc["result"])[claim_id]
        more = f"; {c.detail}" if detail and c.detail else ""
        return f"{c.verdict}{joint}{c.measured}{more} ({_source(doc)})"

    return render


def render_chapter_bottleneck(doc: dict) -> str:
    """Row 2: RNNenc against the attention models by length, with rnn_vs_attn's verdict."""
    by = lambda n, b: f(doc["result"]["models"][n]["bleu_by_length"][b])
    return (
        f"{_verdict(doc, 'rnn_vs_attn/bottleneck')}: RNNenc {by('rnnenc', '1-10')} BLEU on 1-10 "
        f"tokens, {by('rnnenc', '61+')} on 61+; RNNsearch {by('rnnsearch', '61+')} and the "
        f"Transformer {by('transformer', '61+')} on 61+ (one seed; {_source(doc)})"
    )


def render_chapter_complexity(doc: dict) -> str:
    """Row 4: the fitted FLOP exponents of the LSTM layer and the attention core."""
    e = lambda k, ax: f"{doc['result']['fits'][k][ax]['exponent']:.2f}"
    return (
        f"{_verdict(doc, 'complexity/per_layer')}: FLOPs ∝ N^{e('recurrent', 'N')}·"
        f"d^{e('recurrent', 'd')} for the LSTM, N^{e('attention_core', 'N')}·"
        f"d^{e('attention_core', 'd')} for attention ({_source(doc)})"
    )


def render_chapter_decode(doc: dict) -> str:
    """Row 6: the per-token FLOP exponents in N of the RNN step, the KV cache, recomputation."""
    e = lambda k: f"{doc['result']['fits'][k]['flops_n_dependent']['exponent']:.2f}"
    return (
        f"{_verdict(doc, 'decode_cost/per_token')}: per-token FLOPs ∝ N^{e('rnn')} (RNN), "
        f"N^{e('kv_cache')} (KV cache), N^{e('recompute')} (recomputation) ({_source(doc)})"
    )


def render_chapter_steps(doc: dict) -> str:
    """Row 3: serial steps read from the compiled programs (exact counts)."""
    a = doc["result"]["analysis"]
    return (
        f"{_verdict(doc, 'parallelism/distance')}: {a['lstm_steps_per_token'] / 2:.2f}·N serial "
        f"steps for the LSTM (forward; {a['lstm_steps_per_token']:.2f}·N with the backward), "
        f"{a['attention_max_steps']} for attention ({_source(doc)})"
    )


def render_chapter_speedup(doc: dict) -> str:
    """Row 5: the measured LSTM/attention training-time ratio at N = 512, with its load."""
    a = doc["result"]["analysis"]
    load = a.get("load_average_before_after") or [None, None]
    cores = _prov(doc["result"]).get("cpus", "?")
    return (
        f"{_verdict(doc, 'parallelism/speedup')} on this CPU: at N = {a['ratio_n']} attention's "
        f"forward+backward speed is {a['ratio_lstm_over_attention']:.2f}x the LSTM's on {cores} "
        f"cores (1-minute load {f(float(load[0] or 'nan'))} before, {f(float(load[1] or 'nan'))} "
        f"after); not run on a GPU ({_source(doc)})"
    )


def claims_table(ids: tuple[str, ...] = ()):
    """A renderer of an experiment's claims as its claims.py judges the committed result now:
    those of `ids` in that order (any of its table and chapter claims), or its whole table;
    then where the result is from."""

    def render(doc: dict) -> str:
        name = doc["name"].split("/")[0]
        if ids:
            judged = record.claims_of(name, doc["result"])
            chosen = [judged[i] for i in ids]
        else:
            module = importlib.import_module(f"experiments.{name}.claims")
            chosen = module.table(record.stored(doc["result"]))
        return f"{claims_markdown(chosen)}\n\nMade by {_made_by(doc)}."

    return render


def _image_link(img: str, prefix: str) -> str:
    return f"[{img.removesuffix('.png')}]({prefix}img/{img})"


def render_scorecard(prefix: str = "docs/") -> str:
    """The chapter's claims on one screen (experiments/report/scorecard.py): first what a 2-core
    CPU shows (generated from the rows' verdicts), then each claim, what it reads, its verdict
    here (the weakest of its parts, each part's own verdict beside it when there are several),
    why (or what would decide it), the plot that shows it, and the committed run behind it
    (its command, wall time and the load it ran under)."""
    rows = []
    for i, e in enumerate(scorecard.ENTRIES, 1):
        verdict, parts = scorecard.verdicts(e)
        each = (
            " ("
            + "; ".join(f"{label}: {c.verdict if c else 'not measured'}" for label, c in parts)
            + ")"
            if len(parts) > 1
            else ""
        )
        names = dict.fromkeys(x.strip().split(" ")[0] for x in e.experiment.split(","))
        rows.append(
            [
                str(i),
                f"[{e.claim}]({prefix}chapter.md#{e.anchor})",
                e.corpus,
                f"**{verdict}**{each}",
                reasons.why(e),
                ", ".join(_image_link(img, prefix) for img in e.images[:2]),
                "; ".join(f"`{scorecard.run_of(n)}` {scorecard.run_time(n)}" for n in names),
            ]
        )
    table = markdown_table(
        [
            "#",
            "the chapter says",
            "read from",
            "verdict here",
            "why, or what would decide it",
            "plot",
            "committed run (wall time, load)",
        ],
        rows,
    )
    load = (
        "*Load* is the machine's 1-minute load average when the run started (2 cores: 1 means "
        f"one core busy on average); no timing is judged from a run whose load exceeded "
        f"{MAX_TIMING_LOAD:g}."
    )
    return "\n".join([*scorecard.what_a_cpu_shows(reasons.why), "", table, "", load])


def experiment_line(name: str) -> str:
    """The first sentence of experiments/configs/<name>.py's docstring, after 'NAME: '."""
    module = importlib.import_module(f"experiments.configs.{name}")
    first = (module.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    first = re.sub(rf"^(Config of )?{name}:\s*", "", first)
    return first[0].upper() + first[1:] if first else ""


def render_hero(doc: dict) -> str:
    """The caption under the front page's plot, every number read from the several-seed result."""
    m = doc["result"]["models"]
    by = lambda n, b: f(m[n]["bleu_by_length"][b])
    seeds = max(r.get("n_seeds", 1) for r in m.values())
    return (
        f"Test BLEU by source length, mean of {seeds} seeds (band: their range): RNNenc, whose "
        f"decoder sees only the encoder's last state, scores {by('rnnenc', '1-10')} on sources "
        f"of 1-10 tokens and {by('rnnenc', '61+')} on 61+; RNNsearch (Bahdanau attention) "
        f"{by('rnnsearch', '61+')} and the Transformer {by('transformer', '61+')} on 61+ "
        f"({_source(doc)}, computed with {provenance.isa_text(_prov(doc['result']['setup']))}; "
        "Bahdanau et al. 2015, Fig. 2, is the same shape at paper scale)."
    )


def render_quickstart(doc: dict) -> str:
    """What the main command prints and how long it took, from its committed run."""
    res = doc["result"]
    m, prov = res["models"], res["setup"].get("provenance") or {}
    load = (prov.get("loadavg") or [float("nan")])[0]
    bleu = ", ".join(f"{n} {f(r['bleu'])}" for n, r in m.items())
    return (
        f"It prints a progress line per logging interval for each model (loss, tokens/s, the "
        f"time left), then its tables; its committed run ({_source(doc)}) took "
        f"{prov.get('wall_seconds', float('nan')) / 60:.0f} minutes on the project's 2-core "
        f"machine (load {f(load)}) and gave test BLEU {bleu}, computed with "
        f"{provenance.isa_text(prov)}. The same seed gives the same digits on the same "
        "instruction set; another (an AVX2-only host, or `--xla_cpu_max_isa`) rounds "
        "differently and moves the last digits."
    )


def render_setup(doc: dict) -> str:
    """What an rnn_vs_attn result was trained and scored on, read from its recorded config."""
    res = doc["result"]
    cfg, meta = res["setup"]["config"], res["setup"]
    data, tr = cfg["data"], cfg["train"]
    toy = data.get("toy") or {}
    corpus = (
        f"toy_wmt (the invented language; {toy.get('train_size')} training pairs, its lexicon "
        f"at scale {toy.get('lexicon_scale')})"
        if data["name"] == "toy_wmt"
        else f"`{data['name']}`"
    )
    phases = (cfg.get("curriculum") or {}).get("phases") or []
    curriculum = (
        f", the first {sum(p[0] for p in phases)} of them a short-to-long length curriculum"
        if phases
        else ""
    )
    counts = meta["test_sentences_per_bucket"]
    return (
        f"Corpus {corpus}; every model {tr['num_steps']} steps of ~{data['token_budget']}-token "
        f"batches{curriculum}; {meta['decode']} decoding of the {meta['eval_split']} split, "
        f"{sum(counts.values())} sentences in {len(counts)} length buckets; {meta['seeds']} "
        f"seed(s); each model's learning-rate recipe chosen on the validation split "
        f"([below](#how-the-recipes-were-chosen-recipe_sweep)). Read from {_source(doc)}."
    )


def render_experiments() -> str:
    """Every experiment: what it measures (its config's docstring), its presets, the wall time
    of its committed default run (and the load it ran under), and the plots it draws."""
    rows = []
    for name in registry.available_experiments():
        presets = ", ".join(f"`{p}`" for p in registry.presets_of(name) if p) or "—"
        timed, plots = "—", "—"
        if committed.exists(f"{name}/default"):
            res = load(f"{name}/default")["result"]
            prov = res.get("provenance") or (res.get("setup") or {}).get("provenance") or {}
            if prov.get("wall_seconds") is not None:
                load1 = (prov.get("loadavg") or [float("nan")])[0]
                timed = f"{prov['wall_seconds'] / 60:.1f} min (load {load1:.1f})"
            drawn = [p for p in (res.get("plots") or []) if p.endswith(".png")]
            plots = ", ".join(f"`{p}`" for p in drawn) or "—"
        rows.append([f"`{name}`", experiment_line(name), presets, timed, plots])
    return markdown_table(
        ["experiment", "what it measures", "presets", "default run here", "plots"], rows
    )


def render_closing() -> str:
    """The chapter's closing table from the committed results (the report's rows, each the
    weakest of the claims it cites, judged now), and the results each row read."""
    from experiments import report
    from experiments.configs import report as report_config

    config = report_config.get_config("committed")
    sources = report.sources.committed_sources(config)
    rows = report.build_rows(sources, {})
    table = markdown_table(
        ["", "RNN/LSTM", "Transformer", "measured here", "verdict", "read from"],
        [
            [
                r["property"],
                r["rnn"],
                r["transformer"],
                r["measured"],
                f"**{r['verdict']}**",
                ", ".join(f"`{sources[n].workdir}`" for n in r["sources"]),
            ]
            for r in rows
        ],
    )
    return table


def sized_by(c) -> str:
    """What sized the run behind claim `c`, for docs/chapter.md: its power (the range's
    source, the design-seed pilot's effect and spread, the seeds the verdict used; what an
    exact count or an estimate is), or that no pilot sized it."""
    return c.power or (
        "no design-seed pilot committed for this claim: its interval is over the run's own "
        "seeds or programs"
    )


def render_claim(anchor: str):
    """docs/chapter.md's section of one scorecard entry: each part's verdict, range, interval
    and reason, the results it reads, and its plots."""
    entry = next(e for e in scorecard.ENTRIES if e.anchor == anchor)

    def render() -> str:
        verdict, parts = scorecard.verdicts(entry)
        lines = [f"**Verdict: {verdict}** (the weakest of its parts): {reasons.why(entry)}.", ""]
        for label, c in parts:
            if c is None:
                lines.append(f"- *{label}*: not measured (no committed result).")
                continue
            detail = f" {c.detail}." if c.detail else ""
            lines.append(
                f"- *{label}* — **{c.verdict}**. {c.claim}: expected {c.expected}; measured "
                f"{c.measured}.{detail}"
            )
            lines.append(f"  - *Sized by*: {sized_by(c)}.")
        lines += ["", "Read from " + ", ".join(f"`{s}`" for s in scorecard.sources(entry)) + "."]
        lines += [""] + [f"![{img}](img/{img})" for img in entry.images]
        return "\n".join(lines)

    return render


AFTER = ("recall", "copy", "rnnenc_state", "crossover")  # the experiments after the Transformer


# what each experiment after the Transformer measures (the README's table; its verdicts and
# reasons are the scorecard's, in words: experiments/report/reasons.py)
AFTER_MEASURES = {
    "recall": "multi-query associative recall (Zoology's MQAR) against state bytes",
    "copy": "copying strings past the training length (Jelassi et al. 2024)",
    "crossover": "training time, memory and serial steps against N, every mixer on this CPU",
    "rnnenc_state": "RNNenc with an mLSTM's matrix state in place of its vector",
}


def render_after() -> str:
    """The README's table of the experiments after the Transformer: what each measures, its
    scorecard row's verdict and the reason for it (reasons.why), judged now from the
    committed results."""
    rows = []
    for name, measures in AFTER_MEASURES.items():
        entry = next(e for e in scorecard.ENTRIES if e.experiment == name)
        verdict, _ = scorecard.verdicts(entry)
        rows.append([f"`{name}`", measures, f"**{verdict}**", reasons.why(entry)])
    head = ["experiment", "what it measures", "verdict", "why, or what would decide it"]
    return markdown_table(head, rows)


def table_of(module: str, fn: str):
    """A renderer of one table an experiment's report draws (`module`.`fn`(results)) from the
    committed result, then where it is from."""

    def render(doc: dict) -> str:
        table = getattr(importlib.import_module(module), fn)(record.stored(doc["result"]))
        return f"{table}\n\nRead from {_source(doc)}."

    return render


def render_rates(doc: dict) -> str:
    """The peak learning rate each contender (recall: each family) of a recall / copy run
    trained at, from the run's own config, and where it came from: the experiment's committed
    'lr_grid' choice (copy: its two grids over disjoint rates read as one), or (none committed)
    the grid's middle for every family, the same tuning budget (none) for each."""
    from experiments.configs.recall import GRID

    name = doc["name"].split("/")[0]
    config = doc["result"]["config"]
    specs = config["frontier"]["contenders"] if "frontier" in config else config["contenders"]
    lr = config["learning_rate"]
    if all(spec in lr for spec in specs):  # a rate per contender (copy)
        rates = ", ".join(f"{spec} {lr[spec]:g}" for spec in specs)
    else:  # a rate per family (recall)
        families = dict.fromkeys(spec.split(":")[0] for spec in specs)
        rates = ", ".join(f"{fam} {lr[fam]:g}" for fam in families)
    grids = [g for g in (f"{name}/lr_grid", f"{name}/lr_grid_top") if committed.exists(g)]
    if grids:
        files = " and ".join(f"`results/{g}.json`" for g in grids)
        one = ", read as one grid" if len(grids) > 1 else ""
        how = f"each one's choice of {files}{one} (validation set, design seed)"
    else:
        how = f"no `lr_grid` result committed: every family at the grid's middle rate ({GRID[1]:g})"
    return f"Peak learning rates: {rates}; {how} ({_source(doc)})."


def render_crossover_points(doc: dict) -> str:
    """Where each recurrence overtakes dense attention (its N*, experiments/crossover/claims.py),
    then flash-linear-attention's published GB200 crossover, an estimate for that machine."""
    from experiments.crossover import claims as cross

    judged = cross.table(record.stored(doc["result"]))
    skip = {f"crossover/{p}" for p in ("headline", "lstm_serial", "scan_serial", "assoc_serial",
                                        "attention_serial", "memory")}  # fmt: skip
    chosen = [c for c in judged if c.id not in skip]
    return f"{claims_markdown(chosen)}\n\nMade by {_made_by(doc)}."


# KEY -> (committed result, renderer(doc)); None: the renderer reads what it needs itself
RENDERERS = {
    "scorecard": (None, render_scorecard),
    "experiments": (None, render_experiments),
    "chapter/closing": (None, render_closing),
    "after": (None, render_after),
    "rule": (None, lambda: rule_text()),
    **{f"chapter/claim/{e.anchor}": (None, render_claim(e.anchor)) for e in scorecard.ENTRIES},
    "rnn_vs_attn/default": ("rnn_vs_attn/default", render_default),
    "rnn_vs_attn/default/shows": ("rnn_vs_attn/default", render_shows),
    "rnn_vs_attn/convs2s": ("rnn_vs_attn/convs2s", render_convs2s),
    "rnn_vs_attn/equal_time": ("rnn_vs_attn/equal_time", render_equal_time),
    "rnn_vs_attn/seeds": ("rnn_vs_attn/seeds", render_seeds),
    "rnn_vs_attn/gettext_enfr": ("rnn_vs_attn/gettext_enfr", render_real_text),
    "rnn_vs_attn/gettext_enfr_seeds": (REAL_TEXT, render_real_text),
    "rnn_vs_attn/gettext_enfr/shows": (REAL_TEXT, render_real_text_shows),
    "rnn_vs_attn/gettext_enfr/verdicts": (REAL_TEXT, render_real_verdicts),
    "rnn_vs_attn/gettext_enfr/vs_toy": (REAL_TEXT, render_real_vs_toy),
    "rnn_vs_attn/setup": ("rnn_vs_attn/seeds", render_setup),
    "hero": ("rnn_vs_attn/seeds", render_hero),
    "quickstart": ("rnn_vs_attn/default", render_quickstart),
    **{
        f"{n}/default": (f"{n}/default", claims_table())
        for n in (
            "gradient_decay",
            "long_range",
            "parallelism",
            "complexity",
            "attention_memory",
            "decode_cost",
        )
    },
    "recipe_sweep/budget": ("recipe_sweep/budget", render_sweep),
    "recipe_sweep/rnnenc_800": ("recipe_sweep/rnnenc_800", render_sweep),
    "recipe_sweep/transformer_2000": ("recipe_sweep/transformer_2000", render_sweep),
    "recipe_sweep/transformer_2000b": ("recipe_sweep/transformer_2000b", render_sweep),
    "recipe_sweep/transformer_arch": ("recipe_sweep/transformer_arch", render_sweep),
    "recipe_sweep/gettext_vocab": ("recipe_sweep/gettext_vocab", render_sweep),
    "recipe_sweep/gettext_budget_sp2000_shared": (
        "recipe_sweep/gettext_budget_sp2000_shared",
        render_sweep,
    ),
    "chapter/bottleneck": ("rnn_vs_attn/default", render_chapter_bottleneck),
    "chapter/equal_time": ("rnn_vs_attn/equal_time", quote("rnn_vs_attn/equal_time", " ")),
    "chapter/complexity": ("complexity/default", render_chapter_complexity),
    "chapter/steps": ("parallelism/default", render_chapter_steps),
    "chapter/speedup": ("parallelism/default", render_chapter_speedup),
    "chapter/gradients": ("gradient_decay/default", quote("gradient_decay/gradients")),
    "chapter/decode_cost": ("decode_cost/default", render_chapter_decode),
    "chapter/stackability": ("depth/default", quote("depth/stackability")),
    "depth/default": ("depth/default", claims_table()),
    "depth/stability": ("depth/stability", claims_table()),
    "depth/xiong": ("depth/xiong", claims_table()),
    "chapter/scaling": ("scaling/default", quote("scaling/structure")),
    "chapter/speedup_predicted": ("scaling/default", quote("scaling/speed_ratio", detail=True)),
    "chapter/time_to_loss_predicted": (
        "scaling/default",
        quote("scaling/time_to_loss", detail=True),
    ),
    "scaling/default": ("scaling/default", claims_table()),
    "chapter/context": ("context_length/default", quote("context_length/context_extension")),
    "context_length/default": ("context_length/default", claims_table()),
    **{f"{n}/default": (f"{n}/default", claims_table()) for n in AFTER},
    # Zoology's and Based's findings beside recall's claims, point by point
    "recall/papers": ("recall/default", table_of("experiments.recall.plots", "comparison")),
    "recall/frontier": ("recall/default", table_of("experiments.recall.plots", "frontier_table")),
    "recall/lengths": ("recall/default", table_of("experiments.recall.plots", "lengths_table")),
    "copy/exact": ("copy/default", table_of("experiments.copy.plots", "exact_table")),
    "recall/rates": ("recall/default", render_rates),
    "crossover/points": ("crossover/default", render_crossover_points),
    "copy/rates": ("copy/default", render_rates),
}


# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {
    "rnnenc_state/default": (
        "experiments.rnnenc_state.plots",
        {"rnnenc_state.png": "rnnenc_state.png"},
    ),
    "crossover/default": ("experiments.crossover.plots", {"crossover.png": "crossover.png"}),
    "recall/default": (
        "experiments.recall.plots",
        {"recall_frontier.png": "recall_frontier.png", "recall_lengths.png": "recall_lengths.png"},
    ),
    "copy/default": ("experiments.copy.plots", {"copy_length.png": "copy_length.png"}),
    "rnn_vs_attn/seeds": (
        "experiments.rnn_vs_attn.plots",
        {
            "bleu_by_length.png": "bleu_by_length.png",
            "valid_loss_vs_time.png": "valid_loss_vs_time.png",
            "attention_rnnsearch.png": "attention_rnnsearch.png",
            "attention_transformer.png": "attention_transformer.png",
        },
    ),
    "gradient_decay/default": (
        "experiments.gradient_decay.plots",
        {
            "gradient_decay.png": "gradient_decay.png",
            "rates.png": "gradient_decay_rates.png",
            "clipping.png": "gradient_decay_clipping.png",
        },
    ),
    "long_range/default": ("experiments.long_range.plots", {"long_range.png": "long_range.png"}),
    REAL_TEXT: (
        "experiments.rnn_vs_attn.plots",
        {"bleu_by_length.png": "gettext_enfr_bleu_by_length.png"},
    ),
    "complexity/default": ("experiments.complexity.plots", {"complexity.png": "complexity.png"}),
    "parallelism/default": (
        "experiments.parallelism.plots",
        {"parallelism.png": "parallelism.png"},
    ),
    "decode_cost/default": (
        "experiments.decode_cost.plots",
        {"decode_cost.png": "decode_cost.png"},
    ),
    "scaling/default": ("experiments.scaling.report", {"scaling.png": "scaling.png"}),
    "depth/default": (
        "experiments.depth.plots",
        {
            "loss_vs_depth.png": "loss_vs_depth.png",
            "grad_norms_at_init.png": "grad_norms_at_init.png",
        },
    ),
    "depth/stability": ("experiments.depth.plots", {"warmup_curves.png": "warmup_curves.png"}),
    "depth/xiong": ("experiments.depth.plots", {"xiong_exponents.png": "xiong_exponents.png"}),
    "attention_memory/default": (
        "experiments.attention_memory",
        {"attention_memory.png": "attention_memory.png"},
    ),
    "context_length/default": (
        "experiments.context_length.plots",
        {
            png: png
            for png in (
                "context_length_loss.png",
                "context_length_probe.png",
                "context_length_extension.png",
            )
        },
    ),
}
