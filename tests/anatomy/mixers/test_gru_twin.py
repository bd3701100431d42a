"""The GRU (Cho et al. 2014, the reset after the product as torch has it), the mixer 'gru', in
every form: against its twin below, a float64 NumPy loop written from the definition (values),
and against its first form in float64 (gradients); the check itself is
twins.every_form_equals_the_twin."""

import numpy as np
import pytest
from twins import every_form_equals_the_twin, sig


def twin_gru(p, xs):
    """Cho et al. 2014 with the reset after the product (torch's): r, z = σ(x W + b_x + h U +
    b_h), n = tanh(x W_n + b_xn + r ⊙ (h U_n + b_hn)), h = (1 - z) n + z h."""
    h, out = np.zeros((xs.shape[0], p["w_h"].shape[0])), []
    for t in range(xs.shape[1]):
        xr, xz, xn = np.split(xs[:, t] @ p["w_x"] + p["b_x"], 3, -1)
        hr, hz, hn = np.split(h @ p["w_h"] + p["b_h"], 3, -1)
        r, z = sig(xr + hr), sig(xz + hz)
        h = (1 - z) * np.tanh(xn + r * hn) + z * h
        out.append(h)
    return np.stack(out, 1)


@pytest.mark.slow
def test_every_form_equals_the_papers_float64_loop_values_and_gradients():
    every_form_equals_the_twin("gru", twin_gru)
