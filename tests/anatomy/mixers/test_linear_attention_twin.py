"""Linear attention (Katharopoulos et al. 2020), the mixer 'linear_attention', in every form:
against its twin below, a float64 NumPy loop written from the definition (values), and against
its first form in float64 (gradients); the check itself is twins.every_form_equals_the_twin."""

import numpy as np
import pytest
from twins import every_form_equals_the_twin, heads, merge


def twin_linear_attention(p, xs):
    """Katharopoulos et al. 2020: S += φ(k) vᵀ, z += φ(k), y = Sᵀφ(q) / (zᵀφ(q) + ε)."""
    phi = lambda x: np.where(x > 0, x + 1, np.exp(x))  # elu + 1
    s, z, out = 0.0, 0.0, []
    for t in range(xs.shape[1]):
        q, k = phi(heads(xs[:, t], p["w_q"])), phi(heads(xs[:, t], p["w_k"]))
        v = heads(xs[:, t], p["w_v"])
        s, z = s + k[..., :, None] * v[..., None, :], z + k
        num, den = np.einsum("bhkv,bhk->bhv", s, q), np.einsum("bhk,bhk->bh", z, q)
        out.append(merge(num / (den[..., None] + 1e-6), p["w_o"]))
    return np.stack(out, 1)


@pytest.mark.slow
def test_every_form_equals_the_papers_float64_loop_values_and_gradients():
    every_form_equals_the_twin("linear_attention", twin_linear_attention)
