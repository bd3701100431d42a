"""The tail every experiment's run() shares, and any result's claims by id.

    started = record.start("complexity", config, workdir)  # commit, machine, load; the clock
    results = {"config": config.to_dict(), <measurements>, "plots": [...]}
    return started.finish(results, claims.table, TITLE, [("How it was measured", notes), ...])

`finish` judges the experiment's claims on what results.json will hold (`stored`: the
measurements after a JSON round trip, so string keys, lists, null for a non-finite number),
adds them as results["table"] and the run's provenance, writes results.json and report.md
(# title, ## Claims, the experiment's sections, ## Plot(s) of results["plots"], ## Run) and
returns the results. `finish_drawn` is that tail for a run judged against the chapter: it draws
the plots from what results.json will hold and reports the chapter's claim first and how
verdicts are decided last.

A claim is judged by one function, `experiments.<name>.claims.table` (its own claims) or
`.chapter` (the claims the chapter's report and the published docs quote, made of the table's
verdicts), from what results.json holds. `claims_of(name, results)` is how anyone else reads
a verdict: by its id, from a fresh run, a collected workdir or a committed result alike, so a
result written before a claim existed is judged by the same rule without a rerun.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax

from anatomy import paths
from anatomy.probes.claims import Claim, by_id, claims_json, claims_markdown, rule_text, summary
from experiments.lab import jsonio, outputs, provenance


class MissingKey(KeyError):
    """A key a claim reads is not in the results; str() is its dotted path, 'fits.conv.N'."""

    def __str__(self) -> str:
        return str(self.args[0])


class _Keyed(dict):
    """A dict of results.json that names its whole key path when a key is missing."""

    def __init__(self, items, path: tuple[str, ...]):
        super().__init__(items)
        self.path = path

    def __missing__(self, key):
        raise MissingKey(".".join([*self.path, str(key)]))


def _keyed(node, path=()):
    if isinstance(node, dict):
        return _Keyed({k: _keyed(v, (*path, k)) for k, v in node.items()}, path)
    if isinstance(node, list):
        return [_keyed(v, path) for v in node]
    return node


def stored(results: dict) -> dict:
    """`results` as results.json holds them (jsonio.jsonable, then a JSON round trip); a key
    missing from it raises MissingKey naming its path."""
    return _keyed(json.loads(json.dumps(jsonio.jsonable(results))))


def judge(name: str, claims: Callable[[dict], list[Claim]], results: dict) -> list[Claim]:
    """claims(stored(results)), each with an id of its own under '<name>/'."""
    judged = claims(stored(results))
    ids = by_id(judged)  # every claim has an id, and no two share one
    foreign = [i for i in ids if not i.startswith(f"{name}/")]
    if foreign:
        raise ValueError(f"{name}: claim ids {foreign} do not start with '{name}/'")
    return judged


@dataclasses.dataclass(frozen=True)
class Started:
    """A run of experiment `name` under way: its config and workdir, and what made it
    (provenance.provenance() and time.time() when it started)."""

    name: str
    config: Any
    workdir: str
    provenance: dict
    t0: float

    def finish(
        self,
        results: dict,
        claims: Callable[[dict], list[Claim]] | None,
        title: str,
        sections: Sequence[tuple[str, str]],
    ) -> dict:
        """Judge `claims` (None: the experiment has none), record, write; returns `results`
        with "table" (when judged) and "provenance" added, in that order, after the
        measurements."""
        judged = judge(self.name, claims, results) if claims is not None else None
        if judged is not None:
            results["table"] = claims_json(judged)
        results["provenance"] = provenance.run_provenance(
            self.name, self.config, self.provenance, self.t0
        )
        jsonio.write_json(self.workdir, results)
        head = [("Claims", claims_markdown(judged))] if judged is not None else []
        pngs = results.get("plots") or []
        shown = [("Plot" if len(pngs) == 1 else "Plots", outputs.images(pngs))] if pngs else []
        run_line = ("Run", provenance.provenance_line(results["provenance"]))
        outputs.write_report(self.workdir, title, [*head, *sections, *shown, run_line])
        if jax.process_index() == 0:
            print(done_text(self.name, self.workdir, judged), flush=True)
        return results

    def finish_grid(self, results: dict, grid: dict, table: Callable[[dict], str], title: str):
        """`finish` for a learning-rate grid (an experiment's lr_grid preset): results["lr_grid"]
        = grid, no plots and no claims, report.md the grid's `table`(results)."""
        results["lr_grid"] = grid
        results["plots"] = []
        return self.finish(
            results, None, f"{title} (learning-rate grid)", [("Grid", table(results))]
        )

    def finish_drawn(
        self,
        results: dict,
        draw: Callable[[dict, str], list[str]],
        claims: Any,
        title: str,
        sections: Callable[[dict], Sequence[tuple[str, str]]],
        *,
        table: Callable[[dict], list[Claim]] | None = None,
        rules: str | None = None,
    ) -> dict:
        """`finish` for a run judged against the chapter: results["plots"] = draw(what
        results.json will hold, workdir), then the report's sections: the chapter's claim
        (claims.chapter), sections(the results as stored), how verdicts are decided (`rules`,
        default rule_text()); the claims judged by `table` (default claims.table)."""
        results["plots"] = draw(stored(results), self.workdir)
        plain = stored(results)
        return self.finish(
            results,
            claims.table if table is None else table,
            title,
            [
                ("The chapter's claim", claims_markdown(claims.chapter(plain))),
                *sections(plain),
                ("How verdicts are decided", rule_text() if rules is None else rules),
            ],
        )


def done_text(name: str, workdir: str, judged: list[Claim] | None) -> str:
    """What a finished run prints: where its report went, its claims table and their tally."""
    report = paths.join(workdir, "report.md")
    if not judged:
        return f"{name}: done; report {report}"
    return (
        f"\n{claims_markdown(judged, details=False)}\n\n{name}: {summary(judged)}; report {report}"
    )


def start(name: str, config, workdir: str) -> Started:
    """Experiment `name` starts now: record what made it (commit, machine, versions, load)."""
    return Started(name, config, workdir, provenance.provenance(), time.time())


def claims_of(name: str, results: dict) -> dict[str, Claim]:
    """{id: Claim} of experiment `name`'s results (its table and its chapter claims), judged
    now by experiments/<name>/claims.py. MissingKey (a KeyError naming the key's path),
    IndexError or TypeError: the results lack what a claim reads (an older run: rerun it)."""
    text = json.dumps(jsonio.jsonable(results))  # key order kept: tables follow it
    key = (name, hashlib.sha256(text.encode()).hexdigest())
    if key not in _CLAIMS:  # the docs judge one committed result many times (bootstraps)
        module = importlib.import_module(f"experiments.{name}.claims")
        plain = _keyed(json.loads(text))
        _CLAIMS[key] = by_id([*module.table(plain), *module.chapter(plain)])
    return dict(_CLAIMS[key])  # Claims are frozen: a copy of the dict is a copy


# (name, sha256 of the results as stored) -> {id: Claim}: judged once per process
_CLAIMS: dict[tuple[str, str], dict[str, Claim]] = {}
