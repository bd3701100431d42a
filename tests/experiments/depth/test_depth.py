"""The depth experiment: its verdicts on injected numbers (each side of each edge of each
claim, by the one verdict rule; every judged claim reaches both holds and does not hold here),
the learning-rate grid's choice and the rates written into the config against the committed
grid, the pilot's sizing, its data against a direct count, its compiled training program
against a plain Python loop, Xiong's vmapped gradient at init against the training program's
first step, its plots from a results.json alone, and the quick preset through launch.py."""

import functools
import json
import math

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import pytest

from anatomy import probes
from anatomy.compiling import compiler_options, jit_options
from anatomy.errors import BadInputError
from anatomy.train.optim import make_optimizer
from experiments.configs import depth as depth_config
from experiments.configs.depth import get_config
from experiments.depth import (
    VARIANTS,
    XIONG,
    check,
    choose,
    claims,
    data,
    plots,
    tables,
    train,
)
from experiments.depth import lm as depth_lm
from experiments.lab import committed, record, style

FAILS, HOLDS, UNDECIDED = probes.FAILS, probes.HOLDS, probes.UNDECIDED
DID_NOT_LEARN, MISSING, REPORTED = probes.DID_NOT_LEARN, probes.MISSING, probes.REPORTED
UNIGRAM = 3.0
TOL = claims.STACK_TOL
SEEDS = 5
XIONG_SEEDS = 16
STEADY = {1: 2.40, 2: 2.30, 4: 2.20, 8: 2.10}  # the same gain at every doubling: ratio 1
DIMINISHING = {1: 2.40, 2: 2.20, 4: 2.15, 8: 2.14}  # g(4→8) / g(1→2) = 0.05: not steady
WORSE_AT_8 = {1: 2.30, 2: 2.20, 4: 2.10, 8: 2.40}
EARLY = {1: 2.30, 2: 2.60, 4: 2.60, 8: 2.20}  # worse at 2 (GNMT's few), better past 4
OFFSETS = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])


def _seeds(mean, spread=1e-3, turn=0):
    """SEEDS losses around `mean`, off by up to ±2·spread in an order turned by `turn` (so a
    seed's offsets do not cancel in every difference between depths)."""
    return [float(mean + spread * o) for o in np.roll(OFFSETS, turn)]


def _xiong(exponent, spread, depths=(4, 8, 16, 32, 64), turn=0):
    """{L: XIONG_SEEDS norms} whose seeds' own log-log slopes are exponent ± up to spread."""
    offsets = np.roll(np.linspace(-spread, spread, XIONG_SEEDS), turn)
    return {str(d): [float(2.0 * d ** (exponent + e)) for e in offsets] for d in depths}


def _variant(name, by_depth, spread, rate=3e-3):
    v = VARIANTS[name]
    depths = {
        str(d): {
            "loss": x if isinstance(x, list) else _seeds(x, spread, turn=i),
            "learning_rate": rate,
            "init_grad_layers": [[1.0] * d] * SEEDS,
            "init_grad_xiong": [1.0] * SEEDS,
            "seconds_per_step": 0.01 * d,
            "params": 1000 * d,
            "compile_s": 1.0,
            "curve": {"step": [0, 1], "loss": [[4.0, 2.0]] * SEEDS},
        }
        for i, (d, x) in enumerate(by_depth.items())
    }
    return {
        "family": v.family,
        "label": v.label,
        "warmup_steps": 30 if v.warmup else 0,
        "depths": depths,
    }


def fake(losses=None, exponents=None, serial=None, spread=1e-3, xiong_spread=0.02):
    """results.json as depth writes it (every part at once), from {variant: {L: mean or
    [seeds]}}: pre-LN STEADY, the ablations and the plain LSTM WORSE_AT_8, the LSTM with
    residual + LN STEADY; at L = 6 post-LN without warmup at the unigram loss, with warmup and
    DeepNorm learned; Xiong's exponents the theorem's (DeepNorm -0.2), each seed's slope
    within ±xiong_spread; serial steps exact."""
    losses = {
        "pre": STEADY,
        "no_residual": WORSE_AT_8,
        "lstm": WORSE_AT_8,
        "lstm_residual_ln": STEADY,
        "post_warmup": {6: 2.0},
        "post": {6: UNIGRAM},
        "deepnorm": {6: 2.1},
        **(losses or {}),
    }
    exponents = {"post": 0.0, "pre": -0.5, "deepnorm": -0.2, **(exponents or {})}
    n = 64
    serial = serial or {
        "recurrent": {
            str(d): {"n": n, "hlo": d * n, "jaxpr": d * n, "variant": "lstm"} for d in STEADY
        },
        "attention": {str(d): {"n": n, "hlo": 0, "jaxpr": 0, "variant": "pre"} for d in STEADY},
    }
    return {
        "config": {},
        "data": {"unigram_loss": {"test": UNIGRAM, "valid": UNIGRAM}, "eval_characters": 100},
        "split": "test",
        "seeds": list(range(SEEDS)),
        "variants": {
            name: _variant(name, by, spread) for name, by in losses.items() if by is not None
        },
        "serial_steps": serial,
        "lr_grid": {
            "learning_rates": [1e-3, 3e-3, 1e-2],
            "seeds": [1000],
            "tried": {"pre": {"1": [1e-3, 3e-3, 1e-2]}},
            "valid_loss": {"pre": {"1": [[2.5], [2.4], [2.6]]}},
            "chosen": {"pre": {"1": 3e-3}},
            "extend": 2,
        },
        "cost": {"cpu_seconds": 1.0, "wall_seconds": 1.0, "compile_seconds": 0.5},
        "xiong": {
            name: _xiong(a, xiong_spread, turn=i) for i, (name, a) in enumerate(exponents.items())
        },
    }


