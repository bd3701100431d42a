"""Learning-rate grids committed as several runs of an experiment's 'lr_grid' preset over
disjoint rates (a rate added once a choice sat on the grid's edge), read as one grid."""


def merge_grids(grids, fields):
    """(rates ascending, {field: {contender: [value per rate]}}) of lr_grid results run over
    disjoint rates with the same contenders; each of `fields` holds {contender: [per rate]}.
    Overlapping rates or a contender missing from a run are a ValueError."""
    names = list(grids[0][fields[0]])
    points = sorted(
        ((r, g, i) for g in grids for i, r in enumerate(g["rates"])), key=lambda p: p[0]
    )
    rates = [r for r, _, _ in points]
    lacking = any(list(g[f]) != names for g in grids for f in fields)
    if len(set(rates)) != len(rates) or lacking:
        raise ValueError(f"the grids overlap or lack a contender: rates {sorted(rates)}, {names}")
    return rates, {f: {m: [g[f][m][i] for _, g, i in points] for m in names} for f in fields}
