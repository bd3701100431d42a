"""The causal Transformer stack, anatomy.stack over attention mixers as anatomy.lm's
'attention' family builds it (lm.preset: keys 'split', positions added at the input or acting
inside the mixers), against slow twins: the prefix re-run at every position, one position at a
time through the KV cache, for every positional encoding and norm option; causality,
gradients, DeepNorm's constants and init, bad input."""

import functools

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from anatomy import attention as att
from anatomy import lm
from anatomy.attention.layers import encoder_layer, init_encoder_layer
from anatomy.attention.positions import Rotary
from anatomy.errors import BadInputError
from anatomy.stack import apply_stack, init_stack, init_stack_state, make_stack, stack_step

B, T, M, H, N_LAYERS, P = 2, 5, 16, 4, 2, 12


@functools.cache
def _preset(norm="post", residual=True, positions="sinusoidal", rope_base=1e4, rope_scale=1.0,
            n_layers=N_LAYERS):  # fmt: skip
    """lm.preset of the attention family at these options: (stack, added Encoding or None)."""
    c = lm.default_config("attention")
    c.update(
        d_model=M, n_heads=H, d_ff=2 * M, n_layers=n_layers, norm=norm, residual=residual,
        positions=positions, rope_base=rope_base, rope_scale=rope_scale, max_positions=P,
    )  # fmt: skip
    pre = lm.preset(ml_collections.FrozenConfigDict(c))
    return pre.stack, pre.positions


def _init(key, *, norm="post", positions="sinusoidal", n_layers=N_LAYERS):
    """The stack's blocks from key, and the learned table from fold_in(key, L) (lm's keys)."""
    stack, added = _preset(norm=norm, positions=positions, n_layers=n_layers)
    p = {"stack": init_stack(key, stack)}
    if added is not None and added.kind == "learned":
        p["positions"] = added.init_table(jax.random.fold_in(key, n_layers), P, M)
    return p


@functools.cache
def _params(seed=0, *, norm="post", positions="sinusoidal", n_layers=N_LAYERS):
    """A stack moved off its init (biases, LayerNorm scales and shifts, the position table);
    built once per setting (eager inits compile one small program per shape)."""
    init = functools.partial(_init, norm=norm, positions=positions, n_layers=n_layers)
    params = jax.jit(init)(jax.random.PRNGKey(seed))
    noise = np.random.default_rng(seed + 1)
    return jax.tree.map(lambda x: x + 0.1 * noise.normal(size=x.shape).astype(x.dtype), params)


def _full(params, x, **kw):
    """The stack over x [b, t, m], the added encoding first (lm.hidden without the embedding)."""
    stack, added = _preset(n_layers=len(params["stack"]["blocks"]), **kw)
    if added is not None:
        x = x + added.added(x.shape[1], M, params.get("positions"))
    return apply_stack(params["stack"], stack, x)


def _step(params, x_t, states, **kw):
    """One position x_t [b, m] (lm.step without the embedding): the added encoding's row at
    the KV caches' fill, then stack_step."""
    stack, added = _preset(n_layers=len(params["stack"]["blocks"]), **kw)
    if added is not None:
        cache = states[0]["mix"]
        pos = jnp.broadcast_to(cache.length, (x_t.shape[0],))
        x_t = x_t + added.added_at(pos, cache.k.shape[1], M, params.get("positions"))
    return stack_step(params["stack"], stack, states, x_t)


def _x(rng, t=T):
    return jnp.asarray(rng.normal(size=(B, t, M)), jnp.float32)


def _layers(params):
    """The blocks as encoder layers {'self_attn', 'ln1', 'ffn', 'ln2'} (the twin's layout)."""
    out = []
    for b in params["stack"]["blocks"]:
        layer = {"self_attn": b["mixer"]["mix"], "ffn": b["ffn"]}
        out.append(layer | {k: b[k] for k in ("ln1", "ln2") if k in b})
    return out