def judge(results):
    """The table's claims, then the chapter's, as record.claims_of reads them."""
    return [*claims.table(results), *claims.chapter(results)]


def verdicts(results):
    return {c.id: c.verdict for c in judge(results)}


def verdict(fn, results):
    """One claim's verdict (cheaper than the whole table)."""
    return fn(results).verdict


# ------------------------------------------------------------------ claims on injected numbers

# judged claims, each with injected numbers that make it hold and others that make it fail
BOTH_WAYS = {
    "depth/pre_ln_stacks": ({}, {"losses": {"pre": WORSE_AT_8}}),
    "depth/steady_gain": ({}, {"losses": {"pre": DIMINISHING}}),
    "depth/no_residual_breaks": ({}, {"losses": {"no_residual": STEADY}}),
    "depth/lstm_plain_degrades": ({}, {"losses": {"lstm": STEADY}}),
    "depth/lstm_plain_stacks_to_4": ({}, {"losses": {"lstm": EARLY}}),
    "depth/lstm_residual_ln_stacks": ({}, {"losses": {"lstm_residual_ln": WORSE_AT_8}}),
    "depth/serial_steps": (
        {},
        {
            "serial": {
                "recurrent": {"2": {"n": 4, "hlo": 7, "jaxpr": 8, "variant": "lstm"}},
                "attention": {"2": {"n": 4, "hlo": 0, "jaxpr": 0, "variant": "pre"}},
            }
        },
    ),
    "depth/post_ln_needs_warmup": ({}, {"losses": {"post": {6: 2.02}}}),
    "depth/deepnorm_stable": ({}, {"losses": {"deepnorm": {6: [2.1, 2.1, math.nan, 2.1, 2.1]}}}),
    "depth/xiong_post_flat": ({}, {"exponents": {"post": 0.3}}),
    "depth/xiong_pre_sqrt": ({}, {"exponents": {"pre": -0.2}}),
    "depth/xiong_direction": ({}, {"exponents": {"post": -0.5, "pre": 0.0}}),
    "depth/stackability": ({}, {"losses": {"pre": WORSE_AT_8}}),
}
# reported beside the verdicts, never judged: the LSTM against the Transformer (GNMT's and
# RNMT+'s finding, the answer at this budget either way), the time per step (it moves with
# the load), DeepNorm's exponent (no theorem gives it one)
NEVER_JUDGED = {"depth/lstm_vs_transformer", "depth/time_per_step", "depth/deepnorm_slope"}


def test_every_claim_can_hold_and_fail():
    everything = verdicts(fake())
    assert set(everything) == set(BOTH_WAYS) | NEVER_JUDGED  # every claim is in one of them
    assert all(everything[i] == REPORTED for i in NEVER_JUDGED)
    for cid, (good, bad) in BOTH_WAYS.items():
        assert verdicts(fake(**good))[cid] == HOLDS, cid
        assert verdicts(fake(**bad))[cid] == FAILS, cid


def test_every_claim_has_a_unique_id_and_an_interval_over_its_seeds():
    judged = judge(fake())
    ids = [c.id for c in judged]
    assert len(set(ids)) == len(ids) and all(i.startswith("depth/") for i in ids)
    row = probes.claims_json(judged)[0]
    assert list(row)[0] == "id" and set(row) >= {"claim", "expected", "measured", "verdict"}
    assert f"95% t, {SEEDS} seeds" in row["measured"]  # every judged loss carries its interval
    assert f"95% t, {XIONG_SEEDS} seeds" in claims.xiong_pre_sqrt(fake()).measured


def test_a_run_of_one_part_judges_that_part_alone():
    results = fake()
    stack = {k: v for k, v in results.items() if k != "xiong"}
    stack["variants"] = {k: v for k, v in results["variants"].items() if k in depth_config.STACK}
    assert [c.id for c in claims.table(stack)] == [f(stack).id for f in claims.STACK_TABLE]
    xiong = {k: v for k, v in results.items() if k not in ("variants", "serial_steps")}
    assert [c.id for c in claims.table(xiong)] == [f(xiong).id for f in claims.XIONG_TABLE]
    assert claims.stackability(xiong).verdict == MISSING  # the chapter reads the default run


