"""The chapter's own blocks on the pages, rendered from the committed results: the README's
scorecard and its table of the experiments after the Transformer, the list of experiments,
docs/chapter.md's closing table and its section per claim, and the verdict rule, in the shape
experiments/lab/publish.py reads from an experiment's docs.py (each experiment's own tables
and plots are in its docs.py). Every verdict is read by its claim's id, as the experiment's
claims.py judges it now.
"""

from __future__ import annotations

import importlib
import re

from anatomy.probes.claims import MAX_TIMING_LOAD, rule_text
from anatomy.tables import markdown_table
from experiments.lab import committed, registry
from experiments.lab.committed import load
from experiments.report import reasons, scorecard


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


# what each experiment after the Transformer measures (the README's table; its verdicts and
# reasons are the scorecard's, generated)
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


# KEY -> (committed result, renderer(doc)); None: the renderer reads what it needs itself
RENDERERS = {
    "scorecard": (None, render_scorecard),
    "experiments": (None, render_experiments),
    "chapter/closing": (None, render_closing),
    "after": (None, render_after),
    "rule": (None, lambda: rule_text()),
    **{f"chapter/claim/{e.anchor}": (None, render_claim(e.anchor)) for e in scorecard.ENTRIES},
}
