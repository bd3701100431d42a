"""scaling's verdicts by the one rule, on injected numbers on both sides of each edge (no
program is compiled or timed here, except one tiny LSTM whose prediction is read, not timed).

Each test pins a rule of the verdicts: an exact structure count outside its range does not
hold (no "caveat" for another slope); an accelerator figure is an estimate, never a verdict,
and one far outside the chapter's range says so; the CPU check must need each term an
accelerator estimate is made of; time to a common loss is a bracketed measurement over seeds
that can fail, and one seed shows nothing; near-linear scaling on thousands of devices is not
shown by a run on none.
"""

import math

import ml_collections
import pytest

from anatomy.probes import FAILS, HOLDS, NEEDS_ACCELERATOR, UNDECIDED
from anatomy.probes.claims import Range
from experiments.scaling import applied, check, claims

CFG = ml_collections.ConfigDict(
    {"n_fixed": 8, "layers_fixed": 1, "devices": 8, "n_grid": (8, 16), "layers_grid": (1, 2)}
)


def _row(family, mode, n, layers, executions, in_loop=0, allreduce=None, params=100.0, serial=0):
    return {
        "family": family,
        "mode": mode,
        "n": n,
        "layers": layers,
        "param_bytes": params,
        "serial_steps": serial,
        "collectives": {
            "total": {"executions": executions, "in_loop_executions": in_loop, "bytes": 64.0},
            "by_kind": {"all-reduce": {"bytes": params if allreduce is None else allreduce}},
        },
    }


def _by_id(pairs):
    return {name: c for name, c in pairs}


def test_megatron_slope_other_than_four_does_not_hold():
    """Collectives per layer: 4 holds; an exact 3 does not hold (it was a caveat)."""
    for per_layer, verdict in ((4, HOLDS), (3, FAILS)):
        rows = [_row("transformer", "tp", 8, L, per_layer * L - 1) for L in CFG.layers_grid] + [
            _row("transformer", "tp", 16, 1, per_layer - 1)
        ]
        got = _by_id(claims.structure_claims(CFG, rows))["tp_transformer_per_layer"]
        assert got.verdict == verdict, got


def test_structure_parts_on_both_sides():
    ok = [_row("lstm", "dp", 8, 1, 1, allreduce=100.05)]
    assert _by_id(claims.structure_claims(CFG, ok))["dp_one_allreduce_lstm"].verdict == HOLDS
    for bad in (
        [_row("lstm", "dp", 8, 1, 1, allreduce=100.2)],  # 0.2% more than the parameters
        [_row("lstm", "dp", 8, 1, 1, in_loop=1)],  # an all-reduce inside a loop
    ):
        got = _by_id(claims.structure_claims(CFG, bad))["dp_one_allreduce_lstm"]
        assert got.verdict == FAILS and "outside" not in got.verdict
    flat = [_row("transformer", "tp", n, 1, 3) for n in (8, 16)]
    grows = [_row("transformer", "tp", 8, 1, 3), _row("transformer", "tp", 16, 1, 4)]
    assert (
        _by_id(claims.structure_claims(CFG, flat))["tp_transformer_n_independent"].verdict == HOLDS
    )
    assert (
        _by_id(claims.structure_claims(CFG, grows))["tp_transformer_n_independent"].verdict == FAILS
    )
    serial = [_row("lstm", "tp", n, 1, 39 * n, in_loop=39 * n, serial=2 * n) for n in (8, 16)]
    got = _by_id(claims.structure_claims(CFG, serial))
    assert got["serial_lstm"].verdict == HOLDS and got["tp_lstm_in_loop"].verdict == HOLDS
    serial[1]["serial_steps"] = 3 * 16
    assert _by_id(claims.structure_claims(CFG, serial))["serial_lstm"].verdict == FAILS


