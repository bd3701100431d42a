"""context_length: the task against slow twins, every verdict on injected numbers (both
sides), and the quick preset through launch.py."""

import json
import math
import pathlib

import numpy as np
import pytest

from anatomy import probes
from anatomy.errors import BadInputError
from experiments import context_length, record
from experiments.configs.context_length import get_config
from experiments.context_length import claims, models, task, train
from experiments.context_length.claims import CAVEAT, FAILS, HOLDS, NOT_SHOWN

K, V = 5, 7


# --- the task -----------------------------------------------------------------------------------


def test_stream_binds_each_key_to_one_value_per_sequence(rng):
    tok = task.stream_batch(rng, 6, 40, K, V)
    assert tok.shape == (6, 40) and tok.dtype == np.int32
    keys, values = tok[:, 0::2], tok[:, 1::2]
    assert keys.min() >= 0 and keys.max() < K and values.min() >= K and values.max() < K + V
    for row_k, row_v in zip(keys, values):
        bound = {}
        for k, v in zip(row_k, row_v):
            assert bound.setdefault(k, v) == v


def test_oracle_is_log_v_on_first_occurrences_only(rng):
    tok = task.stream_batch(rng, 4, 30, K, V)
    got = task.oracle_value_loss(tok, K, V)
    for b in range(4):  # a slow twin: the set of keys seen so far
        seen = set()
        for i, k in enumerate(tok[b, 0::2]):
            assert got[b, i] == (0.0 if k in seen else math.log(V))
            seen.add(k)


@pytest.mark.parametrize("distance", [2, 8, 26])
def test_probe_plants_the_query_exactly_once_at_its_distance(rng, distance):
    n = 28
    tok, answer = task.probe_batch(rng, 16, n, distance, K, V)
    keys = tok[:, 0::2]
    for b in range(16):
        q = keys[b, -1]
        where = np.flatnonzero(keys[b] == q) * 2  # token positions of q
        assert list(where) == [n - 2 - distance, n - 2]
        assert tok[b, n - 1 - distance] == tok[b, n - 1] == answer[b]  # one value for q
    assert task.chance(V) == pytest.approx(1 / V)


def test_task_refuses_impossible_shapes(rng):
    with pytest.raises(BadInputError, match="even"):
        task.stream_batch(rng, 2, 15, K, V)
    with pytest.raises(BadInputError, match="distance"):
        task.probe_batch(rng, 2, 20, 20, K, V)
    with pytest.raises(BadInputError, match="distance"):
        task.probe_batch(rng, 2, 20, 5, K, V)


def test_loss_at_length_reads_the_value_tokens_of_the_prefix():
    per_position = np.arange(1.0, 16.0)  # [N-1] for N = 16: index t-1 predicts token t
    # value tokens are t = 1, 3, .., 7 for length 8: indices 0, 2, 4, 6
    assert train.loss_at_length(per_position, 8) == pytest.approx(np.mean([1, 3, 5, 7]))
    assert train.loss_at_length(per_position, 16) == pytest.approx(np.mean(per_position[0::2]))


# --- the contenders -----------------------------------------------------------------------------


def test_ntk_base_and_the_extensions():
    # bloc97's NTK-aware base: base · s^(d/(d-2)); d = 16, s = 4
    assert models.ntk_base(10000.0, 4, 16) == pytest.approx(10000.0 * 4 ** (16 / 14))
    rope = models.pretrained("rope")
    pi = models.extend(rope, "interpolation", 4, 16)
    ntk = models.extend(rope, "ntk", 4, 16)
    assert (pi.rope_scale, pi.rope_base) == (4.0, rope.rope_base)
    assert (ntk.rope_scale, ntk.rope_base) == (1.0, models.ntk_base(rope.rope_base, 4, 16))
    assert pi.positions == ntk.positions == "rope" and pi.family == "transformer"
    with pytest.raises(BadInputError, match="only a RoPE"):
        models.extend(models.pretrained("alibi"), "ntk", 4, 16)
    with pytest.raises(BadInputError, match="how must be"):
        models.extend(rope, "yarn", 4, 16)


def test_unknown_model_names_the_choices():
    with pytest.raises(BadInputError, match="'lstm'.*'rope'"):
        models.pretrained("gru")


