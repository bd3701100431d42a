"""The documents a reader opens (README.md, BENCHMARKS.md, docs/*.md) speak of the project:
what it measures, what a decision was and why, never how the work on it went (a ticket's
number, what else ran on the machine, a lock file, a path on one machine) and never a time
typed by hand (a measured time is rendered from a committed result inside a generated block;
a budget or a target is a design figure and says so). The code (every .py file: its
comments, docstrings and names) names no ticket either: it says what and why, and the
history stays in the commit messages, BENCHMARKS.md and results/.

The prose is checked, not the generated blocks (`<!-- results:KEY -->` ... and BENCHMARKS.md's
`BEGIN GENERATED` ... `END GENERATED`): their words come from the committed results and the
scripts that render them.
"""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = [
    "README.md",
    "BENCHMARKS.md",
    *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")),
]

_GENERATED = (
    re.compile(r"<!-- results:([\w./-]+) -->.*?<!-- /results:\1 -->", re.S),
    re.compile(r"<!-- BEGIN GENERATED:.*?<!-- END GENERATED[^>]*-->", re.S),
)
_CITE = re.compile(r"<!-- cite -->.*?<!-- /cite -->", re.S)  # a paper's own figures

# (what it is, pattern): talk of the project's process, not of the project
PROCESS = [
    ("a ticket's number", re.compile(r"(?i)\b(?:issues?|tickets?|PR|pull requests?)\s+#?\d+")),
    (
        "who else worked",
        re.compile(r"(?i)\b(?:agents?|helpers?'s? (?:jobs?|runs?)|this session)\b"),
    ),
    (
        "what else ran on the machine",
        re.compile(
            r"(?i)\bother (?:jobs|agents|people)\b|\bSIGSTOP\b|\bheavy lock\b|"
            r"\b(?:the test suite|tests) (?:ran beside|beside|shared the cores)|"
            r"\bshared with other\b|"
            r"\ban earlier job\b"
        ),
    ),
    ("a lock file", re.compile(r"(?i)\bflock\b|[\w/.-]+\.lock\b")),
    (
        "a path on one machine",
        re.compile(r"(?<![\w.])(?:/work/|/tmp/|/home/\w|/root/|/Users/)|\bvenvs?/|\.venv\b"),
    ),
]
_NUMBER = r"(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|fifteen|twenty|thirty)"
# a time typed by hand: '1,080 seconds', '~200 s', 'a one-minute run', 'four times the
# one-seed run's time'; near 'budget' or 'target' it is a design figure, not a measurement
TIMES = [
    re.compile(  # not the '1-minute load average' a run records
        rf"(?i)(?<![\w.])~?{_NUMBER}[\s-]+(?:ms|s|secs?|seconds?|mins?|minutes?|hours?)\b"
        r"(?![\s-]+load)"
    ),
    re.compile(r"(?i)\b(?:twice|\w+ times) the [\w\s'-]{0,40}?\btime\b"),
]
_DESIGN = re.compile(r"(?i)budget|target")


def prose(text: str) -> str:
    """`text` without its generated blocks and cited figures, line numbers kept."""
    for pattern in (*_GENERATED, _CITE):
        text = pattern.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return text


def process_talk(text: str) -> list[str]:
    """'line N: <what>: <the words>' for every piece of process talk in the prose of `text`."""
    text = prose(text)
    return [
        f"line {text.count(chr(10), 0, m.start()) + 1}: {what}: {m.group(0)!r}"
        for what, pattern in PROCESS
        for m in pattern.finditer(text)
    ]


def typed_times(text: str) -> list[str]:
    """'line N: <the words>' for every time in the prose of `text` that is not a budget."""
    text = prose(text)
    found = []
    for pattern in TIMES:
        for m in pattern.finditer(text):
            near = text[max(0, m.start() - 60) : m.end() + 60]
            if not _DESIGN.search(near):
                found.append(f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}")
    return found


