"""experiments.lab.provenance.provenance: what made a result, with the keys other modules rely on;
and report prose that says what the run measured, not fixed text."""

import json
import os

import pytest

from experiments.lab import jsonio, provenance


def test_provenance_keys_and_types():
    p = provenance.provenance({"preset": "quick"})
    assert {"commit", "dirty", "cpus", "platform", "device_kind", "versions", "loadavg"} <= set(p)
    assert p["preset"] == "quick"
    assert isinstance(p["cpus"], int) and p["cpus"] >= 1
    assert p["commit"] is None or len(p["commit"]) == 40
    assert p["dirty"] in (None, True, False)
    assert p["loadavg"] is None or (len(p["loadavg"]) == 3 and all(v >= 0 for v in p["loadavg"]))
    assert {"jax", "flax", "optax"} <= set(p["versions"])
    json.dumps(p)  # JSON-able as it is


def test_provenance_outside_a_git_checkout(monkeypatch):
    monkeypatch.setattr(provenance, "_git", lambda *a: None)
    p = provenance.provenance()
    assert p["commit"] is None and p["dirty"] is None


def test_config_fingerprint_and_preset_of():
    from experiments.configs import complexity

    quick = complexity.get_config("quick")
    saved = json.loads(json.dumps(jsonio.jsonable(quick.to_dict())))  # as results.json keeps it
    assert provenance.config_fingerprint(quick) == provenance.config_fingerprint(saved)
    assert provenance.config_fingerprint(quick) != provenance.config_fingerprint(
        complexity.get_config()
    )
    assert provenance.preset_of("complexity", quick) == "quick"
    assert provenance.preset_of("complexity", complexity.get_config()) == "default"
    quick.seed = 5
    assert provenance.preset_of("complexity", quick) == "custom"
    assert provenance.preset_of("no_such_experiment", quick) == "custom"


def test_run_provenance_and_its_line():
    from experiments.configs import complexity

    started = provenance.provenance()
    p = provenance.run_provenance("complexity", complexity.get_config("quick"), started, 0.0)
    assert p["experiment"] == "complexity" and p["preset"] == "quick"
    assert p["loadavg"] == started["loadavg"] and "loadavg_after" in p and p["wall_seconds"] > 0
    line = provenance.provenance_line(dict(p, commit="a" * 40, dirty=True, wall_seconds=12.0))
    assert line.startswith("Run: commit aaaaaaaaaaaa with uncommitted changes; preset quick")
    assert "12 s" in line and f"{p['cpus']} cores" in line
    assert provenance.provenance_line(None) == "The run recorded no provenance."


def test_report_prose_comes_from_the_measurements():
    from experiments.parallelism import plots as parallelism

    assert "above the core count" in parallelism._load_note([3.5, 4.0], 2)
    assert "at most the core count" in parallelism._load_note([0.5, 1.0], 2)
    assert parallelism._load_note([None, 1.0], 2) == "The load average was not recorded."


def test_a_run_records_the_instruction_set_its_digits_depend_on(monkeypatch):
    """XLA:CPU compiles for the host's widest vector unit unless XLA_FLAGS caps it, and the
    float rounding of the program follows: recipe_sweep's transformer_arch row and the
    default run of the same config and seed differ in their digits because they ran on
    different hosts. Every run now records the CPU's model, its ISA and XLA_FLAGS, and the
    run line says them."""
    c = provenance.cpu()
    assert set(c) == {"model", "isa", "host_isa", "xla_flags"}
    if os.path.exists("/proc/cpuinfo"):
        flags = next(
            (line for line in open("/proc/cpuinfo") if line.startswith("flags")), ""
        ).split()
        want = next(
            (n for f, n in (("avx512f", "AVX512"), ("avx2", "AVX2"), ("avx", "AVX")) if f in flags),
            None,
        )
        assert c["isa"] == c["host_isa"] == want
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_max_isa=AVX2")
    p = provenance.provenance()
    assert p["cpu"]["xla_flags"] == "--xla_cpu_max_isa=AVX2"
    if c["host_isa"] in ("AVX512", "AVX2"):  # the cap is the ISA the digits follow
        assert p["cpu"]["isa"] == "AVX2" and provenance.isa_text(p) == "AVX2"
    assert provenance.isa_text({}) == "an unrecorded instruction set"
    line = provenance.provenance_line(p)
    assert "--xla_cpu_max_isa=AVX2" in line and (c["model"] or "CPU model") in line


_DIGITS = """
import jax, jax.numpy as jnp, optax
from anatomy import lm
cfg = lm.default_config("attention")
model = lm.build_lm(cfg, 64)
params = model.init(jax.random.PRNGKey(0))
tokens = jax.random.randint(jax.random.PRNGKey(1), (4, 32), 0, 64)
opt = optax.adam(3e-3)
state = opt.init(params)
loss = lambda p: lm.token_nll(model, p, tokens).mean()
@jax.jit
def step(p, s):
    value, g = jax.value_and_grad(loss)(p)
    u, s = opt.update(g, s, p)
    return optax.apply_updates(p, u), s, value
for _ in range(20):
    params, state, value = step(params, state)
print(repr(float(value)))
"""


@pytest.mark.slow
def test_the_same_seed_gives_the_same_digits_on_each_instruction_set():
    """The digits a run prints depend on the instruction set XLA:CPU compiles for, and on
    nothing else: twenty Adam steps of a small LM, twice with --xla_cpu_max_isa=AVX2 and twice
    at the host's own ISA, give the same loss to the last digit each time (the quoted digits
    name their ISA, provenance.isa_text)."""
    import subprocess
    import sys

    def run(flags):
        env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
        out = subprocess.run(
            [sys.executable, "-c", _DIGITS], env=env, capture_output=True, text=True, check=True
        )
        return out.stdout.strip()

    native = os.environ.get("XLA_FLAGS", "").replace("--xla_force_host_platform_device_count=8", "")
    capped = (native + " --xla_cpu_max_isa=AVX2").strip()
    assert run(capped) == run(capped)
    assert run(native) == run(native)
