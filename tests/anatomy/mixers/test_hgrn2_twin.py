"""HGRN-2 (Qin et al. 2024), the mixer 'hgrn2', in every form: against its twin below, a float64
NumPy loop written from the paper's recurrence (values), and against its first form in float64
(gradients); the check itself is twins.every_form_equals_the_twin. A floor on the forget gate
(lower_bound) is held to the same twin."""

import jax
import numpy as np
import pytest
from helpers import rel
from twins import build, every_form_equals_the_twin, heads, inputs, merge, moved, rms, sig, silu


def twin_hgrn2(p, xs, lower_bound=0.0):
    """Qin et al. 2024: f = γ + (1 - γ) σ(x W_f), S = Diag(f) S + (1 - f) (x W_i)ᵀ,
    o = Sᵀ silu(x W_q), out = RMSNorm(o) W_o."""
    s, out = 0.0, []
    for t in range(xs.shape[1]):
        x = xs[:, t]
        f = lower_bound + (1 - lower_bound) * sig(heads(x, p["w_f"]))  # [b, h, e]
        v = heads(x, p["w_i"])  # [b, h, v]
        s = f[..., None] * s + (1 - f)[..., :, None] * v[..., None, :]  # [b, h, e, v]
        o = np.einsum("bhev,bhe->bhv", s, silu(heads(x, p["w_q"])))
        o = rms(o.reshape(len(x), -1), p["norm"]["scale"]).reshape(o.shape)
        out.append(merge(o, p["w_o"]))
    return np.stack(out, 1)


@pytest.mark.slow
def test_every_form_equals_the_papers_float64_loop_values_and_gradients():
    every_form_equals_the_twin("hgrn2", twin_hgrn2)


def test_the_forget_gates_floor_is_the_papers_in_every_form():
    mixer = build("hgrn2", lower_bound=0.6)
    params, x = moved(mixer), inputs()
    p64 = jax.tree.map(lambda a: np.asarray(a, np.float64), params["mix"])
    want = twin_hgrn2(p64, np.asarray(x, np.float64), lower_bound=0.6)
    assert rel(want, twin_hgrn2(p64, np.asarray(x, np.float64))) > 1e-2  # the floor matters
    for form in mixer.forms:
        assert rel(mixer.apply(params, x, form=form), want) < 1e-5, form


@pytest.mark.parametrize("bound", [-0.1, 1.0, 2.0])
def test_a_floor_out_of_its_range_is_one_clear_error(bound):
    from anatomy.errors import BadInputError

    with pytest.raises(BadInputError, match=r"hgrn2: lower_bound must be in \[0, 1\)"):
        build("hgrn2", lower_bound=bound).init(jax.random.key(0))
