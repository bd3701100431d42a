"""crossover: every verdict on injected timings and counts (both sides of each edge)."""

import numpy as np

from anatomy.probes.claims import FAILS, HOLDS, NEEDS_ACCELERATOR, UNDECIDED
from experiments import record
from experiments.crossover import claims

NS = [256, 1024, 4096, 16384]


def timed(times, rounds=5, form="chunked", steps=None, memory=None, depth=None):
    """A contender: median_s and rounds_s (the median ± 1% spread per round)."""
    r = [[t * (1 + 0.01 * (i - rounds // 2)) for i in range(rounds)] for t in times]
    none = [None] * len(times)
    return {
        "form": form, "median_s": list(times), "rounds_s": r, "left_out": none,
        "serial_steps": steps or none, "critical_path": depth or none,
        "memory_bytes": memory or none,
    }  # fmt: skip


def fake(gdn=(4e-3, 8e-3, 2e-2, 6e-2), lstm_steps=None, chunk_steps=None):
    dense = [1e-3, 5e-3, 6e-2, 9e-1]  # N^2-ish: overtaken between 1K and 4K
    return {
        "lengths": NS,
        "contenders": {
            claims.DENSE: timed(
                dense, form="dense", steps=[0] * 4, memory=[n * n * 16 for n in NS]
            ),  # fmt: skip
            claims.CHUNKED: timed([2e-3, 8e-3, 7e-2, 1.0], memory=[n * 400 for n in NS]),
            "gated_deltanet": timed(
                gdn, steps=chunk_steps or [2 * n // 64 for n in NS], memory=[n * 300 for n in NS]
            ),  # fmt: skip
            "rglru (associative)": timed(
                [1e-3] * 4, form="associative", steps=[0] * 4, memory=[n * 200 for n in NS]
            ),  # fmt: skip
            "lstm": timed(
                [1e-2, 4e-2, 0.16, 0.64],
                form="sequential (fused VJP)",
                steps=lstm_steps or [2 * n for n in NS],
                memory=[n * 100 for n in NS],
            ),  # fmt: skip
        },
    }


def verdicts(results):
    return {c.id: c.verdict for c in claims.table(record.stored(results))}


def test_crossover_claims_hold_and_fail_on_both_sides():
    good = verdicts(fake())
    for cid in ("crossover/headline", "crossover/lstm_serial", "crossover/scan_serial",
                "crossover/assoc_serial", "crossover/attention_serial", "crossover/memory"):  # fmt: skip
        assert good[cid] == HOLDS, cid
    assert good["crossover/fla_anchor"] == NEEDS_ACCELERATOR  # a published figure: never a verdict
    point, interval, _ = claims.crossing(record.stored(fake()), "gated_deltanet")
    assert 1024 < point < 4096 and interval.lo <= point <= interval.hi
    # never slower: the crossing is below the measured lengths, not inside them
    assert verdicts(fake(gdn=(1e-4,) * 4))["crossover/headline"] == FAILS
    # never faster: no crossing to measure
    assert verdicts(fake(gdn=(1.0,) * 4))["crossover/headline"] == UNDECIDED
    assert verdicts(fake(lstm_steps=[n for n in NS]))["crossover/lstm_serial"] == FAILS
    assert verdicts(fake(chunk_steps=[2 * n for n in NS]))["crossover/scan_serial"] == FAILS
    r = fake()
    r["contenders"][claims.DENSE]["memory_bytes"] = [n * 16 for n in NS]  # linear, not N^2
    assert verdicts(r)["crossover/memory"] == FAILS
    chapter = claims.chapter(record.stored(fake()))[0]
    assert chapter.id == "crossover/third_wall" and chapter.verdict == HOLDS
    assert np.isfinite(interval.point)


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
    # the LSTM's program loops once per step each way: read from the compiled HLO
    assert c["lstm"]["serial_steps"] == [2 * n for n in res["lengths"]]
    assert "crossover/third_wall" in record.claims_of("crossover", res)
