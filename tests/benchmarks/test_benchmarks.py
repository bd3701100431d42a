"""The benchmarks compare equal work: every pair computes the same output and input gradient.

Runs benchmarks/ equivalence checks on tiny shapes (no timing is asserted anywhere).
"""

import numpy as np
import pytest
import torch

from benchmarks.cases import build_cases
from benchmarks.protocol import Case, check, layer_impl

TOL = 1e-5  # float32 on both sides; differences are rounding only


def tiny_cases(build):
    """{name: case} of build's 'tiny' preset, under one torch thread until the module is done.

    One thread: tiny shapes gain nothing from two, and on a loaded machine an OpenMP team
    waits for descheduled siblings. Restored afterwards for the other test files."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield {c.name: c for c in build("tiny", seed=0)}
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def cases():
    yield from tiny_cases(build_cases)


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
    errors = check(cases[name], TOL, quick=True)
    assert "torch" in errors and "flax" in errors
    assert all(np.isfinite(e["out"]) for e in errors.values())
    # the input gradient was compared too (check skips it where an impl has no backward)
    assert errors["torch"]["dx"] is not None and errors["flax"]["dx"] is not None
    if name in ("scaled dot-product", "multi-head attention"):  # the online-softmax path too
        assert errors["anatomy chunked"]["dx"] is not None


ATTENTION = ("scaled dot-product", "multi-head attention", "encoder layer (post-LN)")


@pytest.mark.parametrize("name", ATTENTION)
def test_peak_memory_is_measured_for_every_impl(cases, name):
    from benchmarks.memory import measure

    case = cases[name]
    got = measure([case])
    for label, impl in case.impls.items():
        for mode in ("fwd", "fwdbwd"):
            if "1 thread" in label or mode not in impl.passes:
                assert (0, label, mode) not in got
                continue
            b = got[(0, label, mode)]
            assert isinstance(b, int) and b > 0, (label, mode, b)
    # a backward pass holds at least what the forward does (the output) and the gradients
    assert got[(0, "torch", "fwdbwd")] > got[(0, "torch", "fwd")]
    assert got[(0, "anatomy", "fwdbwd")] > got[(0, "anatomy", "fwd")]


def test_torch_peak_memory_counts_the_largest_live_tensor():
    from benchmarks.memory import torch_bytes

    def f():  # 4 MB live at the peak, then freed; 4 kB returned
        big = torch.ones(1024, 1024)
        return big[:1].clone()

    b = torch_bytes(f)
    assert 4 * 2**20 <= b <= 4 * 2**20 + 64 * 2**10


def test_dense_attention_memory_grows_quadratically_chunked_linearly():
    from benchmarks.cases import sdpa_case

    rng = np.random.default_rng(0)
    small, large = (sdpa_case(1, 1, n, 8, rng) for n in (128, 512))  # N x4; block_k=128
    for mode in ("fwd", "fwdbwd"):
        growth = {
            lb: large.impls[lb].memory(mode) / small.impls[lb].memory(mode)
            for lb in ("anatomy", "anatomy chunked")
        }
        # dense holds the [N, N] weights (x16); chunked one [N, 128] tile and O(N d) (x4)
        assert growth["anatomy"] > 10, (mode, growth)
        assert growth["anatomy chunked"] < 6, (mode, growth)


def test_render_has_memory_table_and_best_path_columns(cases):
    from benchmarks import report
    from benchmarks.memory import measure, memory_cases

    cs = [cases["scaled dot-product"], cases["multi-head attention"]]
    # synthetic medians (no timing is measured or asserted): chunked is anatomy's fastest,
    # torch fast path the fastest peer
    fake = {"anatomy": 4.0, "anatomy chunked": 2.0, "torch": 5.0, "torch fast path": 1.0}
    times = {
        (i, mode): {
            lb: {"median_s": fake.get(lb, 8.0) * 1e-3, "spread": 0.0}
            for lb in c.impls
            if mode in c.impls[lb].passes
        }
        for i, c in enumerate(cs)
        for mode in ("fwd", "fwdbwd")
    }
    assert report.best_paths(times[(1, "fwd")]) == ("anatomy chunked", 2.0)
    assert report.best_paths(times[(1, "fwdbwd")]) == ("anatomy chunked", 2.0 / 5.0)
    meta = dict.fromkeys(
        ["command", "date", "cpu", "cores", "torch_threads", "python", "jax", "jaxlib"], "x"
    )
    meta.update(flax="x", torch="x", numpy="x", load_start="x", load_end="x")
    meta.update(wall_s=1.0, matmul_n=8, tol=TOL)
    memory = measure(cs, only=memory_cases(cs))
    errors = [check(c, TOL, quick=True) for c in cs]
    md = report.render(meta, ({"jax": 1.0}, {"jax": 1.0}), cs, errors, {}, times, memory=memory)
    assert "### Peak memory of one call, MB" in md
    assert "fastest anatomy path" in md and "fastest anatomy / fastest peer" in md
    table = md.split("### Peak memory of one call, MB")[1].split("###")[0]
    header = next(ln for ln in table.splitlines() if ln.startswith("| benchmark"))
    assert "anatomy chunked" in header and "torch fast path" in header
    assert "torch 1 thread" not in header
    rows = [
        ln for ln in table.splitlines() if ln.startswith("| scaled") or ln.startswith("| multi")
    ]
    assert len(rows) == 4  # two cases x two passes


def test_check_catches_different_work():
    a, b = np.arange(1.0, 7.0), np.arange(1.0, 7.0) * 1.01
    impls = {
        "anatomy": layer_impl(lambda: a, lambda: (a,)),
        "other": layer_impl(lambda: b, lambda: (a,)),
    }
    with pytest.raises(AssertionError, match="other differs from anatomy"):
        check(Case("toy", "", impls, {"fwd": 1.0}), TOL)


def test_a_case_tolerance_only_loosens_the_check():
    """A case's own tolerance (float32 rounding larger than the run's) is used where larger,
    never where smaller; a 1% difference still fails at 1e-3."""
    a = np.arange(1.0, 7.0)
    impls = lambda f: {
        "anatomy": layer_impl(lambda: a, lambda: (a,)),
        "other": layer_impl(lambda: a * f, lambda: (a,)),
    }
    case = lambda f, tol: Case("toy", "", impls(f), {"fwd": 1.0}, tol=tol)
    assert check(case(1 + 5e-4, 1e-3), TOL)["other"]["out"] < 1e-3
    for f, tol in ((1 + 5e-4, None), (1 + 5e-4, 1e-9), (1.01, 1e-3)):
        with pytest.raises(AssertionError, match="other differs from anatomy"):
            check(case(f, tol), TOL)


def test_unknown_preset():
    with pytest.raises(ValueError, match="unknown preset"):
        build_cases("huge")


# --- translator-level cases: a whole train step, greedy decoding -----------------------------


@pytest.fixture(scope="module")
def translator_cases():
    from benchmarks.cases_translator import build_translator_cases

    yield from tiny_cases(build_translator_cases)


@pytest.mark.parametrize(
    "name, peers",
    [
        ("Transformer train step", ("torch", "flax")),
        ("Transformer train step (post-LN)", ("torch", "flax")),
        ("RNNsearch train step", ("torch",)),
        ("greedy decoding", ("anatomy recompute", "torch recompute 1 thread")),
    ],
)
def test_translator_pairs_do_the_same_work(translator_cases, name, peers):
    case = translator_cases[name]
    errors = check(case, TOL)
    assert set(peers) <= set(errors)
    for e in errors.values():
        if "tokens" in e:
            assert e["tokens"] == 0.0
        else:  # loss AND every mapped gradient were compared
            assert np.isfinite(e["loss"]) and np.isfinite(e["grads"])
    assert case.tokens > 0


def test_translator_check_catches_different_work(translator_cases):
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
        check(bad, TOL)

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
        check(bad, TOL)


@pytest.mark.parametrize("v", [96, 11])
def test_the_control_loss_is_the_same_function(v):
    """benchmarks/control.py times our step against the loss as it was before its blocked
    row max and argmax: the same loss, metrics and gradient, to the bit (blocked v and the
    fallback)."""
    import jax
    import jax.numpy as jnp

    from anatomy.train.losses import sequence_loss
    from benchmarks.control import previous_sequence_loss

    r = np.random.default_rng(0)
    logits = jnp.asarray(r.normal(size=(3, 5, v)).astype(np.float32) * 3)
    targets = r.integers(0, v, (3, 5)).astype(np.int32)
    targets[0, 3:] = 0
    batch = {"tgt_out": jnp.asarray(targets)}
    vg = lambda f: jax.jit(jax.value_and_grad(lambda x: f(x, batch, 0.1), has_aux=True))(logits)
    (loss, metrics), grad = vg(sequence_loss)
    (loss0, metrics0), grad0 = vg(previous_sequence_loss)
    assert float(loss) == float(loss0)
    assert {k: float(x) for k, x in metrics.items()} == {k: float(x) for k, x in metrics0.items()}
    np.testing.assert_array_equal(grad, grad0)


# --- mixers: every form against N (benchmarks/cases_mixers.py, benchmarks/mixers.py) ----------


def test_mixer_forms_and_the_lstm_do_the_same_work():
    """Tiny cases of the two mixers with torch twins and the LSTM: every form and the twin
    written from the paper equal the reference form, the LSTM equals torch's (test_<mixer>_twin.py
    covers every mixer's forms)."""
    from benchmarks.cases_mixers import build_mixer_cases

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        got = list(build_mixer_cases("tiny", names=("gated_deltanet", "mamba2", "lstm")))
        for case, reference, left_out in got:
            errors = check(case, TOL, reference=reference, quick=True)
            assert not left_out and errors and all(e["dx"] is not None for e in errors.values())
        assert [c.name for c, _, _ in got] == ["gated_deltanet", "mamba2", "lstm"]
        assert set(got[0][0].impls) == {"sequential", "associative", "chunked", "torch"}
        assert set(got[1][0].impls) == {
            "sequential",
            "associative",
            "chunked",
            "quadratic",
            "torch",
        }
    finally:
        torch.set_num_threads(n)


def test_the_default_form_is_the_lowest_geometric_mean_among_forms_that_ran_everywhere():
    from benchmarks.mixers import choose_defaults

    table = {  # injected medians (s): chunked wins on average, quadratic is missing at N=2,
        # the torch twin is faster but is no form of ours
        ("m", 1): {"sequential": 1.0, "chunked": 2.0, "quadratic": 0.1, "torch": 0.1},
        ("m", 2): {"sequential": 8.0, "chunked": 2.0, "torch": 0.1},
    }
    form, gmeans = choose_defaults(table)["m"]
    assert form == "chunked" and set(gmeans) == {"sequential", "chunked"}
    assert gmeans["sequential"] == pytest.approx(1e3 * np.sqrt(8.0))
