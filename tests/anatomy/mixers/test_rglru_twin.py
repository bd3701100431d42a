"""The RG-LRU (Griffin, De et al. 2024), the mixer 'rglru', in every form: against its twin below,
a float64 NumPy loop written from the definition (values), and against its first form in float64
(gradients); the check itself is twins.every_form_equals_the_twin."""

import numpy as np
import pytest
from twins import every_form_equals_the_twin, sig, softplus


def twin_rglru(p, xs):
    """De et al. 2024: h = a ⊙ h + √(1 - a²) ⊙ (i ⊙ u), log a = -8 r softplus(Λ), gated out."""
    n = p["w_a"].shape[0]
    blocks = lambda u, w, b: np.einsum("bni,nij->bnj", u.reshape(len(u), n, -1), w).reshape(u.shape) + b  # fmt: skip
    gelu = lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    h, out = 0.0, []
    for t in range(xs.shape[1]):
        x = xs[:, t]
        g = gelu(x @ p["y"]["w"] + p["y"]["b"])
        u = x @ p["x"]["w"] + p["x"]["b"]
        r, i = sig(blocks(u, p["w_a"], p["b_a"])), sig(blocks(u, p["w_i"], p["b_i"]))
        a = np.exp(-8.0 * r * softplus(p["lam"]))
        h = a * h + np.sqrt(1 - a**2) * (i * u)
        out.append((h * g) @ p["out"]["w"] + p["out"]["b"])
    return np.stack(out, 1)


@pytest.mark.slow
def test_every_form_equals_the_papers_float64_loop_values_and_gradients():
    every_form_equals_the_twin("rglru", twin_rglru)