def test_held_out_puts_streams_and_probes_in_one_row_width():
    cfg = get_config("quick")
    held = context_length.held_out(cfg)
    assert held.stream.shape[1] == held.probes.shape[1] == max(context_length.lengths(cfg))
    for n, k, rows in held.groups:  # each probe's query sits at n - 2 and k before it
        assert (held.at[rows] == n - 2).all() and (held.probes[rows, n:] == 0).all()
        assert (held.probes[rows, n - 2] == held.probes[rows, n - 2 - k]).all()
    cfg.ft_factor = 16  # past the longest evaluated length: nowhere to measure it
    with pytest.raises(BadInputError, match="ft_factor"):
        context_length.held_out(cfg)


# --- the verdicts on injected numbers ------------------------------------------------------------


def test_thresholds():
    c = 1 / 16
    assert claims.well_above_chance(c + 0.5 * (1 - c), c)
    assert not claims.well_above_chance(c + 0.5 * (1 - c) - 1e-6, c)
    assert not claims.well_above_chance(float("nan"), c)
    assert claims.at_chance(c + 0.05, c) and not claims.at_chance(c + 0.051, c)
    # excess at N <= excess at L + 5% of the loss at L
    assert claims.within_tolerance(0.15, 0.1, 1.0) and not claims.within_tolerance(0.151, 0.1, 1.0)
    assert not claims.within_tolerance(float("nan"), 0.1, 1.0)
    # learned: the loss at L closed half the gap from log V (3) to the oracle (1)
    assert claims.learned(2.0, 1.0, 3.0) and not claims.learned(2.01, 1.0, 3.0)


def test_extension_verdict_both_sides():
    ok, not_ok = {"a": True, "b": False}, {"a": False, "b": False}
    assert claims.extension_verdict(ok, control_ok=False, rope_learned=True) == HOLDS
    assert claims.extension_verdict(ok, control_ok=True, rope_learned=True) == CAVEAT
    assert claims.extension_verdict(not_ok, control_ok=True, rope_learned=True) == FAILS
    assert claims.extension_verdict(ok, control_ok=False, rope_learned=False) == NOT_SHOWN


def test_lstm_beyond_verdict_both_sides():
    c = 0.1
    assert claims.lstm_beyond_verdict(8, 0.12, c) == HOLDS  # at chance beyond L
    assert claims.lstm_beyond_verdict(8, 0.8, c) == FAILS  # it uses the extra context
    assert claims.lstm_beyond_verdict(8, 0.3, c) == CAVEAT  # above chance, not well above
    assert claims.lstm_beyond_verdict(None, 0.1, c) == NOT_SHOWN  # never retrieved within L


def test_gap_and_chapter_verdicts():
    assert claims.better_gap_verdict(0.0, [0.1, 0.3], True) == HOLDS
    assert claims.better_gap_verdict(0.09, [0.1, 0.3], True) == FAILS  # inside the margin
    assert claims.better_gap_verdict(0.0, [0.1], False) == NOT_SHOWN
    assert claims.better_gap_verdict(float("nan"), [0.1], True) == NOT_SHOWN
    v = claims.context_extension_verdict
    assert v(HOLDS, HOLDS) == HOLDS
    assert v(HOLDS, FAILS) == v(CAVEAT, HOLDS) == v(FAILS, HOLDS) == CAVEAT
    assert v(FAILS, FAILS) == v(FAILS, NOT_SHOWN) == FAILS
    assert v(NOT_SHOWN, HOLDS) == v(None, HOLDS) == NOT_SHOWN


def _results(losses, within, beyond, params=None):
    """A results.json with injected numbers: losses {model: [at L, 2L, 4L, 8L]}, within /
    beyond {model: accuracy}; L = 8, ft at 4L = 32, V = 8 (log V 2.08), oracle 1.0 .. 0.25."""
    lengths, probe_lengths = [8, 16, 32, 64], [8, 32, 64]
    k_grid = [[2, 6], [2, 6, 12, 24], [2, 6, 12, 24, 48]]
    out = {}
    for name, loss in losses.items():
        w, b = within.get(name, 0.9), beyond.get(name, 0.9)
        probe = [
            [[w, w] for _ in k_grid[0]],
            [[w if k <= 8 else b] * 2 for k in k_grid[1]],
            [[0.5, 0.5] for _ in k_grid[2]],
        ]
        family = "lstm" if name.startswith("lstm") else "transformer"
        base = name.split("+")[0]
        out[name] = {
            "family": family,
            "stage": "fine-tuned" if name.endswith("+ft") else "pre-trained at L",
            "from": base,
            "params": (params or {}).get(name, 100),
            "value_loss": [[x, x] for x in loss],
            "probe": probe,
        }
    return {
        "train_length": 8,
        "lengths": lengths,
        "ft_length": 32,
        "ft_steps": 3,
        "probe_lengths": probe_lengths,
        "k_grid": k_grid,
        "chance": 1 / 8,
        "log_values": math.log(8),
        "oracle": {"value_loss": [1.0, 0.6, 0.4, 0.25]},
        "models": out,
    }


