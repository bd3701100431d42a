"""Causal softmax attention with RoPE, the mixer 'attention', in every form: against its twin
below, a float64 NumPy loop written from the definition (values), and against its first form in
float64 (gradients); the check itself is twins.every_form_equals_the_twin."""

import numpy as np
import pytest
from twins import T, every_form_equals_the_twin


def twin_attention(p, xs):
    """Causal softmax attention with RoPE (rotate pairs (i, i + d/2) by position / 10000^(2i/d))."""
    q, k, v = (np.einsum("btm,mhd->bthd", xs, p[w]) + p[b] for w, b in (("w_q", "b_q"), ("w_k", "b_k"), ("w_v", "b_v")))  # fmt: skip
    d = q.shape[-1]
    ang = np.arange(T)[:, None] / 10000.0 ** (np.arange(d // 2) * 2 / d)  # [t, d/2]
    cos, sin = np.cos(ang)[None, :, None], np.sin(ang)[None, :, None]

    def rot(x):
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    logits = np.einsum("bqhd,bkhd->bhqk", rot(q), rot(k)) / np.sqrt(d)
    logits = np.where(np.tril(np.ones((T, T), bool)), logits, -np.inf)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    o = np.einsum("bhqk,bkhd->bqhd", w / w.sum(-1, keepdims=True), v)
    return np.einsum("bqhd,hdm->bqm", o, p["w_o"]) + p["b_o"]


@pytest.mark.slow
def test_every_form_equals_the_papers_float64_loop_values_and_gradients():
    every_form_equals_the_twin("attention", twin_attention)
