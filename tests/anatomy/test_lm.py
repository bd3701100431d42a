"""anatomy.lm: decoder-only LMs of every family behind one interface. Incremental decoding
equals the full pass for every positional encoding, recurrent option and mixer (a hybrid
pattern, no MLP); causality; the per-layer parameter groups; the per-position loss against a
loop; apply = readout ∘ hidden; both classic families learn a tiny language and decode it step
by step as they trained, and an LM of every recurrent mixer learns it; clear errors."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from helpers import adam_fit

from anatomy import lm, mixers
from anatomy.errors import BadInputError
from anatomy.seq2seq import count_params

V, B, T = 11, 2, 7


def config(family, **fields):
    if family == "mixer":
        return mixer_config(fields.pop("mixer"), **fields)
    c = lm.default_config(family)
    c.update(
        d_model=16, n_layers=2, **({"n_heads": 4, "d_ff": 32} if family == "attention" else {})
    )
    c.update(fields)
    return c


def mixer_config(name, **fields):
    """A tiny 'mixer' LM: width 16, two heads where the mixer has heads, Mamba-2 heads of 8."""
    c = lm.default_config("mixer", mixer=name)
    c.update(d_model=16, n_layers=2, d_ff=32)
    if "n_heads" in c.mixer_config:
        c.mixer_config.n_heads = 2
    if name == "mamba2":
        c.mixer_config.head_dim = 8
    c.attention_config.n_heads = 2
    c.update(fields)
    return c


VARIANTS = [
    *[("attention", {"positions": p}) for p in ("sinusoidal", "learned", "rope", "alibi", "none")],
    ("attention", {"norm": "deepnorm", "positions": "rope", "rope_scale": 2.0}),
    ("attention", {"norm": "post", "residual": False, "tie_output": False}),
    ("recurrent", {"cell": "lstm"}),
    ("recurrent", {"cell": "gru", "residual": True, "layer_norm": True, "n_layers": 3}),
    ("mixer", {"mixer": "mamba2", "tie_output": False}),
    ("mixer", {"mixer": "gated_deltanet", "pattern": "RA", "d_ff": 0}),
]
IDS = [f"{f}-" + "-".join(map(str, o.values())) for f, o in VARIANTS]


def _moved(model, seed=0):
    """init, every leaf moved off it (zero biases, unit LN scales would hide a missed term)."""
    noise = np.random.default_rng(seed)
    params = model.init(jax.random.key(seed))
    return jax.tree.map(lambda p: p + 0.1 * noise.normal(size=p.shape).astype(p.dtype), params)


def _tokens(seed=0, t=T):
    return jnp.asarray(np.random.default_rng(seed).integers(0, V, size=(B, t)), jnp.int32)


@pytest.mark.slow
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


@pytest.mark.slow
def test_layers_partition_the_stack_and_give_per_layer_gradient_norms():
    for family, fields in (VARIANTS[1], VARIANTS[-3], VARIANTS[-1]):
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


@pytest.mark.slow
def test_token_nll_equals_a_loop_and_apply_is_readout_of_hidden():
    model = lm.build_lm(config("attention", positions="alibi"), V)
    params, tokens = _moved(model, 2), _tokens(2)
    nll = np.asarray(lm.token_nll(model, params, tokens))
    logits = np.asarray(model.apply(params, tokens), np.float64)
    h = model.hidden(params, tokens)
    assert h.shape == (B, T, 16)
    np.testing.assert_allclose(model.readout(params, h[:, 3]), logits[:, 3], rtol=1e-6, atol=1e-6)
    assert nll.shape == (B, T - 1)
    for b in range(B):
        for t in range(T - 1):
            row = logits[b, t] - logits[b, t].max()
            want = np.log(np.exp(row).sum()) - row[int(tokens[b, t + 1])]
            np.testing.assert_allclose(nll[b, t], want, rtol=1e-5)


def _train(model, data, steps=150, lr=1e-2):
    def loss_fn(p):
        return jnp.mean(lm.token_nll(model, p, data))

    return adam_fit(loss_fn, model.init(jax.random.key(0)), steps, lr)


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
@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.parametrize("mixer", mixers.RECURRENT)
def test_an_lm_of_every_recurrent_mixer_learns_the_tiny_language(mixer):
    """One layer of the mixer (its short conv as the registry gives it), no MLP, 120 Adam
    steps on the up / down counters: the loss ends below half a bigram reader's (which cannot
    tell up from down: ln 2 per token), so the mixer carries the direction forward."""
    up = [4 + (i % 7) for i in range(40)]
    down = [10 - (i % 7) for i in range(40)]
    data = jnp.asarray([s[o : o + 12] for s in (up, down) for o in range(0, 24, 3)], jnp.int32)
    model = lm.build_lm(mixer_config(mixer, n_layers=1, d_ff=0), V)
    _, loss = _train(model, data, steps=120)
    assert float(loss) < 0.5 * np.log(2), f"{mixer}: final loss {float(loss)}"


def test_bad_configs_are_clear_errors():
    with pytest.raises(BadInputError, match="unknown mixer 'lru'; choose one of linear_attention"):
        lm.default_config("mixer", mixer="lru")
    with pytest.raises(
        BadInputError, match=r"mixer_config of 'mlstm': unknown knobs \['d_state'\]"
    ):
        lm.build_lm(mixer_config("mamba", mixer="mlstm"), V)  # mamba's knobs, mlstm's name
    with pytest.raises(BadInputError, match="pattern must be 2 letters"):
        lm.build_lm(mixer_config("rglru", pattern="RRA"), V)
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
