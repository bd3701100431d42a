"""Smoke test of the data_stats experiment on its quick preset."""
import json

from experiments import data_stats
from experiments.configs import data_stats as data_stats_config


def test_data_stats_quick(tmp_path):
    results = data_stats.run(data_stats_config.get_config('quick'), str(tmp_path))
    assert results['splits']['test']['per_bucket'] == {k: 5 for k in results['splits']['test']['per_bucket']}
    for name in ('train.tsv', 'valid.tsv', 'test.tsv', 'lengths.png', 'results.json', 'report.md'):
        assert (tmp_path / name).exists()
    assert len((tmp_path / 'train.tsv').read_text(encoding='utf-8').splitlines()) == 500
    assert json.loads((tmp_path / 'results.json').read_text())['corpus'] == 'toy_wmt'