def test_stacks_is_judged_on_each_side_of_its_tolerance():
    f = claims.pre_ln_stacks
    assert verdict(f, fake({"pre": {d: 2.3 for d in STEADY}})) == HOLDS  # flat stacks
    inside = {**STEADY, 8: STEADY[4] + TOL - 0.008}  # Δ ≈ +0.012
    assert verdict(f, fake({"pre": inside})) == HOLDS
    outside = {**STEADY, 8: STEADY[4] + TOL + 0.008}
    assert verdict(f, fake({"pre": outside})) == FAILS
    straddles = {**STEADY, 8: STEADY[4] + TOL - 0.004}
    assert verdict(f, fake({"pre": straddles}, spread=0.003)) == UNDECIDED
    assert "seeds at this spread would clear it" in f(fake({"pre": straddles}, spread=0.003)).detail


def test_a_failed_seed_is_scored_at_the_unigram_loss_and_a_dead_reference_did_not_learn():
    f = claims.pre_ln_stacks
    all_nan = {**STEADY, 8: [math.nan] * SEEDS}
    assert verdict(f, fake({"pre": all_nan})) == FAILS  # five dead seeds: got worse
    at_unigram = {**STEADY, 8: [UNIGRAM - claims.FAIL_MARGIN / 2] * SEEDS}
    assert verdict(f, fake({"pre": at_unigram})) == FAILS
    diverged = {**STEADY, 8: [48.2, 931.0, math.inf, math.nan, 1e9]}  # capped: finite
    row = f(fake({"pre": diverged}))
    assert row.verdict == FAILS and "5/5 failed at L=8" in row.detail
    dead = {d: [UNIGRAM] * SEEDS for d in STEADY}
    for fn, name in ((f, "pre"), (claims.no_residual_breaks, "no_residual")):
        row = fn(fake({name: dead}))
        assert row.verdict == DID_NOT_LEARN and "did not learn at L=1" in row.detail
    assert verdict(claims.steady_gain, fake({"pre": dead})) == DID_NOT_LEARN


def test_breaks_by_8_on_each_side_of_its_tolerance():
    f = claims.no_residual_breaks
    assert verdict(f, fake({"no_residual": WORSE_AT_8})) == HOLDS
    failing = {**STEADY, 4: [UNIGRAM, UNIGRAM + 0.1, math.nan, UNIGRAM, UNIGRAM]}
    assert verdict(f, fake({"no_residual": failing})) == HOLDS
    assert verdict(f, fake({"no_residual": STEADY})) == FAILS
    above = {**STEADY, 8: STEADY[4] + TOL + 0.008}
    assert verdict(f, fake({"no_residual": above})) == HOLDS
    below = {**STEADY, 8: STEADY[4] + TOL - 0.008}
    assert verdict(f, fake({"no_residual": below})) == FAILS
    straddles = {**STEADY, 8: STEADY[4] + TOL}
    assert verdict(f, fake({"no_residual": straddles}, spread=0.01)) == UNDECIDED


def test_plain_lstm_degrades_only_counts_past_a_few_layers_and_stacks_up_to_them():
    f, g = claims.lstm_plain_degrades, claims.lstm_plain_stacks_to_4
    assert verdict(f, fake({"lstm": WORSE_AT_8})) == verdict(g, fake({"lstm": WORSE_AT_8})) == HOLDS
    assert verdict(f, fake({"lstm": EARLY})) == FAILS  # worse at 2, not past 4
    assert verdict(g, fake({"lstm": EARLY})) == FAILS
    dead_from_4 = {1: 2.3, 2: 2.6, 4: UNIGRAM, 8: UNIGRAM}
    assert verdict(f, fake({"lstm": dead_from_4})) == HOLDS  # L=8 against L=1: still broken
    shallow = {d: x for d, x in WORSE_AT_8.items() if d <= claims.FEW_LAYERS}
    assert verdict(f, fake({"lstm": shallow})) == UNDECIDED


def _steady(ratio, spread=0.001):
    """pre-LN's losses whose last doubling's gain is `ratio` times the first's."""
    first = 0.1
    means = {1: 2.40, 2: 2.30, 4: 2.25, 8: 2.25 - ratio * first}
    return {d: _seeds(m, spread, turn=i) for i, (d, m) in enumerate(means.items())}


def test_steady_gain_is_judged_per_doubling_on_each_side_of_each_edge():
    f = claims.steady_gain
    lo, hi = 1 / claims.STEADY_FACTOR, claims.STEADY_FACTOR
    assert verdict(f, fake({"pre": _steady(lo * 1.2)})) == HOLDS
    assert verdict(f, fake({"pre": _steady(lo * 0.8)})) == FAILS
    assert verdict(f, fake({"pre": _steady(hi * 0.9)})) == HOLDS
    assert verdict(f, fake({"pre": _steady(hi * 1.1)})) == FAILS
    assert verdict(f, fake({"pre": _steady(lo, spread=0.01)})) == UNDECIDED
    plateau = {**STEADY, 8: STEADY[4]}  # the last doubling gains nothing
    assert verdict(f, fake({"pre": plateau})) == FAILS
    worse = {**STEADY, 4: STEADY[2] + 0.05}  # a doubling that loses
    assert verdict(f, fake({"pre": worse})) == FAILS
    # the point: a power law with diminishing returns, E + B·L^-α, is steady per
    # doubling when α ≤ 1/2 (its gain per layer falls 8^-(1+α)-fold: never steady per layer)
    for alpha, want in ((0.076, HOLDS), (0.3, HOLDS), (1.0, FAILS)):
        curve = {d: 1.5 + 0.5 * d**-alpha for d in STEADY}
        assert verdict(f, fake({"pre": curve}, spread=1e-5)) == want, alpha