def test_the_checkers_find_process_talk_and_typed_times():
    talk = {
        "The grids of issue 10 set it.": "a ticket's number",
        "with other agents' jobs starting": "who else worked",
        "made on this session's host": "who else worked",
        "the test suite beside it for its first minutes": "what else ran on the machine",
        "while the test suite shared the cores": "what else ran on the machine",
        "`flock /work/locks/heavy.lock python -m benchmarks.mixers`": "a lock file",
        "--config.applied.gpu_python=/work/venvs/cuda/bin/python": "a path on one machine",
    }
    for text, what in talk.items():
        assert any(what in f for f in process_talk(text)), (text, process_talk(text))
    fine = (
        "Zoology's MQAR (jax#2491 reports it losing); runs/rnn_vs_attn holds the run; "
        "<!-- results:x -->made with other agents' jobs in /tmp/x<!-- /results:x -->"
    )
    assert process_talk(fine) == []
    for text in (
        "1,080 seconds of tests",
        "~200 s of waiting",
        "A one-minute run of the pipeline",
        "about four times the one-seed run's time",
    ):
        assert typed_times(text), text
    for text in (
        "the suite's budget is twenty minutes on two cores",
        "the 15-minute budget's run",
        "<!-- cite -->0.48 ms at 1K<!-- /cite -->",
        "<!-- results:t -->took 14 minutes<!-- /results:t -->",
        "in minutes, not epochs; a few minutes each; the 1-minute load average",
    ):
        assert typed_times(text) == [], text


@pytest.mark.parametrize("doc", DOCS)
def test_documents_speak_of_the_project_only(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    found = process_talk(text)
    assert not found, f"{doc}: process talk outside the generated blocks: {found}"


@pytest.mark.parametrize("doc", DOCS)
def test_no_time_is_typed_by_hand(doc):
    """A measured time is generated from its committed result (`python launch.py --list`
    prints every committed run's); prose names a budget or a target only as one."""
    found = typed_times((ROOT / doc).read_text(encoding="utf-8"))
    assert not found, f"{doc}: times typed into the prose: {found}"


# The code: the packages, the tests, the notebooks' sources and launch.py
CODE = ("anatomy", "experiments", "benchmarks", "tests", "notebooks", "launch.py")
# a ticket's number in code, in prose or in a name: 'issue 23', 'Issue #11', 'the issue-10
# grids', 'BEFORE_ISSUE10'
_TICKET_IN_CODE = re.compile(r"(?i)(?<![a-z])(?:issues?|tickets?)[\s_#-]*\d+")


def code_files(root=ROOT):
    """Every .py file of CODE under `root`, relative to it, but this one (its examples name
    tickets on purpose)."""
    root = pathlib.Path(root)
    files = [root / "launch.py"] + [f for top in CODE[:-1] for f in (root / top).rglob("*.py")]
    return sorted(
        str(f.relative_to(root))
        for f in files
        if f.is_file() and f.resolve() != pathlib.Path(__file__).resolve()
    )


def tickets_in_code(text: str) -> list[str]:
    """'line N: <the words>' for every ticket's number in the code `text`."""
    return [
        f"line {n}: {m.group(0)!r}"
        for n, line in enumerate(text.splitlines(), 1)
        for m in _TICKET_IN_CODE.finditer(line)
    ]


def test_the_checker_finds_ticket_numbers_in_code():
    for text in (
        "# (BENCHMARKS.md, issue 23; flax's step computes no accuracy)",
        '"""Issue 11\'s seeds: the old shared K slots',
        "AFTER = ('recall',)  # after the Transformer (issue #34)",
        "# the issue-10 grids start from the defaults before that issue",
        "from experiments.configs.recipe_sweep import BEFORE_ISSUE10, GRIDS",
        "ISSUE10_GRIDS = ('rnnenc_800',)",
    ):
        assert tickets_in_code(text), text
    for text in (
        "# the issue's bar, far above every reader without recall",
        "warnings.warn(...)  # it issues a warning at 3 layers",
        "# Zoology's MQAR (jax#2491 reports it losing); the tissue 3 layers deep",
    ):
        assert tickets_in_code(text) == [], text


def test_code_names_no_ticket():
    files = code_files()
    assert "launch.py" in files and "anatomy/__init__.py" in files
    found = [
        f"{f}: {hit}"
        for f in files
        for hit in tickets_in_code((ROOT / f).read_text(encoding="utf-8"))
    ]
    assert not found, "\n".join(found)
