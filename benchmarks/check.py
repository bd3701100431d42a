"""Equivalence before timing: every implementation of a case must compute the same thing.

Forward outputs and input gradients of <output, g> are compared with anatomy's, norm-wise:
rel = ||a - ref|| / ||ref||. Both sides are float32 with different summation orders, so the
difference is rounding only; the recurrences accumulate it over T steps.
"""

import numpy as np
import torch


def to_numpy(a):
    """A JAX array or torch tensor -> float64 NumPy."""
    if isinstance(a, torch.Tensor):
        a = a.detach().numpy()
    return np.asarray(a, np.float64)


def rel(a, ref):
    """||a - ref|| / ||ref||."""
    return float(np.linalg.norm(a - ref) / np.linalg.norm(ref))


def _out_and_dx(impl, fused):
    """(output, input gradient or None) as NumPy in the implementation's own layout."""
    if fused and impl.fused is not None:
        out, dx = impl.fused()
        return to_numpy(out), to_numpy(dx)
    return to_numpy(impl.fwd()), None if impl.fwdbwd is None else to_numpy(impl.fwdbwd()[0])


def check_case(case, tol, reference="anatomy", fused=False):
    """Compare every implementation of `case` with `reference`.

    fused=True takes JAX sides' output and input gradient from one compiled program
    (half the compilations: the quick path for tests); False uses the very fwd / fwdbwd
    callables the timings run (their compilation is the warm-up).
    Returns: {label: {'out': rel_error, 'dx': rel_error or None}} (reference excluded).
    Raises: AssertionError naming the case and implementation if any error exceeds tol.
    """
    ref_out, ref_dx = _out_and_dx(case.impls[reference], fused)
    errors = {}
    for label, impl in case.impls.items():
        if label == reference:
            continue
        canon = impl.canon or (lambda a: a)
        out, dx = _out_and_dx(impl, fused)
        e_out = rel(canon(out), ref_out)
        e_dx = None if dx is None else rel(canon(dx), ref_dx)
        errors[label] = {"out": e_out, "dx": e_dx}
        worst = max(e_out, e_dx or 0.0)
        if not worst <= tol:  # also catches NaN
            raise AssertionError(
                f"{case.name} {case.shape}: {label} differs from {reference} "
                f"(rel. error out {e_out:.2e}, d_input {e_dx}) > {tol:.0e}"
            )
    return errors
