"""The tail every run() shares, in main's experiments.common: the same three functions and
signatures as issue 21's experiments/record.py (start, stored, finish), so that once that
lands this module is replaced by `from experiments import record` and nothing else changes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence

from anatomy.probes.claims import Claim, claims_json, claims_markdown
from experiments import common


def start() -> tuple[dict, float]:
    """(provenance() now, time.time()): what `finish` needs to record the run."""
    return common.provenance(), time.time()


def stored(results: dict) -> dict:
    """`results` as results.json holds them (plain JSON, then a JSON round trip)."""
    return json.loads(json.dumps(common._jsonable(results)))


def finish(
    name: str,
    config,
    workdir: str,
    results: dict,
    claims: Callable[[dict], list[Claim]],
    *,
    title: str,
    sections: Sequence[tuple[str, str]],
    started: tuple[dict, float],
) -> dict:
    """Judge `claims` on stored(results), add them as results["table"] and the run's
    provenance, write results.json and report.md (# title, ## Claims, sections, ## Run)."""
    judged = claims(stored(results))
    ids = [c.id for c in judged]
    if len(set(ids)) != len(ids) or not all(i.startswith(f"{name}/") for i in ids):
        raise ValueError(f"{name}: claim ids must be unique and start with '{name}/': {ids}")
    results["table"] = claims_json(judged)
    results["provenance"] = common.run_provenance(name, config, *started)
    common.write_json(workdir, results)
    run_line = ("Run", common.provenance_line(results["provenance"]))
    common.write_report(workdir, title, [("Claims", claims_markdown(judged)), *sections, run_line])
    return results