def test_post_ln_needs_warmup_is_a_share_of_what_warmup_learned():
    f = claims.post_ln_needs_warmup
    share = lambda s: {6: 2.0 + s * (UNIGRAM - 2.0)}
    assert verdict(f, fake({"post": share(0.6)})) == HOLDS
    assert verdict(f, fake({"post": share(0.4)})) == FAILS
    assert verdict(f, fake({"post": share(0.5)}, spread=0.05)) == UNDECIDED
    assert verdict(f, fake({"post": {6: [math.nan] * SEEDS}})) == HOLDS  # diverged: all lost
    dead = {6: [UNIGRAM] * SEEDS}
    row = f(fake({"post_warmup": dead}))
    assert row.verdict == DID_NOT_LEARN and "did not learn at L=6" in row.detail


def test_deepnorm_stability_is_an_exact_count_of_failed_seeds():
    f = claims.deepnorm_stable
    assert verdict(f, fake()) == HOLDS
    one = fake({"deepnorm": {6: [2.1, 2.1, 2.1, 2.1, UNIGRAM]}})
    row = f(one)
    assert row.verdict == FAILS and "1/5 seeds failed" in row.measured
    assert verdict(f, fake({"deepnorm": None})) == MISSING


def test_xiong_exponents_are_t_intervals_over_per_seed_slopes():
    post, pre = claims.xiong_post_flat, claims.xiong_pre_sqrt
    tol = claims.XIONG_TOL
    results = fake()
    np.testing.assert_allclose(
        claims.slopes(results, "pre"), -0.5 + np.roll(np.linspace(-0.02, 0.02, 16), 1), atol=1e-12
    )
    assert verdict(post, fake(exponents={"post": tol - 0.03})) == HOLDS
    assert verdict(post, fake(exponents={"post": tol + 0.03})) == FAILS
    assert verdict(post, fake(exponents={"post": -tol - 0.03})) == FAILS
    assert verdict(pre, fake(exponents={"pre": -0.5 + tol - 0.03})) == HOLDS
    assert verdict(pre, fake(exponents={"pre": -0.5 - tol - 0.03})) == FAILS
    # today's committed run: a point 0.141 inside 0 ± 0.15 whose interval crosses the edge
    wide = fake(exponents={"post": 0.141, "pre": -0.36}, xiong_spread=0.3)
    assert verdict(post, wide) == verdict(pre, wide) == UNDECIDED
    assert "straddles" in post(wide).detail
    off = fake(exponents={"post": 0.27, "pre": -0.19})
    assert verdict(post, off) == verdict(pre, off) == FAILS
    assert verdict(claims.xiong_direction, off) == HOLDS
    close = fake(exponents={"post": 0.0, "pre": -0.02}, xiong_spread=0.3)
    assert verdict(claims.xiong_direction, close) == UNDECIDED
    nan = fake()
    nan["xiong"]["pre"]["8"][0] = None
    assert verdict(pre, nan) == UNDECIDED


def test_deepnorm_exponent_is_reported_with_its_interval():
    row = claims.deepnorm_slope(fake(exponents={"deepnorm": -0.49}, xiong_spread=0.1))
    assert row.verdict == REPORTED and f"t, {XIONG_SEEDS} seeds" in row.measured
    assert "contains" in row.detail and "does not" not in row.detail
    row = claims.deepnorm_slope(fake(exponents={"deepnorm": -0.2}))
    assert row.verdict == REPORTED and "does not contain" in row.detail


def test_stackability_is_the_weakest_of_its_parts_and_says_the_lstm_beside_it():
    v = claims.stackability
    row = v(fake())
    assert row.verdict == HOLDS and "LSTM + residual + LN stacks holds (GNMT" in row.detail
    assert "pre-LN − that LSTM" in row.detail
    assert "stacks does not hold here" in v(fake({"lstm_residual_ln": WORSE_AT_8})).detail
    assert verdict(v, fake({"no_residual": STEADY})) == FAILS  # the residual was not needed
    assert verdict(v, fake({"pre": DIMINISHING})) == FAILS  # steady per doubling is a part
    assert verdict(v, fake({"lstm": STEADY})) == FAILS  # the plain RNN stacked
    shallow = {d: x for d, x in WORSE_AT_8.items() if d <= claims.FEW_LAYERS}
    assert verdict(v, fake({"lstm": shallow})) == UNDECIDED
    assert verdict(v, fake({"no_residual": None})) == MISSING


