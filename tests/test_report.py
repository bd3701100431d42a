"""report: the chapter's table from measurements, through launch.py; verdicts; malformed inputs."""

import json
import re

import pytest
from conftest import launch

from anatomy import probes
from experiments import report, report_rows, report_sources, thresholds
from experiments.configs import report as report_config


@pytest.fixture(scope="module")
def quick_report(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("report")
    launch(
        "--experiment=report",
        "--config=experiments/configs/report.py:quick",
        f"--workdir={workdir}",
        timeout=900,
    )  # asserts it exited 0
    return workdir


def test_quick_report_has_every_row_with_a_verdict(quick_report):
    results = json.loads((quick_report / "results.json").read_text())
    rows = results["rows"]
    assert [r["property"] for r in rows] == [spec.name for spec in report_rows.ROWS]
    assert all(r["verdict"] in probes.VERDICTS for r in rows)
    measured = [r for r in rows if r["sources"]]
    assert all(r["verdict"] != probes.MISSING and r["measured"] != "—" for r in measured)
    # serial steps and exponents are exact / compile-time: they hold even on a quick preset
    by_name = {r["property"]: r for r in rows}
    for name in (
        "distance between any two positions",
        "per-layer time complexity",
        "incremental decode latency",
    ):
        assert by_name[name]["verdict"] == probes.HOLDS, by_name[name]
    assert set(results["sources"]) == set(report_config.EXPERIMENTS)
    assert all(s["status"] == "ran" for s in results["sources"].values())
    text = (quick_report / "report.md").read_text()
    for r in rows:
        assert f"| {r['property']} |" in text and f"**{r['verdict']}**" in text


def test_quick_report_links_point_at_files(quick_report):
    text = (quick_report / "report.md").read_text()
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert any(x.endswith(".png") for x in links) and any(x.endswith("report.md") for x in links)
    for link in links:
        assert (quick_report / link).is_file(), link
    results = json.loads((quick_report / "results.json").read_text())
    for row in results["rows"]:
        if row["sources"]:
            assert row["plots"], row["property"]
        for p in row["plots"]:
            assert (quick_report / p).is_file() and f"({p})" in text


def _collect_config(quick_report, **sources):
    c = report_config.get_config()
    for name in report_config.EXPERIMENTS:
        c.sources[name] = str(quick_report / name)
    for name, path in sources.items():
        c.sources[name] = str(path)
    return c


def test_collected_results_are_reused_and_copied(quick_report, tmp_path, capsys):
    """A second report collects the first one's sub-results (nothing reruns) and copies plots."""
    results = report.run(_collect_config(quick_report), str(tmp_path))
    assert "report: running" not in capsys.readouterr().out
    assert all(s["status"] == "collected" for s in results["sources"].values())
    first = json.loads((quick_report / "results.json").read_text())
    assert [r["measured"] for r in results["rows"]] == [r["measured"] for r in first["rows"]]
    text = (tmp_path / "report.md").read_text()
    for link in re.findall(r"\]\(([^)]+)\)", text):
        assert not link.startswith("..") and (tmp_path / link).is_file(), link


def test_malformed_results_json_is_a_clear_error(quick_report, tmp_path, capsys):
    bad = tmp_path / "complexity"
    bad.mkdir()
    good = json.loads((quick_report / "complexity" / "results.json").read_text())
    del good["fits"]["attention_core"]["N"]
    (bad / "results.json").write_text(json.dumps(good))
    with pytest.raises(ValueError, match=r"complexity/results.json.*'fits\.attention_core\.N'"):
        report_sources.load_results("complexity", str(bad))
    (bad / "results.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        report_sources.load_results("complexity", str(bad))
    # a whole report fails on it before running anything, naming the file and the key
    (bad / "results.json").write_text(json.dumps({"fits": {}}))
    c = _collect_config(quick_report, complexity=bad)
    c.rerun = False
    with pytest.raises(
        ValueError, match=r"complexity/results.json is malformed: missing key 'fits\.recurrent'"
    ):
        report.run(c, str(tmp_path / "out"))
    assert "report: running" not in capsys.readouterr().out


def test_exponent_verdict():
    assert thresholds.exponent_verdict([(1.02, 1.0), (1.95, 2.0)])[0] == probes.HOLDS
    assert thresholds.exponent_verdict([(1.02, 1.0), (2.25, 2.0)])[0] == probes.CAVEAT
    assert thresholds.exponent_verdict([(1.5, 1.0), (2.0, 2.0)])[0] == probes.FAILS
    assert thresholds.exponent_verdict([(float("nan"), 1.0)])[0] == probes.FAILS


def test_steps_and_speedup_verdicts():
    assert thresholds.steps_verdict(2.0, 2.0, 0, cores=(1.0, 1.8)) == probes.HOLDS
    assert thresholds.steps_verdict(2.0, 2.0, 0, cores=(1.0, 1.0)) == probes.CAVEAT
    assert thresholds.steps_verdict(2.0, 2.0, 3) == probes.FAILS
    assert thresholds.steps_verdict(0.0, 2.0, 0) == probes.FAILS
    assert thresholds.speedup_verdict(7.0, 512) == probes.HOLDS
    assert thresholds.speedup_verdict(2.0, 512) == probes.CAVEAT
    assert thresholds.speedup_verdict(7.0, 64) == probes.CAVEAT
    assert thresholds.speedup_verdict(0.5, 512) == probes.FAILS


def test_decay_bottleneck_and_quality_verdicts():
    assert thresholds.decay_verdict(0.9, 0.9999, 100, True) == probes.HOLDS
    assert thresholds.decay_verdict(0.9, 0.9999, 100, False) == probes.CAVEAT
    assert thresholds.decay_verdict(0.999, 0.9, 100, False) == probes.FAILS
    assert thresholds.quality_cost_verdict(97.0, 200.0, 96.5, 300.0) == probes.HOLDS
    assert (
        thresholds.quality_cost_verdict(97.0, 400.0, 96.5, 300.0) == probes.CAVEAT
    )  # level, slower
    assert (
        thresholds.quality_cost_verdict(90.0, 200.0, 96.5, 300.0) == probes.FAILS
    )  # behind, cheaper
    assert thresholds.quality_cost_verdict(90.0, 400.0, 96.5, 300.0) == probes.FAILS
    assert (
        thresholds.quality_cost_verdict(2.0, 200.0, 1.5, 300.0) == probes.FAILS
    )  # nothing learned


def test_bottleneck_verdict_needs_rnnenc_to_learn_then_fall():
    short = {"rnnsearch": 99.0, "transformer": 99.0}
    flat = {"rnnsearch": 95.0, "transformer": 90.0}
    floor, drop = thresholds.ENC_SHORT_FLOOR, thresholds.ENC_DROP
    # learned short sentences (at the floor), fell by the drop, attention flat and far ahead
    assert thresholds.bottleneck_verdict(floor, floor - drop, short, flat) == probes.HOLDS
    assert thresholds.bottleneck_verdict(90.0, 5.0, short, flat) == probes.HOLDS
    # the floor: an RNNenc that never learned shows no bottleneck, whatever the attention models do
    assert thresholds.bottleneck_verdict(floor - 0.1, 0.0, short, flat) == probes.NOT_SHOWN
    assert (
        thresholds.bottleneck_verdict(3.3, 4.1, short, flat) == probes.NOT_SHOWN
    )  # issue 10's run
    # the gap: learned, but did not fall with length
    assert thresholds.bottleneck_verdict(90.0, 90.0 - drop + 0.1, short, flat) == probes.FAILS
    # learned and fell, but attention only slightly ahead on long sources: a caveat
    assert (
        thresholds.bottleneck_verdict(99.0, 70.0, short, {"rnnsearch": 80.0, "transformer": 79.5})
        == probes.CAVEAT
    )
    # learned and fell, but attention collapsed as well and is behind
    assert (
        thresholds.bottleneck_verdict(99.0, 30.0, short, {"rnnsearch": 20.0, "transformer": 90.0})
        == probes.FAILS
    )
    assert thresholds.bottleneck_verdict(float("nan"), 5.0, short, flat) == probes.NOT_SHOWN
    assert thresholds.bottleneck_verdict(90.0, 5.0, short, {}) == probes.NOT_SHOWN


def test_bottleneck_row_says_why_it_is_not_shown():
    def entry(bl):
        return {"bleu_by_length": {"1-10": bl[0], "61+": bl[1]}, "n_seeds": 3}

    r = {
        "rnn_vs_attn": {
            "models": {
                "rnnenc": entry((3.3, 4.1)),
                "rnnsearch": entry((99.0, 98.5)),
                "transformer": entry((98.4, 50.0)),
            }
        }
    }
    _, verdict, why = report_rows._bottleneck(r)
    assert verdict == probes.NOT_SHOWN and "did not learn short sentences" in why
    assert "means of 3 seeds" in why


def test_recall_must_be_well_above_chance():
    chance = 1 / 8
    floor = chance + thresholds.ABOVE_CHANCE * (1 - chance)
    assert thresholds.recall_ok(0.95, [0.40, 0.30], chance)
    assert thresholds.recall_ok(floor, [floor], chance)
    # level with recurrent models that sit at chance: no recall shown
    assert not thresholds.recall_ok(0.13, [0.12, 0.13], chance)
    assert not thresholds.recall_ok(floor - 0.01, [0.1], chance)
    # well above chance but behind the best recurrent model
    assert not thresholds.recall_ok(0.80, [0.90], chance)
    assert not thresholds.recall_ok(float("nan"), [0.1], chance)
    assert not thresholds.recall_ok(0.95, [], chance)
    assert thresholds.well_above_chance(0.6, chance)
    assert not thresholds.well_above_chance(0.5, chance)
    assert (
        probes.NOT_SHOWN in probes.VERDICTS and probes.NOT_SHOWN in thresholds.thresholds_markdown()
    )


def test_unknown_experiment_and_preset_are_clear_errors(tmp_path):
    c = report_config.get_config("quick")
    c.experiments = ("complexity", "nope")
    with pytest.raises(ValueError, match="unknown experiments"):
        report.run(c, str(tmp_path))
    with pytest.raises(ValueError, match="unknown preset"):
        report_config.get_config("slow")


def test_missing_sources_are_not_measured_and_say_how_to_fill_them(tmp_path):
    c = report_config.get_config()
    c.run_missing = False
    for name in report_config.EXPERIMENTS:
        c.sources[name] = str(tmp_path / "nowhere" / name)
    results = report.run(c, str(tmp_path / "out"))
    assert [r["verdict"] for r in results["rows"]] == [probes.MISSING] * len(report_rows.ROWS)
    text = (tmp_path / "out" / "report.md").read_text()
    assert "python launch.py --experiment=rnn_vs_attn" in text


def test_rows_group_translators_by_the_registry():
    """The bottleneck row's attention models and the quality row's RNNs come from the model
    registry (family, cross_attention), in its order; variants NAME-N are not rows' models."""
    models = {n: {} for n in ("transformer", "rnnsearch-30", "convs2s", "luong", "rnnenc")}
    assert report_rows.translators(models, family="recurrent") == ["rnnenc", "luong"]
    assert report_rows.translators(models, family="convolutional") == ["convs2s"]
    assert report_rows.translators(models, cross_attention=True) == [
        "luong",
        "transformer",
        "convs2s",
    ]
    assert report_rows.translators(models, cross_attention=False) == ["rnnenc"]
