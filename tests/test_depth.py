"""The depth experiment: its verdicts on injected numbers (each side of each edge of each
claim, by the one verdict rule), the learning-rate grid's choice and where the default reads
it, its data against a direct count, its compiled training program against a plain Python
loop, its plots from a results.json alone, and the quick preset through launch.py."""

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
from anatomy.errors import BadInputError
from anatomy.train.optim import make_optimizer
from experiments import record, style
from experiments.configs.depth import get_config
from experiments.depth import (
    SHARED,
    VARIANTS,
    XIONG,
    check,
    choose,
    claims,
    data,
    load_grid,
    plots,
    train,
)
from experiments.depth import lm as depth_lm

FAILS, HOLDS = probes.FAILS, probes.HOLDS
UNDECIDED, MISSING = probes.UNDECIDED, probes.MISSING
UNIGRAM = 3.0
TOL = claims.STACK_TOL
LINEAR = {1: 2.40, 2: 2.38, 4: 2.34, 8: 2.26, 16: 2.10}  # the same gain per layer: steady
CONCAVE = {1: 2.30, 2: 2.20, 4: 2.10, 8: 2.05, 16: 2.00}  # gains at every doubling, per layer
# 0.1, 0.05, 0.0125, 0.00625: not steady
WORSE_AT_8 = {1: 2.30, 2: 2.20, 4: 2.10, 8: 2.40, 16: 2.60}
INIT_SEEDS = 6


def _seeds(mean, spread=0.002):
    return [mean - spread, mean, mean + spread]


def _init_grads(exponent, spread, depth, turn=0):
    """INIT_SEEDS gradient norms at init at `depth` whose log-log slope is `exponent`, each
    seed's own slope off by a fixed amount up to ±spread (in an order turned by `turn`, so
    two variants' seeds do not move together)."""
    offsets = np.roll(np.linspace(-spread, spread, INIT_SEEDS), turn)
    return [float(depth ** (exponent + e)) for e in offsets]


