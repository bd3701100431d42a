"""The mLSTM (xLSTM, Beck et al. 2024), the mixer 'mlstm', in every form: against its twin below, a
float64 NumPy loop written from the definition (values), and against its first form in float64
(gradients); the check itself is twins.every_form_equals_the_twin."""

import numpy as np
import pytest
from twins import every_form_equals_the_twin, heads, merge, rms, sig


def twin_mlstm(p, xs):
    """Beck et al. 2024, unstabilised (float64 holds exp(ĩ) here): C = f C + exp(ĩ) k vᵀ,
    n = f n + exp(ĩ) k, h̃ = Cᵀq / max(|nᵀq|, 1), out = (σ(x W_o) ⊙ RMSNorm(h̃)) W_out."""
    c, n, out = 0.0, 0.0, []
    for t in range(xs.shape[1]):
        x = xs[:, t]
        q, k, v = (heads(x, p[w]) for w in ("w_q", "w_k", "w_v"))
        k = k / np.sqrt(k.shape[-1])
        i = np.exp(x @ p["i"]["w"] + p["i"]["b"])[..., None]
        f = sig(x @ p["f"]["w"] + p["f"]["b"])[..., None]
        c = f[..., None] * c + i[..., None] * k[..., :, None] * v[..., None, :]
        n = f * n + i * k
        den = np.maximum(np.abs(np.einsum("bhk,bhk->bh", n, q)), 1.0)[..., None]
        h = np.einsum("bhkv,bhk->bhv", c, q) / den
        out.append(merge(sig(heads(x, p["w_o"])) * rms(h, p["norm"]["scale"]), p["w_out"]))
    return np.stack(out, 1)


@pytest.mark.slow
def test_every_form_equals_the_papers_float64_loop_values_and_gradients():
    every_form_equals_the_twin("mlstm", twin_mlstm)
