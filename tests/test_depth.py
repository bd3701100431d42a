"""The depth experiment: its verdicts on injected numbers (each side of each claim), its data
against a direct count, its compiled training program against a plain Python loop, and the
quick preset through launch.py."""

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
from experiments import record
from experiments.configs.depth import get_config
from experiments.depth import VARIANTS, XIONG, check, claims, data, train
from experiments.depth import lm as depth_lm

CAVEAT, FAILS, HOLDS = probes.CAVEAT, probes.FAILS, probes.HOLDS
UNIGRAM = 3.0
GOOD = {1: 2.30, 2: 2.20, 4: 2.10, 8: 2.05, 16: 2.00}  # improves at every doubling
WORSE_AT_8 = {1: 2.30, 2: 2.20, 4: 2.10, 8: 2.40, 16: 2.60}


def _seeds(mean, spread=0.002):
    return [mean - spread, mean, mean + spread]


def fake(losses=None, fits=None, serial=None, unigram=UNIGRAM):
    """results.json as depth writes it, from {variant: {L: mean or [seeds]}}: every variant
    GOOD unless given, the LSTM stacks GOOD too, Xiong's slopes ideal, serial steps exact."""
    losses = {**{n: GOOD for n in VARIANTS}, **(losses or {})}
    fits = {"post": 0.0, "pre": -0.5, **(fits or {})}
    variants = {}
    for name, by_depth in losses.items():
        v = VARIANTS[name]
        depths = {
            str(d): {
                "valid_loss": x if isinstance(x, list) else _seeds(x),
                "init_grad_layers": [[1.0] * d] * 6,
                "seconds_per_step": 0.01 * d,
            }
            for d, x in by_depth.items()
        }
        fit = fits.get(name, -0.2)
        variants[name] = {
            "family": v.family,
            "label": v.label,
            "depths": depths,
            "xiong_fit": None if fit is None else {"exponent": fit, "prefactor": 1.0, "r2": 1.0},
        }
    n = 64
    serial = serial or {
        "recurrent": {
            str(d): {"n": n, "hlo": d * n, "jaxpr": d * n, "variant": "lstm"} for d in GOOD
        },
        "attention": {str(d): {"n": n, "hlo": 0, "jaxpr": 0, "variant": "pre"} for d in GOOD},
    }
    return {"data": {"unigram_loss": unigram}, "variants": variants, "serial_steps": serial}


def judge(results):
    """The table's claims, then the chapter's, as record.claims_of reads them."""
    return [*claims.table(results), *claims.chapter(results)]


def verdicts(results):
    return {c.id: c.verdict for c in judge(results)}


# ------------------------------------------------------------------ claims on injected numbers


def test_every_claim_has_a_unique_id_and_time_is_never_judged():
    judged = judge(fake())
    ids = [c.id for c in judged]
    assert len(set(ids)) == len(ids) and all(i.startswith("depth/") for i in ids)
    assert {c.id: c.verdict for c in judged}["depth/time_per_step"] == probes.REPORTED
    row = probes.claims_json(judged)[0]
    assert list(row)[0] == "id" and set(row) >= {"claim", "expected", "measured", "verdict"}


def test_pre_ln_stacks_holds_when_flat_and_fails_when_it_degrades_or_a_seed_fails():
    assert verdicts(fake())["depth/pre_ln_stacks"] == HOLDS
    flat = {d: 2.3 for d in GOOD}  # no gain, no loss: still stacks
    assert verdicts(fake({"pre": flat}))["depth/pre_ln_stacks"] == HOLDS
    assert verdicts(fake({"pre": WORSE_AT_8}))["depth/pre_ln_stacks"] == FAILS
    nan_seed = {**GOOD, 4: [2.1, float("nan"), 2.1]}
    assert verdicts(fake({"pre": nan_seed}))["depth/pre_ln_stacks"] == FAILS
    at_unigram = {**GOOD, 16: [2.0, 2.0, UNIGRAM - claims.FAIL_MARGIN / 2]}
    assert verdicts(fake({"pre": at_unigram}))["depth/pre_ln_stacks"] == FAILS


def test_a_rise_within_the_seed_spread_is_not_degrading():
    wide = {**GOOD, 16: [1.9, 2.1, 2.35]}  # mean 2.117 > 2.05, but the seeds disagree widely
    assert verdicts(fake({"pre": wide}))["depth/pre_ln_stacks"] == HOLDS
    tight = {**GOOD, 16: _seeds(2.05 + 2 * claims.MIN_TOL)}
    assert verdicts(fake({"pre": tight}))["depth/pre_ln_stacks"] == FAILS