GOOD = [1.1, 0.7, 0.5, 0.35]  # learned; its excess over the oracle stays 0.1 past L
BLOWN = [1.1, 1.9, 2.5, 3.0]  # learned, blows up past L


# The claims the injected numbers below make hold on one side and fail on the other.
TWO_SIDED = tuple(
    f"context_length/{c}"
    for c in ("press_sinusoidal", "press_alibi", "extension", "lstm_beyond", "context_extension")
)


def _by_id(results):
    table = {c.id: c for c in claims.table(results)}
    for c in claims.chapter(results):
        table[c.id] = c
    return table


def test_claims_hold_on_injected_numbers_where_the_chapter_holds():
    res = _results(
        {
            "sinusoidal": BLOWN,
            "alibi": GOOD,
            "rope": BLOWN,
            "rope+pi+ft": GOOD,
            "rope+ntk+ft": BLOWN,
            "rope+ft": BLOWN,
            "lstm": GOOD,
            "lstm+ft": GOOD,
        },
        within={"lstm": 0.9},
        beyond={"rope": 0.1, "rope+ntk+ft": 0.1, "rope+ft": 0.1, "lstm": 0.1, "lstm+ft": 0.13},
    )
    got = _by_id(res)
    assert {c: got[c].verdict for c in TWO_SIDED} == dict.fromkeys(TWO_SIDED, HOLDS)
    assert got["context_length/model/rope"].verdict == probes.REPORTED


def test_claims_fail_on_injected_numbers_where_the_chapter_fails():
    res = _results(
        {
            "sinusoidal": GOOD,
            "alibi": BLOWN,
            "rope": BLOWN,
            "rope+pi+ft": BLOWN,  # the loss blows up
            "rope+ntk+ft": GOOD,  # flat loss, but no retrieval beyond L
            "rope+ft": GOOD,
            "lstm": GOOD,
            "lstm+ft": GOOD,
            "none": GOOD,
        },
        within={},
        beyond={"rope+ntk+ft": 0.2, "lstm+ft": 0.9},
    )
    got = _by_id(res)
    assert {c: got[c].verdict for c in TWO_SIDED} == dict.fromkeys(TWO_SIDED, FAILS)
    # generalisation gaps (excess at 4L - excess at L): GOOD 0, BLOWN 2.0
    assert got["context_length/nope"].verdict == HOLDS  # none 0 < rope, alibi 2.0
    assert (
        got["context_length/lstm_generalises"].verdict == FAILS
    )  # lstm 0, level with none and sinusoidal


def test_the_control_and_the_floors():
    losses = {m: GOOD for m in ("rope", "rope+pi+ft", "rope+ntk+ft", "rope+ft", "lstm")}
    got = _by_id(_results(losses, within={}, beyond={}))
    assert got["context_length/extension"].verdict == CAVEAT  # plain RoPE + fine-tune suffices
    unlearned = [2.0, 1.9, 1.9, 1.9]  # closed less than half the gap from log 8 to the oracle
    losses = {**losses, "rope": unlearned, "lstm": unlearned}
    got = _by_id(_results(losses, within={"lstm": 0.1}, beyond={}))
    assert got["context_length/extension"].verdict == NOT_SHOWN
    assert got["context_length/lstm_beyond"].verdict == NOT_SHOWN
    assert got["context_length/context_extension"].verdict == NOT_SHOWN
    changed = _results(
        {**losses, "rope": GOOD}, within={}, beyond={"rope+ft": 0.1}, params={"rope+pi+ft": 101}
    )
    assert _by_id(changed)["context_length/extension"].verdict == FAILS  # not the same model


