"""report: the chapter's closing table (docs/chapter.md), regenerated from our own measurements.

Gathers the results of gradient_decay, long_range, parallelism, complexity, decode_cost and
rnn_vs_attn (report_sources: collects each workdir's results.json, or runs the experiment
in-process when it is missing or config.rerun is set; a collected one made by another config
than the report would run it with is refused in one line, or re-run with
config.on_mismatch='rerun'), turns their numbers into one row per
property of the chapter's table (report_rows) with a verdict from explicit thresholds
(thresholds), and writes results.json (rows + sources), report.md and the sub-experiments'
plots. Every row is a probes.Claim, written by probes.claims_json / claims_markdown; report.md
names each source's commit, preset, machine and load as that run recorded them.
"""

from __future__ import annotations

import os
import time

from anatomy.errors import BadInputError
from anatomy.probes.claims import (
    HOLDS,
    MISSING,
    VERDICTS,
    Claim,
    claims_markdown,
    count,
    from_json,
)
from anatomy.probes.claims import summary as claims_summary
from experiments import outputs, provenance
from experiments.report_rows import ROWS
from experiments.report_sources import Source, gather, publish, recorded
from experiments.thresholds import thresholds_markdown


def _own_claims(results: dict | None) -> str:
    """'5/7 hold': how many of a sub-experiment's own claims (its results.json "table") hold."""
    table = (results or {}).get("table")
    if not table:
        return "—"
    try:
        held = count(from_json(table)).get(HOLDS, 0)
    except (ValueError, KeyError):
        return "written before the verdict vocabulary: rerun it"
    return f"{held}/{len(table)} hold"


def row_claim(spec, have: dict, sources: dict[str, Source]) -> Claim:
    """One row as a Claim: claim = the property, expected = the chapter's two claims,
    measured and verdict from spec.measure, detail = why (MISSING when a source is absent)."""
    expected = f"RNN/LSTM: {spec.rnn}; Transformer: {spec.transformer}"
    absent = [n for n in spec.sources if n not in have]
    if absent:
        return Claim(spec.name, expected, "—", MISSING, f"no results from {', '.join(absent)}")
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
    return Claim(spec.name, expected, measured, verdict, why)


def build_rows(sources: dict[str, Source], links: dict[str, dict]) -> list[dict]:
    """Every row of the table: the Claim's fields (claim = property, expected = the chapter's
    two claims, measured, verdict, detail = why) plus property, rnn, transformer, sources, plots."""
    rows = []
    for spec in ROWS:
        have = {
            n: sources[n].results
            for n in spec.sources
            if n in sources and sources[n].results is not None
        }
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
                **row_claim(spec, have, sources).as_dict(),
                "sources": list(spec.sources),
                "plots": plots,
            }
        )
    return rows


def _link(path: str) -> str:
    """[parent/stem](path): e.g. [rnn_vs_attn/report](rnn_vs_attn/report.md)."""
    label = os.path.splitext(path)[0].replace(os.sep, "/").lstrip("./")
    return f"[{label}]({path})"


def _made_by(src: Source) -> tuple[str, str, str]:
    """(commit, preset, machine and load) a source's results recorded ('—' where they did not)."""
    if src.results is None:
        return "—", "—", "—"
    p = recorded(src.results, "provenance") or {}
    commit = (p.get("commit") or "not recorded")[:7] + (" (dirty)" if p.get("dirty") else "")
    preset = p.get("preset") or provenance.preset_of(
        src.name, recorded(src.results, "config") or {}
    )
    load = [x[0] for x in (p.get("loadavg"), p.get("loadavg_after")) if x]
    machine = (
        f"{p.get('cpus', '?')} cores, {p.get('device_kind') or '?'}"
        + (f"; load {' → '.join(f'{x:.1f}' for x in load)}" if load else "")
        if p
        else "not recorded"
    )
    return commit, preset, machine


def write_markdown(
    workdir: str,
    rows: list[dict],
    sources: dict[str, Source],
    links: dict[str, dict],
    made_by: dict | None = None,
) -> str:
    claims = from_json(rows)
    table = claims_markdown(
        claims,
        header=("", "chapter: RNN/LSTM vs Transformer", "measured here", "verdict"),
        extra={"plots": [", ".join(_link(p) for p in r["plots"]) or "—" for r in rows]},
        details=False,
    )
    summary = claims_summary(claims)
    why = "\n".join(f"* **{c.claim}** ({c.verdict}): {c.detail}" for c in claims)
    src_table = outputs.markdown_table(
        ("experiment", "results", "commit", "preset", "machine and load", "workdir")
        + ("its own claims", "its report"),
        [
            (
                s.name,
                s.status,
                *_made_by(s),
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
    return outputs.write_report(
        workdir,
        "Why the Transformer: the chapter's table, measured",
        [
            ("The table", f"{summary}.\n\n{table}"),
            ("Why each verdict", why),
            ("How verdicts are decided", thresholds_markdown()),
            (
                "Sources",
                src_table + "\n\nSmall runs: we reproduce shapes and ratios, not the "
                "literature's absolute numbers. Each source's machine and 1-minute load average "
                "(before → after its run) are what that run recorded; a load above its core "
                "count means other work competed with its timings.",
            ),
            ("Run", provenance.provenance_line(made_by)),
            ("Plots", plots or "none"),
        ],
    )


def run(config, workdir):
    """Gather the sub-experiments, build the table, write results.json and report.md."""
    if config.preset not in ("", "quick"):
        raise BadInputError(f"report: preset must be '' or 'quick', got {config.preset!r}")
    os.makedirs(workdir, exist_ok=True)
    started, t0 = provenance.provenance(), time.time()  # commit, machine, versions, load before
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
                **dict(zip(("commit", "preset", "machine"), _made_by(s))),
                **links.get(n, {"plots": [], "report": None}),
            }
            for n, s in sources.items()
        },
    }
    results["provenance"] = provenance.run_provenance("report", config, started, t0)
    outputs.write_json(workdir, results)
    write_markdown(workdir, rows, sources, links, results["provenance"])
    print(
        "\n"
        + outputs.markdown_table(
            ("", "measured", "verdict"),
            [(r["property"], r["measured"], r["verdict"]) for r in rows],
        ),
        flush=True,
    )
    return results
