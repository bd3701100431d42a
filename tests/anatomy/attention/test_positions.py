"""Positional encodings (anatomy/attention/positions.py) against float64 NumPy twins: RoPE as
complex multiplication, its relative-position property and position interpolation; ALiBi's
slopes and bias against the paper's rule and a loop; learned positions; the choice names."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from anatomy import attention as att
from anatomy import axes as axes_mod
from anatomy.attention.positions import (
    check_positions,
    init_learned_positions,
    learned_positions,
    rope_frequencies,
)
from anatomy.errors import BadInputError

B, T, H, D = 2, 5, 3, 8


def rope_complex(x, positions, base=10000.0, scale=1.0):
    """float64 twin: split halves as one complex number, times e^(j·p/scale·θ_i)."""
    x = np.asarray(x, np.float64)
    d = x.shape[-1]
    theta = base ** (-np.arange(0, d, 2) / d)  # [d/2]
    pos = np.broadcast_to(np.asarray(positions, np.float64), x.shape[:2]) / scale  # [b, t]
    z = x[..., : d // 2] + 1j * x[..., d // 2 :]  # [b, t, h, d/2]
    z = z * np.exp(1j * pos[:, :, None, None] * theta)
    return np.concatenate([z.real, z.imag], axis=-1)


@pytest.mark.slow
def test_rope_equals_complex_twin(rng):
    x = rng.normal(size=(B, T, H, D))
    pos = rng.integers(0, 3000, size=(B, T))
    with jax.enable_x64(True):
        for base, scale in [(10000.0, 1.0), (500.0, 1.0), (10000.0, 4.0), (1e6, 2.5)]:
            out = att.rope(jnp.asarray(x), jnp.asarray(pos), base=base, scale=scale)
            assert out.dtype == jnp.float64
            np.testing.assert_allclose(out, rope_complex(x, pos, base, scale), rtol=0, atol=1e-12)
    out32 = att.rope(jnp.asarray(x, jnp.float32), jnp.asarray(pos[0]))  # [t] positions broadcast
    assert out32.dtype == jnp.float32
    np.testing.assert_allclose(out32, rope_complex(x, pos[0][None]), atol=2e-3)


def test_rope_dot_depends_only_on_offset(rng):
    """<rope(q, m), rope(k, n)> per head is a function of m - n alone (float64)."""
    q, k = rng.normal(size=(1, 1, H, D)), rng.normal(size=(1, 1, H, D))

    def dot(m, n):
        rq = att.rope(jnp.asarray(q), jnp.asarray([[m]]))
        rk = att.rope(jnp.asarray(k), jnp.asarray([[n]]))
        return np.asarray(jnp.einsum("bqhd,bkhd->h", rq, rk))

    with jax.enable_x64(True):
        for offset in (0, 3, -7):
            dots = [dot(n + offset, n) for n in (0, 1, 17, 1000, 4096 + 9)]
            for other in dots[1:]:
                np.testing.assert_allclose(other, dots[0], rtol=1e-10, atol=1e-10)
        assert np.abs(dot(3, 0) - dot(5, 0)).max() > 1e-3  # it does depend on the offset
        # rotations keep norms; position 0 is the identity
        x = rng.normal(size=(B, T, H, D))
        out = att.rope(jnp.asarray(x), jnp.asarray(rng.integers(0, 99, (B, T))))
        np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1))
        np.testing.assert_allclose(att.rope(jnp.asarray(x), jnp.zeros((B, T), int)), x)


def test_rope_interpolation_is_position_over_scale(rng):
    """scale s at positions p == scale 1 at the float positions p / s; and at s·p == p."""
    x = jnp.asarray(rng.normal(size=(B, T, H, D)))
    p = rng.integers(0, 512, size=(B, T))
    with jax.enable_x64(True):
        x = jnp.asarray(x, jnp.float64)
        for s in (2.0, 4.0, 3.3):
            a = att.rope(x, jnp.asarray(p), scale=s)
            b = att.rope(x, jnp.asarray(p / s, jnp.float64))  # fractional positions
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
        a = att.rope(x, jnp.asarray(4 * p), scale=4.0)
        np.testing.assert_allclose(a, att.rope(x, jnp.asarray(p)), rtol=0, atol=1e-12)
        # a raised base rotates more slowly: a smaller angle for every pair but the first
        slow = rope_frequencies(D, base=1e6, dtype=jnp.float64)
        fast = rope_frequencies(D, dtype=jnp.float64)
        assert slow[0] == fast[0] == 1.0 and np.all(slow[1:] < fast[1:])


def test_rope_rejects_bad_shapes():
    with pytest.raises(BadInputError, match="even"):
        att.rope(jnp.zeros((1, 2, 1, 5)), jnp.zeros((1, 2), int))
    with pytest.raises(BadInputError, match="positions"):
        att.rope(jnp.zeros((1, 2, 1, 4)), jnp.zeros((1, 3), int))
    with pytest.raises(BadInputError, match="scale"):
        att.rope(jnp.zeros((1, 2, 1, 4)), jnp.zeros((1, 2), int), scale=0.0)
    with pytest.raises(BadInputError, match="base"):
        att.rope(jnp.zeros((1, 2, 1, 4)), jnp.zeros((1, 2), int), base=-1.0)


def test_alibi_slopes_paper_rule():
    np.testing.assert_array_equal(att.alibi_slopes(8), [2.0**-i for i in range(1, 9)])
    # 6 heads: the 4-head slopes, then every other of the 8-head slopes (1/2, 1/8)
    np.testing.assert_array_equal(
        att.alibi_slopes(6), [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8]
    )
    np.testing.assert_array_equal(att.alibi_slopes(1), [2.0**-8])
    s16 = att.alibi_slopes(16)
    np.testing.assert_allclose(s16, [2.0 ** (-i / 2) for i in range(1, 17)], rtol=1e-7)
    s12 = att.alibi_slopes(12)  # 8 + the 1st, 3rd, 5th, 7th of 16
    np.testing.assert_allclose(s12, np.concatenate([att.alibi_slopes(8), s16[0:8:2]]))
    with pytest.raises(BadInputError, match="n_heads"):
        att.alibi_slopes(0)


def test_alibi_bias_equals_loop(rng):
    slopes = att.alibi_slopes(6)
    s_np = np.asarray(slopes, np.float64)
    n_q, n_k = 4, 7
    q_pos = rng.integers(0, 20, size=(B, n_q))
    k_pos = rng.integers(0, 20, size=(B, n_k))
    bias = np.asarray(att.alibi_bias(slopes, q_pos, k_pos))
    assert bias.shape == (B, 6, n_q, n_k)
    ref = np.zeros_like(bias)
    for b in range(B):
        for h in range(6):
            for i in range(n_q):
                for j in range(n_k):
                    ref[b, h, i, j] = -s_np[h] * abs(int(q_pos[b, i]) - int(k_pos[b, j]))
    np.testing.assert_allclose(bias, ref, rtol=1e-6)
    # 1-D positions give [h, q, k]; on and below the diagonal it is -slope * (q - k)
    causal = np.asarray(att.alibi_bias(slopes, np.arange(n_k), np.arange(n_k)))
    assert causal.shape == (6, n_k, n_k)
    i, j = np.tril_indices(n_k)
    np.testing.assert_allclose(causal[:, i, j], -s_np[:, None] * (i - j))
    # a cache step: one query at position 6 against keys 0..6 is the last row
    step = att.alibi_bias(slopes, np.full((B, 1), n_k - 1), np.arange(n_k))
    np.testing.assert_allclose(step, np.broadcast_to(causal[None, :, -1:], (B, 6, 1, n_k)))


def test_learned_positions_shape_axes_and_range(rng):
    key = jax.random.key(0)
    params = init_learned_positions(key, 16, 6)
    assert params["table"].shape == (16, 6)
    axes, _ = axes_mod.trace(lambda k: init_learned_positions(k, 16, 6), key)
    assert axes == {"table": (None, "embed")}
    pos = rng.integers(0, 16, size=(B, T))
    rows = learned_positions(params, pos)
    assert rows.shape == (B, T, 6)
    np.testing.assert_array_equal(rows, np.asarray(params["table"])[pos])
    out = learned_positions(params, jnp.asarray([3, 16, -1]))
    assert np.all(np.isfinite(out[0])) and np.all(np.isnan(out[1:]))
    with pytest.raises(BadInputError):
        init_learned_positions(key, 0, 6)


def test_check_positions_names_field_and_choices():
    for name in att.POSITIONS:
        assert check_positions(name) == name
    assert att.POSITIONS == ("sinusoidal", "learned", "rope", "alibi", "none")
    with pytest.raises(BadInputError) as err:
        check_positions("relative", field="model.transformer.positions")
    msg = str(err.value)
    assert "model.transformer.positions" in msg and "'relative'" in msg
    assert all(repr(p) in msg for p in att.POSITIONS)


# --- one Encoding per stack ---------------------------------------------------------------


@pytest.mark.slow
def test_encoding_says_what_each_choice_adds_rotates_and_biases(rng):
    """added / added_at (the input rows), attention (rotary, bias) for a whole sequence and
    step_attention for one cache step, which is that sequence's row at the step's position."""
    t, m, cap = 5, 6, 8
    table = init_learned_positions(jax.random.key(1), 10, m)
    pos = jnp.asarray([3, 0])  # two rows at different positions
    for kind in att.POSITIONS:
        enc = att.encoding(kind, rope_base=100.0, rope_scale=2.0)
        added, at = enc.added(t, m, table), enc.added_at(pos, cap, m, table)
        rot, bias = enc.attention(H, jnp.arange(cap), jnp.arange(cap))
        s_rot, s_bias = enc.step_attention(H, pos, cap)
        if kind in ("sinusoidal", "learned"):
            full = att.sinusoidal(cap, m) if kind == "sinusoidal" else table["table"][:cap]
            np.testing.assert_array_equal(added, full[:t])
            np.testing.assert_array_equal(at, full[pos])
        else:
            assert added is None and at is None
        assert (rot is None) == (s_rot is None) == (kind != "rope")
        assert (bias is None) == (s_bias is None) == (kind != "alibi")
        if kind == "alibi":
            np.testing.assert_array_equal(
                s_bias, np.moveaxis(np.asarray(bias)[:, pos], 1, 0)[:, :, None]
            )
        if kind == "rope":
            x = jnp.asarray(rng.normal(size=(B, cap, H, D)))
            assert (rot.base, rot.scale) == (100.0, 2.0)
            np.testing.assert_allclose(
                s_rot.queries(x[jnp.arange(B), pos][:, None]),
                rot.queries(x)[jnp.arange(B), pos][:, None],
                rtol=1e-6,
            )
    assert att.encoding("learned").added_at(pos, cap, m, table).shape == (2, m)
    assert np.isnan(np.asarray(att.encoding().added_at(jnp.asarray([cap]), cap, m))).all()
    with pytest.raises(BadInputError, match="a sequence of 11 positions exceeds max_positions=10"):
        att.encoding("learned").added(11, m, table)
    with pytest.raises(BadInputError, match="rope_base must be a positive number"):
        att.encoding("rope", rope_base=-1.0)
    with pytest.raises(BadInputError, match="model.positions must be one of"):
        att.encoding("relative", field="model.positions")