def test_a_falling_loss_can_still_blow_up():
    # the loss falls with length, but slower than the oracle's (1.0, 0.6, 0.4, 0.25): the
    # excess grows 0.1 -> 0.3, so it does not read what the longer sequence offers
    falling = [1.1, 0.9, 0.8, 0.7]
    got = _by_id(_results({"sinusoidal": falling, "alibi": falling}, {}, {}))
    assert got["context_length/press_sinusoidal"].verdict == HOLDS
    assert got["context_length/press_alibi"].verdict == FAILS


def test_claim_ids_are_unique_and_named_for_the_experiment():
    res = _results({m: GOOD for m in ("sinusoidal", "rope", "rope+pi+ft", "lstm")}, {}, {})
    ids = [c.id for c in claims.table(res) + claims.chapter(res)]
    assert len(ids) == len(set(ids)) and all(i.startswith("context_length/") for i in ids)


# --- the quick preset through launch.py ----------------------------------------------------------


@pytest.fixture(scope="module")
def quick(quick_report):
    """The quick preset as the quick report ran it through launch.py (conftest.quick_report)."""
    workdir = quick_report / "context_length"
    return workdir, json.loads((workdir / "results.json").read_text())


def test_quick_measures_every_encoding_at_every_length(quick):
    workdir, res = quick
    cfg = get_config("quick")
    n = cfg.train_length
    assert res["lengths"] == [f * n for f in cfg.length_factors]
    assert res["probe_lengths"] == [n, cfg.ft_factor * n]
    assert res["k_grid"] == [[k for k in cfg.k_grid if k <= m - 2] for m in res["probe_lengths"]]
    assert res["chance"] == pytest.approx(1 / cfg.n_values)
    want = set(cfg.models) | {"rope+pi", "rope+ntk", "rope+pi+ft", "rope+ntk+ft", "rope+ft"}
    assert set(res["models"]) == want | {"lstm+ft"}
    for name, r in res["models"].items():
        assert len(r["value_loss"]) == len(res["lengths"]), name
        assert all(math.isfinite(x) for seeds in r["value_loss"] for x in seeds), name
        assert len(r["value_loss_by_position"]) == max(res["lengths"]) // 2
        assert all(x is not None and math.isfinite(x) for x in r["value_loss_by_position"]), name
        for ks, accs in zip(res["k_grid"], r["probe"]):
            assert len(ks) == len(accs) and all(0 <= a <= 1 for seeds in accs for a in seeds)
    # the extensions keep RoPE's parameters (the architecture unchanged)
    assert res["models"]["rope+pi+ft"]["params"] == res["models"]["rope"]["params"]
    assert res["models"]["rope+ntk"]["rope_scale"] == 1.0
    assert res["models"]["rope+pi"]["rope_scale"] == cfg.ft_factor
    oracle = res["oracle"]["value_loss"]
    assert all(0 < x <= math.log(cfg.n_values) for x in oracle)
    assert oracle == sorted(oracle, reverse=True)  # longer sequences repeat more keys


def test_quick_writes_claims_plots_and_report(quick):
    workdir, res = quick
    assert sorted(res["plots"]) == sorted(p.name for p in pathlib.Path(workdir).glob("*.png"))
    assert len(res["plots"]) == 3
    report = (workdir / "report.md").read_text().replace("\\|", "|")
    ids = [r["id"] for r in res["table"]]
    assert len(ids) == len(set(ids))
    for cid in (
        "context_length/extension",
        "context_length/lstm_beyond",
        "context_length/press_sinusoidal",
        "context_length/press_alibi",
        "context_length/nope",
        "context_length/lstm_generalises",
    ):
        assert cid in ids
    for row in res["table"]:
        assert row["verdict"] in probes.VERDICTS
        assert f"| {row['claim']} |" in report and f"**{row['verdict']}**" in report
    chapter = claims.chapter(res)  # judged again from results.json alone
    assert [c.id for c in chapter] == ["context_length/context_extension"]
    assert chapter[0].claim in report
    # how the report and publish read it: by its id, from results.json
    by_id = record.claims_of("context_length", res)
    assert by_id["context_length/context_extension"].verdict == chapter[0].verdict