def test_the_scorecards_reason_for_stackability_gives_the_deciding_parts_numbers():
    """Row 9's reason names the part that decides it and what that part measured (before:
    'stackability: steady gain per layer: does not hold here', no number)."""
    from experiments.report import scorecard

    row = claims.stackability(fake({"pre": DIMINISHING}))
    assert row.verdict == FAILS
    said = scorecard.reason("stackability", row)
    assert said.startswith("stackability: steady gain per doubling: does not hold here ("), said
    assert any(ch.isdigit() for ch in said.split("(", 1)[1]), said
    assert "pre-LN stacks" not in said  # a part that holds does not decide it


def test_lstm_against_transformer_is_reported_with_a_paired_interval():
    row = claims.lstm_vs_transformer(fake({"lstm_residual_ln": {d: 1.9 for d in STEADY}}))
    assert row.verdict == REPORTED and "the LSTM lower" in row.detail and "L=8" in row.measured
    row = claims.lstm_vs_transformer(fake({"lstm_residual_ln": {d: 2.5 for d in STEADY}}))
    assert "the Transformer lower" in row.detail


def test_some_is_a_disjunction_of_parts():
    assert claims.some([FAILS, HOLDS, UNDECIDED]) == HOLDS
    assert claims.some([FAILS, FAILS]) == FAILS
    assert claims.some([FAILS, UNDECIDED]) == UNDECIDED
    assert claims.some([UNDECIDED, DID_NOT_LEARN]) == DID_NOT_LEARN
    assert claims.some([]) == MISSING


def test_the_sizing_table_reads_every_sized_claim_from_design_seeds():
    results = fake()
    results["split"] = "valid"
    text = tables.sizing_table(results)
    for cid in claims.SIZED:
        assert cid.split("/")[1] in text, cid


# ------------------------------------------------------------------ rates, grid and pilot


def test_the_ladder_steps_one_to_three_to_ten():
    from experiments.depth import ladder

    assert ladder(1e-2, up=True) == 3e-2 and ladder(3e-2, up=True) == 1e-1
    assert ladder(1e-3, up=False) == 3e-4 and ladder(3e-4, up=False) == 1e-4
    assert ladder(1e-1, up=True) == 3e-1 and ladder(3e-3, up=False) == 1e-3


def test_the_grid_goes_past_an_edge_its_best_rate_sits_at(monkeypatch, quick, corpus):
    """run_grid: a cell whose best rate is at an edge of what it tried (and learned there)
    tries the next rate of the ladder past it, up to lr_grid.extend times; a cell that learned
    nowhere does not."""
    from experiments.depth import run_grid

    best = {"pre": 0.05, "lstm": 3e-3}  # 'lstm' learns nowhere (above the unigram loss)

    def fake_runs(program, group, cfg, corpus, runs):
        def loss(name, lr):
            x = (math.log10(lr) - math.log10(best[name])) ** 2
            return 1.0 + x if name == "pre" else corpus.unigram["valid"] + 1 + x

        return {n: [{"loss": loss(n, r.lr)} for r in rs] for n, rs in runs.items()}

    monkeypatch.setattr(train, "run_group", fake_runs)
    cfg = ml_collections.ConfigDict(quick.to_dict())
    cfg.lr_grid.learning_rates, cfg.lr_grid.extend = (3e-3, 1e-2), 2
    got = run_grid(None, [VARIANTS["pre"], VARIANTS["lstm"]], cfg, corpus)
    rates, per_rate = got["pre"]
    assert rates == [3e-3, 1e-2, 3e-2, 1e-1]  # 1e-2 at the top edge, then 3e-2: two more
    assert choose(rates, per_rate) == 3e-2
    assert got["lstm"][0] == [3e-3, 1e-2]


def test_the_grid_chooses_the_lowest_mean_and_never_a_diverged_rate():
    rates = [1e-3, 3e-3, 1e-2]
    assert choose(rates, [[2.2, 2.4], [2.25, 2.3], [math.nan, 1.0]]) == 3e-3
    assert choose(rates, [[2.2, 2.2], [2.2, 2.2], [2.3, None]]) == 1e-3  # a tie: the first
    assert choose(rates, [[None], [None], [None]]) == 1e-3  # none learned


SHARED = ("seed", "data", "model", "train", "compile_fast")


def _same(a, b, key):
    return json.loads(json.dumps(a[key], default=list)) == json.loads(
        json.dumps(b[key], default=list)
    )


