"""benchmarks/profile.py: XLA's per-op trace events grouped by kind, exclusive of nesting."""

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import profile


def test_op_kinds():
    assert profile.op_kind("ynn_fusion.12") == "matmul"
    assert profile.op_kind("dot.3") == "matmul"
    assert profile.op_kind("copy_bitcast_fusion.52") == "layout copy"
    assert profile.op_kind("transpose.4") == "layout copy"
    assert profile.op_kind("while.7") == "loop"
    assert profile.op_kind("broadcast_add_fusion.9") == "elementwise"
    assert profile.op_kind("SlinkyThreadPool::Await") == "runtime"
    assert profile.op_kind("$api.py:2479 block_until_ready") is None
    assert profile.op_kind("ThunkExecutor::Execute") is None


def test_exclusive_times_subtract_nested_events_on_the_same_thread():
    ev = lambda name, ts, dur, tid=1: {"ph": "X", "name": name, "ts": ts, "dur": dur, "tid": tid}
    events = [
        ev("while.1", 0, 100),  # a loop whose body holds two ops
        ev("dot.1", 10, 30),
        ev("add_fusion.1", 50, 20),
        ev("dot.1", 200, 5),
        ev("copy.1", 20, 40, tid=2),  # another thread: not nested in the loop
        {"ph": "i", "name": "[memory]", "ts": 5},  # not a complete event
    ]
    total, count = profile.exclusive_times(events)
    assert total == {"while.1": 50, "dot.1": 35, "add_fusion.1": 20, "copy.1": 40}
    assert count == {"while.1": 1, "dot.1": 2, "add_fusion.1": 1, "copy.1": 1}


def test_profile_of_a_jitted_step_sees_its_matmuls():
    """A real trace: one [64, 64] matmul per call is found as a matmul op, every call."""
    x = jnp.asarray(np.random.default_rng(0).normal(size=(64, 64)), jnp.float32)
    f = jax.jit(lambda a: jnp.tanh(a @ a))
    p = profile.profile_step(lambda: jax.block_until_ready(f(x)), n=3, warmup=1)
    ms, ops = p["kinds"]["matmul"]
    assert ops == 1 and ms > 0
    assert set(p["kinds"]) == set(profile.KINDS)
    table = profile.kinds_table([("tanh(a @ a)", p, 2.0 * 64**3)], peak=100.0)
    row = next(line for line in table.splitlines() if line.startswith("| tanh(a @ a) |"))
    rate = 2.0 * 64**3 / (ms / 1e3) / 1e9  # the matmul ops' own rate
    assert f"| {rate:.3g} | {rate:.0f}% |" in row


def test_layer_profiles_cover_the_largest_case_of_each_layer_and_both_passes():
    from benchmarks.cases import build_cases

    cases = build_cases("tiny")
    rows = profile.profile_layer_cases(cases, calls=1)
    names = {c.name for c in cases}
    last = {c.name: c for c in cases}
    for name in names:
        case = last[name]
        for label in case.impls:
            if label.startswith(("anatomy", "flax")):
                for mode in ("fwd", "fwdbwd"):
                    want = f"{name} {case.shape} {mode}, {label}"
                    assert any(r[0] == want for r in rows), want
    assert all(not r[0].split(", ")[-1].startswith("torch") for r in rows)
    assert all(r[1]["kinds"]["matmul"][1] > 0 for r in rows)  # every layer does matmuls
