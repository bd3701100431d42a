"""What the mixers' float64 twins share (test_<mixer>_twin.py, one file per
mixer, each with its twin written from its paper, and test_mixers.py): each mixer at a tiny size,
parameters moved off their init, inputs, the twins' NumPy building blocks, and the one check of
every form against a twin (values) and the float64 sequential form (gradients).
"""

import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from helpers import rel

from anatomy import mixers
from anatomy.compiling import compiler_options, jit_options

B, T, D = 2, 7, 8
CHUNK = 3  # two full chunks and a padded one
FAST = jit_options(compiler_options(0))  # tiny programs: compiling dominates
# Each mixer at a tiny size (one not listed: its defaults at width D); its twin
# (test_<name>_twin.py) computes the same layer in float64.
KNOBS = {
    "linear_attention": {"n_heads": 2, "d_key": 3},
    "rglru": {"expand": 1, "n_blocks": 2},
    "mlstm": {"n_heads": 2, "d_value": 3},
    "gated_deltanet": {"n_heads": 2, "d_key": 3},
    "mamba2": {"expand": 2, "head_dim": 4, "d_state": 3},
    "mingru": {"expand": 2},
    "mamba": {"d_state": 3},
    "attention": {"n_heads": 2},
    "rnn": {},
    "lstm": {},
    "gru": {},
}
RNG = np.random.default_rng(0)


def build(name, **knobs):
    return mixers.build_mixer(name, D, chunk=CHUNK, **{"conv": 0, **KNOBS.get(name, {}), **knobs})


def moved(mixer, seed=0, scale=0.3):
    """init with every leaf moved off it (zero biases or unit scales would hide a missed term)."""
    noise = np.random.default_rng(seed)
    params = mixer.init(jax.random.key(seed))
    params = jax.tree.map(lambda p: p + scale * noise.normal(size=p.shape).astype(p.dtype), params)
    if mixer.name == "mamba2":  # Δ near 0.7 and D small, so the state carries the output
        params["mix"]["b_dt"] = jnp.zeros_like(params["mix"]["b_dt"])
        params["mix"]["d"] = 0.1 * params["mix"]["d"]
    return params


def inputs(seed=1, t=T):
    return jnp.asarray(np.random.default_rng(seed).normal(size=(B, t, D)), jnp.float32)


sig = lambda x: 1 / (1 + np.exp(-x))
silu = lambda x: x * sig(x)
softplus = lambda x: np.log1p(np.exp(x))
heads = lambda x, w: np.einsum("bm,mhk->bhk", x, w)
merge = lambda y, w: np.einsum("bhv,hvm->bm", y, w)


def rms(x, scale, eps=1e-6):
    return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps) * scale


def every_form_equals_the_twin(name, twin):
    """Every form of mixer `name` against `twin` (the paper's float64 loop) in values, and
    against the mixer's first (sequential) form in float64 in gradients."""
    mixer = build(name)
    params, x = moved(mixer), inputs()
    p64 = jax.tree.map(lambda a: np.asarray(a, np.float64), params["mix"])
    want = twin(p64, np.asarray(x, np.float64))
    w = RNG.normal(size=want.shape)

    def loss(params, x, w, form):
        y = mixer.apply(params, x, form=form)
        return jnp.sum(y * w), y

    def all_forms(params, x, w):
        return {f: jax.value_and_grad(loss, (0, 1), has_aux=True)(params, x, w, f) for f in mixer.forms}  # fmt: skip

    with jax.enable_x64():  # the gradients' twin: the first (sequential) form in float64
        ref = jax.jit(lambda p, x, w: jax.value_and_grad(loss, (0, 1), has_aux=True)(p, x, w, mixer.forms[0]), compiler_options=FAST)  # fmt: skip
        (_, ref_y), ref_grads = ref(*jax.tree.map(lambda a: np.asarray(a, np.float64), (params, x, w)))  # fmt: skip
        ref_grads = jax.tree.map(np.asarray, ref_grads)
        assert rel(ref_y, want) < 1e-10
    got = jax.jit(all_forms, compiler_options=FAST)(params, x, jnp.asarray(w, jnp.float32))
    for form, ((_, y), grads) in got.items():
        assert rel(y, want) < 1e-5, form
        flat, ref_flat = jax.tree.leaves(grads), jax.tree.leaves(ref_grads)
        assert len(flat) == len(ref_flat) > 3
        norm = np.sqrt(sum(np.sum(np.square(r)) for r in ref_flat))
        for g, r in zip(flat, ref_flat):  # norm-wise over all gradients, no leaf left out
            assert np.abs(r).max() > 0  # every gradient reaches its leaf
            assert np.linalg.norm(np.asarray(g, np.float64) - r) / norm < 1e-5, form


# Every mixer has its twin file beside this one (test_<name>_twin.py): a new mixer without
# one fails collection, as a missing twin_<name> did when the twins shared one file.
_MISSING = [
    n for n in mixers.NAMES if not (pathlib.Path(__file__).parent / f"test_{n}_twin.py").is_file()
]
if _MISSING:
    raise RuntimeError(f"no float64 twin file test_<name>_twin.py for the mixers {_MISSING}")
