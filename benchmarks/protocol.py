"""The one benchmark protocol: a Case is run, checked for equal work, then reported.

Layers, translator train steps and greedy decoding are all Cases of implementations
(anatomy's and its peers'), and every Case goes through the same three steps:

    check(case, tol)      equal work first: every implementation's check() against the
                          reference's (anatomy), mapped onto the peer's layout; nothing is
                          timed unless all agree
    time_cases(cases)     every pass of a case, all its implementations interleaved in rounds
                          (benchmarks/timing.py), medians
    report                benchmarks/report.py: the tables, from the errors and timings here

What an implementation's check() returns, by kind of case:
    layers       'out' the output, 'dx' the input gradient of <out, g> (None: no backward)
    train steps  'loss' and 'grads' (every parameter's, by the peer's names)
    decoding     'tokens' (must be identical)
Arrays and trees are compared norm-wise, rel = ||a - ref|| / ||ref|| over every leaf the
reference maps onto at once (float32 on every side: the difference is rounding only).

torch is imported only where a torch implementation is run (a one-thread call) or its
tensors are read: the JAX-only cases (the mixers' forms, crossover's contenders) go through
this protocol on an install without torch.
"""

import sys
import time
from collections.abc import Callable
from typing import NamedTuple

import jax
import numpy as np

from benchmarks import timing


class Impl(NamedTuple):
    """One implementation of a case.

    passes: {pass: () -> result}, the calls timed, each returning once its work is done
      (layers: 'fwd' -> output, 'fwdbwd' -> (input gradient, *parameter gradients); train
      steps and decoding: 'step').
    check: () -> {quantity: value}, what the equal-work check compares (module doc).
    note: shown beside the label.
    to_peer: {quantity: fn} mapping the reference's value onto this implementation's layout
      and names (torch's SDPA works in [b, h, n, d]; a twin's gradients carry its own
      parameter names); a quantity not named is compared as it is.
    quick: optional cheaper check() (JAX sides: output and input gradient from ONE compiled
      function, so a test compiles half as much; the same function, inputs and weights).
    memory: optional pass -> peak bytes of one call beyond its inputs (JAX sides: XLA's
      compiled temp + output buffers of the very jitted function timed); None = measure the
      call itself (torch sides, benchmarks/memory.py).
    hlo: optional pass -> the optimised HLO text of the very program that pass times (JAX
      sides), for the probes that read a compiled program (serial steps, depth).
    """

    passes: dict
    check: Callable
    note: str = ""
    to_peer: dict | None = None
    quick: Callable | None = None
    memory: Callable | None = None
    hlo: Callable | None = None


class Case(NamedTuple):
    """A benchmark: name, shape string, implementations {label: Impl} (the reference first),
    flops {pass: analytic matmul FLOPs of one call} ({} where not counted), tokens: the
    tokens one call handles (translators; None for layers), tol: this case's own tolerance
    where float32 rounding alone exceeds the run's (check() takes the larger; None: none)."""

    name: str
    shape: str
    impls: dict
    flops: dict
    tokens: int | None = None
    tol: float | None = None

    def passes(self):
        """The passes any implementation has, in order of first appearance."""
        return list(dict.fromkeys(p for im in self.impls.values() for p in im.passes))


def layer_impl(fwd, fwdbwd=None, note="", **kw):
    """A layer's Impl: passes 'fwd' (and 'fwdbwd' where given); check() takes the output and
    the input gradient from the very callables the timings run (their compilation is the
    warm-up)."""
    passes = {"fwd": fwd} if fwdbwd is None else {"fwd": fwd, "fwdbwd": fwdbwd}
    check = lambda: {"out": fwd(), "dx": None if fwdbwd is None else fwdbwd()[0]}
    return Impl(passes, check, note, **kw)


def _one_thread_call(fn):
    """fn run with torch.set_num_threads(1) for the call."""

    def call():
        import torch

        n = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return fn()
        finally:
            torch.set_num_threads(n)

    return call


