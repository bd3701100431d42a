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
