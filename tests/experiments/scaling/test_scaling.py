"""Smoke test of the scaling experiment through the real entry point, on its quick preset.

The assertions are about structure read from compiled programs (exact counts), never about
times: the LSTM's tensor-parallel collectives grow with N and sit in its time loop, the
Transformer's are the same at every N and fixed per layer, data parallelism all-reduces the
parameters once per step for both. The cost model's numbers are only checked for presence;
the verdicts' two sides are tested with injected numbers in tests/experiments/scaling/test_scaling_claims.py.
"""

import json
import math
import pathlib

import pytest

from anatomy import probes
from anatomy.probes.claims import weakest
from experiments.lab import record
from experiments.scaling import check, claims


@pytest.fixture(scope="module")
def results(quick_report):
    """The quick preset as the quick report ran it through launch.py (conftest.quick_report)."""
    workdir = quick_report / "scaling"
    report = (pathlib.Path(workdir) / "report.md").read_text()
    res = json.loads((pathlib.Path(workdir) / "results.json").read_text())
    assert list(pathlib.Path(workdir).glob("*.png"))
    for row in res["table"]:  # every claim, with its id and verdict, is in report.md
        assert row["verdict"] in probes.VERDICTS and row["id"]
        assert f"**{row['verdict']}**" in report
    return res, report


def _rows(res, family, mode):
    return sorted(
        (r for r in res["structure"] if r["family"] == family and r["mode"] == mode),
        key=lambda r: (r["layers"], r["n"]),
    )


def test_tensor_parallel_lstm_communicates_every_step(results):
    res, _ = results
    rows = _rows(res, "lstm", "tp")
    by_n = [r for r in rows if r["layers"] == 1]
    assert len(by_n) >= 2
    execs = [r["collectives"]["total"]["in_loop_executions"] for r in by_n]
    ns = [r["n"] for r in by_n]
    # in-loop collectives scale exactly with N (per step and layer the same count, >= 1)
    per_step = [e / n for e, n in zip(execs, ns)]
    assert min(per_step) >= 1 and max(per_step) == min(per_step)
    # ... and with L: two layers, twice the in-loop collectives of one at the same N
    two = [r for r in rows if r["layers"] == 2][0]
    one = [r for r in by_n if r["n"] == two["n"]][0]
    assert (
        two["collectives"]["total"]["in_loop_executions"]
        == 2 * one["collectives"]["total"]["in_loop_executions"]
    )
    assert all(r["serial_steps"] == 2 * r["n"] * r["layers"] for r in rows)


def test_tensor_parallel_transformer_does_not_depend_on_n(results):
    res, _ = results
    rows = _rows(res, "transformer", "tp")
    one_layer = [r["collectives"]["total"] for r in rows if r["layers"] == 1]
    assert len(one_layer) >= 2
    assert len({t["executions"] for t in one_layer}) == 1  # the same count at every N
    assert all(t["in_loop_executions"] == 0 for t in one_layer)
    assert all(r["serial_steps"] == 0 for r in rows)
    # Megatron-LM: 2 forward + 2 backward all-reduces per layer (the first layer's input needs
    # no gradient: 4L - 1)
    per_l = {r["layers"]: r["collectives"]["by_kind"]["all-reduce"]["executions"] for r in rows}
    assert per_l[2] - per_l[1] == 4


def test_data_parallel_one_gradient_all_reduce(results):
    res, _ = results
    for family in ("lstm", "transformer"):
        for r in _rows(res, family, "dp"):
            ar = r["collectives"]["by_kind"]["all-reduce"]
            assert r["collectives"]["total"]["in_loop_executions"] == 0
            assert 1.0 <= ar["bytes"] / r["param_bytes"] <= 1.001  # the parameters, once


def test_model_and_predictions_recorded(results):
    res, report = results
    rows = res["check"]["rows"]
    assert {r["family"] for r in rows} >= {"lstm", "attention", "lstm_small", "transformer"}
    for r in rows:  # presence and sign only: the values depend on the machine and its load
        assert r["measured_s"] > 0 and r["predicted_s"] > 0 and math.isfinite(r["ratio"])
        assert set(r["variants"]) == set(check.VARIANTS)
        assert len(r["times_s"]) == res["config"]["check"]["rounds"]
    verdicts = {row["id"]: row["verdict"] for row in res["table"]}
    want = ["model_cpu", *(f"model_cpu_{t}" for t in claims.ACCELERATOR_TERMS)]
    want += ["speed_ratio_accelerator", "time_to_loss_cpu", "time_to_loss_accelerator"]
    assert {f"scaling/{i}" for i in want} <= set(verdicts)
    # an estimate is never a verdict; one seed of rnn_vs_attn judges nothing
    for cid in ("speed_ratio_accelerator", "time_to_loss_accelerator", "near_linear"):
        assert verdicts[f"scaling/{cid}"] == probes.NEEDS_ACCELERATOR
    assert "an estimate" in report and "The cost model's terms, on and off" in report
    # the quick preset compiles nothing for a GPU, and says so
    assert res["applied"]["gpu_programs"]["available"] is False
    # the chapter's claims, read by id from results.json as the report and docs read them
    chapter = record.claims_of("scaling", res)
    assert chapter["scaling/speed_ratio"].verdict == probes.NEEDS_ACCELERATOR  # an estimate
    assert chapter["scaling/time_to_loss"].verdict == verdicts["scaling/time_to_loss_cpu"]
    parts = [verdicts[f"scaling/{i}"] for i in claims.STRUCTURE_IDS if f"scaling/{i}" in verdicts]
    if len(parts) == len(claims.STRUCTURE_IDS):
        assert chapter["scaling/structure"].verdict == weakest(parts)
    else:  # the quick preset compiles no data-parallel LSTM and no autodiff LSTM
        assert chapter["scaling/structure"].verdict == probes.UNDECIDED


def test_gpu_script_quick_path_runs(tmp_path):
    """experiments/scaling/on_device.py's --quick path on this CPU, cut to one N and no
    translator: a measured time and a prediction for each case (and with each term of the
    model off), the ratio printed (values unchecked)."""
    from experiments.scaling import on_device

    out = tmp_path / "gpu.json"
    rows, ratios = on_device.main(
        [
            "--quick",
            "--rounds=1",
            "--n-grid=16",
            "--translators=",
            "--precisions=float32",
            f"--out={out}",
        ]
    )
    # the layers at N = 16, and the latency-bound LSTM the estimate rests on (quick: N = 32)
    assert {(r["family"], r["n"]) for r in rows} == {
        ("lstm", 16),
        ("attention", 16),
        ("lstm_small", 32),
    }
    assert all(r["measured_s"] > 0 and r["measured here"]["seconds"] > 0 for r in rows)
    assert all(set(r["measured here"]["variants"]) == set(check.VARIANTS) for r in rows)
    assert [r["what"] for r in ratios] == ["LSTM / attention at N = 16"]
    assert json.loads(out.read_text())["rows"]


def test_bad_config_names_the_field():
    from anatomy.errors import BadInputError
    from experiments.configs.scaling import get_config
    from experiments.scaling import structure

    cfg = get_config("quick")
    cfg.modes = ("dp", "pipeline")
    with pytest.raises(BadInputError, match="modes"):
        structure.specs(cfg)
    cfg = get_config("quick")
    cfg.n_heads = 4  # not a multiple of 8 devices: heads could not be split
    with pytest.raises(BadInputError, match="n_heads"):
        structure.specs(cfg)
