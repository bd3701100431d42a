"""data_stats: export a corpus as TSV and print its statistics (sizes, vocabularies, lengths).

`python launch.py --experiment=data_stats` writes train/valid/test .tsv, results.json, report.md
and lengths.png into the workdir. Presets: default (the toy_wmt corpus the experiments train
on), 'quick' (a small corpus, for tests).
"""

import ml_collections

from anatomy.data import default_config

PRESETS = ("", "quick")


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.data = default_config()  # the corpus to look at; fields documented in anatomy.data.corpus
    c.export_tsv = True  # write <split>.tsv (source<TAB>target) for every split
    c.examples = 5  # how many (source, target) pairs per test length bucket to show in report.md
    if preset == "quick":
        c.data.toy.train_size = 500
        c.data.toy.valid_size = 50
        c.data.toy.test_per_bucket = 5
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose 'quick' or none")
    return c
