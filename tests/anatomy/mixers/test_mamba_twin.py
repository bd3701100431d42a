"""Mamba (Gu & Dao 2023), the mixer 'mamba', in every form: against its twin below, a float64 NumPy
loop written from the definition (values), and against its first form in float64 (gradients);
the check itself is twins.every_form_equals_the_twin."""

import numpy as np
import pytest
from twins import every_form_equals_the_twin, silu, softplus


def twin_mamba(p, xs):
    """Gu & Dao 2023 (mamba.py's simplified block), the recurrence step by step."""
    hw = p["d"].shape[0]
    s, out = 0.0, []
    for t in range(xs.shape[1]):
        uz = xs[:, t] @ p["w_in"]
        u, z = silu(uz[:, :hw]), uz[:, hw:]
        delta = softplus(u @ p["w_dt"] + p["b_dt"])
        b_in, c_out = u @ p["w_b"], u @ p["w_c"]
        s = np.exp(delta[..., None] * -np.exp(p["a_log"])) * s
        s = s + (delta * u)[..., None] * b_in[:, None, :]
        y = np.einsum("bhn,bn->bh", s, c_out) + p["d"] * u
        out.append((y * silu(z)) @ p["w_out"])
    return np.stack(out, 1)


@pytest.mark.slow
def test_every_form_equals_the_papers_float64_loop_values_and_gradients():
    every_form_equals_the_twin("mamba", twin_mamba)