def test_the_rates_written_into_the_config_are_the_committed_grids_choice():
    """configs/depth.py CHOSEN equals results/depth/lr_grid.json's choice, the grid was made
    with the judged presets' data, model and budget, and no choice sits at an edge of it."""
    grid = committed.load("depth/lr_grid")["result"]
    made = grid["config"]
    for preset in ("", "stability", "pilot"):
        c = get_config(preset).to_dict()
        assert all(_same(made, c, k) for k in SHARED), preset
    g = grid["lr_grid"]
    grid_unigram = grid["data"]["unigram_loss"]["valid"]
    assert list(g["learning_rates"]) == list(depth_config.GRID_RATES)
    assert g["seeds"] == [depth_config.GRID_SEED]
    want = {v: {str(d): r for d, r in by.items()} for v, by in depth_config.CHOSEN.items()}
    assert g["chosen"] == want
    for v, by in g["valid_loss"].items():
        for d, per_rate in by.items():
            rates = g["tried"][v][d]
            assert set(g["learning_rates"]) <= set(rates)  # the base grid, and past its edges
            assert choose(rates, per_rate) == g["chosen"][v][d]  # the lowest validation loss
            means = [np.mean([np.inf if x is None else x for x in seeds]) for seeds in per_rate]
            if min(means) >= grid_unigram - claims.FAIL_MARGIN:
                continue  # no rate of the cell learned: it fails at every rate, the choice is moot
            assert min(rates) < g["chosen"][v][d] < max(rates), (v, d)  # at no edge
    for d, rate in depth_config.WARM_RATE.items():  # the largest rate warmup trains well at
        rates, per_rate = g["tried"]["post_warmup"][str(d)], g["valid_loss"]["post_warmup"][str(d)]
        means = [np.mean([np.inf if x is None else x for x in seeds]) for seeds in per_rate]
        good = [r for r, m in zip(rates, means) if m <= min(means) + depth_config.WARM_TOL]
        assert rate == max(good) < max(rates)


def test_the_presets_train_at_the_written_rates_on_disjoint_seeds():
    for preset in ("", "stability", "pilot"):
        c = get_config(preset)
        cells = check(c)
        for v, depths in cells.items():
            want = depth_config.WARM_RATE if v in depth_config.STABILITY else depth_config.CHOSEN[v]
            assert list(c.rates[v]) == [want[d] for d in depths]
    judged, pilot = get_config(), get_config("pilot")
    grid_seeds = {depth_config.GRID_SEED}
    pilot_seeds = set(range(pilot.first_seed, pilot.first_seed + pilot.seeds))
    judged_seeds = set(range(judged.first_seed, judged.first_seed + judged.seeds))
    assert not (grid_seeds & pilot_seeds or grid_seeds & judged_seeds or pilot_seeds & judged_seeds)
    assert pilot.split == "valid" and judged.split == "test"
    x = get_config("xiong").xiong
    assert x.seeds >= 16 and min(x.depths) >= 4 and max(x.depths) >= 64


def test_the_committed_pilot_is_the_judged_design_on_design_seeds():
    pilot = committed.pilot("depth")
    assert pilot is not None
    c = get_config("pilot").to_dict()
    assert all(_same(pilot["config"], c, k) for k in (*SHARED, "cells", "rates"))
    assert pilot["split"] == "valid" and min(pilot["seeds"]) >= depth_config.PILOT_SEED


# ------------------------------------------------------------------ data, model, programs


@pytest.fixture(scope="module")
def quick():
    return get_config("quick")


@pytest.fixture(scope="module")
def corpus(quick):
    return data.load(quick.data, quick.train.length, quick.seed)


def test_corpus_windows_and_unigram_loss_match_a_direct_count(corpus, quick):
    n = quick.train.length
    counts = {}
    for c in corpus.train.tolist():
        counts[c] = counts.get(c, 0) + 1
    total = len(corpus.train) + corpus.vocab_size
    for split in train.SPLITS:
        w = corpus.windows(split)
        assert w.shape == (quick.data.eval_windows, n + 1)
        np.testing.assert_array_equal(w[1:, 0], w[:-1, -1])  # contiguous
        scored = w[:, 1:].ravel()
        direct = -np.mean([math.log((counts.get(c, 0) + 1) / total) for c in scored])
        assert corpus.unigram[split] == pytest.approx(direct, rel=1e-9)
    assert not np.array_equal(corpus.valid, corpus.test)  # two streams: choose, then judge
    w = np.asarray(data.batch(jnp.asarray(corpus.train), jax.random.PRNGKey(3), 5, 7))
    assert w.shape == (5, 8)
    text = corpus.train.tolist()
    for row in w:  # each window is a contiguous slice of the training stream
        start = next(i for i in range(len(text)) if text[i : i + 8] == row.tolist())
        assert text[start : start + 8] == row.tolist()


@pytest.mark.parametrize("name", ["pre", "lstm_residual_ln"])
def test_grad_norms_split_the_stack_by_layer(name, quick, corpus):
    """The per-layer norms add up, in squares, to the stack's: every stack parameter is in one
    layer; Xiong's weight is the last block's FFN w2 (the LSTM's: its last layer)."""
    v = VARIANTS[name]
    xiong = XIONG[v.family]
    model = depth_lm.build(v, quick.model, 3, corpus.vocab_size)

    @functools.partial(
        jax.jit, compiler_options=jit_options(compiler_options(fast=quick.compile_fast))
    )
    def norms(p):
        got = train.grad_norms(model, xiong, p)
        rest = {k: x for k, x in p.items() if k != "stack"}
        return got, probes.global_norm(rest), probes.global_norm(p)

    p = model.init(jax.random.PRNGKey(0))
    got, rest, total = norms(p)
    assert got["layers"].shape == (3,)
    assert float(jnp.sum(got["layers"] ** 2) + rest**2) == pytest.approx(float(total) ** 2, 1e-5)
    assert float(got["total"]) == pytest.approx(float(total), rel=1e-6)
    want = p["stack"]["blocks"][-1]["ffn"]["w2"] if v.family == "attention" else None
    if want is not None:
        assert float(got["xiong"]) == pytest.approx(float(jnp.linalg.norm(want)), rel=1e-5)


