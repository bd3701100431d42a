"""anatomy.lm: decoder-only LMs of both families behind one interface. Incremental decoding
equals the full pass for every positional encoding and recurrent option; causality; the
per-layer parameter groups; the per-position loss against a loop; both families learn a
tiny language and decode it step by step as they trained; clear errors."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from anatomy import lm
from anatomy.errors import BadInputError
from anatomy.seq2seq import count_params

V, B, T = 11, 2, 7


def config(family, **fields):
    c = lm.default_config(family)
    c.update(
        d_model=16, n_layers=2, **({"n_heads": 4, "d_ff": 32} if family == "attention" else {})
    )
    c.update(fields)
    return c


VARIANTS = [
    *[("attention", {"positions": p}) for p in ("sinusoidal", "learned", "rope", "alibi", "none")],
    ("attention", {"norm": "deepnorm", "positions": "rope", "rope_scale": 2.0}),
    ("attention", {"norm": "post", "residual": False, "tie_output": False}),
    ("recurrent", {"cell": "lstm"}),
    ("recurrent", {"cell": "gru", "residual": True, "layer_norm": True, "n_layers": 3}),
]
IDS = [f"{f}-" + "-".join(map(str, o.values())) for f, o in VARIANTS]


def _moved(model, seed=0):
    """init, every leaf moved off it (zero biases, unit LN scales would hide a missed term)."""
    noise = np.random.default_rng(seed)
    params = model.init(jax.random.key(seed))
    return jax.tree.map(lambda p: p + 0.1 * noise.normal(size=p.shape).astype(p.dtype), params)


def _tokens(seed=0, t=T):
    return jnp.asarray(np.random.default_rng(seed).integers(0, V, size=(B, t)), jnp.int32)


@pytest.mark.parametrize("family,fields", VARIANTS, ids=IDS)
def test_step_by_step_equals_the_full_pass_and_is_causal(family, fields):
    model = lm.build_lm(config(family, **fields), V)
    params, tokens = _moved(model), _tokens()

    @jax.jit
    def both(params, tokens):
        full = model.apply(params, tokens)

        def body(state, tok):
            logits, state = model.step(params, state, tok)
            return state, logits

        _, rows = jax.lax.scan(body, model.init_state(params, B, T), tokens.T)
        return full, jnp.swapaxes(rows, 0, 1)

    full, steps = both(params, tokens)
    assert full.shape == (B, T, V)
    np.testing.assert_allclose(steps, full, rtol=2e-5, atol=2e-5 * float(jnp.abs(full).max()))
    changed, _ = both(params, tokens.at[:, 4].set((tokens[:, 4] + 1) % V))  # the same program
    np.testing.assert_array_equal(changed[:, :4], full[:, :4])  # causal: only >= 4 moves
    assert float(jnp.abs(changed[:, 4:] - full[:, 4:]).max()) > 1e-4


def test_layers_partition_the_stack_and_give_per_layer_gradient_norms():
    for family, fields in (VARIANTS[1], VARIANTS[-1]):
        model = lm.build_lm(config(family, **fields), V)
        params = jax.jit(model.init)(jax.random.key(1))
        groups = model.layers(params)
        assert len(groups) == model.config.n_layers
        rest = {k: v for k, v in params.items() if k != "stack"}
        extra = params["stack"].get("positions", {})  # a learned table is the stack's, no layer's
        assert count_params(groups) + count_params(rest) + count_params(extra) == count_params(
            params
        )
        tokens = _tokens(1)

        loss = lambda p, model=model, tokens=tokens: jnp.mean(lm.token_nll(model, p, tokens))
        grads = model.layers(jax.jit(jax.grad(loss))(params))
        norms = [float(optax.tree.norm(g)) for g in grads]
        assert all(np.isfinite(norms)) and min(norms) > 0


def test_token_nll_equals_a_loop():
    model = lm.build_lm(config("attention", positions="alibi"), V)
    params, tokens = _moved(model, 2), _tokens(2)
    nll = np.asarray(lm.token_nll(model, params, tokens))
    logits = np.asarray(model.apply(params, tokens), np.float64)
    assert nll.shape == (B, T - 1)
    for b in range(B):
        for t in range(T - 1):
            row = logits[b, t] - logits[b, t].max()
            want = np.log(np.exp(row).sum()) - row[int(tokens[b, t + 1])]
            np.testing.assert_allclose(nll[b, t], want, rtol=1e-5)


def _train(model, data, steps=150, lr=1e-2):
    tx = optax.adam(lr)

    def loss_fn(p):
        return jnp.mean(lm.token_nll(model, p, data))

    def run(params):
        def body(_, carry):
            params, opt = carry
            updates, opt = tx.update(jax.grad(loss_fn)(params), opt, params)
            return optax.apply_updates(params, updates), opt

        params, _ = jax.lax.fori_loop(0, steps, body, (params, tx.init(params)))
        return params, loss_fn(params)

    params = model.init(jax.random.key(0))
    compiled = jax.jit(run).lower(params).compile({"xla_backend_optimization_level": 0})
    return compiled(params)


@functools.partial(jax.jit, static_argnames=("model", "n"))
def _greedy(model, params, prompt, n):
    """Feed the prompt [b, p] step by step, then continue greedily for n tokens."""
    state = model.init_state(params, prompt.shape[0], prompt.shape[1] + n)
    for t in range(prompt.shape[1]):
        logits, state = model.step(params, state, prompt[:, t])
    out = []
    for _ in range(n):
        tok = jnp.argmax(logits, -1).astype(jnp.int32)
        out.append(tok)
        logits, state = model.step(params, state, tok)
    return jnp.stack(out, 1)


@pytest.mark.parametrize(
    "family,fields",
    [("attention", {"positions": "rope"}), ("recurrent", {"residual": True, "layer_norm": True})],
    ids=["attention-rope", "recurrent-lstm"],
)
def test_learns_a_tiny_language_and_decodes_it_step_by_step(family, fields):
    """Two cyclic sequences (a counter up from 4 and one down): after training on their
    windows, prompting with three tokens of either continues it greedily, token by token
    through init_state / step, as the full pass learned it. A window's second token is a
    coin flip given its first (up or down?): the loss cannot go below ln 2 / 11 per token."""
    up = [4 + (i % 7) for i in range(40)]
    down = [10 - (i % 7) for i in range(40)]
    data = jnp.asarray([s[o : o + 12] for s in (up, down) for o in range(0, 24, 3)], jnp.int32)
    model = lm.build_lm(config(family, **fields), V)
    params, loss = _train(model, data)
    floor = np.log(2) / (data.shape[1] - 1)
    assert float(loss) < floor + 0.02, f"{family}: final loss {float(loss)}, floor {floor}"
    prompt = jnp.asarray([up[5:8], down[2:5]], jnp.int32)
    np.testing.assert_array_equal(
        _greedy(model, params, prompt, 8), np.asarray([up[8:16], down[5:13]])
    )


def test_bad_configs_are_clear_errors():
    with pytest.raises(BadInputError, match="family must be one of 'attention', 'recurrent'"):
        lm.default_config("convolutional")
    with pytest.raises(BadInputError, match=r"unknown config fields \['cell'\]"):
        lm.build_lm(dict(config("attention"), cell="lstm"), V)
    with pytest.raises(BadInputError, match="positions must be one of"):
        lm.build_lm(config("attention", positions="relative"), V)
    with pytest.raises(BadInputError, match="norm must be one of"):
        lm.build_lm(config("attention", norm="rms"), V)
    with pytest.raises(BadInputError, match="cell must be one of 'lstm', 'gru'"):
        lm.build_lm(config("recurrent", cell="rnn"), V)
    with pytest.raises(BadInputError, match="even head width"):
        lm.build_lm(config("attention", positions="rope", n_heads=16), V)
    with pytest.raises(BadInputError, match="vocab_size"):
        lm.build_lm(config("recurrent"), 1)
    model = lm.build_lm(config("attention", positions="learned", max_positions=5), V)
    with pytest.raises(BadInputError, match="exceeds max_positions=5"):
        model.apply(model.init(jax.random.key(0)), _tokens(0, 6))
