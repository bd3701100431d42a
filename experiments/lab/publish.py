"""publish: the numbers a reader sees, generated from committed results.

    python -m experiments.lab.publish save NAME --workdir=DIR --command="python launch.py ..."
    python -m experiments.lab.publish            # regenerate every quoted block and every plot
    python -m experiments.lab.publish --check    # exit 1 naming each block or plot that drifted

`save` copies a finished run's results.json (or a sweep's sweep.json) into
results/<NAME>.json with what made it: the command, the commit, machine, versions, load and
wall time the run recorded (experiments.lab.provenance.provenance) and the time it was saved.
The README, docs/chapter.md and the tour quote only these files: every quoted block sits
between `<!-- results:KEY -->` and `<!-- /results:KEY -->` and is rewritten from them by its
renderer; tests/experiments/lab/test_publish.py fails when a block differs from what its committed result
renders.

Pictures come from results too: every PNG under docs/img is drawn from the committed result
it illustrates, with that experiment's own `plots.draw(results, workdir)` (the same function
its run calls), and carries the result's name and digest in its PNG text chunks
(experiments.lab.outputs.stamping); `--check` fails for an image that no committed result
made or whose result has changed since it was drawn.

The renderers and plots are the experiments' own: an experiment that puts numbers on the
pages has a `docs.py` beside its claims.py, with

    RENDERERS   {KEY: (the committed result it reads, or None: it reads what it needs
                 itself; renderer(doc) or renderer())}
    PLOTS       {committed result: (the module whose draw(results, workdir) makes its plots,
                 {PNG it draws: its name under docs/img})}

read here by name, as record.claims_of reads each experiment's claims.py (the report's holds
the chapter's own blocks: the scorecard, the closing table, a section per claim; what the
renderers share is experiments/lab/pages.py). Nothing here names an experiment.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import importlib
import json
import os
import re
import shutil
import sys
import tempfile

from anatomy import paths
from experiments.lab import jsonio, outputs, provenance, registry
from experiments.lab.committed import ROOT, load, result_path

DOCS = ("README.md", "docs/chapter.md", "docs/results.md")
IMG = os.path.join(ROOT, "docs", "img")
# a block: on its own lines, or inline (a table cell) when no newline follows the opening mark
_BLOCK = re.compile(r"(<!-- results:([\w./-]+) -->\n?)(.*?)(<!-- /results:\2 -->)", re.S)


def save(name: str, workdir: str, command: str, note: str = "") -> str:
    """Copy workdir's results.json (or sweep.json) into results/<name>.json with its command
    (and `note`: what the result alone does not say, e.g. the commit a long sweep started at).
    The workdir may be local or a bucket (gs://...: anatomy.paths); results/ is this checkout's."""
    for file in ("results.json", "sweep.json"):
        path = paths.join(workdir, file)
        if paths.exists(path):
            break
    else:
        raise FileNotFoundError(f"publish: no results.json or sweep.json in {workdir}")
    result = json.loads(paths.read_text(path))
    out = {
        "name": name,
        "command": command,
        "saved": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "saved_by": provenance.provenance(),
        "result": result,
    }
    if note:
        out["note"] = note
    os.makedirs(os.path.dirname(result_path(name)), exist_ok=True)
    jsonio.write_json(
        os.path.dirname(result_path(name)), out, name=os.path.basename(name) + ".json"
    )
    return result_path(name)


@functools.cache
def _pages() -> tuple[dict, dict]:
    """Every experiment's docs.py RENDERERS and PLOTS, merged; a key two of them give is an
    error naming both."""
    found: tuple[dict, dict] = ({}, {})
    owner: tuple[dict, dict] = ({}, {})
    for name in registry.available_experiments():
        if not (registry.ROOT / "experiments" / name / "docs.py").exists():
            continue
        module = importlib.import_module(f"experiments.{name}.docs")
        for merged, by, given in zip(
            found, owner, (getattr(module, "RENDERERS", {}), getattr(module, "PLOTS", {}))
        ):
            for key, value in given.items():
                if key in merged:
                    raise ValueError(f"publish: {key!r} is given by both {by[key]} and {name}")
                merged[key], by[key] = value, name
    return found


def renderers() -> dict:
    """{KEY: (committed result or None, renderer)}: every experiment's docs.py RENDERERS."""
    return _pages()[0]


def plots() -> dict:
    """{committed result: (module, {png: docs/img name})}: every experiment's docs.py PLOTS."""
    return _pages()[1]


def images() -> dict[str, str]:
    """{docs/img name: the committed result it is drawn from}, over plots()."""
    return {img: name for name, (_, pngs) in plots().items() for img in pngs.values()}


def draw_plots(names=None, img_dir: str = IMG) -> list[str]:
    """Redraw the plots of the committed results `names` (all of plots() by default) into
    img_dir, each stamped with its result; returns the images written."""
    written = []
    for name in names or plots():
        module, pngs = plots()[name]
        result = load(name)["result"]
        with tempfile.TemporaryDirectory() as tmp, outputs.stamping(name, result):
            drawn = importlib.import_module(module).draw(result, tmp)
            missing = sorted(set(pngs) - set(drawn))
            if missing:
                raise FileNotFoundError(f"publish: {module}.draw made no {missing} from {name}")
            for png, img in pngs.items():
                shutil.copyfile(os.path.join(tmp, png), os.path.join(img_dir, img))
                written.append(img)
    return written


def stale_plots(img_dir: str = IMG) -> list[str]:
    """Every image under img_dir that no committed result made, or whose result changed
    since it was drawn: 'name.png: why'."""
    want = images()
    problems = []
    for img in sorted(f for f in os.listdir(img_dir) if f.endswith(".png")):
        if img not in want:
            problems.append(f"{img}: drawn from no committed result (no docs.py's PLOTS)")
            continue
        stamp = outputs.read_stamp(os.path.join(img_dir, img))
        name = want[img]
        digest = outputs.result_digest(load(name)["result"])
        if stamp.get(outputs.STAMP_KEYS[0]) != name or stamp.get(outputs.STAMP_KEYS[1]) != digest:
            problems.append(
                f"{img}: not drawn from results/{name}.json as committed (stamp "
                f"{stamp or 'none'}, result digest {digest})"
            )
    problems += [
        f"{img}: missing" for img in sorted(want) if not os.path.exists(os.path.join(img_dir, img))
    ]
    return problems


def render(key: str) -> str:
    """Block KEY as its renderer writes it from its committed result (or from what the
    renderer reads itself)."""
    found = renderers()
    if key not in found:
        raise KeyError(f"publish: no renderer for block {key!r}; known: {sorted(found)}")
    name, fn = found[key]
    return (fn() if name is None else fn(load(name))).rstrip("\n")


def regenerate(text: str) -> tuple[str, list[str]]:
    """(text with every block rewritten, the keys whose block changed)."""
    changed = []

    def sub(m):
        body = render(m.group(2))
        new = body + "\n" if m.group(1).endswith("\n") else body.replace("\n", " ")
        if new != m.group(3):
            changed.append(m.group(2))
        return m.group(1) + new + m.group(4)

    return _BLOCK.sub(sub, text), changed


def blocks(text: str) -> list[str]:
    return [m.group(2) for m in _BLOCK.finditer(text)]


def publish(check: bool = False, root: str = ROOT) -> list[str]:
    """Regenerate the blocks of DOCS (check: only report); returns 'file: key' that drifted."""
    drifted = []
    for doc in DOCS:
        path = os.path.join(root, doc)
        with open(path) as fh:
            text = fh.read()
        new, changed = regenerate(text)
        drifted += [f"{doc}: {k}" for k in changed]
        if changed and not check:
            with open(path, "w") as fh:
                fh.write(new)
    return drifted


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.lab.publish", description=__doc__)
    ap.add_argument("what", nargs="*", help="'save NAME' to store a run's results")
    ap.add_argument("--workdir", default="")
    ap.add_argument("--command", default="")
    ap.add_argument("--note", default="", help="save: what the result alone does not say")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    if args.what[:1] == ["save"]:
        if len(args.what) != 2 or not args.workdir or not args.command:
            ap.error("save NAME --workdir=DIR --command='python launch.py ...'")
        print(save(args.what[1], args.workdir, args.command, args.note))
        return 0
    drifted = publish(check=args.check)
    for d in drifted:
        print(("drifted: " if args.check else "regenerated: ") + d)
    if not args.check:
        for img in draw_plots():
            print(f"drew: docs/img/{img}")
    stale = stale_plots()
    for d in stale:
        print("plot: " + d)
    return 1 if args.check and (drifted or stale) else 0


if __name__ == "__main__":
    sys.exit(main())