def _reference_step(model, tx, tc, params, state, train_ids, key):
    windows = data.batch(train_ids, key, tc.batch, tc.length)
    value, g = jax.value_and_grad(functools.partial(depth_lm.loss, model))(params, windows)
    updates, state = tx.update(g, state, params)
    return optax.apply_updates(params, updates), state, value, probes.global_norm(g)


@pytest.fixture(scope="module")
def post_program(quick, corpus):
    return train.compile_program(VARIANTS["post"], XIONG["attention"], quick, 2, corpus)


def test_program_equals_a_python_loop_with_the_library_optimizer(quick, corpus, post_program):
    """The compiled program (one loop in XLA, shared by post-LN with and without warmup and
    by every learning rate, at the quick preset's sizes and compile options) against a Python
    loop over the same batches with anatomy.train.make_optimizer's AdamW(schedule) and
    clipping, one jitted step at a time: every training loss, the gradient norm at init and
    the loss on the run's split. Two runs at once (config.workers) give the same digits as one
    at a time."""
    group = [VARIANTS["post"], VARIANTS["post_warmup"]]
    tc = quick.train
    runs = [train.Run(0, 3e-3, tc.steps, "test"), train.Run(7, 1e-2, tc.steps, "valid")]
    got = train.run_group(post_program, group, quick, corpus, {v.name: runs for v in group})
    one_at_a_time = ml_collections.ConfigDict(quick.to_dict())
    one_at_a_time.workers = 1
    again = train.run_group(post_program, group, one_at_a_time, corpus, {"post": runs})
    for a, b in zip(got["post"], again["post"]):
        assert a["loss"] == b["loss"]
        np.testing.assert_array_equal(a["losses"], b["losses"])
    model = post_program.model
    init_keys, data_keys = train.run_keys(quick.seed, [r.seed for r in runs])
    train_ids = jnp.asarray(corpus.train)
    fast = jit_options(compiler_options(fast=quick.compile_fast))
    score = jax.jit(functools.partial(depth_lm.loss, model), compiler_options=fast)
    for name in ("post", "post_warmup"):
        v = VARIANTS[name]
        for k, r in enumerate(runs):
            opt_cfg = dict(
                learning_rate=r.lr,
                warmup_steps=tc.warmup_steps if v.warmup else 0,
                num_steps=tc.steps,
                decay="linear",
                end_fraction=0.0,
                b1=tc.b1,
                b2=tc.b2,
                weight_decay=0.0,
                clip_norm=tc.clip_norm,
                max_train_seconds=0.0,
            )
            tx = make_optimizer(ml_collections.ConfigDict(opt_cfg))
            step = jax.jit(functools.partial(_reference_step, model, tx, tc), compiler_options=fast)
            params = model.init(init_keys[k])
            state, losses, norms = tx.init(params), [], []
            for i in range(tc.steps):
                key = jax.random.fold_in(data_keys[k], i)
                params, state, value, norm = step(params, state, train_ids, key)
                losses.append(float(value))
                norms.append(float(norm))
            row = got[name][k]
            np.testing.assert_allclose(row["losses"], losses, rtol=2e-5)
            want = float(score(params, jnp.asarray(corpus.windows(r.split))))
            assert row["loss"] == pytest.approx(want, rel=2e-5)
            assert float(row["init"]["total"]) == pytest.approx(norms[0], rel=2e-5)


def test_runs_at_written_rates_across_jobs_equal_the_runs_group_by_group(
    quick, corpus, post_program
):
    """measure() with the rates written (every run of every job in one pool, two at a time)
    gives each seed the digits run_group gives it one at a time."""
    from experiments.depth import measure

    cfg = ml_collections.ConfigDict(quick.to_dict())
    cfg.cells = {"post": [2], "post_warmup": [2]}
    cfg.rates = {"post": [1e-2], "post_warmup": [1e-2]}
    cfg.seeds, cfg.xiong.seeds = 3, 0
    raw = measure(cfg, check(cfg), corpus)
    one_at_a_time = ml_collections.ConfigDict(quick.to_dict())
    one_at_a_time.workers = 1
    runs = [train.Run(s, 1e-2, quick.train.steps, "test") for s in range(3)]
    group = [VARIANTS["post"], VARIANTS["post_warmup"]]
    ref = train.run_group(post_program, group, one_at_a_time, corpus, {v.name: runs for v in group})
    for v in group:
        got = raw["runs"][v.name][2]
        assert [r["loss"] for r in got] == [r["loss"] for r in ref[v.name]]
        assert raw["chosen"][v.name]["2"] == 1e-2 and not raw["grid"][v.name]


