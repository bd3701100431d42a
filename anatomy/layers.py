"""The small layers every family shares: embedding, dense, dropout, LayerNorm, the FFN.

Pure functions over parameter dicts, like the rest of anatomy; each init declares its
parameters' logical axes (anatomy.axes). A leaf: it imports nothing of anatomy but the axes
declaration, so recurrence, attention, conv and the translators all build on it without
importing one another (an RNN translator's dropout is not the attention package's).

    init_embedding(key, V, d, scale=None) -> [V, d]      init_dense(key, d_in, d_out, ...)
    init_output(key, d, V, bias=True) (the logits' dense)
    dense(p, x)                                          dropout(x, rate, rng, deterministic)
    init_layer_norm(m) ; layer_norm(p, x, eps=1e-5)      init_ffn(key, m, f) ; ffn(p, x, ...)
    init_rms_norm(shape) ; rms_norm(p, x, eps=1e-6)      (the linear recurrences' output norms)

Letters: b batch, t positions, m model width, f FFN inner width.
"""

import functools

import jax
import jax.numpy as jnp

from anatomy.axes import declare

OUT_AXES = ("embed", "vocab")  # logical axes of an output projection [d, V] (init_dense axes=)
# Logical axes of the FFN (anatomy.axes): the inner width f is 'mlp'.
FFN_AXES = {"w1": ("embed", "mlp"), "b1": ("mlp",), "w2": ("mlp", "embed"), "b2": ("embed",)}


def init_layer_norm(d_model):
    """{'scale': ones [m], 'bias': zeros [m]}."""
    p = {"scale": jnp.ones((d_model,), jnp.float32), "bias": jnp.zeros((d_model,), jnp.float32)}
    return declare(p, {"scale": ("embed",), "bias": ("embed",)})


# jit: differentiate LN as one unit, so the backward pass adds ONE dLN/dx [b, t, m] to the
# residual-stream gradient. Inlined, autodiff adds LN's three uses of x to it term by term
# (the last a broadcast [b, t] -> [b, t, m]), and XLA:CPU then recomputes the whole chain of
# residual gradients through all layers inside every consumer (~3x the layout-copy time).
@functools.partial(jax.jit, static_argnames="eps")
def layer_norm(params, x, eps=1e-5):
    """LN(x) = (x - mean) / sqrt(var + eps) * scale + bias over the last axis; x [..., m].

    eps=1e-5 matches torch.nn.LayerNorm; flax.linen.LayerNorm uses 1e-6.
    Biased variance, as in both.
    """
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * params["scale"] + params["bias"]


def init_rms_norm(shape, axes=("embed",)):
    """{'scale': ones [*shape]} (e.g. [m], or [h, d] for a per-head norm); axes: its logical axes."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return declare({"scale": jnp.ones(shape, jnp.float32)}, {"scale": tuple(axes)})


def rms_norm(params, x, eps=1e-6):
    """RMSNorm(x) = x / sqrt(mean(x²) + eps) * scale over the last axis (Zhang & Sennrich 2019);
    x [..., d], scale broadcast against x's trailing dims (per head: x [..., h, d], scale [h, d])."""
    return (
        x * jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + eps) * params["scale"]
    )


def dropout(x, rate, rng, deterministic=False):
    """Inverted dropout: keep each entry with prob 1 - rate and scale it by 1 / (1 - rate).

    Returns x unchanged when deterministic or rate == 0. rng: a jax PRNG key.
    """
    if deterministic or rate == 0.0:
        return x
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"dropout: rate must be in [0, 1), got {rate}")
    if rng is None:
        raise ValueError("dropout: an rng key is required when not deterministic and rate > 0")
    keep = jax.random.bernoulli(rng, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0).astype(x.dtype)


def init_ffn(key, d_model, d_ff):
    """{'w1': [m, f], 'b1': [f], 'w2': [f, m], 'b2': [m]}; weights N(0, 1/fan_in), biases 0."""
    k1, k2 = jax.random.split(key)
    p = {
        "w1": jax.random.normal(k1, (d_model, d_ff), jnp.float32) / jnp.sqrt(d_model),
        "b1": jnp.zeros((d_ff,), jnp.float32),
        "w2": jax.random.normal(k2, (d_ff, d_model), jnp.float32) / jnp.sqrt(d_ff),
        "b2": jnp.zeros((d_model,), jnp.float32),
    }
    return declare(p, FFN_AXES)


def ffn(params, x, *, dropout_rate=0.0, rng=None):
    """FFN(x) = Dropout(ReLU(x W1 + b1)) W2 + b2, applied at every position; x [b, t, m] -> [b, t, m]."""
    hidden = jax.nn.relu(jnp.einsum("btm,mf->btf", x, params["w1"]) + params["b1"])  # [b, t, f]
    hidden = dropout(hidden, dropout_rate, rng, deterministic=rng is None)
    return jnp.einsum("btf,fm->btm", hidden, params["w2"]) + params["b2"]  # [b, t, m]


def init_embedding(key, vocab_size, d, scale=None):
    """Embedding table [V, d] ~ N(0, scale^2), scale defaulting to d^-1/2; axes (vocab, embed)."""
    scale = d**-0.5 if scale is None else scale
    return declare(jax.random.normal(key, (vocab_size, d), jnp.float32) * scale, ("vocab", "embed"))


def init_dense(key, d_in, d_out, bias=True, axes=(None, None)):
    """{'w': [d_in, d_out] ~ N(0, 1/d_in), 'b': [d_out] zeros} (no 'b' when bias=False).

    axes: the logical axes of w (b takes the second), e.g. ('embed', 'vocab') for an output
    projection; the default (None, None) is never sharded.
    """
    p = {"w": jax.random.normal(key, (d_in, d_out), jnp.float32) / jnp.sqrt(d_in)}
    if bias:
        p["b"] = jnp.zeros((d_out,), jnp.float32)
    return declare(p, {"w": tuple(axes), "b": tuple(axes)[1:]})


def init_output(key, d, vocab_size, bias=True):
    """The output projection d -> V (the logits): init_dense with the logical axes OUT_AXES."""
    return init_dense(key, d, vocab_size, bias, OUT_AXES)


def dense(p, x):
    """x [..., d_in] @ w [d_in, d_out] (+ b) -> [..., d_out]."""
    y = x @ p["w"]
    return y + p["b"] if "b" in p else y
