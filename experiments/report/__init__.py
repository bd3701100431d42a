"""report: the chapter's closing table (docs/chapter.md), regenerated from our own measurements.

Gathers the results of gradient_decay, long_range, parallelism, complexity, attention_memory,
decode_cost and rnn_vs_attn (sources.py: collects each workdir's results.json, or runs the
experiment in-process when it is missing or config.rerun is set; a collected one made by another
config than the report would run it with is refused in one line, or re-run with
config.on_mismatch='rerun'), reads the claims each row cites by id, as each experiment judges
them (experiments/<name>/claims.py), and writes results.json (rows + sources), report.md and the
sub-experiments' plots. The report judges nothing itself: a row shows its claims' measured
texts and combines their verdicts (rows.py). Every row is a probes.Claim, written by
probes.claims_json / claims_markdown; report.md names each source's commit, preset, machine
and load as that run recorded them.
"""

from __future__ import annotations

import importlib
import os

from anatomy import paths
from anatomy.errors import BadInputError
from anatomy.probes.claims import (
    HOLDS,
    MISSING,
    VERDICTS,
    Claim,
    claims_markdown,
    count,
    from_json,
    rule_text,
    weakest,
)
from anatomy.probes.claims import summary as claims_summary
from anatomy.tables import markdown_table
from experiments.lab import exponents, provenance, record
from experiments.report.rows import REQUIRED, ROWS, Row
from experiments.report.sources import Source, gather, publish, recorded

TITLE = "Why the Transformer: the chapter's table, measured"  # of report.md


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


def verdict_rules() -> str:
    """How every verdict the rows cite is decided: the rules of each experiment's claims.py,
    and how a row combines its claims' verdicts."""
    lines = [f"* The rule: {rule_text()}", exponents.rule()]
    for name in REQUIRED:
        lines += importlib.import_module(f"experiments.{name}.claims").rules()
    lines += [
        "* A row takes the weakest verdict of the claims it cites.",
        f"* Verdicts: {', '.join(VERDICTS)}.",
    ]
    return "\n".join(lines)


def row_claim(row: Row, claims: dict[str, Claim]) -> Claim:
    """One row as a Claim: claim = the property, expected = the chapter's two claims, measured
    and detail its claims' (joined by '; '), verdict the weakest of theirs; MISSING when no
    experiment measures it or a source's claims are absent."""
    expected = f"RNN/LSTM: {row.rnn}; Transformer: {row.transformer}"
    if not row.claims:
        return Claim(row.property, expected, "—", MISSING, row.unmeasured)
    absent = [n for n in row.sources if not any(c.startswith(f"{n}/") for c in claims)]
    if absent:
        return Claim(row.property, expected, "—", MISSING, f"no results from {', '.join(absent)}")
    parts = [claims[cid] for cid in row.claims]
    verdict = weakest(c.verdict for c in parts)
    if verdict not in VERDICTS:
        raise BadInputError(f"report: row {row.property!r} gave verdict {verdict!r}")
    return Claim(
        row.property,
        expected,
        "; ".join(c.measured for c in parts),
        verdict,
        "; ".join(c.detail for c in parts if c.detail),
    )


def build_rows(sources: dict[str, Source], links: dict[str, dict]) -> list[dict]:
    """Every row of the table: the Claim's fields (claim = property, expected = the chapter's
    two claims, measured, verdict, detail) plus property, rnn, transformer, the sources and
    claim ids it cites, and its plots."""
    claims = {cid: c for s in sources.values() if s.claims for cid, c in s.claims.items()}
    rows = []
    for row in ROWS:
        plots = [
            p
            for n in row.sources
            if n in links
            for p in links[n]["plots"]
            if any(os.path.basename(p).startswith(pre) for pre in row.plots)
        ]
        rows.append(
            {
                "property": row.property,
                "rnn": row.rnn,
                "transformer": row.transformer,
                **row_claim(row, claims).as_dict(),
                "sources": list(row.sources),
                "claims": list(row.claims),
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


def sections(rows: list[dict], sources: dict[str, Source], links: dict[str, dict]) -> list:
    """report.md's sections: the table, why each verdict, the rules, the sources, their plots."""
    claims = from_json(rows)
    table = claims_markdown(
        claims,
        header=("", "chapter: RNN/LSTM vs Transformer", "measured here", "verdict"),
        extra={"plots": [", ".join(_link(p) for p in r["plots"]) or "—" for r in rows]},
        details=False,
    )
    summary = claims_summary(claims)
    why = "\n".join(f"* **{c.claim}** ({c.verdict}): {c.detail}" for c in claims)
    src_table = markdown_table(
        ("experiment", "results", "commit", "preset", "machine and load", "read from")
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
    return [
        ("The table", f"{summary}.\n\n{table}"),
        ("Why each verdict", why),
        ("How verdicts are decided", verdict_rules()),
        (
            "Sources",
            src_table + "\n\nSmall runs: we reproduce shapes and ratios, not the "
            "literature's absolute numbers. Each source's machine and 1-minute load average "
            "(before → after its run) are what that run recorded; a load above its core "
            "count means other work competed with its timings.",
        ),
        ("Plots", plots or "none"),
    ]


def run(config, workdir):
    """Gather the sub-experiments, build the table, write results.json and report.md."""
    if config.preset not in ("", "quick"):
        raise BadInputError(f"report: preset must be '' or 'quick', got {config.preset!r}")
    paths.makedirs(workdir)
    started = record.start("report", config, workdir)
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
                "results_json": s.workdir
                if s.workdir.startswith("results/")
                else os.path.join(s.workdir, "results.json"),
                **dict(zip(("commit", "preset", "machine"), _made_by(s))),
                **links.get(n, {"plots": [], "report": None}),
            }
            for n, s in sources.items()
        },
    }
    started.finish(results, None, TITLE, sections(rows, sources, links))
    print(
        "\n"
        + markdown_table(
            ("", "measured", "verdict"),
            [(r["property"], r["measured"], r["verdict"]) for r in rows],
        ),
        flush=True,
    )
    return results
