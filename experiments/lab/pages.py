"""What every experiment's docs.py renders with: where a committed result is from
(`made_by`, `source`), a claim's verdict read by id (`verdict`, `quote`), an experiment's claims
table (`claims_table`), one table of its report (`table_of`), and the peak learning rates recall
and copy trained at (`render_rates`). Each reads a committed result (experiments/lab/committed.py)
and judges a claim by its experiment's claims.py, read by name (record.claims_of); nothing here
names an experiment.
"""

from __future__ import annotations

import importlib

from anatomy.probes.claims import claims_markdown
from anatomy.tables import format_number
from experiments.lab import committed, provenance, record

f = format_number


def prov(setup: dict) -> dict:
    return setup.get("provenance") or {}


def made_by(doc: dict) -> str:
    """'`command` at commit abc1234 (cores, load a -> b, wall time)': where a table is from."""
    setup = doc["result"].get("setup", {})
    p = prov(setup) or doc["result"].get("provenance") or doc.get("saved_by", {})
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


def source(doc: dict) -> str:
    return f"`results/{doc['name']}.json`"


def verdict(doc: dict, claim_id: str) -> str:
    """The verdict of claim `claim_id` ('<experiment>/<name>') on the committed result, as its
    experiment judges it (experiments/<experiment>/claims.py)."""
    return record.claims_of(claim_id.split("/")[0], doc["result"])[claim_id].verdict


def quote(claim_id: str, joint: str = ": ", detail: bool = False):
    """A renderer of '<verdict><joint><measured> (`results/<name>.json`)': a chapter claim,
    read by id, whose measured text says it all (gradient_decay/gradients: Pascanu's bound,
    the gates, attention's flat path; rnn_vs_attn/equal_time: BLEU at equal training time);
    detail=True adds the claim's detail (the assumptions behind a predicted figure)."""

    def render(doc: dict) -> str:
        c = record.claims_of(claim_id.split("/")[0], doc["result"])[claim_id]
        more = f"; {c.detail}" if detail and c.detail else ""
        return f"{c.verdict}{joint}{c.measured}{more} ({source(doc)})"

    return render


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
        return f"{claims_markdown(chosen)}\n\nMade by {made_by(doc)}."

    return render


def table_of(module: str, fn: str):
    """A renderer of one table an experiment's report draws (`module`.`fn`(results)) from the
    committed result, then where it is from."""

    def render(doc: dict) -> str:
        table = getattr(importlib.import_module(module), fn)(record.stored(doc["result"]))
        return f"{table}\n\nRead from {source(doc)}."

    return render


def render_rates(doc: dict, middle: float) -> str:
    """The peak learning rate each contender (recall: each family) of a recall / copy run
    trained at, from the run's own config, and where it came from: the experiment's committed
    'lr_grid' choice (copy: its two grids over disjoint rates read as one), or (none committed)
    the grid's middle (`middle`) for every family, the same tuning budget (none) for each."""
    name = doc["name"].split("/")[0]
    config = doc["result"]["config"]
    specs = config["frontier"]["contenders"] if "frontier" in config else config["contenders"]
    lr = config["learning_rate"]
    if all(spec in lr for spec in specs):  # a rate per contender (copy)
        rates = ", ".join(f"{spec} {lr[spec]:g}" for spec in specs)
    else:  # a rate per family (recall)
        families = dict.fromkeys(spec.split(":")[0] for spec in specs)
        rates = ", ".join(f"{fam} {lr[fam]:g}" for fam in families)
    parts = (f"{name}/lr_grid", f"{name}/lr_grid_top", f"{name}/lr_grid_low")  # grid, added rates
    grids = [g for g in parts if committed.exists(g)]
    if grids:
        files = " and ".join(f"`results/{g}.json`" for g in grids)
        one = ", read as one grid" if len(grids) > 1 else ""
        how = f"each one's choice of {files}{one} (validation set, design seed)"
    else:
        how = f"no `lr_grid` result committed: every family at the grid's middle rate ({middle:g})"
    return f"Peak learning rates: {rates}; {how} ({source(doc)})."
