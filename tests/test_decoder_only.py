"""The decoder-only stack against slow twins: the prefix re-run at every position, one
position at a time through the KV cache; causality, gradients, bad input."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from anatomy.attention.decoder_only import (
    decoder_only,
    decoder_only_step,
    init_block,
    init_decoder_only,
    init_decoder_only_cache,
)
from anatomy.attention.layers import encoder_layer
from anatomy.errors import BadInputError

B, T, M, H, N_LAYERS = 2, 7, 16, 4, 3


def _params(seed=0):
    """A 3-layer stack moved off its init (biases, LayerNorm scales and shifts non-trivial)."""
    params = init_decoder_only(jax.random.PRNGKey(seed), N_LAYERS, M, H, 2 * M)
    leaves, tree = jax.tree_util.tree_flatten(params)
    keys = jax.random.split(jax.random.PRNGKey(seed + 1), len(leaves))
    leaves = [x + 0.1 * jax.random.normal(k, x.shape) for x, k in zip(leaves, keys)]
    return jax.tree_util.tree_unflatten(tree, leaves)


def _x(rng, t=T):
    return jnp.asarray(rng.normal(size=(B, t, M)), jnp.float32)


def _prefix_twin(params, x, *, pre_ln, positions):
    """Layer by layer, position t's output = the layer without any mask run over the
    previous layer's outputs at positions <= t, last row (no causal mask anywhere)."""
    from anatomy.attention.positions import sinusoidal

    t_all = x.shape[1]
    h = x + sinusoidal(t_all, x.shape[2]) if positions else x
    for layer in params["layers"]:
        rows = [
            encoder_layer(layer, h[:, : t + 1], None, pre_ln=pre_ln)[:, -1] for t in range(t_all)
        ]
        h = jnp.stack(rows, axis=1)
    return h


@pytest.mark.parametrize("pre_ln", [False, True])
@pytest.mark.parametrize("positions", [True, False])
def test_stack_equals_prefix_rerun_and_kv_steps(rng, pre_ln, positions):
    params, x = _params(), _x(rng)
    kw = dict(pre_ln=pre_ln, positions=positions)
    out = decoder_only(params, x, **kw)
    assert out.shape == (B, T, M)
    np.testing.assert_allclose(out, _prefix_twin(params, x, **kw), rtol=2e-5, atol=2e-5)
    caches = init_decoder_only_cache(params, B, T + 2)  # spare capacity: masked slots
    step = jax.jit(functools.partial(decoder_only_step, **kw))  # one compile for all t
    steps = []
    for t in range(T):
        y, caches = step(params, x[:, t : t + 1], caches)
        steps.append(y[:, 0])
    np.testing.assert_allclose(jnp.stack(steps, 1), out, rtol=2e-5, atol=2e-5)
    assert all(int(c.length) == T and not bool(c.overflow) for c in caches)


def test_stack_is_causal_and_its_gradients_match_the_twin(rng):
    params, x = _params(1), _x(rng)
    x2 = x.at[:, 4].add(1.0)  # a change at position 4 reaches only positions >= 4
    a, b = decoder_only(params, x), decoder_only(params, x2)
    np.testing.assert_array_equal(a[:, :4], b[:, :4])
    assert float(jnp.max(jnp.abs(a[:, 4:] - b[:, 4:]))) > 1e-3
    v = jnp.asarray(rng.normal(size=(B, T, M)), jnp.float32)

    def loss(f):
        return lambda p, x: jnp.sum(f(p, x) * v)

    fast = jax.grad(loss(lambda p, x: decoder_only(p, x, pre_ln=True)), argnums=(0, 1))
    slow = jax.grad(
        loss(lambda p, x: _prefix_twin(p, x, pre_ln=True, positions=True)), argnums=(0, 1)
    )
    for g, w in zip(
        jax.tree_util.tree_leaves(fast(params, x)), jax.tree_util.tree_leaves(slow(params, x))
    ):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_init_splits_the_key_once_per_layer():
    key = jax.random.PRNGKey(3)
    params = init_decoder_only(key, N_LAYERS, M, H, 2 * M)
    for layer, k in zip(params["layers"], jax.random.split(key, N_LAYERS)):
        want = init_block(k, M, H, 2 * M)
        for a, b in zip(jax.tree_util.tree_leaves(layer), jax.tree_util.tree_leaves(want)):
            np.testing.assert_array_equal(a, b)
    assert len(params["layers"]) == N_LAYERS


def test_bad_input_is_a_clear_error(rng):
    params = _params()
    with pytest.raises(BadInputError, match="n_layers must be >= 1"):
        init_decoder_only(jax.random.PRNGKey(0), 0, M, H, M)
    with pytest.raises(BadInputError, match=r"x must be \[b, t, m\]"):
        decoder_only(params, jnp.ones((T, M)))
    with pytest.raises(BadInputError, match="width 8, the stack d_model 16"):
        decoder_only(params, jnp.ones((B, T, 8)))
    caches = init_decoder_only_cache(params, B, T)
    with pytest.raises(BadInputError, match=r"x must be \[b, 1, m\]"):
        decoder_only_step(params, _x(rng, 2), caches)
    with pytest.raises(BadInputError, match="2 caches for 3 layers"):
        decoder_only_step(params, _x(rng, 1), caches[:2])
