"""Smoke test of the data_stats experiment on its quick preset."""

import json

from anatomy import data
from experiments import data_stats
from experiments.configs import data_stats as data_stats_config


def test_data_stats_quick(tmp_path):
    results = data_stats.run(data_stats_config.get_config("quick"), str(tmp_path))
    labels = [data.bucket_label(lo, hi) for lo, hi in data.LENGTH_BUCKETS]
    test, train = results["splits"]["test"], results["splits"]["train"]
    assert test["per_bucket"] == {k: 5 for k in labels} and test["pairs"] == 5 * len(labels)
    assert train["pairs"] == 500 and sum(train["per_bucket"].values()) == 500  # buckets partition
    # recounted from the exported TSV: source tokens per line, bucketed by hand
    lens = [
        len(line.split("\t")[0].split())
        for line in (tmp_path / "test.tsv").read_text(encoding="utf-8").splitlines()
    ]
    assert [sum(lo <= n <= (hi or n) for n in lens) for lo, hi in data.LENGTH_BUCKETS] == [5] * len(
        labels
    )
    for name in ("train.tsv", "valid.tsv", "test.tsv", "lengths.png", "results.json", "report.md"):
        assert (tmp_path / name).exists()
    assert len((tmp_path / "train.tsv").read_text(encoding="utf-8").splitlines()) == 500
    assert json.loads((tmp_path / "results.json").read_text())["corpus"] == "toy_wmt"