def test_no_residual_breaks_by_8_on_either_failure_and_not_past_8():
    v = "depth/no_residual_breaks"
    assert verdicts(fake({"no_residual": WORSE_AT_8}))[v] == HOLDS
    failing = {**GOOD, 4: [UNIGRAM, UNIGRAM + 0.1, float("nan")]}
    assert verdicts(fake({"no_residual": failing}))[v] == HOLDS
    assert verdicts(fake({"no_residual": GOOD}))[v] == FAILS
    only_at_16 = {**GOOD, 16: 2.6}
    assert verdicts(fake({"no_residual": only_at_16}))[v] == FAILS
    assert verdicts(fake({"no_layernorm": WORSE_AT_8}))["depth/no_layernorm_breaks"] == HOLDS


def test_post_ln_needs_warmup_is_two_sided():
    v = "depth/post_ln_needs_warmup"
    assert verdicts(fake({"post": WORSE_AT_8}))[v] == HOLDS
    assert verdicts(fake())[v] == FAILS  # both stack: warmup was not needed here
    assert verdicts(fake({"post": WORSE_AT_8, "post_warmup": WORSE_AT_8}))[v] == FAILS


def test_steady_gain_needs_a_gain_at_every_doubling():
    assert verdicts(fake())["depth/steady_gain"] == HOLDS
    plateau = {**GOOD, 16: GOOD[8]}
    assert verdicts(fake({"pre": plateau}))["depth/steady_gain"] == FAILS


def test_plain_lstm_degrades_only_counts_past_a_few_layers():
    v = "depth/lstm_plain_degrades"
    assert verdicts(fake({"lstm": WORSE_AT_8}))[v] == HOLDS
    assert verdicts(fake({"lstm": {**GOOD, 16: [UNIGRAM] * 3}}))[v] == HOLDS
    assert verdicts(fake({"lstm": GOOD}))[v] == FAILS
    early = {1: 2.3, 2: 2.6, 4: 2.6, 8: 2.2, 16: 2.1}  # worse at 2 (GNMT's few), not past 4
    assert verdicts(fake({"lstm": early}))[v] == FAILS
    shallow = {d: x for d, x in WORSE_AT_8.items() if d <= claims.FEW_LAYERS}
    assert verdicts(fake({"lstm": shallow}))[v] == probes.NOT_SHOWN


def test_the_gradient_ratio_down_the_stack_is_reported_beside_the_lstm_verdict():
    results = fake({"lstm": WORSE_AT_8})
    results["variants"]["lstm"]["depths"]["16"]["init_grad_layers"] = [
        list(np.geomspace(1e-4, 1.0, 16))
    ] * 6
    assert claims.bottom_over_top(results, "lstm") == (16, pytest.approx(1e-4))
    row = {c.id: c for c in judge(results)}["depth/lstm_plain_degrades"]
    assert "0.0001x layer 16's" in row.detail


def test_xiong_slope_holds_near_the_theorem_caveat_on_direction_fails_otherwise():
    v = "depth/xiong_slope"
    assert verdicts(fake())[v] == HOLDS
    assert verdicts(fake(fits={"post": 0.1, "pre": -0.6}))[v] == HOLDS
    assert verdicts(fake(fits={"post": 0.27, "pre": -0.19}))[v] == CAVEAT
    assert verdicts(fake(fits={"post": 0.0, "pre": 0.1}))[v] == FAILS
    assert verdicts(fake(fits={"post": -0.5, "pre": -0.5}))[v] == FAILS
    assert verdicts(fake(fits={"pre": None}))[v] == probes.NOT_SHOWN


def test_serial_steps_must_be_exact():
    good = fake()
    assert verdicts(good)["depth/serial_steps"] == HOLDS
    off = json.loads(json.dumps(good["serial_steps"]))
    off["recurrent"]["4"]["hlo"] += 1
    assert verdicts(fake(serial=off))["depth/serial_steps"] == FAILS
    loop = json.loads(json.dumps(good["serial_steps"]))
    loop["attention"]["2"].update(hlo=64, jaxpr=64)
    assert verdicts(fake(serial=loop))["depth/serial_steps"] == FAILS


def test_stackability_holds_caveat_fails():
    v = "depth/stackability"
    rnn_fails = {"lstm": WORSE_AT_8, "lstm_residual_ln": WORSE_AT_8, "no_residual": WORSE_AT_8}
    assert verdicts(fake(rnn_fails))[v] == HOLDS
    fixed = {"lstm": WORSE_AT_8, "no_residual": WORSE_AT_8}  # residual + LN LSTM stacks
    assert verdicts(fake(fixed))[v] == CAVEAT
    no_rnn_problem = {"no_residual": WORSE_AT_8}
    assert verdicts(fake(no_rnn_problem))[v] == CAVEAT
    assert verdicts(fake({"lstm": WORSE_AT_8}))[v] == FAILS  # the residual was not needed
    assert verdicts(fake({**rnn_fails, "pre": WORSE_AT_8}))[v] == FAILS
    shallow_lstm = {d: x for d, x in WORSE_AT_8.items() if d <= claims.FEW_LAYERS}
    assert verdicts(fake({**fixed, "lstm": shallow_lstm}))[v] == probes.NOT_SHOWN


