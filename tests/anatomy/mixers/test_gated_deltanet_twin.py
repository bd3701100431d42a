"""Gated DeltaNet (Yang et al. 2024), the mixer 'gated_deltanet', in every form: against its twin
below, a float64 NumPy loop written from the definition (values), and against its first form in
float64 (gradients); the check itself is twins.every_form_equals_the_twin."""

import numpy as np
import pytest
from twins import every_form_equals_the_twin, heads, merge, rms, sig, silu, softplus


def twin_gated_deltanet(p, xs):
    """Yang et al. 2024 as the paper writes it: S [v, k], S = α S (I - β k kᵀ) + β v kᵀ, o = S q."""
    l2 = lambda x: x / np.sqrt(np.sum(x**2, -1, keepdims=True) + 1e-6)
    s = np.zeros((xs.shape[0],) + p["w_v"].shape[1:] + p["w_k"].shape[-1:])  # [b, h, v, k]
    out = []
    for t in range(xs.shape[1]):
        x = xs[:, t]
        q, k = l2(heads(x, p["w_q"])) / np.sqrt(p["w_q"].shape[-1]), l2(heads(x, p["w_k"]))
        v = heads(x, p["w_v"])
        beta = sig(x @ p["beta"]["w"] + p["beta"]["b"])[..., None, None]
        alpha = np.exp(-np.exp(p["a_log"]) * softplus(x @ p["alpha"]["w"] + p["alpha"]["b"]))
        eye = np.eye(k.shape[-1])
        s = alpha[..., None, None] * (s @ (eye - beta * k[..., :, None] * k[..., None, :]))
        s = s + beta * v[..., :, None] * k[..., None, :]
        o = np.einsum("bhvk,bhk->bhv", s, q)
        gate = silu(heads(x, p["w_g"]))
        out.append(merge(rms(o, p["norm"]["scale"]) * gate, p["w_out"]))
    return np.stack(out, 1)


@pytest.mark.slow
def test_every_form_equals_the_papers_float64_loop_values_and_gradients():
    every_form_equals_the_twin("gated_deltanet", twin_gated_deltanet)