def _prefix_twin(params, x, *, positions="sinusoidal", rope_base=1e4, rope_scale=1.0, **kw):
    """Layer by layer, position t's output = the layer WITHOUT any mask run over the previous
    layer's outputs at positions <= t, last row; the positions built from the primitives
    (sinusoidal, the table, rope, alibi_bias), not from the stack's Encoding."""
    t_all, kind = x.shape[1], positions
    h = x
    if kind == "sinusoidal":
        h = x + att.sinusoidal(t_all, x.shape[2])
    elif kind == "learned":
        h = x + params["positions"]["table"][:t_all]
    layers = _layers(params)
    alpha = (2 * len(layers)) ** 0.25 if kw.get("norm") == "deepnorm" else 1.0
    for layer in layers:
        rows = []
        for t in range(t_all):
            pos = jnp.arange(t + 1)
            rotary = Rotary(pos, pos, rope_base, rope_scale) if kind == "rope" else None
            bias = att.alibi_bias(att.alibi_slopes(H), pos, pos) if kind == "alibi" else None
            out = encoder_layer(
                layer, h[:, : t + 1], None, rotary=rotary, bias=bias, alpha=alpha, **kw
            )
            rows.append(out[:, -1])
        h = jnp.stack(rows, axis=1)
    return h


# Every encoding and every norm / residual option at least once (cases cost a compilation
# each, so options share them); the first five also against the prefix re-run.
CASES = [
    dict(positions="sinusoidal"),
    dict(positions="learned", norm="deepnorm"),
    dict(positions="rope", norm="pre", rope_base=500.0, rope_scale=2.5),
    dict(positions="alibi", norm="pre", residual=False),
    dict(positions="none", norm="none"),
    dict(positions="rope"),
    dict(positions="alibi"),
    dict(positions="rope", norm="post", residual=False),
    dict(positions="none", norm="pre"),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c.values())))
def test_kv_steps_equal_the_full_pass(rng, case):
    """The KV-cache step equals the full pass at every position, for every encoding and
    norm: RoPE rotates each new key at its own position before it is cached, ALiBi's bias
    reads the cache's slot positions, an added encoding its row."""
    norm = case.get("norm", "post")
    params, x = _params(norm=norm, positions=case["positions"]), _x(rng)
    kw = dict(norm=norm, **{k: v for k, v in case.items() if k != "norm"})
    out = _full(params, x, **kw)
    assert out.shape == (B, T, M)
    stack, _ = _preset(**kw)
    states = init_stack_state(params["stack"], stack, B, T + 2)  # spare capacity: masked slots
    step = jax.jit(functools.partial(_step, **kw))  # one compile for all t
    steps = []
    for t in range(T):
        y, states = step(params, x[:, t], states)
        steps.append(y)
    np.testing.assert_allclose(jnp.stack(steps, 1), out, rtol=2e-5, atol=2e-5)
    caches = [s["mix"] for s in states]
    assert all(int(c.length) == T and not bool(c.overflow) for c in caches)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES[:5], ids=lambda c: "-".join(map(str, c.values())))
def test_stack_equals_prefix_rerun(rng, case):
    """The full pass equals the unmasked prefix re-run at every position (the twin builds
    the positions from the primitives, not from the stack's Encoding)."""
    norm = case.get("norm", "post")
    params = _params(norm=norm, positions=case["positions"], n_layers=2)
    x = _x(rng)[:, :4]
    kw = dict(norm=norm, **{k: v for k, v in case.items() if k != "norm"})
    np.testing.assert_allclose(
        _full(params, x, **kw), _prefix_twin(params, x, **kw), rtol=2e-5, atol=2e-5
    )


