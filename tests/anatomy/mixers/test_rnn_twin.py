"""The Elman RNN (Elman 1990), the mixer 'rnn', in every form: against its twin below, a float64
NumPy loop written from the definition (values), and against its first form in float64
(gradients); the check itself is twins.every_form_equals_the_twin."""

import numpy as np
import pytest
from twins import every_form_equals_the_twin


def twin_rnn(p, xs):
    """Elman 1990: h = tanh(x W_x + h W_h + b)."""
    h, out = np.zeros((xs.shape[0], p["w_h"].shape[0])), []
    for t in range(xs.shape[1]):
        h = np.tanh(xs[:, t] @ p["w_x"] + h @ p["w_h"] + p["b"])
        out.append(h)
    return np.stack(out, 1)


@pytest.mark.slow
def test_every_form_equals_the_papers_float64_loop_values_and_gradients():
    every_form_equals_the_twin("rnn", twin_rnn)
