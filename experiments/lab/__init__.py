"""lab: the results pipeline every experiment shares, below every experiment's package.

    record.py      the tail of every run() (judge its claims, record, write) and any result's
                   claims by id, each judged by experiments/<name>/claims.py
    provenance.py  what made a result: commit, machine, versions, load, config and preset
    jsonio.py      results.json as plain JSON (below everything else here)
    outputs.py     report.md and the PNG plots, each stamped with what it is drawn from
    style.py       one look per model and variant across every figure
    progress.py    the k-of-n progress lines with an estimate of the time left
    exponents.py   a fitted exponent against theory, through the one verdict rule
    twins.py       claim shapes several experiments share
    committed.py   the committed results under results/
    registry.py    the experiments there are and their presets (launch.py reads them here)
    publish.py     the numbers and plots the README and docs show, from the committed results,
                   with each experiment's docs.py (`python -m experiments.lab.publish`)

Imports anatomy and itself only: an experiment's claims.py, config and docs.py are read by
name (tests/test_layering.py holds it to that).
"""