def test_xiongs_gradient_at_init_is_the_training_programs_first_step(quick, corpus, post_program):
    """The vmapped gradient-at-init program (the xiong part) gives each seed the gradient
    norms the training program records at its step 0 (the same parameters, the same batch)."""
    seeds = [0, 5]
    got, _ = train.xiong_norms(VARIANTS["post"], XIONG["attention"], quick, 2, corpus, seeds)
    runs = [train.Run(s, 3e-3, 1, "valid") for s in seeds]
    ref = train.run_group(post_program, [VARIANTS["post"]], quick, corpus, {"post": runs})
    for i, row in enumerate(ref["post"]):
        assert got["xiong"][i] == pytest.approx(float(row["init"]["xiong"]), rel=1e-4)
        np.testing.assert_allclose(got["layers"][i], row["init"]["layers"], rtol=1e-4)


def test_plots_draw_from_a_results_json_alone(tmp_path):
    """The committed result's plots are redrawn from its results.json (no run): every
    variant has a style of its own, so post-LN shows beside post-LN + warmup."""
    results = record.stored(fake({"no_residual": {**STEADY, 8: [48.2, math.nan, 931.0, 3, 3]}}))
    names = plots.draw(results, str(tmp_path))
    assert names == [
        "loss_vs_depth.png",
        "grad_norms_at_init.png",
        "warmup_curves.png",
        "xiong_exponents.png",
    ]
    assert all((tmp_path / p).stat().st_size > 0 for p in names)
    variants = results["variants"]
    looks = {n: plots.look(n, v) for n, v in variants.items()}
    assert all(style.base_name(n) in style.PALETTE for n in variants)  # none left grey
    post, warm = looks["post"], looks["post_warmup"]
    assert post["marker"] != warm["marker"] and post["linestyle"] != warm["linestyle"]


# ------------------------------------------------------------------ the quick preset


@pytest.fixture(scope="module")
def quick_run(quick_report):
    """The quick preset as the quick report ran it through launch.py (conftest.quick_report)."""
    workdir = quick_report / "depth"
    return workdir, json.loads((workdir / "results.json").read_text())


def test_quick_preset_through_launch(quick_run, quick):
    workdir, res = quick_run
    assert set(res["variants"]) == set(quick.cells)
    grid = res["lr_grid"]
    assert grid["source"] == "this run" and grid["split"] == "valid"
    assert min(grid["seeds"]) > max(res["seeds"])  # design seeds are not judged seeds
    for name, v in res["variants"].items():
        assert sorted(int(d) for d in v["depths"]) == list(quick.cells[name])
        for d, row in v["depths"].items():
            per_rate, rates = grid["valid_loss"][name][d], grid["tried"][name][d]
            assert len(per_rate) == len(rates) >= len(quick.lr_grid.learning_rates)
            assert row["learning_rate"] == choose(rates, per_rate)
            grads = np.array(row["init_grad_layers"], np.float64)
            assert grads.shape == (quick.seeds, int(d)) and np.isfinite(grads).all()
            assert len(row["loss"]) == quick.seeds
    n = quick.train.length
    for d in (1, 2):  # read from the compiled forward program: exact
        assert res["serial_steps"]["recurrent"][str(d)]["hlo"] == d * n
        assert res["serial_steps"]["attention"][str(d)]["hlo"] == 0
    assert set(res["xiong"]) == set(quick.xiong.variants)
    assert all(len(x) == quick.xiong.seeds for by in res["xiong"].values() for x in by.values())
    assert res["cost"]["cpu_seconds"] > 0
    ids = {r["id"]: r["verdict"] for r in res["table"]}
    assert ids["depth/serial_steps"] == HOLDS
    assert all(v in probes.VERDICTS for v in ids.values())
    report = (workdir / "report.md").read_text()
    assert all(f"**{r['verdict']}**" in report for r in res["table"])
    assert sorted(res["plots"]) == sorted(p.name for p in workdir.glob("*.png"))
    # the table is what claims.py gives when it judges the written results.json again, and
    # the chapter's claim is read by its id, as the report reads it
    assert [c.as_dict() for c in claims.table(res)] == res["table"]
    judged = record.claims_of("depth", res)
    assert "depth/stackability" in judged and "depth/stackability" not in ids
    assert f"**{judged['depth/stackability'].verdict}**" in report


def test_bad_configs_are_bad_input():
    cfg = get_config("quick")
    cfg.cells = {"pre": [1], "nope": [2]}
    with pytest.raises(BadInputError, match="nope"):
        check(cfg)
    cfg = get_config("quick")
    cfg.cells.pre = [2, 1]
    with pytest.raises(BadInputError, match="ascending"):
        check(cfg)
    cfg = get_config("quick")
    cfg.first_seed = 999  # runs into the grid's design seed 1000
    with pytest.raises(BadInputError, match="design"):
        check(cfg)
    cfg = get_config()
    cfg.rates.pre = [3e-3]  # one rate for four depths
    with pytest.raises(BadInputError, match="rates"):
        check(cfg)