def fake(losses=None, exponents=None, serial=None, unigram=UNIGRAM, spread=1e-3):
    """results.json as depth writes it, from {variant: {L: mean or [seeds]}}: pre-LN LINEAR,
    every other variant CONCAVE unless given (so every stack stacks and no ablation breaks),
    Xiong's exponents the theorem's (others -0.2) within ±spread over seeds, serial steps
    exact."""
    losses = {**{n: CONCAVE for n in VARIANTS}, "pre": LINEAR, **(losses or {})}
    exponents = {"post": 0.0, "pre": -0.5, **(exponents or {})}
    variants = {}
    for name, by_depth in losses.items():
        v = VARIANTS[name]
        a = exponents.get(name, -0.2)
        depths = {
            str(d): {
                "test_loss": x if isinstance(x, list) else _seeds(x),
                "learning_rate": 3e-3,
                "init_grad_layers": [[1.0] * d] * INIT_SEEDS,
                "init_grad_xiong": _init_grads(a, spread, d, list(VARIANTS).index(name)),
                "seconds_per_step": 0.01 * d,
            }
            for d, x in by_depth.items()
        }
        variants[name] = {
            "family": v.family,
            "label": v.label,
            "warmup_steps": 30 if v.warmup else 0,
            "depths": depths,
        }
    n = 64
    serial = serial or {
        "recurrent": {
            str(d): {"n": n, "hlo": d * n, "jaxpr": d * n, "variant": "lstm"} for d in LINEAR
        },
        "attention": {str(d): {"n": n, "hlo": 0, "jaxpr": 0, "variant": "pre"} for d in LINEAR},
    }
    return {
        "config": {"depths": sorted(LINEAR)},
        "data": {"unigram_loss": {"test": unigram, "valid": unigram}},
        "variants": variants,
        "serial_steps": serial,
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


def test_every_claim_has_a_unique_id_and_time_is_never_judged():
    judged = judge(fake())
    ids = [c.id for c in judged]
    assert len(set(ids)) == len(ids) and all(i.startswith("depth/") for i in ids)
    got = {c.id: c.verdict for c in judged}
    assert got["depth/time_per_step"] == got["depth/deepnorm_slope"] == probes.REPORTED
    row = probes.claims_json(judged)[0]
    assert list(row)[0] == "id" and set(row) >= {"claim", "expected", "measured", "verdict"}
    assert "95% t, 3 seeds" in row["measured"]  # every judged loss carries its interval


def test_stacks_is_judged_on_each_side_of_its_tolerance():
    f = claims.pre_ln_stacks
    assert verdict(f, fake()) == HOLDS
    flat = {d: 2.3 for d in LINEAR}  # no gain, no loss: stacks
    assert verdict(f, fake({"pre": flat})) == HOLDS
    inside = {**LINEAR, 16: _seeds(LINEAR[8] + TOL - 0.008)}  # Δ ≈ [+0.007, +0.017]
    assert verdict(f, fake({"pre": inside})) == HOLDS
    outside = {**LINEAR, 16: _seeds(LINEAR[8] + TOL + 0.008)}  # Δ ≈ [+0.023, +0.033]
    assert verdict(f, fake({"pre": outside})) == FAILS
    straddles = {**LINEAR, 16: _seeds(LINEAR[8] + TOL, spread=0.01)}
    assert verdict(f, fake({"pre": straddles})) == UNDECIDED
    assert verdict(f, fake({"pre": WORSE_AT_8})) == FAILS


def test_a_failed_seed_is_scored_at_the_unigram_loss():
    f = claims.pre_ln_stacks
    all_nan = {**LINEAR, 8: [float("nan")] * 3}
    assert verdict(f, fake({"pre": all_nan})) == FAILS  # three dead seeds: got worse
    at_unigram = {**LINEAR, 16: [UNIGRAM - claims.FAIL_MARGIN / 2] * 3}
    assert verdict(f, fake({"pre": at_unigram})) == FAILS
    one_nan = {**LINEAR, 4: [2.34, float("nan"), 2.34]}  # one of three: not shown either way
    assert verdict(f, fake({"pre": one_nan})) == UNDECIDED
    diverged = {**LINEAR, 8: [48.2, 931.0, float("inf")]}  # capped: the interval stays finite
    row = f(fake({"pre": diverged}))
    assert row.verdict == FAILS and "3/3 failed at L=8" in row.detail


def test_a_depth_that_never_learned_shows_neither_stacking_nor_breaking():
    dead = {d: [UNIGRAM] * 3 for d in LINEAR}
    assert verdict(claims.pre_ln_stacks, fake({"pre": dead})) == UNDECIDED
    assert verdict(claims.no_residual_breaks, fake({"no_residual": dead})) == UNDECIDED
    assert verdict(claims.steady_gain, fake({"pre": dead})) == UNDECIDED


def test_breaks_by_8_on_each_side_of_its_tolerance_and_not_past_8():
    f = claims.no_residual_breaks
    assert verdict(f, fake({"no_residual": WORSE_AT_8})) == HOLDS
    failing = {**CONCAVE, 4: [UNIGRAM, UNIGRAM + 0.1, float("nan")]}
    assert verdict(f, fake({"no_residual": failing})) == HOLDS
    assert verdict(f, fake({"no_residual": CONCAVE})) == FAILS
    only_at_16 = {**CONCAVE, 16: 2.6}
    assert verdict(f, fake({"no_residual": only_at_16})) == FAILS
    above = {**CONCAVE, 8: _seeds(CONCAVE[4] + TOL + 0.008)}
    assert verdict(f, fake({"no_residual": above})) == HOLDS
    below = {**CONCAVE, 8: _seeds(CONCAVE[4] + TOL - 0.008)}
    assert verdict(f, fake({"no_residual": below})) == FAILS
    straddles = {**CONCAVE, 8: _seeds(CONCAVE[4] + TOL, spread=0.01)}
    assert verdict(f, fake({"no_residual": straddles})) == UNDECIDED
    assert verdict(claims.no_layernorm_breaks, fake({"no_layernorm": WORSE_AT_8})) == HOLDS


def test_post_ln_needs_warmup_is_both_of_its_parts():
    f = claims.post_ln_warmup
    assert verdict(f, fake({"post": WORSE_AT_8})) == HOLDS
    assert verdict(f, fake()) == FAILS  # both stack: warmup was not needed here
    assert verdict(f, fake({"post": WORSE_AT_8, "post_warmup": WORSE_AT_8})) == FAILS
    straddles = {**CONCAVE, 8: _seeds(CONCAVE[4] + TOL, spread=0.01)}
    assert verdict(f, fake({"post": WORSE_AT_8, "post_warmup": straddles})) == UNDECIDED


def _steady(ratio, spread=0.001):
    """pre-LN's losses whose last step's gain per layer is `ratio` times the first's, the
    seeds off by up to ±spread in a different order at each depth (not a shift that cancels
    in every difference)."""
    first = 0.04  # nats per layer, L = 1 -> 2
    means = {1: 2.40, 2: 2.36, 4: 2.30, 8: 2.22, 16: 2.22 - 8 * ratio * first}
    orders = ([-1, 0, 1], [1, -1, 0], [0, 1, -1], [1, 0, -1], [-1, 1, 0])
    return {d: [m + spread * o for o in order] for (d, m), order in zip(means.items(), orders)}


def test_steady_gain_is_judged_per_layer_on_each_side_of_each_edge():
    f = claims.steady_gain
    assert verdict(f, fake()) == HOLDS  # the same gain per layer all the way
    # gains at every doubling, but per layer they fall 16-fold: not steady (it held before)
    assert verdict(f, fake({"pre": CONCAVE})) == FAILS
    lo, hi = 1 / claims.STEADY_FACTOR, claims.STEADY_FACTOR
    assert verdict(f, fake({"pre": _steady(lo * 1.2, spread=1e-4)})) == HOLDS
    assert verdict(f, fake({"pre": _steady(lo * 0.8, spread=1e-4)})) == FAILS
    assert verdict(f, fake({"pre": _steady(hi * 0.9, spread=1e-4)})) == HOLDS
    assert verdict(f, fake({"pre": _steady(hi * 1.1, spread=1e-4)})) == FAILS
    assert verdict(f, fake({"pre": _steady(lo, spread=0.01)})) == UNDECIDED
    plateau = {**LINEAR, 16: LINEAR[8]}  # the last layers gain nothing
    assert verdict(f, fake({"pre": plateau})) == FAILS


def test_plain_lstm_degrades_only_counts_past_a_few_layers():
    f = claims.lstm_plain_degrades
    assert verdict(f, fake({"lstm": WORSE_AT_8})) == HOLDS
    assert verdict(f, fake({"lstm": {**CONCAVE, 16: [UNIGRAM] * 3}})) == HOLDS
    assert verdict(f, fake({"lstm": CONCAVE})) == FAILS
    early = {1: 2.3, 2: 2.6, 4: 2.6, 8: 2.2, 16: 2.1}  # worse at 2 (GNMT's few), not past 4
    assert verdict(f, fake({"lstm": early})) == FAILS
    dead_from_4 = {1: 2.3, 2: 2.6, 4: UNIGRAM, 8: UNIGRAM, 16: UNIGRAM}
    assert verdict(f, fake({"lstm": dead_from_4})) == HOLDS  # L=8 against L=1: still broken
    shallow = {d: x for d, x in WORSE_AT_8.items() if d <= claims.FEW_LAYERS}
    assert verdict(f, fake({"lstm": shallow})) == UNDECIDED


def test_plain_lstm_stacks_up_to_4_layers_is_gnmts_other_half():
    f = claims.lstm_plain_stacks_to_4
    assert verdict(f, fake({"lstm": WORSE_AT_8})) == HOLDS  # breaks past 4 only
    early = {1: 2.3, 2: 2.6, 4: 2.6, 8: 2.2, 16: 2.1}
    assert verdict(f, fake({"lstm": early})) == FAILS


def test_the_gradient_ratio_down_the_stack_is_reported_beside_the_lstm_verdict():
    results = fake({"lstm": WORSE_AT_8})
    results["variants"]["lstm"]["depths"]["16"]["init_grad_layers"] = [
        list(np.geomspace(1e-4, 1.0, 16))
    ] * INIT_SEEDS
    assert claims.bottom_over_top(results, "lstm") == (16, pytest.approx(1e-4))
    assert "0.0001x layer 16's" in claims.lstm_plain_stacks_to_4(results).detail


def test_xiong_exponents_are_judged_with_their_interval_on_each_side_of_each_edge():
    post, pre = claims.xiong_post_flat, claims.xiong_pre_sqrt
    tol = claims.XIONG_TOL
    assert verdict(post, fake()) == verdict(pre, fake()) == HOLDS
    assert verdict(post, fake(exponents={"post": tol - 0.03})) == HOLDS
    assert verdict(post, fake(exponents={"post": tol + 0.03})) == FAILS
    assert verdict(post, fake(exponents={"post": -tol - 0.03})) == FAILS
    assert verdict(pre, fake(exponents={"pre": -0.5 + tol - 0.03})) == HOLDS
    assert verdict(pre, fake(exponents={"pre": -0.5 + tol + 0.03})) == FAILS
    assert verdict(pre, fake(exponents={"pre": -0.5 - tol - 0.03})) == FAILS
    # the run: a point 0.141 inside 0 ± 0.15 whose interval crosses the edge
    wide = fake(exponents={"post": 0.141, "pre": -0.36}, spread=0.3)
    assert verdict(post, wide) == verdict(pre, wide) == UNDECIDED
    assert "straddles" in post(wide).detail
    # the right direction is a claim of its own, never a caveat on the exponents (before:
    # 'holds with a caveat' for these exponents)
    off = fake(exponents={"post": 0.27, "pre": -0.19})
    assert verdict(post, off) == verdict(pre, off) == FAILS
    assert verdict(claims.xiong_direction, off) == HOLDS
    assert verdict(claims.xiong_direction, fake(exponents={"post": 0.0, "pre": 0.1})) == FAILS
    close = fake(exponents={"post": 0.0, "pre": -0.05}, spread=0.3)
    assert verdict(claims.xiong_direction, close) == UNDECIDED
    nan = fake()
    nan["variants"]["pre"]["depths"]["4"]["init_grad_xiong"][0] = None
    assert verdict(pre, nan) == UNDECIDED


def test_deepnorm_exponent_is_reported_with_its_interval():
    row = claims.deepnorm_slope(fake(exponents={"deepnorm": -0.49}, spread=0.05))
    assert row.verdict == probes.REPORTED and "t, 6 init seeds" in row.measured
    assert "contains" in row.detail and "does not" not in row.detail
    row = claims.deepnorm_slope(fake(exponents={"deepnorm": -0.2}))
    assert row.verdict == probes.REPORTED and "does not contain" in row.detail


def test_serial_steps_must_be_exact():
    good = fake()
    assert verdict(claims.serial_steps, good) == HOLDS
    off = json.loads(json.dumps(good["serial_steps"]))
    off["recurrent"]["4"]["hlo"] += 1
    assert verdict(claims.serial_steps, fake(serial=off)) == FAILS
    loop = json.loads(json.dumps(good["serial_steps"]))
    loop["attention"]["2"].update(hlo=64, jaxpr=64)
    assert verdict(claims.serial_steps, fake(serial=loop)) == FAILS


def test_stackability_is_the_weakest_of_its_parts_and_names_the_rescue():
    v = claims.stackability
    rnn_fails = {"lstm": WORSE_AT_8, "lstm_residual_ln": WORSE_AT_8, "no_residual": WORSE_AT_8}
    assert verdict(v, fake(rnn_fails)) == HOLDS
    fixed = {"lstm": WORSE_AT_8, "no_residual": WORSE_AT_8}  # residual + LN LSTM stacks
    row = v(fake(fixed))
    assert row.verdict == HOLDS and "lstm_residual_ln_stacks" in row.detail
    # the RNN half does not hold: the claim does not (before: 'holds with a caveat')
    assert verdict(v, fake({"no_residual": WORSE_AT_8})) == FAILS
    # the steady gain per layer is part of the claim (before: ignored)
    assert verdict(v, fake({**fixed, "pre": CONCAVE})) == FAILS
    assert verdict(v, fake({"lstm": WORSE_AT_8})) == FAILS  # the residual was not needed
    assert verdict(v, fake({**rnn_fails, "pre": WORSE_AT_8})) == FAILS
    shallow_lstm = {d: x for d, x in WORSE_AT_8.items() if d <= claims.FEW_LAYERS}
    assert verdict(v, fake({**fixed, "lstm": shallow_lstm})) == UNDECIDED


def test_a_variant_not_run_is_missing_not_judged():
    results = fake({"lstm": WORSE_AT_8, "no_residual": WORSE_AT_8})  # the claim would hold
    del results["variants"]["no_residual"]
    got = verdicts(results)
    assert got["depth/no_residual_breaks"] == MISSING
    assert got["depth/stackability"] == MISSING  # the weakest of its parts


def test_some_is_a_disjunction_of_parts():
    assert claims.some([FAILS, HOLDS, UNDECIDED]) == HOLDS
    assert claims.some([FAILS, FAILS]) == FAILS
    assert claims.some([FAILS, UNDECIDED]) == UNDECIDED
    assert claims.some([]) == MISSING


# ------------------------------------------------------------------ the learning-rate grid


def test_the_grid_chooses_the_lowest_mean_and_never_a_diverged_rate():
    rates = [1e-3, 3e-3, 1e-2]
    assert choose(rates, [[2.2, 2.4], [2.25, 2.3], [float("nan"), 1.0]]) == 3e-3
    assert choose(rates, [[2.2, 2.2], [2.2, 2.2], [2.3, None]]) == 1e-3  # a tie: the first
    assert choose(rates, [[None], [None], [None]]) == 1e-3  # none learned


def test_the_default_reads_a_grid_made_like_it_and_refuses_another(tmp_path):
    """A grid the lr_grid preset made is one the default preset accepts (their SHARED fields
    agree), and a grid made otherwise, or none, is a one-line error."""
    default, grid = get_config(), get_config("lr_grid")
    assert default.lr_grid.from_result and not grid.lr_grid.from_result
    assert "train" in SHARED and "lr_grid.learning_rates" in SHARED
    assert grid.seeds == 0 and default.seeds >= probes.MIN_SEEDS
    made = {
        "config": grid.to_dict(),
        "lr_grid": {
            "learning_rates": list(grid.lr_grid.learning_rates),
            "valid_loss": {n: {str(d): [[2.0]] * 3 for d in grid.depths} for n in grid.variants},
            "chosen": {n: {str(d): 3e-3 for d in grid.depths} for n in grid.variants},
        },
    }
    path = tmp_path / "lr_grid.json"
    path.write_text(json.dumps(record.stored({"result": made, "command": "c"})))
    cfg = get_config()
    cfg.lr_grid.from_result = str(path)
    got = load_grid(cfg)
    assert got["chosen"]["pre"]["16"] == 3e-3 and got["source"] == str(path)
    cfg.train.steps = 100
    with pytest.raises(BadInputError, match="train"):
        load_grid(cfg)
    cfg = get_config()
    cfg.lr_grid.from_result = str(tmp_path / "none.json")
    with pytest.raises(BadInputError, match="no .*none.json"):
        load_grid(cfg)


def test_the_committed_grid_fits_the_default_preset():
    got = load_grid(get_config())  # results/depth/lr_grid.json
    rates = set(get_config().lr_grid.learning_rates)
    assert all(lr in rates for by in got["chosen"].values() for lr in by.values())


# ------------------------------------------------------------------ data, model, program


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

    @functools.partial(jax.jit, compiler_options=train.compiler_options(quick))
    def norms(p):
        got = train.grad_norms(model, xiong, p)
        rest = {k: x for k, x in p.items() if k != "stack"}
        return got, probes.global_norm(rest), probes.global_norm(p)

    p = model.init(jax.random.PRNGKey(0))
    got, rest, total = norms(p)
    assert got["layers"].shape == (3,)
    assert float(jnp.sum(got["layers"] ** 2) + rest**2) == pytest.approx(float(total) ** 2, 1e-5)
    assert float(got["total"]) == pytest.approx(float(total), rel=1e-6)
    want = p["stack"]["layers"][-1]["ffn"]["w2"] if v.family == "attention" else None
    if want is not None:
        assert float(got["xiong"]) == pytest.approx(float(jnp.linalg.norm(want)), rel=1e-5)


def _reference_step(model, tx, tc, params, state, train_ids, key):
    windows = data.batch(train_ids, key, tc.batch, tc.length)
    value, g = jax.value_and_grad(functools.partial(depth_lm.loss, model))(params, windows)
    updates, state = tx.update(g, state, params)
    return optax.apply_updates(params, updates), state, value, probes.global_norm(g)


def test_program_equals_a_python_loop_with_the_library_optimizer(quick, corpus):
    """The compiled program (one loop in XLA, shared by post-LN with and without warmup and
    by every learning rate, at the quick preset's sizes and compile options) against a Python
    loop over the same batches with anatomy.train.make_optimizer's AdamW(schedule) and
    clipping, one jitted step at a time: every training loss, the gradient norm at init and
    the loss on the run's split."""
    group = [VARIANTS["post"], VARIANTS["post_warmup"]]
    program = train.compile_program(group[0], XIONG["attention"], quick, 1, corpus)
    tc = quick.train
    runs = [train.Run(0, 3e-3, tc.steps, "test"), train.Run(7, 1e-2, tc.steps, "valid")]
    got = train.run_group(program, group, quick, corpus, {v.name: runs for v in group})
    model = depth_lm.build(VARIANTS["post"], quick.model, 1, corpus.vocab_size)
    init_keys, data_keys = train.run_keys(quick.seed, [r.seed for r in runs])
    train_ids = jnp.asarray(corpus.train)
    fast = train.compiler_options(quick)
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


def test_plots_draw_from_a_results_json_alone(tmp_path):
    """The committed result's plots are redrawn from its results.json (no run): every
    variant has a style of its own, so post-LN shows beside post-LN + warmup."""
    results = record.stored(fake({"no_layernorm": {**CONCAVE, 8: [48.2, float("nan"), 931.0]}}))
    assert plots.draw(results, str(tmp_path)) == ["loss_vs_depth.png", "grad_norms_at_init.png"]
    assert all(
        (tmp_path / p).stat().st_size > 0 for p in ("loss_vs_depth.png", "grad_norms_at_init.png")
    )
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
    assert set(res["variants"]) == set(quick.variants)
    grid = res["lr_grid"]
    assert grid["source"] == "this run" and grid["split"] == "valid"
    assert min(grid["seeds"]) >= 2 * quick.seeds  # design seeds are not judged seeds
    for name, v in res["variants"].items():
        assert sorted(int(d) for d in v["depths"]) == list(quick.depths)
        for d, row in v["depths"].items():
            per_rate = grid["valid_loss"][name][d]
            assert len(per_rate) == len(quick.lr_grid.learning_rates)
            assert row["learning_rate"] == choose(quick.lr_grid.learning_rates, per_rate)
            grads = np.array(row["init_grad_layers"], np.float64)
            assert grads.shape == (2 * quick.seeds, int(d)) and np.isfinite(grads).all()
            assert np.isfinite(row["init_grad_xiong"]).all()
            assert len(row["test_loss"]) == quick.seeds
    n = quick.train.length
    for d in quick.depths:  # read from the compiled forward program: exact
        assert res["serial_steps"]["recurrent"][str(d)]["hlo"] == d * n
        assert res["serial_steps"]["attention"][str(d)]["hlo"] == 0
    assert res["cost"]["cpu_seconds"] > 0
    ids = {r["id"]: r["verdict"] for r in res["table"]}
    assert ids["depth/serial_steps"] == HOLDS
    assert all(v in probes.VERDICTS for v in ids.values())
    report = (workdir / "report.md").read_text()
    assert all(f"**{r['verdict']}**" in report for r in res["table"])
    assert (workdir / "loss_vs_depth.png").exists() and (
        workdir / "grad_norms_at_init.png"
    ).exists()
    # the table is what claims.py gives when it judges the written results.json again, and
    # the chapter's claim is read by its id, as the report reads it
    assert [c.as_dict() for c in claims.table(res)] == res["table"]
    judged = record.claims_of("depth", res)
    assert "depth/stackability" in judged and "depth/stackability" not in ids
    assert f"**{judged['depth/stackability'].verdict}**" in report


def test_unknown_variant_or_bad_depths_is_bad_input():
    cfg = get_config("quick")
    cfg.variants = ["pre", "nope"]
    with pytest.raises(BadInputError, match="nope"):
        check(cfg)
    cfg = get_config("quick")
    cfg.depths = [2, 1]
    with pytest.raises(BadInputError, match="ascending"):
        check(cfg)
    cfg = get_config("quick")
    cfg.lr_grid.first_seed = 1  # inside the judged and init seeds 0 .. 5
    with pytest.raises(BadInputError, match="disjoint"):
        check(cfg)
