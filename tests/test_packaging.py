"""The install story holds together: ranges in pyproject, exact set in constraints.txt, and the
README's test command is what .ci/run runs."""

import pathlib
import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _constraints():
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def test_runtime_dependencies_are_ranges_not_pins():
    for text in _pyproject()["project"]["dependencies"]:
        req = Requirement(text)
        assert not any(s.operator == "==" for s in req.specifier), (
            f"{text}: an exact pin in pyproject forces users' environments to downgrade; "
            "put the exact version in constraints.txt"
        )


def test_constraints_satisfy_pyproject_and_cover_it():
    pins = _constraints()
    project = _pyproject()["project"]
    reqs = list(project["dependencies"]) + list(project["optional-dependencies"]["test"])
    for text in reqs:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is a dependency but not in constraints.txt"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {req.name}=={pins[name]}, outside pyproject's {req.specifier}"
        )


def test_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)
    assert any(ci in block.splitlines() for block in blocks), (
        f".ci/run runs {ci!r}, which is not a command in the README"
    )
    assert "constraints.txt" in ci and "ruff check" in ci and "ruff format --check" in ci


def test_the_license_is_declared_and_shipped():
    """Apache-2.0, as JAX, flax and optax: the LICENSE file and pyproject's SPDX field agree;
    the copyright line is in NOTICE beside it (Apache-2.0's section 4(d)), shipped with it."""
    project = _pyproject()["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE", "NOTICE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert re.search(r"^Copyright \d{4} The anatomy authors$", (ROOT / "NOTICE").read_text(), re.M)


def test_the_citation_file_agrees_with_the_package():
    """CITATION.cff (Citation File Format 1.2.0: what GitHub's "Cite this repository" reads)
    has the fields the format requires, and the package's version and licence."""
    import yaml

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["message"] and cff["title"].startswith("anatomy") and cff["authors"]
    project = _pyproject()["project"]
    assert cff["version"] == project["version"] and cff["license"] == project["license"]
