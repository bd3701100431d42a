"""parallelism's claims on injected numbers: every judged claim can hold and can fail. The
template is the committed result's shape (results/parallelism/default.json); the numbers the
claims read are replaced. (The experiment itself runs in tests/test_walls.py, on the quick
report's run; the rest of its claims' edges are in tests/experiments/report/test_report.py.)"""

import copy
import json
import os

import numpy as np

from anatomy import probes
from experiments.lab import committed, record
from experiments.parallelism import claims

REPORTED = {"parallelism/scan_over_assoc"}  # minGRU scan / associative scan time: reported


def _template() -> dict:
    with open(os.path.join(committed.RESULTS, "parallelism", "default.json")) as f:
        return json.load(f)["result"]


def _timed(row, time_s, busy, repeats):
    """row's timed calls: `repeats` calls around time_s (±1%), busy cores each."""
    wobble = 1.0 + 0.01 * (np.arange(repeats) - (repeats - 1) / 2) / repeats
    times = (time_s * wobble).tolist()
    row.update(times_s=times, cpus_s=[t * busy for t in times], median_s=time_s)


def _inject(good: bool) -> dict:
    """The template with every number a claim reads set to hold (good) or to fail."""
    r = copy.deepcopy(_template())
    a, raw, n0 = r["analysis"], r["raw"], r["analysis"]["ratio_n"]
    repeats = r["config"]["repeats"]
    a["load_average_before_after"] = [0.3, 0.4]
    a["lstm_steps_per_token"] = 2.0 if good else 3.0
    a["attention_max_steps"] = 0 if good else 5
    a["mingru_scan_steps_per_token"] = 2.0 if good else 1.0
    a["mingru_assoc_max_steps"] = 0 if good else 7
    a["assoc_depth_log2_r2"] = 0.999 if good else 0.5
    a["depth_exponent"] = {
        "mingru_assoc": 0.2 if good else 0.9,
        "mingru_scan": 1.0 if good else 0.5,
    }
    a["conv_max_steps"] = 0 if good else 3
    a["conv_depth_exponent"] = 0.0 if good else 0.5
    k = r["config"]["kernel_size"]
    a["conv_receptive_field"] = {
        n: (1 + int(n) * (k - 1)) if good else 1 for n in a["conv_receptive_field"]
    }
    for c in r["chunked_attention_steps"]:
        c["steps_hlo"] = 2 * c["key_blocks"] if good else c["key_blocks"]
    # wall time: LSTM ∝ N (good) or N² (bad); attention ∝ N^1.5 (good) or N^0.5 (bad);
    # at N0 the LSTM takes 7x attention's time (good: inside 5-10x) or half of it (bad)
    e_lstm, e_attn, ratio = (1.0, 1.5, 7.0) if good else (2.0, 0.5, 0.5)
    busy_lstm, busy_attn = (1.0, 1.5) if good else (1.7, 1.0)
    for row in raw["lstm"]:
        _timed(row, ratio * (row["n"] / n0) ** e_lstm, busy_lstm, repeats)
    for row in raw["attention"]:
        _timed(row, (row["n"] / n0) ** e_attn, busy_attn, repeats)
    flops = next(x["flops"] for x in raw["attention"] if x["n"] == n0)
    for row in raw["lstm"]:
        row["flops"] = flops
    return record.stored(r)


def _verdicts(results) -> dict:
    return {c.id: c for c in claims.table(results) + claims.chapter(results)}


def test_every_claim_can_hold_and_fail():
    good, bad = _verdicts(_inject(True)), _verdicts(_inject(False))
    assert set(good) == set(bad)
    for cid, c in good.items():
        if cid in REPORTED:
            assert c.verdict == probes.REPORTED and bad[cid].verdict == probes.REPORTED
            continue
        assert c.verdict == probes.HOLDS, (cid, c.verdict, c.detail)
        assert bad[cid].verdict == probes.FAILS, (cid, bad[cid].verdict, bad[cid].detail)


def test_no_timing_is_judged_from_a_loaded_run():
    """Above a 1-minute load of 2 every timed claim is undecided, naming the load; the serial
    steps, exact counts from the compiled programs, are judged whatever the load."""
    r = _inject(True)
    r["analysis"]["load_average_before_after"] = [11.2, 6.3]
    got = _verdicts(record.stored(r))
    timed = ("speedup", "one_core", "busy_margin", "useful_work", "lstm_time", "attention_time")
    for name in timed:
        c = got[f"parallelism/{name}"]
        assert c.verdict == probes.UNDECIDED and "load of 11.2" in c.detail, name
    assert got["parallelism/distance"].verdict == probes.HOLDS
    assert got["parallelism/parallel_training"].verdict == probes.UNDECIDED
