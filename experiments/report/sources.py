"""report's sources: where each sub-experiment's results.json is, the claims the report reads
from it, collecting or running it, and publishing its plots beside the report.

rows.REQUIRED names, per experiment, the ids of the claims the report's rows cite; a collected
results.json is judged by its experiment's claims.py on load (record.claims_of), and one that
lacks what a claim reads, or a cited claim, fails with the file and the key or the id.
"""

from __future__ import annotations

import importlib
import json
import os
from typing import NamedTuple

from anatomy import fingerprint, paths
from anatomy.errors import BadInputError
from anatomy.probes.claims import Claim
from experiments.lab import committed, jsonio, provenance, record
from experiments.lab.publish import IMG, images
from experiments.report.rows import REQUIRED


class Source(NamedTuple):
    """One sub-experiment's results: where from, how obtained ('collected' | 'ran' |
    'missing'), and its claims by id as its experiment judges them (None when missing)."""

    name: str
    workdir: str
    status: str
    results: dict | None
    claims: dict[str, Claim] | None = None


def judge(results, name: str, path: str) -> dict[str, Claim]:
    """The claims of `results` by id (record.claims_of); a BadInputError naming the file and
    the missing key, or the claim the rows cite that it does not give."""
    rerun = f"written by experiments/{name}; rerun it, or pass --config.rerun=True"
    try:
        claims = record.claims_of(name, results)
    except KeyError as e:
        key = str(e)
        what = (
            "no config recorded (written before results carried their config)"
            if key.split(".")[0] == "config" and "config" not in results
            else f"missing key {key!r}"
        )
        raise BadInputError(f"report: {path} is malformed: {what} ({rerun})") from e
    except (IndexError, TypeError, ValueError) as e:
        raise BadInputError(f"report: {path} is malformed: cannot read {e!r} ({rerun})") from e
    absent = [cid for cid in REQUIRED.get(name, []) if cid not in claims]
    if absent:
        raise BadInputError(f"report: {path} gives no claim {absent} ({rerun})")
    return claims


def read_results(name: str, workdir: str) -> dict:
    """workdir/results.json of experiment `name` as written (clear errors: no file, no JSON)."""
    path = paths.join(workdir, "results.json")
    if not paths.exists(path):
        raise BadInputError(f"report: no results file {path} for experiment {name!r}")
    try:
        results = json.loads(paths.read_text(path))
    except json.JSONDecodeError as e:
        raise BadInputError(
            f"report: {path} is not valid JSON ({e}); rerun experiment {name!r}"
        ) from e
    return results


def load_results(name: str, workdir: str) -> dict:
    """workdir/results.json of experiment `name`, read and judged (`judge`: clear errors)."""
    results = read_results(name, workdir)
    judge(results, name, os.path.join(workdir, "results.json"))
    return results


def expected_config(name: str, preset: str):
    """The config the report runs experiment `name` with: its get_config(preset)."""
    return importlib.import_module(f"experiments.configs.{name}").get_config(preset or None)


def recorded(results: dict, key: str):
    """results' "config" or "provenance", at the top level or in "setup" (rnn_vs_attn)."""
    return results.get(key) or (results.get("setup") or {}).get(key)


def mismatch(name: str, results: dict, preset: str) -> list[str] | None:
    """None when `results` were made by the config the report would run (its fingerprint, or
    else the recorded config field by field, equals expected_config's); else the differing
    fields ('seed: 1 -> 0', ...), or one line saying the results record no config."""
    want = expected_config(name, preset)
    prov = recorded(results, "provenance") or {}
    if prov.get("config_fingerprint") == provenance.config_fingerprint(want):
        return None
    saved = recorded(results, "config")
    if saved is None:
        return ["no config recorded (written before results carried their config)"]
    diffs = fingerprint.differences(saved, jsonio.jsonable(fingerprint._plain(want)))
    return diffs or None


def check_made_by(name: str, results: dict, preset: str, path: str) -> None:
    """Raise a one-line BadInputError naming the experiment and the differing fields unless
    `results` were made by the config the report would run."""
    diffs = mismatch(name, results, preset)
    if diffs:
        shown = "; ".join(diffs[:6]) + (f"; and {len(diffs) - 6} more" if len(diffs) > 6 else "")
        raise BadInputError(
            f"report: {path} was not made by the {preset or 'default'} preset of {name} this "
            f"report runs ({shown}); rerun it, pass --config.on_mismatch=rerun to let the report "
            f"rerun it, or point --config.sources.{name} at a matching run"
        )


def run_experiment(name: str, preset: str, workdir: str) -> dict:
    """experiments.<name>.run(get_config(preset), workdir), in this process."""
    config = expected_config(name, preset)
    paths.makedirs(workdir)
    importlib.import_module(f"experiments.{name}").run(config, workdir)
    return read_results(name, workdir)  # what was written, read back as a collected one would be