@pytest.mark.slow
def test_encodings_and_norms_change_the_function(rng):
    """Each option reaches the stack: on the same parameters every encoding, every norm and
    the residual switch give a different output (so no option is silently ignored)."""
    params, x = _params(positions="learned"), _x(rng)
    outs = {p: _full(params, x, positions=p) for p in att.POSITIONS}
    outs["rope-base"] = _full(params, x, positions="rope", rope_base=50.0)
    outs["rope-scale"] = _full(params, x, positions="rope", rope_scale=3.0)
    for norm in ("pre", "deepnorm", "none"):
        outs[norm] = _full(params, x, norm=norm)
    outs["no-residual"] = _full(params, x, residual=False)
    names = list(outs)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert float(jnp.max(jnp.abs(outs[a] - outs[b]))) > 1e-3, (a, b)


def _keep_rows(new, old, keep):
    """Per-row caches: rows where keep [b] is set take the new cache, the others stay."""
    pick = lambda n, o: jnp.where(keep.reshape((B,) + (1,) * (n.ndim - 1)), n, o)
    return [jax.tree.map(pick, n, o) for n, o in zip(new, old)]


@pytest.mark.slow
def test_step_per_row_positions_and_overflow(rng):
    """Rows at different positions (per-row cache lengths) step as the full pass at those
    positions; past the capacity the added encoding has no row: NaN, never a clamped row."""
    params, x = _params(positions="rope"), _x(rng)
    for kind in ("rope", "alibi"):  # an added encoding per row: the translator's test
        full = _full(params, x, positions=kind)
        step = jax.jit(functools.partial(_step, positions=kind))
        states = [
            {"mix": att.init_cache(B, T, H, M // H, per_row=True)} for _ in range(N_LAYERS)
        ]  # row 0 gets 3 steps, row 1 one
        for t in range(3):
            _, new = step(params, x[:, t], states)
            states = _keep_rows(new, states, jnp.array([True, t == 0]))
        nxt = jnp.stack([x[0, 3], x[1, 1]])  # [b, m]
        y, _ = step(params, nxt, states)
        np.testing.assert_allclose(y, jnp.stack([full[0, 3], full[1, 1]]), rtol=2e-5, atol=2e-5)
    stack, _ = _preset()
    states = init_stack_state(params["stack"], stack, B, 2)
    for t in range(3):
        y, states = _step(params, x[:, t], states)
    assert np.isnan(np.asarray(y)).all() and all(bool(s["mix"].overflow) for s in states)


@pytest.mark.slow
def test_stack_is_causal_and_its_gradients_match_the_twin(rng):
    params, x = _params(1), _x(rng)
    x2 = x.at[:, 3].add(1.0)  # a change at position 3 reaches only positions >= 3
    for kind in ("sinusoidal", "alibi"):
        a, b = _full(params, x, positions=kind), _full(params, x2, positions=kind)
        np.testing.assert_array_equal(a[:, :3], b[:, :3])
        assert float(jnp.max(jnp.abs(a[:, 3:] - b[:, 3:]))) > 1e-3
    x = x[:, :3]  # the twin's gradient is one program per prefix: keep it small
    v = jnp.asarray(rng.normal(size=(B, 3, M)), jnp.float32)

    def loss(f):
        return lambda p, x: jnp.sum(f(p, x) * v)

    kw = dict(norm="pre", positions="rope")
    fast = jax.grad(loss(lambda p, x: _full(p, x, **kw)), argnums=(0, 1))
    slow = jax.grad(loss(lambda p, x: _prefix_twin(p, x, **kw)), argnums=(0, 1))
    for g, w in zip(
        jax.tree_util.tree_leaves(fast(params, x)), jax.tree_util.tree_leaves(slow(params, x))
    ):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_init_splits_the_key_once_per_layer():
    """keys 'split': block l from k_l = split(key, L)[l], its attention from split(k_l)[0]
    and its FFN from split(k_l)[1], an encoder layer's numbers (init_encoder_layer(k_l))."""
    key = jax.random.PRNGKey(3)
    params = _init(key)
    for layer, k in zip(_layers(params), jax.random.split(key, N_LAYERS)):
        want = init_encoder_layer(k, M, H, 2 * M)
        for a, b in zip(jax.tree_util.tree_leaves(layer), jax.tree_util.tree_leaves(want)):
            np.testing.assert_array_equal(a, b)
    assert len(params["stack"]["blocks"]) == N_LAYERS and "positions" not in params
    learned = _init(key, positions="learned")
    assert learned["positions"]["table"].shape == (P, M)
    for a, b in zip(jax.tree.leaves(learned["stack"]), jax.tree.leaves(params["stack"])):
        np.testing.assert_array_equal(a, b)  # the table's key leaves the blocks' keys alone
    bare = _init(key, norm="none")
    assert all(set(block) == {"mixer", "ffn"} for block in bare["stack"]["blocks"])


def test_deepnorm_init_scales_values_outputs_and_ffn_by_beta():
    """DeepNet's decoder-only β = (8N)^(-1/4) on w_v, w_o and the FFN, not on w_q, w_k."""
    key, n = jax.random.PRNGKey(4), 4
    plain = _layers(_init(key, n_layers=n))
    deep = _layers(_init(key, norm="deepnorm", n_layers=n))
    beta = (8 * n) ** -0.25
    assert att.deepnorm_constants(0, n)["decoder"] == pytest.approx(((2 * n) ** 0.25, beta))
    for p, d in zip(plain, deep):
        for name in ("w_q", "w_k", "b_q"):
            np.testing.assert_array_equal(d["self_attn"][name], p["self_attn"][name])
        for w, w0 in [
            (d["self_attn"]["w_v"], p["self_attn"]["w_v"]),
            (d["self_attn"]["w_o"], p["self_attn"]["w_o"]),
            (d["ffn"]["w1"], p["ffn"]["w1"]),
            (d["ffn"]["w2"], p["ffn"]["w2"]),
        ]:
            np.testing.assert_allclose(w, beta * w0, rtol=1e-6)


def test_bad_input_is_a_clear_error(rng):
    params = _params()
    with pytest.raises(BadInputError, match="mixers must be >= 1 built Mixer"):
        make_stack(())
    with pytest.raises(BadInputError, match="learned positions need max_len >= 1"):
        att.encoding("learned").init_table(jax.random.PRNGKey(0), 0, M)
    with pytest.raises(BadInputError, match=r"x must be \[b, t, d_in\]"):
        _full(params, jnp.ones((T, M)), positions="none")
    with pytest.raises(BadInputError, match="x has width 8, the stack reads 16"):
        _full(params, jnp.ones((B, T, 8)), positions="none")
    with pytest.raises(BadInputError, match="positions must be one of .*'rope'.*got 'relative'"):
        _preset(positions="relative")
    with pytest.raises(BadInputError, match="norm must be one of 'pre', 'post', 'deepnorm'"):
        _preset(norm="rms")
    with pytest.raises(BadInputError, match="it needs residual='all'"):
        _preset(norm="deepnorm", residual=False)
    with pytest.raises(BadInputError, match="rope_scale must be a positive number"):
        _preset(positions="rope", rope_scale=0.0)
    learned = _params(positions="learned")
    with pytest.raises(BadInputError, match="13 positions exceeds max_positions=12"):
        _full(learned, _x(rng, P + 1), positions="learned")
    stack, _ = _preset()
    states = init_stack_state(params["stack"], stack, B, T)
    with pytest.raises(BadInputError, match=r"x_t must be \[b, d_in\]"):
        _step(params, _x(rng, 2), states, positions="none")
    with pytest.raises(BadInputError, match="1 states for 2 layers"):
        _step(params, _x(rng, 1)[:, 0], states[:1])
    with pytest.raises(BadInputError, match="decoding budget of 13 positions"):
        _step(
            learned, _x(rng, 1)[:, 0],
            init_stack_state(learned["stack"], stack, B, P + 1), positions="learned",
        )  # fmt: skip
