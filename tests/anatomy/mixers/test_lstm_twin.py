"""The LSTM (Hochreiter & Schmidhuber 1997, with a forget gate), the mixer 'lstm', in every form:
against its twin below, a float64 NumPy loop written from the definition (values), and against
its first form in float64 (gradients); the check itself is twins.every_form_equals_the_twin."""

import numpy as np
import pytest
from twins import every_form_equals_the_twin, sig


def twin_lstm(p, xs):
    """Hochreiter & Schmidhuber 1997 with a forget gate: [i, f, g, o] = x W_x + h W_h + b,
    c = σ(f) c + σ(i) tanh(g), h = σ(o) tanh(c)."""
    h = c = np.zeros((xs.shape[0], p["w_h"].shape[0]))
    out = []
    for t in range(xs.shape[1]):
        i, f, g, o = np.split(xs[:, t] @ p["w_x"] + h @ p["w_h"] + p["b"], 4, -1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        out.append(h)
    return np.stack(out, 1)


@pytest.mark.slow
def test_every_form_equals_the_papers_float64_loop_values_and_gradients():
    every_form_equals_the_twin("lstm", twin_lstm)
