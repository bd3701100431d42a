"""Every number the README and docs/chapter.md quote is generated from a committed result
(experiments/publish.py): a block that differs from what its result renders fails here."""

import os
import re
import shutil

import pytest

from experiments import publish


def test_every_quoted_block_equals_its_committed_result():
    assert publish.publish(check=True) == [], (
        "a quoted number differs from its committed result: run python -m experiments.publish"
    )


def test_every_block_has_a_renderer_and_a_committed_result():
    keys = []
    for doc in publish.DOCS:
        with open(os.path.join(publish.ROOT, doc)) as f:
            keys += publish.blocks(f.read())
    assert keys, "no generated blocks: the docs would be typed by hand"
    for key in keys:
        name, _ = publish.RENDERERS[key]
        assert os.path.exists(publish.result_path(name)), name
        doc = publish.load(name)
        assert doc["command"].startswith("python ") and doc["result"], name


def test_a_changed_digit_is_caught(tmp_path):
    for doc in publish.DOCS:
        os.makedirs(tmp_path / os.path.dirname(doc), exist_ok=True)
        shutil.copy(os.path.join(publish.ROOT, doc), tmp_path / doc)
    readme = (tmp_path / "README.md").read_text()
    m = re.search(r"<!-- results:([\w./-]+) -->\n.*?(\d\d\.\d)", readme, re.S)
    assert m, "no number inside a block"
    i = m.start(2)
    bumped = f"{float(m.group(2)) + 0.1:.1f}"
    (tmp_path / "README.md").write_text(readme[:i] + bumped + readme[i + len(m.group(2)) :])
    assert publish.publish(check=True, root=str(tmp_path)) == [f"README.md: {m.group(1)}"]
    publish.publish(root=str(tmp_path))  # regenerating restores it
    assert publish.publish(check=True, root=str(tmp_path)) == []


def test_unknown_block_is_named():
    with pytest.raises(KeyError, match="no_such_block"):
        publish.regenerate("<!-- results:no_such_block -->\nx\n<!-- /results:no_such_block -->")
