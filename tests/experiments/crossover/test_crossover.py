"""crossover: every verdict on injected timings, FLOP counts and serial-step counts (both sides
of each edge); the range from FLOP counts; censored resamples; no crossing drawn without a
finite interval; the experiment's path imports no torch."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from anatomy.probes.claims import FAILS, HOLDS, NEEDS_ACCELERATOR, UNDECIDED
from experiments.crossover import claims, plots
from experiments.lab import record

NS = [32, 128, 512, 2048]
ROUNDS = 11
NF = 256.0  # where the fake attention's FLOP count overtakes the fake recurrence's
RATE = 1e10  # FLOP/s of every fake program (ρ = 1 unless a test says otherwise)
ATT_FLOPS = [2e5 * n + 400.0 * n * n for n in NS]  # a N + b N^2
REC_FLOPS = [(2e5 + 400.0 * NF) * n for n in NS]  # c N: equal to attention's at N = NF


def timed(times, form="chunked", flops=None, steps=None, memory=None, depth=None, spread=0.01):
    """A contender: median_s, and ROUNDS rounds_s spread evenly (± spread) about it."""
    r = [[t * (1 + spread * (i - ROUNDS // 2) / (ROUNDS // 2)) for i in range(ROUNDS)]
         for t in times]  # fmt: skip
    none = [None] * len(times)
    return {
        "form": form, "median_s": list(times), "rounds_s": r, "left_out": none,
        "flops": flops or none, "serial_steps": steps or none, "critical_path": depth or none,
        "memory_bytes": memory or none,
    }  # fmt: skip


def fake(rho=1.0, lstm_steps=None, chunk_steps=None, assoc_steps=None, dense_steps=None,
         dense_memory=None, others=None):  # fmt: skip
    """Results where gated DeltaNet's time crosses dense attention's at N* = NF·rho (its FLOP
    rate 1/rho of attention's), serial steps as the chapter says unless a test says not."""
    dense_t = [f / RATE for f in ATT_FLOPS]
    gdn_t = [rho * f / RATE for f in REC_FLOPS]
    return {
        "lengths": NS,
        "others_cores": [0.01] * len(NS) if others is None else others,
        "contenders": {
            claims.DENSE: timed(
                dense_t, form="dense", flops=ATT_FLOPS, steps=dense_steps or [0] * 4,
                memory=dense_memory or [n * n * 16 for n in NS],
            ),
            claims.CHUNKED: timed(dense_t, flops=ATT_FLOPS, memory=[n * 400 for n in NS]),
            "gated_deltanet": timed(
                gdn_t, flops=REC_FLOPS, steps=chunk_steps or [2 * max(1, n // 64) for n in NS],
                memory=[n * 300 for n in NS],
            ),
            "rglru (associative)": timed(
                [1e-3] * 4, form="associative", steps=assoc_steps or [0] * 4,
                memory=[n * 200 for n in NS],
            ),
            "lstm": timed(
                [1e-2, 4e-2, 0.16, 0.64], form="sequential (fused VJP)",
                steps=lstm_steps or [2 * n for n in NS], memory=[n * 100 for n in NS],
            ),
        },
    }  # fmt: skip


def verdicts(results):
    plain = record.stored(results)
    table = claims.table(plain, {})
    return {c.id: c.verdict for c in [*table, *claims.chapter(plain, {}, table)]}


# every judged claim id, and a (holds, fails) pair of fake results for each
NOT_JUDGED = {"crossover/fla_anchor": NEEDS_ACCELERATOR}  # a published GPU figure: an estimate
CASES = {
    # N* = NF inside [NF/2, 4 NF]; a recurrence 8x faster per FLOP crosses below NF/2 (it is
    # faster already at N = 32 here), one 8x slower beyond 4 NF
    "crossover/headline": (fake(), fake(rho=0.125)),
    "crossover/gated_deltanet": (fake(), fake(rho=8.0)),
    "crossover/lstm_serial": (fake(), fake(lstm_steps=list(NS))),
    "crossover/scan_serial": (fake(), fake(chunk_steps=[2 * n for n in NS])),
    "crossover/assoc_serial": (fake(), fake(assoc_steps=[0, 0, 5, 5])),
    "crossover/attention_serial": (fake(), fake(dense_steps=[0, 0, 0, 1])),
    "crossover/memory": (fake(), fake(dense_memory=[n * 16 for n in NS])),  # linear, not N^2
    "crossover/third_wall": (fake(), fake(chunk_steps=[2 * n for n in NS])),
}


def test_every_claim_can_hold_and_fail():
    good = verdicts(fake())
    assert set(good) == set(CASES) | set(NOT_JUDGED), "a claim without a case"
    for cid, verdict in NOT_JUDGED.items():
        assert good[cid] == verdict, cid
    for cid, (holds_case, fails_case) in CASES.items():
        assert verdicts(holds_case)[cid] == HOLDS, cid
        assert verdicts(fails_case)[cid] == FAILS, cid


def test_the_expected_range_is_the_flop_crossing_times_the_rate_band():
    plain = record.stored(fake())
    # the counts joined point to point in log-log between lengths 4x apart: near NF
    assert claims.flop_crossing(plain, "gated_deltanet") == pytest.approx(NF, rel=0.2)
    rng, nf = claims.expected_range(plain, "gated_deltanet")
    assert (rng.lo, rng.hi) == (pytest.approx(claims.RATE_BAND[0] * nf),
                                pytest.approx(claims.RATE_BAND[1] * nf))  # fmt: skip
    assert "FLOP counts" in rng.text and "GPU" in rng.text  # says where it comes from
    # the range moves with the FLOP counts, not with the timings
    moved = fake()
    moved["contenders"]["gated_deltanet"]["flops"] = [2 * f for f in REC_FLOPS]
    assert claims.flop_crossing(record.stored(moved), "gated_deltanet") > 1.5 * NF
    rho = claims.rate_ratio(record.stored(fake(rho=2.0)), "gated_deltanet")
    assert rho[0] == NS[-1] and rho[1] == pytest.approx(2.0)


def test_a_resample_without_a_crossing_is_censored_and_never_drawn():
    # gated DeltaNet overtakes in the median, but 4 of the 11 rounds never cross
    r = fake(rho=1.5)  # N* = (1.5 c - a) / b = 634
    rounds = r["contenders"]["gated_deltanet"]["rounds_s"]
    for i in range(4):
        rounds[-1][i] *= 10  # at the longest N these rounds are slower than attention
    plain = record.stored(r)
    point, interval, _ = claims.crossing(plain, "gated_deltanet")
    assert math.isfinite(point) and interval.hi == math.inf and math.isfinite(interval.lo)
    assert verdicts(r)["crossover/headline"] == UNDECIDED
    assert not plots.crossing_drawn(interval)
    plain = record.stored(fake())
    _, good, _ = claims.crossing(plain, "gated_deltanet")
    nf = claims.flop_crossing(plain, "gated_deltanet")  # at ρ = 1 time crosses where FLOPs do
    assert plots.crossing_drawn(good) and good.lo <= nf * (1 + 1e-9) and nf <= good.hi * (1 + 1e-9)


def test_a_timing_under_load_or_over_too_few_rounds_decides_nothing():
    loaded = verdicts(fake(others=[0.01, 0.01, 1.3, 0.01]))  # another process took a core
    assert loaded["crossover/headline"] == UNDECIDED
    busy = fake()
    busy["load_before_after"] = [2.4, 2.5]  # the 1-minute load before the run over the rule's 2
    assert verdicts(busy)["crossover/headline"] == UNDECIDED
    busy["load_before_after"] = [0.5, 2.1]  # its own two threads read about 2 after it
    assert verdicts(busy)["crossover/headline"] == HOLDS
    assert loaded["crossover/lstm_serial"] == HOLDS  # a count from the program: no timing
    few = fake()
    for e in few["contenders"].values():
        e["rounds_s"] = [r[:5] for r in e["rounds_s"]]
    # below 8 rounds no bootstrap: each round's own crossing and their t interval (log scale)
    _, interval, _ = claims.crossing(record.stored(few), "gated_deltanet")
    assert interval.n == 5 and interval.method != "bootstrap"
    for row in few["contenders"]["gated_deltanet"]["rounds_s"]:
        row[0] *= 10  # round 0 never crosses (10x slower at every N): beyond the lengths
    assert verdicts(few)["crossover/headline"] == UNDECIDED


def test_a_range_reaching_below_the_shortest_length_decides_nothing():
    # the FLOP counts cross at 32 already: [16, 128] reaches below the lengths timed
    r = fake(rho=0.5)
    r["contenders"]["gated_deltanet"]["flops"] = [f * 0.1 for f in REC_FLOPS]
    assert verdicts(r)["crossover/headline"] == UNDECIDED


def test_the_pilot_sizes_the_rounds():
    plain = record.stored(fake())
    values = claims.round_crossings(plain, "gated_deltanet")
    nf = claims.flop_crossing(plain, "gated_deltanet")
    assert len(values) == ROUNDS and all(v == pytest.approx(nf) for v in values)
    headline = {c.id: c for c in claims.table(plain, record.stored(fake()))}["crossover/headline"]
    assert "pilot" in headline.power and f"{ROUNDS} seeds" in headline.power


def test_torch_twins_named_where_the_cases_build_them():
    torch = pytest.importorskip("torch")
    del torch
    from benchmarks.cases_mixers import TORCH_TWINS
    from benchmarks.peers_mixers import PEERS

    assert set(TORCH_TWINS) == set(PEERS)


def test_the_crossover_imports_no_torch(tmp_path):
    """The experiment's import path, run as on an install without torch (tests/without_torch.py;
    the quick report runs `launch.py --experiment=crossover --preset=quick` the same way)."""
    script = tmp_path / "imports.py"
    script.write_text(
        "import sys\n"
        "import benchmarks.cases_mixers\nimport experiments.configs.crossover\n"
        "import experiments.crossover\n"
        "assert 'torch' not in sys.modules\n"
    )
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    proc = subprocess.run(
        [sys.executable, os.path.join(root, "tests", "without_torch.py"), str(script)],
        env=dict(os.environ, PYTHONPATH=root), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_quick_crossover_times_every_contender_from_the_benchmark_cases(quick_report):
    import json

    workdir = quick_report / "crossover"
    res = json.loads((workdir / "results.json").read_text())
    c = res["contenders"]
    assert {claims.DENSE, claims.CHUNKED, "lstm", "gated_deltanet"} <= set(c)
    for label, e in c.items():
        for i, n in enumerate(res["lengths"]):
            if e["median_s"][i] is None:
                assert e["left_out"][i], (label, n)
                continue
            assert len(e["rounds_s"][i]) == res["config"]["rounds"] and e["memory_bytes"][i] > 0
            assert e["flops"][i] > 0, (label, n)
    # dense attention's FLOPs grow as N^2, the LSTM's as N: read from the compiled programs
    # (not a chunked scan's: at the quick lengths its chunk, min(64, N), grows with N too)
    grow = lambda label: np.log(c[label]["flops"][1] / c[label]["flops"][0])
    assert grow(claims.DENSE) > grow("lstm") + 0.5
    # the LSTM's program loops once per step each way: read from the compiled HLO
    assert c["lstm"]["serial_steps"] == [2 * n for n in res["lengths"]]
    assert len(res["others_cores"]) == len(res["lengths"])
    assert "crossover/third_wall" in record.claims_of("crossover", res)


def test_gated_deltanets_chunked_inverse_is_exact_and_stays_inside_xla():
    import jax
    import jax.numpy as jnp

    from anatomy import mixers
    from anatomy.mixers.gated_deltanet import unit_lower_inverse

    rng = np.random.default_rng(0)
    for c in (1, 3, 7, 64):  # odd sizes split unevenly; 64 the default chunk
        n = np.tril(rng.uniform(-0.3, 0.3, (2, c, c)), -1).astype(np.float32)
        want = np.linalg.inv(np.eye(c) + n.astype(np.float64))
        got = np.asarray(unit_lower_inverse(jnp.asarray(n)), np.float64)
        assert np.abs(got - want).max() < 1e-5 * max(1.0, np.abs(want).max()), c
    # the forward + backward program calls nothing outside XLA (no LAPACK, no foreign threads)
    mixer = mixers.build_mixer("gated_deltanet", 8, conv=0, n_heads=2, chunk=4)
    p = mixer.init(jax.random.key(0))
    x = jnp.ones((1, 12, 8))
    loss = lambda p_, x_: jnp.sum(mixer.apply(p_, x_, form="chunked") ** 2)
    text = jax.jit(jax.grad(loss, argnums=(0, 1))).lower(p, x).compile().as_text()
    assert "custom_call_target" not in text
