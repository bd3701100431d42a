"""report: the chapter's table from measurements, through launch.py; verdicts; malformed inputs."""

import json
import os
import re
import shutil
import subprocess

import pytest
from conftest import launch
from helpers import gradient_decay_results, long_range_results, per_seed

from anatomy import probes
from anatomy.errors import BadInputError
from experiments import report
from experiments.complexity import claims as complexity_claims
from experiments.configs import report as report_config
from experiments.decode_cost import claims as decode_cost_claims
from experiments.gradient_decay import claims as gradient_claims
from experiments.lab import exponents, record
from experiments.long_range import claims as long_range_claims
from experiments.parallelism import claims as parallelism_claims
from experiments.report import rows as report_rows
from experiments.report import sources as report_sources
from experiments.rnn_vs_attn import claims as rnn_vs_attn_claims


def test_quick_report_has_every_row_with_a_verdict(quick_report):
    results = json.loads((quick_report / "results.json").read_text())
    rows = results["rows"]
    assert [r["property"] for r in rows] == [row.property for row in report_rows.ROWS]
    # each row cites claims by id, and shows exactly what its experiment judged
    for row, spec in zip(rows, report_rows.ROWS):
        assert row["claims"] == list(spec.claims)
        for cid in spec.claims:
            name = cid.split("/")[0]
            sub = json.loads((quick_report / name / "results.json").read_text())
            claim = record.claims_of(name, sub)[cid]
            assert claim.measured in row["measured"] and claim.detail in row["detail"], cid
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
    # each source says what made it: its commit and preset, recorded by the run itself
    assert all(s["preset"] == "quick" for s in results["sources"].values()), results["sources"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:
        assert all(s["commit"].startswith(head.stdout[:7]) for s in results["sources"].values())
    assert results["provenance"]["preset"] == "quick"
    text = (quick_report / "report.md").read_text()
    assert "| commit | preset |" in text and "Run: commit" in text
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
    c.preset = "quick"  # the quick report's sources were made by the quick presets
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


def test_results_made_by_another_config_are_refused_or_rerun(
    quick_report, tmp_path, capsys, monkeypatch
):
    """A collected results.json whose recorded config differs from the one the report would run
    is refused in one line naming the experiment and the fields, or re-run on request."""
    other = tmp_path / "complexity"
    shutil.copytree(quick_report / "complexity", other)
    res = json.loads((other / "results.json").read_text())
    res["config"]["seed"] = 7  # made with another seed
    res["provenance"]["config_fingerprint"] = "something else"
    (other / "results.json").write_text(json.dumps(res))
    c = _collect_config(quick_report, complexity=other)
    with pytest.raises(BadInputError, match=r"complexity.*seed: 7 -> 0") as e:
        report.run(c, str(tmp_path / "out"))
    assert "\n" not in str(e.value) and "report: running" not in capsys.readouterr().out
    # the default report runs the default presets: quick results are refused, naming a field
    c.preset = ""
    with pytest.raises(BadInputError, match=r"default preset of gradient_decay.*->"):
        report.run(c, str(tmp_path / "out"))
    # results that record no config at all say so
    del res["config"], res["provenance"]
    (other / "results.json").write_text(json.dumps(res))
    c = _collect_config(quick_report, complexity=other)
    with pytest.raises(BadInputError, match="complexity.*no config recorded"):
        report.run(c, str(tmp_path / "out"))
    # on_mismatch='rerun': the stale source is measured again (a stub run here), the rest collected
    ran = []

    def fake_run(name, preset, workdir):
        ran.append((name, preset))
        return json.loads((quick_report / name / "results.json").read_text())

    monkeypatch.setattr(report_sources, "run_experiment", fake_run)
    c.on_mismatch = "rerun"
    results = report.run(c, str(tmp_path / "out2"))
    assert ran == [("complexity", "quick")]
    assert results["sources"]["complexity"]["status"] == "ran"
    assert {s["status"] for n, s in results["sources"].items() if n != "complexity"} == {
        "collected"
    }
    c.on_mismatch = "ignore"
    with pytest.raises(BadInputError, match="on_mismatch"):
        report.run(c, str(tmp_path / "out3"))


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


def test_claims_are_cited_by_id_and_combined_by_verdict():
    """anatomy.probes.claims: a claim's id survives results.json (first, and only when it has
    one); by_id refuses a claim without one or two with the same; weakest combines verdicts,
    never numbers."""
    from anatomy.probes import claims

    c = claims.Claim("attention: no decay", "rate ≈ 1", "1.0/step", probes.HOLDS, id="x/direct")
    (row,) = claims.claims_json([c])
    assert list(row) == ["id", "claim", "expected", "measured", "verdict", "detail"]
    assert claims.from_json([row]) == [c] and claims.by_id([c]) == {"x/direct": c}
    bare = claims.Claim("x", "y", "z", probes.FAILS)
    assert "id" not in bare.as_dict()
    with pytest.raises(ValueError, match="has no id"):
        claims.by_id([bare])
    with pytest.raises(ValueError, match="shares id 'x/direct'"):
        claims.by_id([c, c])
    H, D, F, N, M = (
        probes.HOLDS,
        probes.DID_NOT_LEARN,
        probes.FAILS,
        probes.UNDECIDED,
        probes.MISSING,
    )
    assert claims.weakest([H, H]) == H and claims.weakest([H, D]) == D
    assert claims.weakest([D, N, H]) == D and claims.weakest([N, F, M]) == F
    assert claims.weakest([]) == M
    assert not hasattr(report_rows.Row, "combine")  # every row is its weakest claim
    assert claims.finite(1, 2.5) and not claims.finite(1, None) and not claims.finite(float("nan"))


def test_a_claim_read_from_results_names_a_missing_key():
    """record.claims_of judges results.json as it is stored; a key a claim reads that is not
    there is a KeyError naming its whole path (the report turns it into one line)."""
    results = {"config": {"d_fixed": 8}, "parallel_work": {}, "fits": {"conv": {}}}
    with pytest.raises(KeyError, match="fits.recurrent"):
        record.claims_of("complexity", results)
    stored = record.stored({"fits": {"conv": {"N": {"exponent": 1.0}}}})
    with pytest.raises(KeyError, match="fits.conv.d"):
        stored["fits"]["conv"]["d"]


def test_exponent_verdict_on_both_sides_of_each_edge():
    """An exact exponent against theory ± EXPONENT_TOL: no caveat band any more (2.25 against
    2 used to be a caveat)."""
    tol = exponents.EXPONENT_TOL
    verdict = lambda *pairs: exponents.exponent_verdict(list(pairs))[0]
    assert verdict((1.02, 1.0), (1.95, 2.0)) == probes.HOLDS
    assert verdict((1.0 + tol, 1.0)) == verdict((1.0 - tol, 1.0)) == probes.HOLDS
    assert verdict((1.0 + tol + 1e-6, 1.0)) == verdict((1.0 - tol - 1e-6, 1.0)) == probes.FAILS
    assert verdict((1.02, 1.0), (2.25, 2.0)) == probes.FAILS
    assert verdict((float("nan"), 1.0)) == verdict((None, 1.0)) == probes.UNDECIDED
    c = exponents.exponent_claim("x/e", "attention O(N²·d)", 2.04, 2.0, "N")
    assert (c.expected, c.measured, c.verdict) == ("N^(2 ± 0.15)", "N^2.040", probes.HOLDS)


def _timing(n, times, busy):
    """One timed row of parallelism's raw results: wall times and per-call CPU times."""
    times = [float(t) for t in times]
    return {"n": n, "times_s": times, "cpus_s": [t * busy for t in times], "flops": 1e9, "cores": 2}


def _parallelism(slope, attn_steps, busy=(1.0, 1.8), cores=2, ratio=7.0, spread=0.01):
    """parallelism results as its claims read them: the LSTM's loop steps per token
    (fwd+bwd), attention's loops, busy cores (LSTM, attention) and the LSTM / attention wall
    time `ratio` at N = 512 of `cores`, five timed calls each within ±spread."""
    wobble = [1.0 - 2 * spread, 1.0 - spread, 1.0, 1.0 + spread, 1.0 + 2 * spread]
    return {
        "analysis": {
            "lstm_steps_per_token": slope,
            "attention_max_steps": attn_steps,
            "ratio_n": 512,
            "device_kind": "cpu x1",
            "load_average_before_after": [0.5, 0.6],
        },
        "raw": {
            "lstm": [_timing(512, [ratio * w for w in wobble], busy[0])],
            "attention": [_timing(512, wobble[::-1], busy[1])],
        },
    }


def test_speedup_is_judged_against_the_chapters_range_with_its_interval():
    """LSTM / attention time at N = 512, bootstrapped over the timing repeats, against [5, 10]:
    inside holds; far faster is outside the claim, not agreement; straddling is not shown."""
    par = parallelism_claims
    lo, hi = par.SPEEDUP_RANGE
    assert par.speedup(_parallelism(2.0, 0, ratio=7.0)).verdict == probes.HOLDS
    assert par.speedup(_parallelism(2.0, 0, ratio=lo * 1.05)).verdict == probes.HOLDS
    assert par.speedup(_parallelism(2.0, 0, ratio=lo * 0.9)).verdict == probes.FAILS
    assert par.speedup(_parallelism(2.0, 0, ratio=hi * 1.1)).verdict == probes.FAILS
    assert par.speedup(_parallelism(2.0, 0, ratio=0.5)).verdict == probes.FAILS
    wide = par.speedup(_parallelism(2.0, 0, ratio=lo, spread=0.2))
    assert wide.verdict == probes.UNDECIDED and "straddles the edge 5" in wide.detail
    other_n = _parallelism(2.0, 0)
    other_n["analysis"]["ratio_n"] = 64
    assert par.speedup(other_n).verdict == probes.UNDECIDED  # a run that cannot measure it
    assert par.wall_clock(_parallelism(2.0, 0, ratio=0.5)).id == "parallelism/wall_clock"


def test_steps_verdict_has_both_sides():
    par = parallelism_claims
    tol = par.STEPS_TOL
    # forward + backward: 2 loop steps per token (the distance row halves it: 1 forward);
    # attention: no loop
    assert par.distance(_parallelism(2.0, 0)).verdict == probes.HOLDS
    assert "= 1.00·N (LSTM)" in par.distance(_parallelism(2.0, 0)).measured
    assert par.lstm_steps(_parallelism(2.0 - tol / 2, 0)).verdict == probes.HOLDS
    margin = par.CORES_MARGIN
    more = _parallelism(2.0, 0, (1.0, 1.0 + 2 * margin))
    assert par.parallel_training(more).verdict == probes.HOLDS
    # the structure holds but attention kept no more cores busy: no caveat, the weaker part
    level = _parallelism(2.0, 0, (1.0, 1.0))
    assert par.busy_margin(level).verdict == probes.FAILS
    assert par.parallel_training(level).verdict == probes.FAILS
    # any other serial count does not hold
    for slope in (0.5, 1.5, 2.0 + 2 * tol, 0.0):
        for claim in (par.distance, par.parallel_training):
            assert claim(_parallelism(slope, 0)).verdict == probes.FAILS, (slope, claim)
    assert par.distance(_parallelism(float("nan"), 0)).verdict == probes.UNDECIDED
    assert par.distance(_parallelism(4.0, 0)).verdict == probes.FAILS  # 2N forward, N claimed
    assert par.distance(_parallelism(2.0, 1)).verdict == probes.FAILS  # a loop in attention
    # one core: the LSTM's busy cores against 1 ± ONE_CORE_TOL
    assert par.one_core(_parallelism(2.0, 0, (1.05, 1.8))).verdict == probes.HOLDS
    assert par.one_core(_parallelism(2.0, 0, (1.5, 1.8))).verdict == probes.FAILS
    # a machine loaded beyond its cores: busy cores measure the contention, not the program
    busy = _parallelism(2.0, 0, (1.05, 1.8))
    busy["analysis"]["load_average_before_after"] = [11.2, 6.3]
    for claim in (par.one_core, par.busy_margin, par.parallel_training):
        c = claim(busy)
        assert c.verdict == probes.UNDECIDED and "load of 11.2" in c.detail, claim


def test_long_range_row_is_the_weakest_of_its_halves():
    long_range = {r.property: r for r in report_rows.ROWS}["long-range dependency"]
    assert long_range.claims == ("gradient_decay/decay", "long_range/recall")
    H, F, N = probes.HOLDS, probes.FAILS, probes.UNDECIDED
    assert probes.weakest([H, F]) == F and probes.weakest([H, N]) == N


def _seeds(*values):
    return [float(v) for v in values]


def test_quality_cost_is_judged_over_seeds():
    parts = rnn_vs_attn_claims.quality_parts
    verdict = rnn_vs_attn_claims.quality_cost_verdict
    level = _seeds(97.0, 97.2, 96.9)
    rnn = _seeds(96.5, 96.6, 96.4)
    cheap, dear = _seeds(200, 205, 198), _seeds(400, 410, 395)
    secs = _seeds(300, 301, 299)
    assert verdict(parts(level, cheap, rnn, secs), True)[0] == probes.HOLDS
    # level but slower to train: the cost part fails, and the claim with it (no caveat)
    assert verdict(parts(level, dear, rnn, secs), True)[0] == probes.FAILS
    assert verdict(parts(_seeds(90, 90.5, 89.5), cheap, rnn, secs), True)[0] == probes.FAILS
    # a level that straddles the tie edge over seeds: not shown
    noisy = _seeds(97.0, 93.0, 96.5)
    assert verdict(parts(noisy, cheap, rnn, secs), True)[0] == probes.UNDECIDED
    # one seed, or nothing learned: not shown
    assert verdict(parts([97.0], [200.0], [96.5], [300.0]), True)[0] == probes.UNDECIDED
    assert verdict(parts(level, cheap, rnn, secs), False)[0] == probes.UNDECIDED


def _bottleneck(enc, attn_short, attn_long):
    """bottleneck_verdict of per-seed BLEU: enc = (short, long) lists; attention dicts."""
    parts = rnn_vs_attn_claims.bottleneck_parts(enc[0], enc[1], attn_short, attn_long)
    return rnn_vs_attn_claims.bottleneck_verdict(parts)[0]


def test_bottleneck_verdict_needs_rnnenc_to_learn_then_fall():
    floor, drop = rnn_vs_attn_claims.ENC_SHORT_FLOOR, rnn_vs_attn_claims.ENC_DROP
    gap = rnn_vs_attn_claims.BLEU_GAP
    short = {"rnnsearch": _seeds(99, 99.2, 98.8), "transformer": _seeds(99, 98.9, 99.1)}
    flat = {"rnnsearch": _seeds(95, 95.5, 94.5), "transformer": _seeds(90, 90.4, 89.6)}
    learned = _seeds(90, 91, 89)
    # learned, fell by more than the drop, attention flat and far ahead
    assert _bottleneck((learned, _seeds(5, 6, 4)), short, flat) == probes.HOLDS
    # the floor: an RNNenc that never learned shows no bottleneck
    low = _seeds(floor - 5, floor - 4, floor - 6)
    assert _bottleneck((low, _seeds(0, 0.5, 0.2)), short, flat) == probes.UNDECIDED
    assert _bottleneck(([90.0], [5.0]), {"t": [99.0]}, {"t": [95.0]}) == probes.UNDECIDED
    # learned, but did not fall: the drop's interval lies below its edge
    stays = _seeds(90 - drop + 5, 90 - drop + 6, 90 - drop + 4)
    assert _bottleneck((learned, stays), short, flat) == probes.FAILS
    # learned and fell, but attention only slightly ahead on long sources: no caveat
    slight = {"rnnsearch": _seeds(12, 12.5, 11.5), "transformer": _seeds(90, 90, 90)}
    v = _bottleneck((learned, _seeds(5, 6, 4)), short, slight)
    assert v == probes.FAILS and 5 + gap > 12.5
    # learned and fell, but an attention model collapsed as well
    collapsed = {"rnnsearch": _seeds(20, 21, 19), "transformer": _seeds(90, 90.2, 89.8)}
    assert _bottleneck((learned, _seeds(5, 6, 4)), short, collapsed) == probes.FAILS
    # a drop that straddles its edge over seeds: not shown
    edge = _seeds(90 - drop - 10, 90 - drop + 10, 90 - drop)
    assert _bottleneck((learned, edge), short, flat) == probes.UNDECIDED


def test_bottleneck_row_says_why_it_is_not_shown():
    def entry(bl):
        seeds = [{"bleu_by_length": {"1-10": s, "61+": g}} for s, g in zip(*bl)]
        return {"bleu_by_length": {"1-10": bl[0][0], "61+": bl[1][0]}, "n_seeds": 3, "seeds": seeds}

    results = {
        "models": {
            "rnnenc": entry((_seeds(3.3, 3.1, 3.5), _seeds(4.1, 4.0, 4.2))),
            "rnnsearch": entry((_seeds(99, 99, 99), _seeds(98.5, 98.5, 98.5))),
            "transformer": entry((_seeds(98.4, 98.4, 98.4), _seeds(50, 50, 50))),
        }
    }
    claim = rnn_vs_attn_claims.bottleneck(results)
    assert claim.verdict == probes.UNDECIDED
    assert "RNNenc's learning of short sentences is not shown" in claim.detail
    assert "3 seed(s)" in claim.detail


def test_the_verdict_rules_name_not_shown():
    assert probes.UNDECIDED in probes.VERDICTS and probes.UNDECIDED in report.verdict_rules()


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
    translators = rnn_vs_attn_claims.translators
    models = {n: {} for n in ("transformer", "rnnsearch-30", "convs2s", "luong", "rnnenc")}
    assert translators(models, family="recurrent") == ["rnnenc", "luong"]
    assert translators(models, family="convolutional") == ["convs2s"]
    assert translators(models, cross_attention=True) == ["luong", "transformer", "convs2s"]
    assert translators(models, cross_attention=False) == ["rnnenc"]


def _long_range_row(transformer_far):
    """The report's long-range row from injected gradient_decay and long_range results, the
    Transformer's recall at the largest k injected."""
    lr = long_range_results(
        {"rnn": [1.0, 0.13], "lstm": [1.0, 0.30], "transformer": [1.0, transformer_far]}, [1, 32]
    )
    gradients = gradient_decay_results(
        {"rnn saturating orthogonal σ=1": per_seed(0.9, 0.01), "lstm": per_seed(0.97, 0.01)}
        | {"attention": per_seed(0.99999, 1e-4)}
    )
    claims = {c.id: c for c in (gradient_claims.decay(gradients), long_range_claims.recall(lr))}
    row = {r.property: r for r in report_rows.ROWS}["long-range dependency"]
    return report.row_claim(row, claims)


def test_long_range_row_says_when_recall_fails():
    """The row's 'why' follows the recall check: it used to overwrite the check with the
    accuracy text (a non-empty string) and so always said 'agrees'."""
    row = _long_range_row(0.99)
    assert row.verdict == probes.HOLDS and "recall agrees" in row.detail
    assert "transformer 0.99" in row.measured
    # attention at chance at the largest k: the recall half fails, and the row says so
    row = _long_range_row(0.12)
    assert row.verdict != probes.HOLDS  # the weakest of its halves, never a caveat
    assert "agrees" not in row.detail and "does not put attention ahead" in row.detail
    assert "transformer 0.12" in row.measured


def test_parallel_work_verdict_has_both_sides():
    ns = [64, 128, 256]
    tol = exponents.EXPONENT_TOL
    # O(N) work like the scan (a constant ratio, or one growing slowly)
    assert complexity_claims.parallel_work_verdict(1.0, 1.0, [2.0, 2.0, 2.0], ns) == probes.HOLDS
    assert (
        complexity_claims.parallel_work_verdict(1.0, 1.06, [1.31, 1.38, 1.43], ns) == probes.HOLDS
    )
    # O(N log N): the ratio grows as log2 N, the claim's allowance spent, still within it
    logs = [6.0, 7.0, 8.0]
    assert complexity_claims.parallel_work_verdict(1.0, 1.0 + 2 * tol, logs, ns) == probes.HOLDS
    # just more than the log factor allows
    over = [6.0, 7.0, 8.0 * 1.01]
    assert complexity_claims.parallel_work_verdict(1.0, 1.0 + 2 * tol, over, ns) == probes.FAILS
    # more than a log factor (here N^2 against N^1), or a broken sequential reference
    assert complexity_claims.parallel_work_verdict(1.0, 2.0, [1.0, 2.0, 4.0], ns) == probes.FAILS
    assert complexity_claims.parallel_work_verdict(1.5, 1.5, [1.0, 1.0, 1.0], ns) == probes.FAILS
    nan = float("nan")
    assert complexity_claims.parallel_work_verdict(nan, 1.0, [1.0] * 3, ns) == probes.UNDECIDED
    assert complexity_claims.parallel_work_verdict(1.0, 1.0, [1.0], [64]) == probes.UNDECIDED


def test_linear_work_row_judges_complexity_parallel_work():
    good = {"n": [64, 128, 256], "scan_exponent": 1.0, "assoc_exponent": 1.06}
    work = {"mingru": {**good, "ratio": [1.3, 1.38, 1.43]}}
    results = {"config": {"d_fixed": 8}, "parallel_work": work}
    assert complexity_claims.linear_work(results).verdict == probes.HOLDS
    work["mamba"] = {**good, "assoc_exponent": 2.0, "ratio": [1.0, 2.0, 4.0]}
    claim = complexity_claims.linear_work(results)
    assert claim.verdict == probes.FAILS and "mamba: N^2.00" in claim.measured
    results["parallel_work"] = {}
    assert complexity_claims.linear_work(results).verdict == probes.MISSING


def test_decode_exponent_zero_must_be_earned():
    """decode_cost.n_dependent_fit: exponent 0 only for the same FLOPs at every N; a cost that
    grows with N is fitted even when subtracting the N = 1 cost leaves <= 0 somewhere."""
    from experiments import decode_cost

    n = [64, 128, 256]
    flat = decode_cost.n_dependent_fit(n, [5000.0] * 3, per_token=5000.0)
    assert flat["basis"] == "flat" and flat["exponent"] == 0.0
    # above the N = 1 cost and growing: the excess is fitted (N^1 here)
    grow = decode_cost.n_dependent_fit(n, [5064.0, 5128.0, 5256.0], per_token=5000.0)
    assert grow["basis"] == "excess" and abs(grow["exponent"] - 1.0) < 1e-9
    # growing with N, but the N = 1 program costs more than N = 64's (the old fallback called
    # this 'no N-dependent FLOPs': exponent 0, r² 1): the total is fitted, so growth shows
    hidden = decode_cost.n_dependent_fit(n, [4000.0, 8000.0, 16000.0], per_token=6000.0)
    assert hidden["basis"] == "total" and abs(hidden["exponent"] - 1.0) < 1e-9
    # a cost that changes with N by more than the tolerance is not flat
    tiny = 1 + 10 * decode_cost_claims.FLAT_FLOPS_RTOL
    assert decode_cost.n_dependent_fit(n, [5000.0, 5000.0 * tiny, 5000.0], 5000.0)["basis"] != (
        "flat"
    )
    # through fits(): the claim row of a flat program reads 0, a growing one its fit
    raw = {
        "window": [{"n": x, "flops": 5000.0, "median_s": 1e-5} for x in n],
        "kv_cache": [{"n": x, "flops": 5000.0 + x, "median_s": 1e-5} for x in n],
    }
    f = decode_cost.fits(None, raw, {"window": 5000.0, "kv_cache": 5000.0})
    assert f["window"]["flops_n_dependent"]["exponent"] == 0.0
    assert abs(f["kv_cache"]["flops_n_dependent"]["exponent"] - 1.0) < 1e-9


def test_the_closing_table_from_the_committed_results_runs_nothing(tmp_path):
    """--preset=committed judges results/ as committed (experiments.lab.committed.VERDICTS_FROM),
    says which file each row reads, and runs no experiment: the README's command, through
    launch.py on an install without torch (conftest.launch)."""
    from experiments.lab import committed

    out = launch("--experiment=report", "--preset=committed", f"--workdir={tmp_path}")
    assert "report: running" not in out.stdout
    results = json.loads((tmp_path / "results.json").read_text())
    for name, src in results["sources"].items():
        path = f"results/{committed.VERDICTS_FROM[name]}.json"
        assert src["results_json"] == path
        exists = os.path.exists(os.path.join(committed.ROOT, path))
        assert src["status"] == ("committed" if exists else "missing"), name
    assert "results/rnn_vs_attn/seeds.json" in (tmp_path / "report.md").read_text()
