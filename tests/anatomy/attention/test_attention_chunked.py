"""Chunked (online-softmax, Flash-style) attention against its slow twin scaled_dot_product:
values and gradients (its own custom_vjp backward against jax.grad of the twin) with padding,
causal and general masks, blocks that do not divide the lengths, queries blocked or not; and
what the compiled program says: O(N) memory, one serial step per block. Fresh random inputs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import anatomy.attention as att
from anatomy import probes


def f32(x):
    return jnp.asarray(x, jnp.float32)


def qkv(rng, b, q_len, k_len, h, d, dv=None):
    return (
        f32(rng.normal(size=(b, q_len, h, d))),
        f32(rng.normal(size=(b, k_len, h, d))),
        f32(rng.normal(size=(b, k_len, h, dv or d))),
    )


def twin(q, k, v, mask=None, causal=False, kv_lengths=None):
    q_len, k_len = q.shape[1], k.shape[1]
    full = att.combine_masks(
        mask,
        att.causal_mask(q_len, k_len) if causal else None,
        None if kv_lengths is None else att.padding_mask(kv_lengths, k_len),
    )
    return att.scaled_dot_product(q, k, v, full)[0]


def grads(fn, q, k, v, cot):
    return jax.jit(jax.grad(lambda q, k, v: jnp.sum(fn(q, k, v) * cot), argnums=(0, 1, 2)))(q, k, v)


CASES = [  # (q_len, k_len, block_q, block_k)
    (12, 12, None, 4),  # blocks divide N
    (13, 11, None, 4),  # they do not: keys padded to 12
    (13, 11, 5, 3),  # queries blocked too, neither divides
    (7, 16, 7, 16),  # one block each
    (5, 9, 128, 128),  # blocks larger than the sequence
]


@pytest.mark.slow
@pytest.mark.parametrize("q_len,k_len,block_q,block_k", CASES)
@pytest.mark.parametrize("causal", [False, True])
def test_equals_full_attention_values_and_gradients(rng, q_len, k_len, block_q, block_k, causal):
    b, h, d, dv = 3, 2, 4, 3
    q, k, v = qkv(rng, b, q_len, k_len, h, d, dv)
    lengths = jnp.array([k_len, k_len - 3, 0])  # the last sequence has no key at all

    def fast(q, k, v):
        return att.chunked_attention(
            q, k, v, causal=causal, kv_lengths=lengths, block_q=block_q, block_k=block_k
        )

    def slow(q, k, v):
        return twin(q, k, v, causal=causal, kv_lengths=lengths)

    got, want = jax.jit(fast)(q, k, v), slow(q, k, v)
    assert got.shape == (b, q_len, h, dv)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert np.all(np.asarray(got[2]) == 0)  # no key: zeros, as scaled_dot_product gives
    cot = f32(rng.normal(size=want.shape))
    for name, a, b_ in zip("qkv", grads(fast, q, k, v, cot), grads(slow, q, k, v, cot)):
        assert np.abs(np.asarray(b_)).max() > 0, name
        np.testing.assert_allclose(a, b_, rtol=1e-5, atol=1e-5, err_msg=name)
        assert np.all(np.asarray(a)[2] == 0), name  # nothing attended: no gradient either


@pytest.mark.parametrize(
    "shape",
    [(3, 1, 1, 10), (3, 2, 9, 10), (9, 10)],
)
@pytest.mark.slow
def test_general_masks(rng, shape):
    b, q_len, k_len, h, d = 3, 9, 10, 2, 4
    q, k, v = qkv(rng, b, q_len, k_len, h, d)
    mask = jnp.asarray(rng.random(shape) > 0.4)
    for causal, block_q in ((False, None), (True, 4)):

        def fast(q, k, v, causal=causal, block_q=block_q):
            return att.chunked_attention(q, k, v, mask, causal=causal, block_q=block_q, block_k=3)

        def slow(q, k, v, causal=causal):
            return twin(q, k, v, mask, causal=causal)

        np.testing.assert_allclose(jax.jit(fast)(q, k, v), slow(q, k, v), rtol=1e-5, atol=1e-6)
        cot = f32(rng.normal(size=(b, q_len, h, d)))
        for a, b_ in zip(grads(fast, q, k, v, cot), grads(slow, q, k, v, cot)):
            np.testing.assert_allclose(a, b_, rtol=1e-5, atol=1e-5)


def test_custom_backward_against_finite_differences(rng):
    """The hand-written backward (not autodiff of the scan) against numerical derivatives."""
    with jax.enable_x64():
        d64 = lambda *s: jnp.asarray(rng.normal(size=s), jnp.float64)
        lengths = jnp.array([5, 3])
        fn = jax.jit(
            lambda q, k, v: att.chunked_attention(
                q, k, v, causal=True, kv_lengths=lengths, block_q=2, block_k=2
            )
        )
        check_grads(fn, (d64(2, 4, 2, 3), d64(2, 5, 2, 3), d64(2, 5, 2, 3)), order=1, modes=["rev"])


def test_large_logits_stay_finite(rng):
    """The running max keeps exp() in range where a naive sum of exponentials overflows."""
    q, k, v = qkv(rng, 1, 8, 8, 1, 4)
    q = q * 300.0  # logits in the thousands
    got = att.chunked_attention(q, k, v, block_k=3)
    assert np.all(np.isfinite(np.asarray(got)))
    np.testing.assert_allclose(got, twin(q, k, v), rtol=1e-5, atol=1e-5)


def _compiled_memory(fn, n, h=1, d=16):
    x = jax.ShapeDtypeStruct((1, n, h, d), jnp.float32)
    return probes.compiled(fn, x, x, x).memory_analysis().temp_size_in_bytes


def _fwd_bwd(fn):
    return lambda q, k, v: jax.grad(lambda q, k, v: jnp.sum(fn(q, k, v) ** 2), (0, 1, 2))(q, k, v)


@pytest.mark.slow
def test_memory_is_linear_in_n_where_full_attention_is_quadratic():
    """Temp buffers of the compiled program (deterministic): doubling N doubles chunked
    attention's, forward and backward, and quadruples full attention's."""
    chunked = lambda q, k, v: att.chunked_attention(q, k, v, block_k=64)
    full = lambda q, k, v: att.scaled_dot_product(q, k, v)[0]
    for fn in (chunked, _fwd_bwd(chunked)):
        small, big = _compiled_memory(fn, 512), _compiled_memory(fn, 1024)
        assert 1.8 < big / small < 2.2, (small, big)
    for fn in (full, _fwd_bwd(full)):
        small, big = _compiled_memory(fn, 512), _compiled_memory(fn, 1024)
        assert 3.6 < big / small < 4.4, (small, big)
    assert _compiled_memory(_fwd_bwd(chunked), 1024) < _compiled_memory(_fwd_bwd(full), 1024) / 4


def test_serial_steps_are_the_number_of_blocks():
    """Loop trips in the compiled HLO: ceil(k / block_k), times ceil(q / block_q) when queries
    are blocked; one block is no loop at all (XLA drops a one-trip loop), like full attention."""
    x = jax.ShapeDtypeStruct((1, 100, 1, 8), jnp.float32)
    for block_q, block_k, want in ((None, 32, 4), (30, 32, 4 * 4), (None, 100, 0)):
        fn = lambda q, k, v, bq=block_q, bk=block_k: att.chunked_attention(
            q, k, v, block_q=bq, block_k=bk
        )
        assert probes.compiled_sequential_steps(fn, x, x, x) == want, (block_q, block_k)
    full = lambda q, k, v: att.scaled_dot_product(q, k, v)[0]
    assert probes.compiled_sequential_steps(full, x, x, x) == 0


@pytest.mark.slow
def test_multi_head_attention_chunked_impl_equals_dense(rng):
    b, q_len, k_len, m, heads = 2, 9, 7, 8, 2
    params = jax.tree.map(
        lambda a: f32(rng.normal(size=a.shape) * 0.5), att.init_mha(jax.random.key(0), m, heads)
    )
    x_q, x_kv = f32(rng.normal(size=(b, q_len, m))), f32(rng.normal(size=(b, k_len, m)))
    mask = att.padding_mask(jnp.array([7, 4]), k_len)

    def loss(p, impl):
        return jnp.sum(att.multi_head_attention(p, x_q, x_kv, mask, impl=impl) ** 2)

    dense, chunked = (jax.jit(jax.value_and_grad(loss), static_argnums=1) for _ in range(2))
    (l_d, g_d), (l_c, g_c) = dense(params, "dense"), chunked(params, "chunked")
    np.testing.assert_allclose(l_c, l_d, rtol=1e-5)
    # b_k's gradient is 0 in exact arithmetic (softmax ignores a shift shared by a row's
    # logits), float32 noise in both: so the tolerance is relative to the largest gradient
    scale = max(float(np.abs(g).max()) for g in jax.tree.leaves(g_d))
    for a, b_ in zip(jax.tree.leaves(g_c), jax.tree.leaves(g_d)):
        np.testing.assert_allclose(a, b_, rtol=1e-5, atol=1e-5 * scale)
    with pytest.raises(ValueError, match="impl"):
        att.multi_head_attention(params, x_q, x_kv, impl="flash")
    with pytest.raises(ValueError, match="weights"):
        att.multi_head_attention(params, x_q, x_kv, impl="chunked", return_weights=True)


def test_bad_input_names_the_problem(rng):
    q, k, v = qkv(rng, 2, 4, 4, 1, 2)
    with pytest.raises(ValueError, match="block_k"):
        att.chunked_attention(q, k, v, block_k=0)
    with pytest.raises(ValueError, match="block_q"):
        att.chunked_attention(q, k, v, block_q=2.5)
    with pytest.raises(ValueError, match="kv_lengths"):
        att.chunked_attention(q, k, v, kv_lengths=jnp.array([1, 2, 3]))
    with pytest.raises(ValueError, match="kv_lengths"):
        att.chunked_attention(q, k, v, kv_lengths=jnp.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="does not broadcast"):
        att.chunked_attention(q, k, v, jnp.ones((2, 1, 3, 4), bool))
    with pytest.raises(ValueError, match="incompatible"):
        att.chunked_attention(q, k[:1], v[:1])
