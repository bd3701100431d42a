"""anatomy.scan.linear: every form of the one linear recurrence against a float64
NumPy loop (values) and the float64 sequential form (gradients), for vector and matrix states,
diagonal and matrix transitions, outer-product writes with a readout, a starting state and
lengths; the building blocks (segment products and sums, the quadratic form); bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rel

from anatomy.compiling import compiler_options, jit_options
from anatomy.errors import BadInputError
from anatomy.scan.linear import (
    FORMS,
    linear_scan,
    quadratic,
    segment_products,
    segment_sums,
)

B, T, H, K, V = 2, 7, 2, 3, 2
CHUNK = 3  # T = 7: two full chunks and a padded one
FAST = jit_options(compiler_options(0))  # tiny programs: compiling dominates
LENGTHS = np.array([7, 4])
RNG = np.random.default_rng(0)
normal = lambda *s: RNG.normal(size=s)
decay = lambda *s: RNG.uniform(0.3, 1.0, size=s)

# name: (a, b, q, transition); every array float64, cast to float32 for the forms
CASES = {
    "vector": (decay(B, T, H), normal(B, T, H), None, "diagonal"),
    "vector, any sign": (normal(B, T, H), normal(B, T, H), None, "diagonal"),
    "decay per head, dense b": (decay(B, T, H), normal(B, T, H, K, V), None, "diagonal"),
    "outer b, readout": (decay(B, T, H), (normal(B, T, H, K), normal(B, T, H, V)), normal(B, T, H, K), "diagonal"),
    "no decay, outer b": (None, (normal(B, T, H, K), normal(B, T, H, V)), normal(B, T, H, K), "diagonal"),
    "matrix": (0.4 * normal(B, T, H, K, K), normal(B, T, H, K, V), normal(B, T, H, K), "matrix"),
}  # fmt: skip


def np_scan(a, b, h0, q, transition, lengths):
    """The recurrence as written, one row and one step at a time, float64."""
    b = b[0][..., :, None] * b[1][..., None, :] if isinstance(b, tuple) else b
    h, out = h0.copy(), []
    for t in range(b.shape[1]):
        for i in range(b.shape[0]):
            if t >= lengths[i]:
                continue
            if a is None:
                h[i] = h[i] + b[i, t]
            elif transition == "matrix":
                h[i] = np.einsum("...ij,...jv->...iv", a[i, t], h[i]) + b[i, t]
            else:
                a_t = a[i, t].reshape(a.shape[2:] + (1,) * (h.ndim - a.ndim))
                h[i] = a_t * h[i] + b[i, t]
        out.append(h.copy() if q is None else np.einsum("...kv,...k->...v", h, q[:, t]))
    return np.stack(out, 1), h


def _state_shape(b):
    return (B,) + (b[0].shape[2:] + b[1].shape[-1:] if isinstance(b, tuple) else b.shape[2:])


def _f32(x):
    return None if x is None else jax.tree.map(lambda y: jnp.asarray(y, jnp.float32), x)


def _forms(transition):
    return [f for f in FORMS if not (transition == "matrix" and f == "chunked")]


@pytest.mark.slow_except("decay per head, dense b")
@pytest.mark.parametrize("name", list(CASES))
def test_every_form_equals_a_float64_loop_values_and_gradients(name):
    a, b, q, transition = CASES[name]
    h0 = normal(*_state_shape(b))
    a = None if a is None else a.reshape(a.shape + (1,) * (len(_state_shape(b)) + 1 - a.ndim))
    want, want_last = np_scan(a, b, h0, q, transition, LENGTHS)
    kw = dict(transition=transition, chunk=CHUNK)
    out_w = normal(*want.shape)

    def loss(a, b, h0, q, w, form):
        out, last = linear_scan(a, b, h0, q=q, form=form, lengths=LENGTHS, **kw)
        return jnp.sum(out * w) + jnp.sum(jnp.sin(last)), (out, last)

    grad = jax.value_and_grad(loss, (0, 1, 2, 3), has_aux=True)
    with jax.enable_x64():  # the gradients' twin: the sequential form in float64
        ref = jax.jit(lambda *args: grad(*args, "sequential"), compiler_options=FAST)
        (_, (ref_out, _)), ref_grads = ref(a, b, h0, q, out_w)
        assert rel(ref_out, want) < 1e-12
    forms = _forms(transition)
    every = jax.jit(lambda *args: [grad(*args, f) for f in forms], compiler_options=FAST)
    for form, ((_, (out, last)), grads) in zip(forms, every(*_f32((a, b, h0, q, out_w)))):
        assert out.dtype == jnp.float32
        assert rel(out, want) < 1e-5 and rel(last, want_last) < 1e-5, form
        for g, r in zip(jax.tree.leaves(grads), jax.tree.leaves(ref_grads)):
            assert rel(g, r) < 1e-5, form


def test_segment_products_and_sums_are_the_products_and_sums_between_two_steps():
    a = np.array([0.5, -2.0, 0.0, 3.0])
    prods, sums = np.asarray(segment_products(jnp.asarray(a))), np.asarray(segment_sums(a))
    for t in range(4):
        for s in range(4):
            if s <= t:
                assert prods[t, s] == np.prod(a[s + 1 : t + 1])  # exact, zeros and signs too
                assert sums[t, s] == pytest.approx(np.sum(a[s + 1 : t + 1]))
            else:
                assert prods[t, s] == 0.0 and sums[t, s] == -np.inf


def test_quadratic_form_equals_the_loop_with_and_without_a_start():
    _, (k, v), q, _ = CASES["outer b, readout"]
    log_a = np.log(decay(B, T, H))
    h0 = normal(B, H, K, V)
    quad = jax.jit(quadratic, compiler_options=FAST)
    for start in (h0, None):
        zero = np.zeros_like(h0) if start is None else start
        want, want_last = np_scan(np.exp(log_a)[..., None, None], (k, v), zero, q, "diagonal", [T] * B)  # fmt: skip
        y, last = quad(*_f32((q, k, v, log_a, start)))
        assert rel(y, want) < 1e-5 and rel(last, want_last) < 1e-5


def test_bad_inputs_are_one_clear_line():
    a, b = jnp.ones((B, T, H)), jnp.ones((B, T, H))
    with pytest.raises(BadInputError, match="form must be one of 'sequential', 'associative'"):
        linear_scan(a, b, form="parallel")
    with pytest.raises(BadInputError, match="chunked' needs a diagonal transition"):
        linear_scan(jnp.ones((B, T, H, K, K)), jnp.ones((B, T, H, K, V)), transition="matrix", form="chunked")  # fmt: skip
    with pytest.raises(ValueError, match="a and b"):
        linear_scan(jnp.ones((B, T, H + 1)), b)
    with pytest.raises(BadInputError, match="q must be"):
        linear_scan(a, (jnp.ones((B, T, H, K)), jnp.ones((B, T, H, V))), q=jnp.ones((B, T, K)))
    with pytest.raises(BadInputError, match="one decay per head"):
        kv = (jnp.ones((B, T, H, K)), jnp.ones((B, T, H, V)))
        linear_scan(jnp.ones((B, T, H, K, 1)), kv, q=jnp.ones((B, T, H, K)), form="chunked")
