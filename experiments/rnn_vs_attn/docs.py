"""rnn_vs_attn's blocks on the pages (the README's hero caption, quick start and tables,
docs/results.md's runs, the real-text comparison beside toy_wmt) and the plots they show, in
the shape experiments/lab/publish.py reads; every number from a committed result.
"""

from __future__ import annotations

from anatomy.tables import markdown_table
from experiments.lab import committed, provenance, record
from experiments.lab.committed import load
from experiments.lab.pages import f, made_by, prov, quote, source, verdict
from experiments.tasks.translation.seeds import mean_pm_std

BUCKETS = ("1-10", "11-20", "21-30", "31-40", "41-50", "51-60", "61+")


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
    lines = [markdown_table(header, rows), "", f"Made by {made_by(doc)}."]
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
        f"{made_by(doc)}."
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
    return f"{markdown_table(header, rows)}\n\nMade by {made_by(doc)}."


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
        f"{made_by(doc)}."
    )


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
            + f". Made by {made_by(doc)}.",
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
            f"From `results/{toy}.json` and {source(doc)}; the rule is the one every claim on "
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
            f"From `results/{toy}.json` (toy_wmt, {over(toy_doc)}) and {source(doc)} "
            f"({over(doc)}).",
        ]
    )


def render_chapter_bottleneck(doc: dict) -> str:
    """Row 2: RNNenc against the attention models by length, with rnn_vs_attn's verdict."""
    by = lambda n, b: f(doc["result"]["models"][n]["bleu_by_length"][b])
    return (
        f"{verdict(doc, 'rnn_vs_attn/bottleneck')}: RNNenc {by('rnnenc', '1-10')} BLEU on 1-10 "
        f"tokens, {by('rnnenc', '61+')} on 61+; RNNsearch {by('rnnsearch', '61+')} and the "
        f"Transformer {by('transformer', '61+')} on 61+ (one seed; {source(doc)})"
    )


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
        f"({source(doc)}, computed with {provenance.isa_text(prov(doc['result']['setup']))}; "
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
        f"time left), then its tables; its committed run ({source(doc)}) took "
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
        f"([below](#how-the-recipes-were-chosen-recipe_sweep)). Read from {source(doc)}."
    )


# KEY -> (committed result, renderer(doc))
RENDERERS = {
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
    "chapter/bottleneck": ("rnn_vs_attn/default", render_chapter_bottleneck),
    "chapter/equal_time": ("rnn_vs_attn/equal_time", quote("rnn_vs_attn/equal_time", " ")),
}

# committed result -> (the module whose draw(results, workdir) makes its plots,
#                     {PNG it draws: its name under docs/img})
PLOTS = {
    "rnn_vs_attn/seeds": (
        "experiments.rnn_vs_attn.plots",
        {
            "bleu_by_length.png": "bleu_by_length.png",
            "valid_loss_vs_time.png": "valid_loss_vs_time.png",
            "attention_rnnsearch.png": "attention_rnnsearch.png",
            "attention_transformer.png": "attention_transformer.png",
        },
    ),
    REAL_TEXT: (
        "experiments.rnn_vs_attn.plots",
        {"bleu_by_length.png": "gettext_enfr_bleu_by_length.png"},
    ),
}
