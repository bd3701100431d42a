"""Mamba-2 (Dao & Gu 2024), the mixer 'mamba2', in every form: against its twin below, a float64
NumPy loop written from the definition (values), and against its first form in float64
(gradients); the check itself is twins.every_form_equals_the_twin."""

import numpy as np
import pytest
from twins import every_form_equals_the_twin, rms, silu, softplus


def twin_mamba2(p, xs):
    """Dao & Gu 2024, the recurrence: h = exp(Δ A) h + (Δ B) xᵀ, y = hᵀC + D x, gated norm."""
    e, nh = p["out"]["w"].shape[0], p["a_log"].shape[0]
    n = (p["in"]["w"].shape[1] - 2 * e - nh) // 2
    h, out = 0.0, []
    for t in range(xs.shape[1]):
        zxbcdt = xs[:, t] @ p["in"]["w"] + p["in"]["b"]
        z, x = zxbcdt[:, :e], silu(zxbcdt[:, e : 2 * e])
        b_in, c_out = silu(zxbcdt[:, 2 * e : 2 * e + n]), silu(zxbcdt[:, 2 * e + n : 2 * e + 2 * n])
        delta = softplus(zxbcdt[:, 2 * e + 2 * n :] + p["b_dt"])  # [b, h]
        xh = x.reshape(len(x), nh, -1)  # [b, h, p]
        h = np.exp(-np.exp(p["a_log"]) * delta)[..., None, None] * h
        h = h + (delta[..., None] * b_in[:, None, :])[..., :, None] * xh[..., None, :]
        y = np.einsum("bhnp,bn->bhp", h, c_out) + p["d"][:, None] * xh
        y = rms(y.reshape(len(x), e) * silu(z), p["norm"]["scale"])
        out.append(y @ p["out"]["w"] + p["out"]["b"])
    return np.stack(out, 1)


@pytest.mark.slow
def test_every_form_equals_the_papers_float64_loop_values_and_gradients():
    every_form_equals_the_twin("mamba2", twin_mamba2)