def test_a_variant_not_run_is_missing_not_judged():
    results = fake()
    del results["variants"]["no_residual"]
    got = verdicts(results)
    assert got["depth/no_residual_breaks"] == probes.MISSING
    assert got["depth/stackability"] == probes.MISSING  # the weakest of its parts


# ------------------------------------------------------------------ data, model, program


@pytest.fixture(scope="module")
def quick():
    return get_config("quick")


@pytest.fixture(scope="module")
def corpus(quick):
    return data.load(quick.data, quick.train.length, quick.seed)


def test_corpus_windows_and_unigram_loss_match_a_direct_count(corpus, quick):
    n = quick.train.length
    assert corpus.valid.shape == (quick.data.valid_windows, n + 1)
    np.testing.assert_array_equal(corpus.valid[1:, 0], corpus.valid[:-1, -1])  # contiguous
    counts = {}
    for c in corpus.train.tolist():
        counts[c] = counts.get(c, 0) + 1
    total = len(corpus.train) + corpus.vocab_size
    scored = corpus.valid[:, 1:].ravel()
    direct = -np.mean([math.log((counts.get(c, 0) + 1) / total) for c in scored])
    assert corpus.unigram_loss == pytest.approx(direct, rel=1e-9)
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
    """The compiled program (one loop in XLA, shared by post-LN with and without warmup, at
    the quick preset's sizes and compile options) against a Python loop over the same batches
    with anatomy.train.make_optimizer's AdamW(schedule) and clipping, one jitted step at a
    time: every training loss, the gradient norm at init and the validation loss."""
    group = [VARIANTS["post"], VARIANTS["post_warmup"]]
    got = train.train_group(group, XIONG["attention"], quick, 1, corpus)
    model = depth_lm.build(VARIANTS["post"], quick.model, 1, corpus.vocab_size)
    init_keys, data_keys = train.run_keys(quick.seed, range(quick.seeds))
    train_ids, valid_ids = jnp.asarray(corpus.train), jnp.asarray(corpus.valid)
    fast = train.compiler_options(quick)
    valid = jax.jit(functools.partial(depth_lm.loss, model), compiler_options=fast)
    tc = quick.train
    for name in ("post", "post_warmup"):
        v = VARIANTS[name]
        opt_cfg = dict(
            learning_rate=tc.learning_rate,
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
        row = got[name]
        for s in range(quick.seeds):
            params = model.init(init_keys[s])
            state, losses, norms = tx.init(params), [], []
            for i in range(tc.steps):
                key = jax.random.fold_in(data_keys[s], i)
                params, state, value, norm = step(params, state, train_ids, key)
                losses.append(float(value))
                norms.append(float(norm))
            np.testing.assert_allclose(row["losses"][s], losses, rtol=2e-5)
            assert row["valid_loss"][s] == pytest.approx(float(valid(params, valid_ids)), rel=2e-5)
            assert row["init_grads"]["total"][s] == pytest.approx(norms[0], rel=2e-5)
        assert row["init_grads"]["xiong"].shape == (2 * quick.seeds,)


# ------------------------------------------------------------------ the quick preset


@pytest.fixture(scope="module")
def quick_run(quick_report):
    """The quick preset as the quick report ran it through launch.py (conftest.quick_report)."""
    workdir = quick_report / "depth"
    return workdir, json.loads((workdir / "results.json").read_text())


def test_quick_preset_through_launch(quick_run, quick):
    workdir, res = quick_run
    assert set(res["variants"]) == set(quick.variants)
    for v in res["variants"].values():
        assert sorted(int(d) for d in v["depths"]) == list(quick.depths)
        for d, row in v["depths"].items():
            grads = np.array(row["init_grad_layers"], np.float64)
            assert grads.shape == (2 * quick.seeds, int(d)) and np.isfinite(grads).all()
            assert (
                np.isfinite(row["init_grad_xiong"]).all() and len(row["valid_loss"]) == quick.seeds
            )
    n = quick.train.length
    for d in quick.depths:  # read from the compiled forward program: exact
        assert res["serial_steps"]["recurrent"][str(d)]["hlo"] == d * n
        assert res["serial_steps"]["attention"][str(d)]["hlo"] == 0
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