def source_dir(config, name: str, workdir: str) -> str:
    where = config.sources[name] if name in config.sources else ""
    return where or paths.join(workdir, name)


def committed_sources(config) -> dict[str, Source]:
    """Every experiment's committed result (experiments.lab.committed.VERDICTS_FROM), judged now by
    its claims.py: the closing table without running anything."""
    out = {}
    for name in config.experiments:
        result = committed.VERDICTS_FROM[name]
        path = committed.result_path(result)
        if not committed.exists(result):
            out[name] = Source(name, f"results/{result}.json", "missing", None)
            continue
        results = committed.load(result)["result"]
        out[name] = Source(
            name, f"results/{result}.json", "committed", results, judge(results, name, path)
        )
    return out


def gather(config, workdir: str) -> dict[str, Source]:
    """Collect every existing results.json first (a malformed one fails before any run), then run.
    With config.committed, the committed results instead (committed_sources)."""
    if config.get("committed", False):
        return committed_sources(config)
    unknown = [n for n in config.experiments if n not in REQUIRED]
    if unknown:
        raise BadInputError(
            f"report: unknown experiments {unknown}; choose from {sorted(REQUIRED)}"
        )
    if config.on_mismatch not in ("refuse", "rerun"):
        raise BadInputError(
            f"report: on_mismatch must be 'refuse' or 'rerun', got {config.on_mismatch!r}"
        )
    sources, to_run = {}, []
    for name in config.experiments:
        sub = source_dir(config, name, workdir)
        path = paths.join(sub, "results.json")
        if not config.rerun and paths.exists(path):
            results = read_results(name, sub)
            if config.on_mismatch == "rerun" and mismatch(name, results, config.preset):
                to_run.append((name, sub))  # made by another config: measured again
                continue
            claims = judge(results, name, path)  # what it lacks, named, before whose it is
            check_made_by(name, results, config.preset, path)
            sources[name] = Source(name, sub, "collected", results, claims)
        elif config.rerun or config.run_missing:
            to_run.append((name, sub))
        else:
            sources[name] = Source(name, sub, "missing", None)
    for name, sub in to_run:
        print(
            f"report: running {name} ({config.preset or 'default'} preset) into {sub}", flush=True
        )
        results = run_experiment(name, config.preset, sub)
        claims = judge(results, name, paths.join(sub, "results.json"))
        sources[name] = Source(name, sub, "ran", results, claims)
    return {n: sources[n] for n in config.experiments}


def _within(p, root) -> bool:
    """p is root or below it (absolute paths, local or in a bucket)."""
    p, root = os.fspath(p), os.fspath(root).rstrip("/")
    return p == root or p.startswith(root + "/")


def _link(f, here) -> str:
    """f relative to here: os.path.relpath's locally; in a bucket, the part below here (or the
    whole URI when f is elsewhere: a link cannot climb out of a bucket)."""
    f, here = os.fspath(f), os.fspath(here)
    if not (paths.is_remote(f) or paths.is_remote(here)):
        return os.path.relpath(f, here)
    return f[len(here.rstrip("/")) + 1 :] if _within(f, here) else f


def publish(src: Source, workdir: str, copy: bool) -> dict:
    if src.status == "committed":
        return committed_links(src.name, workdir)
    return _publish(src, workdir, copy)


def committed_links(name: str, workdir: str) -> dict:
    """Links (relative to workdir) to the docs/img plots drawn from a committed result."""
    result = committed.VERDICTS_FROM[name]
    pngs = [img for img, drawn_from in images().items() if drawn_from == result]
    here = paths.absolute(workdir)
    return {
        "plots": [_link(os.path.join(IMG, img), here) for img in pngs],
        "report": None,
    }


def _publish(src: Source, workdir: str, copy: bool) -> dict:
    """Links (relative to workdir) to the source's PNGs and report.md, copying them if needed.

    A source inside the report's workdir is linked in place; one outside is copied into
    workdir/<name>/ (copy=True) so the report folder stands alone, or linked by relative path.
    """
    sub, here = paths.absolute(src.workdir), paths.absolute(workdir)
    files = sorted(sub.glob("*.png"))
    report = sub / "report.md"
    files += [report] if report.exists() else []
    inside = _within(sub, here)
    if copy and not inside:
        dest = here / src.name
        paths.makedirs(dest)
        for f in files:
            paths.write_bytes(dest / f.name, paths.read_bytes(f))
        files = [dest / f.name for f in files]
    links = [_link(f, here) for f in files]
    return {
        "plots": [p for p in links if p.endswith(".png")],
        "report": next((p for p in links if p.endswith("report.md")), None),
    }
