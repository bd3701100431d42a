"""The benchmarks compare equal work: every pair computes the same output and input gradient.

Runs benchmarks/ equivalence checks on tiny shapes (no timing is asserted anywhere).
"""

import numpy as np
import pytest
import torch

from benchmarks.cases import Case, Impl, build_cases
from benchmarks.check import check_case

TOL = 1e-5  # float32 on both sides; differences are rounding only


@pytest.fixture(scope="module")
def cases():
    # One torch thread: tiny shapes gain nothing from two, and on a loaded machine an OpenMP
    # team waits for descheduled siblings. Restored afterwards for the other test files.
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield {c.name: c for c in build_cases("tiny", seed=0)}
    torch.set_num_threads(n)


@pytest.mark.parametrize(
    "name",
    [
        "LSTM layer",
        "GRU layer",
        "scaled dot-product",
        "multi-head attention",
        "encoder layer (post-LN)",
    ],
)
def test_pairs_compute_the_same_thing(cases, name):
    errors = check_case(cases[name], TOL, fused=True)
    assert "torch" in errors and "flax" in errors
    assert all(np.isfinite(e["out"]) for e in errors.values())
    # the input gradient was compared too (check_case skips it where an impl has no backward)
    assert errors["torch"]["dx"] is not None and errors["flax"]["dx"] is not None


def test_check_catches_different_work():
    a, b = np.arange(1.0, 7.0), np.arange(1.0, 7.0) * 1.01
    case = Case(
        "toy",
        "",
        1.0,
        {"anatomy": Impl(lambda: a, lambda: (a,)), "other": Impl(lambda: b, lambda: (a,))},
    )
    with pytest.raises(AssertionError, match="other differs from anatomy"):
        check_case(case, TOL)


def test_unknown_preset():
    with pytest.raises(ValueError, match="unknown preset"):
        build_cases("huge")


# --- translator-level cases: a whole train step, greedy decoding -----------------------------


@pytest.fixture(scope="module")
def translator_cases():
    from benchmarks.cases_translator import build_translator_cases

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield {c.name: c for c in build_translator_cases("tiny", seed=0)}
    torch.set_num_threads(n)


@pytest.mark.parametrize(
    "name, peers",
    [
        ("Transformer train step", ("torch", "flax")),
        ("RNNsearch train step", ("torch",)),
        ("greedy decoding", ("anatomy recompute", "torch recompute 1 thread")),
    ],
)
def test_translator_pairs_do_the_same_work(translator_cases, name, peers):
    from benchmarks.cases_translator import check_step_case

    case = translator_cases[name]
    errors = check_step_case(case, TOL)
    assert set(peers) <= set(errors)
    for e in errors.values():
        if "tokens" in e:
            assert e["tokens"] == 0.0
        else:  # loss AND every mapped gradient were compared
            assert np.isfinite(e["loss"]) and np.isfinite(e["grads"])
    assert case.tokens > 0


def test_translator_check_catches_different_work(translator_cases):
    from benchmarks.cases_translator import check_step_case

    case = translator_cases["Transformer train step"]
    torch_impl = case.impls["torch"]

    def wrong_grad():  # one gradient tensor (the output bias) 2% off
        got = torch_impl.check()
        got["grads"]["out_bias"] = got["grads"]["out_bias"] * 1.02
        return got

    bad = case._replace(
        impls={"anatomy": case.impls["anatomy"], "torch": torch_impl._replace(check=wrong_grad)}
    )
    with pytest.raises(AssertionError, match="torch differs from anatomy"):
        check_step_case(bad, TOL)

    dec = translator_cases["greedy decoding"]
    rec = dec.impls["anatomy recompute"]

    def wrong_token():
        t = np.array(rec.check()["tokens"])
        t[0, -1] += 1
        return {"tokens": t}

    bad = dec._replace(
        impls={"anatomy": dec.impls["anatomy"], "r": rec._replace(check=wrong_token)}
    )
    with pytest.raises(AssertionError, match="r differs from anatomy"):
        check_step_case(bad, TOL)