def one_thread(impl):
    """The same torch implementation run with torch.set_num_threads(1) for every call.

    With other processes on the machine, torch's OpenMP team waits at every parallel
    region for a thread the OS has descheduled; one thread never waits for a sibling.
    """
    return impl._replace(
        passes={p: _one_thread_call(fn) for p, fn in impl.passes.items()},
        check=_one_thread_call(impl.check),
        note=(impl.note + ", " if impl.note else "") + "1 thread",
    )


# --- equal work ----------------------------------------------------------------------------


def to_numpy(a):
    """A JAX array, torch tensor or number -> float64 NumPy."""
    torch = sys.modules.get("torch")  # a torch tensor exists only where torch was imported
    if torch is not None and isinstance(a, torch.Tensor):
        a = a.detach().numpy()
    return np.asarray(a, np.float64)


def rel(a, ref):
    """||a - ref|| / ||ref||."""
    return float(np.linalg.norm(a - ref) / np.linalg.norm(ref))


def flat(tree):
    """{path string: float64 array} of a pytree (a lone array: {'': array})."""
    leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    return {jax.tree_util.keystr(p): to_numpy(v) for p, v in leaves}


def _error(quantity, got, want, where):
    """rel. error of got vs want over every leaf of want ('tokens': the fraction differing);
    None where either side has no such value."""
    if got is None or want is None:
        return None
    if quantity == "tokens":
        return float(np.mean(np.asarray(got) != np.asarray(want)))
    want, have = flat(want), flat(got)
    if set(want) - set(have):
        raise AssertionError(f"{where} lacks {quantity} {sorted(set(want) - set(have))}")
    a, r = (np.concatenate([d[k].ravel() for k in sorted(want)]) for d in (have, want))
    return rel(a, r)


def check(case, tol, reference="anatomy", quick=False):
    """Equal work: every implementation of `case` against `reference`, quantity by quantity.

    quick=True takes check values from Impl.quick where there is one (tests); False from
    check(), the very callables the timings run.
    Returns {label: {quantity: rel. error, fraction of tokens differing, or None}}
    (reference excluded). Raises AssertionError naming the case and implementation when an
    error exceeds tol (or case.tol, the larger) or any token differs.
    """
    tol = max(tol, case.tol or 0.0)
    values = lambda im: (im.quick if quick and im.quick is not None else im.check)()
    ref = values(case.impls[reference])
    errors = {}
    for label, impl in case.impls.items():
        if label == reference:
            continue
        got, to_peer = values(impl), impl.to_peer or {}
        e = {}
        for q, want in ref.items():
            want = to_peer[q](want) if q in to_peer and want is not None else want
            e[q] = _error(q, got.get(q), want, f"{case.name}: {label}")
        errors[label] = e
        ok = all((v == 0.0) if q == "tokens" else v <= tol for q, v in e.items() if v is not None)
        if not ok:  # also catches NaN
            raise AssertionError(
                f"{case.name} {case.shape}: {label} differs from {reference}: {e} "
                f"(tolerance {tol:.0e}; tokens must be identical)"
            )
    return errors


# --- timing --------------------------------------------------------------------------------


def time_cases(cases, rounds, target_s, budget_s, log):
    """{(case index, pass): {label: timing summary}}: each pass of each case, every
    implementation that has it interleaved in rounds (timing.time_interleaved)."""
    out = {}
    for i, case in enumerate(cases):
        for p in case.passes():
            fns = {lb: im.passes[p] for lb, im in case.impls.items() if p in im.passes}
            t0 = time.perf_counter()
            out[(i, p)] = res = timing.time_interleaved(
                fns, rounds=rounds, target_s=target_s, budget_s=budget_s
            )
            log(
                f"  {case.name:24s} {case.shape:34s} {p:6s} "
                + "  ".join(f"{lb}={r['median_s'] * 1e3:.3g}ms" for lb, r in res.items())
                + f"  ({len(next(iter(res.values()))['samples_s'])} rounds, "
                f"{time.perf_counter() - t0:.0f}s)"
            )
    return out
