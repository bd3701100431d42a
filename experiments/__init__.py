"""Experiments: one package per experiment, `experiments/<name>/`, each with
`run(config, workdir) -> dict` in its `__init__.py`, a module per contender family it compares,
`claims.py` (its claims and their thresholds, judged on what its results.json holds) and
`plots.py`. Their configs live in `experiments/configs/<name>.py` (`get_config(preset=None)`);
`python launch.py --experiment=<name>` runs one. Shared: `lab/`, the results pipeline (the tail
of every run and any result's claims by id, provenance, outputs, the committed results, and
`lab/publish.py`, which writes the numbers the README and docs quote from each experiment's
`docs.py`); `report/` is the chapter: its closing table, its scorecard and its pages' renderers.
"""
