"""experiments.common.provenance: what made a result, with the keys other modules rely on."""

import json

from experiments import common


def test_provenance_keys_and_types():
    p = common.provenance({"preset": "quick"})
    assert {"commit", "dirty", "cpus", "platform", "device_kind", "versions", "loadavg"} <= set(p)
    assert p["preset"] == "quick"
    assert isinstance(p["cpus"], int) and p["cpus"] >= 1
    assert p["commit"] is None or len(p["commit"]) == 40
    assert p["dirty"] in (None, True, False)
    assert p["loadavg"] is None or (len(p["loadavg"]) == 3 and all(v >= 0 for v in p["loadavg"]))
    assert {"jax", "flax", "optax"} <= set(p["versions"])
    json.dumps(p)  # JSON-able as it is


def test_provenance_outside_a_git_checkout(monkeypatch):
    monkeypatch.setattr(common, "_git", lambda *a: None)
    p = common.provenance()
    assert p["commit"] is None and p["dirty"] is None
