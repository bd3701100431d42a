"""Documentation cites only what exists: every repository path, root document, markdown link
(and its #anchor) and `tests/<file>.py::<test>` named in a tracked .py or .md file (and in the
tour's source) is there.

Examples that name files on purpose, as something for the reader to create, are listed in
HYPOTHETICAL.
"""

import functools
import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOP = ("anatomy", "experiments", "benchmarks", "tests", "docs", "notebooks", ".ci")
HYPOTHETICAL = {"anatomy/seq2seq/mymodel.py"}  # docs/usage.md's "Adding a model" walk-through

_PATH = re.compile(r"(?<![\w./\-])((?:" + "|".join(map(re.escape, TOP)) + r")/[\w./\-]*\w)")
_ROOT_DOC = re.compile(r"(?<![\w./\-])([A-Z][A-Z0-9_]+\.md)\b")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_TEST = re.compile(r"\b(tests/(?:\w+/)*test_\w+\.py)::(\w+)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def tracked_files():
    """The repository's .py and .md files (git's list; the tree when git is not there)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "*.py", "*.md"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", "runs", "__pycache__"}
        out = [
            str(p.relative_to(ROOT))
            for p in ROOT.rglob("*")
            if p.suffix in (".py", ".md")
            and not skip & set(p.parts)
            and not any(part.endswith(".egg-info") for part in p.parts)
        ]
    return sorted(f for f in out if (ROOT / f).is_file())


def _placeholder(path):
    """experiments/configs/NAME.py, <workdir>/..., *.png: a pattern, not a file."""
    return any(c in path for c in "<>*{}") or any(
        re.fullmatch(r"[A-Z][A-Z_]*", pathlib.PurePath(part).stem) for part in path.split("/")
    )


def slug(heading):
    """GitHub's anchor for a markdown heading."""
    text = re.sub(r"[`*]|\[([^]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"\s", "-", re.sub(r"[^\w\s\-]", "", text))


@functools.cache
def anchors(path):
    return {slug(h) for h in _HEADING.findall(pathlib.Path(path).read_text(encoding="utf-8"))}


def problems(rel, text, root=ROOT):
    """Every citation in `text` (the file `rel`, relative to root) that points at nothing."""
    root = pathlib.Path(root)
    found = []
    for m in _PATH.finditer(text):
        path = m.group(1).rstrip(".")
        if path not in HYPOTHETICAL and not _placeholder(path) and not (root / path).exists():
            found.append(f"{rel}: no such path {path}")
    for m in _ROOT_DOC.finditer(text):
        if not (root / m.group(1)).exists():
            found.append(f"{rel}: no such document {m.group(1)}")
    if rel.endswith(".md") or rel == "notebooks/tour.py":  # the tour's markdown cells
        for m in _LINK.finditer(text):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            file, _, anchor = target.partition("#")
            path = (root / rel).parent / file if file else root / rel
            if not path.exists():
                found.append(f"{rel}: broken link {target}")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                found.append(f"{rel}: no heading #{anchor} in {file or rel}")
    for m in _TEST.finditer(text):
        test_file = root / m.group(1)
        if test_file.exists() and not re.search(
            rf"^def {m.group(2)}\(", test_file.read_text(encoding="utf-8"), re.M
        ):
            found.append(f"{rel}: no test {m.group(2)} in {m.group(1)}")
    return found


def test_the_checker_finds_each_kind_of_dead_citation(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## Two words\n")
    (tmp_path / "tests" / "test_x.py").write_text("def test_real():\n    pass\n")
    (tmp_path / "README.md").write_text("")
    design = "DESIGN" + ".md"
    good = (
        "see docs/a.md and README.md, experiments/configs/NAME.py, [a](docs/a.md#two-words), "
        "[web](https://example.org/x.md), tests/test_x.py::test_real"
    )
    assert problems("README.md", good, tmp_path) == []
    bad = {
        f"cites {design}": "no such document",
        "see docs/design.md,": "no such path docs/design.md",
        "[b](b.md)": "broken link",
        "[a](docs/a.md#three)": "no heading #three",
        "tests/test_x.py::test_gone": "no test test_gone",
    }
    for text, message in bad.items():
        (found,) = problems("README.md", text, tmp_path)
        assert message in found, (text, found)
    assert slug("What came out here (2 CPU cores)") == "what-came-out-here-2-cpu-cores"
    assert slug("`anatomy` and [links](x.md)") == "anatomy-and-links"


def test_tracked_files_cite_only_what_exists():
    files = tracked_files()
    assert "README.md" in files and "anatomy/__init__.py" in files
    files = [f for f in files if f != "tests/test_docs.py"]  # its examples are dead on purpose
    found = [p for f in files for p in problems(f, (ROOT / f).read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("doc", ["docs/design.md", "docs/chapter.md"])
def test_docs_exist_and_are_linked_from_the_readme(doc):
    assert (ROOT / doc).is_file()
    assert doc in (ROOT / "README.md").read_text(encoding="utf-8")


def test_no_citation_of_the_founders_notes():
    """The design and chapter notes live in docs/; nothing points at the old names."""
    old = re.compile(r"\b(?:DESIGN|CHAPTER)(?:\.md)?\b|\bseed/0")
    found = [
        f"{f}:{n}"
        for f in tracked_files()
        if f != "tests/test_docs.py"
        for n, line in enumerate((ROOT / f).read_text(encoding="utf-8").splitlines(), 1)
        if old.search(line)
    ]
    assert not found, found


def test_hypothetical_paths_are_still_hypothetical():
    for path in HYPOTHETICAL:
        assert not os.path.exists(ROOT / path), f"{path} exists now: drop it from HYPOTHETICAL"


_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_BLOCKS = re.compile(r"<!-- results:([\w./-]+) -->.*?<!-- /results:\1 -->", re.S)
_CITE = re.compile(r"<!-- cite -->.*?<!-- /cite -->", re.S)
_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"\]\([^)]*\)|https?://\S+")
_DECIMAL = re.compile(r"(?<![\w.\-])\d+\.\d+(?![\w.])")
# not measurements: a section of the chapter, a Python version
_NAMED = re.compile(r"\b(?:section|Python(?: ≥)?)\s+\d+\.\d+")


def measured_numbers_in_prose(text: str) -> list[str]:
    """Decimal numbers in a markdown text outside what may carry them: the generated blocks
    (numbers a committed result renders), code, links, and <!-- cite --> spans (a paper's own
    figures, quoted for comparison)."""
    for pattern in (_FENCE, _BLOCKS, _CITE, _CODE, _URL, _NAMED):
        text = pattern.sub(lambda m: "\n" * m.group(0).count("\n") or " ", text)
    return [
        f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
        for m in _DECIMAL.finditer(text)
    ]


def test_the_checker_finds_numbers_in_prose():
    text = (
        "We measured 96.2 BLEU.\n<!-- results:x -->a 12.5 here<!-- /results:x -->\n"
        "`torch==2.13.0` and <!-- cite -->28.4 BLEU (Vaswani et al.)<!-- /cite -->\n"
        "```\npython run.py --lr=0.5\n```\nversion 3 of 7 layers"
    )
    assert measured_numbers_in_prose(text) == ["line 1: 96.2"]


@pytest.mark.parametrize(
    "doc",
    [
        "README.md",
        "docs/chapter.md",
        "docs/results.md",
        "docs/usage.md",
        "docs/scaling.md",
        "docs/design.md",
    ],
)
def test_prose_carries_no_measured_number(doc):
    """Every measured number a reader sees is rendered from a committed result inside a
    generated block; a paper's figure quoted for comparison is marked <!-- cite -->."""
    found = measured_numbers_in_prose((ROOT / doc).read_text(encoding="utf-8"))
    assert not found, f"{doc}: decimal numbers outside the generated blocks: {found}"
