"""minGRU (Feng et al. 2024), the mixer 'mingru', in every form: against its twin below, a float64
NumPy loop written from the definition (values), and against its first form in float64
(gradients); the check itself is twins.every_form_equals_the_twin."""

import numpy as np
from twins import every_form_equals_the_twin, sig


def twin_mingru(p, xs):
    """Feng et al. 2024: h = (1 - z) h + z h̃, z = σ(x W_z), h̃ = x W_h; then the out dense."""
    h, out = 0.0, []
    w = p["cell"]["w"].shape[1] // 2
    for t in range(xs.shape[1]):
        a = xs[:, t] @ p["cell"]["w"] + p["cell"]["b"]
        z = sig(a[:, :w])
        h = (1 - z) * h + z * a[:, w:]
        out.append(h @ p["out"]["w"] + p["out"]["b"])
    return np.stack(out, 1)


# the fast tier's one twin check (the other mixers' are slow)
def test_every_form_equals_the_papers_float64_loop_values_and_gradients():
    every_form_equals_the_twin("mingru", twin_mingru)