def _check_row(family, measured, predicted, without, dominant, rounds=5):
    """A check row: `measured` seconds every round (± 1%), the model's prediction, and the
    prediction without each term ({variant: seconds}, the model's where not given)."""
    times = [measured * (1 + 0.01 * (k - rounds // 2)) for k in range(rounds)]
    variants = {v: predicted for v in check.VARIANTS}
    variants.update(without)
    return {
        "family": family,
        "n": 64,
        "measured_s": measured,
        "times_s": times,
        "predicted_s": predicted,
        "ratio": predicted / measured,
        "dominant": dominant,
        "variants": variants,
    }


HW = {"op_latency": 2.5e-7, "loop_latency": 0.0, "call_latency": 8e-6}


def test_model_check_must_need_each_term():
    """The latency term is exercised only when a program misses without it: a check whose
    programs are all predicted within 2x with latency off does not show that it needs it."""
    off = {"without compute": 0.1, "without memory": 0.1}
    inert = [
        _check_row("lstm", 1.0, 1.1, {**off, "without latency": 0.95}, "memory"),
        _check_row("attention", 1.0, 0.9, {**off, "without latency": 0.9}, "memory"),
    ]
    got = _by_id(claims.model_claims(inert, HW))
    assert got["model_cpu"].verdict == HOLDS
    assert got["model_cpu_latency"].verdict == FAILS  # within 2x without it: not exercised
    assert got["model_cpu_compute"].verdict == HOLDS and got["model_cpu_memory"].verdict == HOLDS
    needed = inert + [
        _check_row("lstm_small", 1e-3, 1.2e-3, {**off, "without latency": 1e-5}, "latency")
    ]
    got = _by_id(claims.model_claims(needed, HW))
    assert (
        got["model_cpu_latency"].verdict == HOLDS
        and "lstm_small" in got["model_cpu_latency"].detail
    )
    assert "with it, predicted / measured 1.2 on those" in got["model_cpu_latency"].detail
    missed = inert + [_check_row("rnnsearch", 1.0, 0.3, {}, "memory")]  # 0.3x: a miss of 3.3x
    assert _by_id(claims.model_claims(missed, HW))["model_cpu"].verdict == FAILS
    two_rounds = [_check_row("lstm", 1.0, 1.1, {}, "memory", rounds=2)]
    assert _by_id(claims.model_claims(two_rounds, HW))["model_cpu"].verdict == UNDECIDED


def _estimate_row(ratio, variants):
    base = {
        "accelerator": "H100 SXM",
        "n": 512,
        "counted_from": "XLA:GPU's programs for H100 SXM",
        "recurrent_s": ratio * 1e-3,
        "attention_s": 1e-3,
        "recurrent_terms": {"compute": 0, "memory": 0, "latency": ratio * 1e-3, "communication": 0},
        "recurrent_kernels": 13329,
        "attention_kernels": 40,
        "attention_dominant": "latency",
        "ratio": ratio,
    }
    sens = [{"assumption": "as assumed", "value": "x", "ratio": ratio}]
    sens += [
        {"assumption": "latencies", "value": f"x{i}", "ratio": v} for i, v in enumerate(variants)
    ]
    return [{**base, "sensitivity": sens}]


def test_speed_ratio_is_an_estimate_and_far_outside_is_not_agreement():
    cfg = ml_collections.ConfigDict({"headline": "H100 SXM", "precision": "bfloat16"})
    _, far = claims.speed_ratio_claim(cfg, _estimate_row(264.0, [127.0, 306.0]))
    assert far.verdict == NEEDS_ACCELERATOR and "an estimate" in far.detail
    assert "above the claimed range" in far.detail and "12.7x its upper edge" in far.detail
    _, inside = claims.speed_ratio_claim(cfg, _estimate_row(7.0, [6.0, 8.0]))
    assert inside.verdict == NEEDS_ACCELERATOR and "above" not in inside.detail
    _, below = claims.speed_ratio_claim(cfg, _estimate_row(1.5, [1.2, 2.0]))
    assert "below the claimed range" in below.detail


def _seed(t_curve, r_curve, t_seconds=100.0, r_seconds=400.0, steps=1000):
    runs = {
        "transformer": [{"steps": steps, "train_seconds": t_seconds, "valid_curve": t_curve}],
        "rnnsearch": [{"steps": steps, "train_seconds": r_seconds, "valid_curve": r_curve}],
    }
    return runs


def _models(seeds):
    """rnn_vs_attn's results.models for several seeds, each (transformer, rnnsearch) runs."""
    out = {}
    for m in applied.MODELS:
        rows = [s[m][0] for s in seeds]
        out[m] = {"seeds": [dict(r, valid_curve=[list(p) for p in r["valid_curve"]]) for r in rows]}
    return out


def _steps(tmp_path, seeds, name="r.json"):
    import json

    path = tmp_path / name
    path.write_text(json.dumps({"result": {"models": _models(seeds)}}))
    cfg = ml_collections.ConfigDict(
        {"results": (str(tmp_path / "none.json"), str(path)), "target_fraction": 0.5}
    )
    return applied.steps_to_loss(cfg)


GRID = [250, 500, 750, 1000]


def test_steps_to_loss_brackets_on_the_evaluation_grid(tmp_path):
    """The target is the higher validation loss at half the schedules; each model's steps to
    it are the bracket between evaluations, never interpolated; time = steps × s/step."""
    t = list(zip(GRID, [3.0, 2.0, 1.0, 0.5]))
    r = list(zip(GRID, [1.8, 1.5, 0.4, 0.3]))
    (row,) = _steps(tmp_path, [_seed(t, r)])["seeds"]
    assert row["target_loss"] == 2.0  # the Transformer's loss at step 500 (RNNsearch: 1.5)
    assert row["steps"] == {"transformer": (250.0, 500.0), "rnnsearch": (0.0, 250.0)}
    assert row["steps_ratio"][0] == pytest.approx(1.0) and math.isinf(row["steps_ratio"][1])
    r = list(zip(GRID, [2.5, 1.5, 0.4, 0.3]))  # RNNsearch now reaches 2.0 after step 250
    (row,) = _steps(tmp_path, [_seed(t, r)])["seeds"]
    assert row["steps"]["rnnsearch"] == (250.0, 500.0)
    assert row["steps_ratio"] == pytest.approx([250 / 500, 500 / 250])
    assert row["time_ratio"] == pytest.approx([0.5 / 4, 2 / 4])  # 0.1 s vs 0.4 s a step


LONG = [250 * k for k in range(1, 17)]  # evaluations every 250 steps of a 4,000-step schedule


def _long_seed(t_seconds, r_seconds, t_first=500):
    """The Transformer reaches the target (RNNsearch's loss at step 2,000) in
    (t_first - 250, t_first]; RNNsearch in (1750, 2000]."""
    t = [(s, 1.5 if s < t_first else 0.9 - s / 1e4) for s in LONG]
    r = [(s, 3.0 - s / 1000) for s in LONG]  # 1.0 at step 2,000
    return _seed(t, r, t_seconds, r_seconds, steps=4000)


def _time_claim(tmp_path, seeds):
    cfg = ml_collections.ConfigDict({"headline": "H100 SXM", "precision": "bfloat16"})
    got = _by_id(claims.time_to_loss_claims(cfg, _steps(tmp_path, seeds), []))
    return got["time_to_loss_cpu"]


def test_time_to_loss_on_both_sides_of_the_range(tmp_path):
    """Steps ratio per seed in [250/2000, 500/1750] = [0.125, 0.286] × the seconds-per-step
    ratio: 0.85 puts the time bracket inside 1/10-1/4, 0.3 below, 3 above, 1 across 1/4."""

    def seeds(ratio, n=3):
        return [_long_seed(ratio * 400.0 * (1 + 1e-3 * k), 400.0) for k in range(n)]

    assert _time_claim(tmp_path, seeds(0.85)).verdict == HOLDS
    below = _time_claim(tmp_path, seeds(0.3))
    assert below.verdict == FAILS and "below" in below.detail
    above = _time_claim(tmp_path, seeds(3.0))
    assert above.verdict == FAILS and "above" in above.detail
    across = _time_claim(tmp_path, seeds(1.0))  # [0.125, 0.286]: straddles 1/4
    assert across.verdict == UNDECIDED and "straddles the edge 0.25" in across.detail
    one = _time_claim(tmp_path, seeds(0.85, n=1))
    assert one.verdict == UNDECIDED and "1 seed" in one.detail  # the committed result today


def test_near_linear_needs_an_accelerator():
    results = {"applied": {"scale_out": []}}
    cfg = ml_collections.ConfigDict({**CFG.to_dict(), "applied": {"headline": "H100 SXM"}})
    _, c = claims.near_linear_claim(cfg, results)
    assert c.verdict == NEEDS_ACCELERATOR
    assert "nothing here runs on more than one device" in c.detail
    results["applied"]["scale_out"] = [
        {
            "family": "transformer",
            "mode": "dp",
            "accelerator": "H100 SXM",
            "n": 8,
            "layers": 1,
            "speedup": 7.9,
        }
    ]
    _, c = claims.near_linear_claim(cfg, results)
    assert c.verdict == NEEDS_ACCELERATOR and c.measured.startswith("0.9875")


def test_ranges_are_the_chapters():
    assert (claims.SPEED_RANGE.lo, claims.SPEED_RANGE.hi) == (5.0, 10.0)
    assert claims.TIME_TO_LOSS_RANGE == Range.between(0.1, 0.25, "1/10-1/4 (the chapter)")
