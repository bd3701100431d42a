"""The translators' contract, run over every registered model (helpers.TINY has a tiny config
for each; a model registered without one fails here): incremental decoding equals teacher
forcing and padding is invisible (VARIANTS: every model, and the options that change its
decoding path), each overfits a tiny batch and decodes it back; beam search against greedy
and exhaustive search. Sharded training is the same contract's other half
(test_sharding_models.py). A model's own properties are tested in its own file
(test_convs2s.py, test_seq2seq_linear.py).

All models are tiny (widths 16-32, vocab 14) so the file stays fast on 2 CPU cores.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import TINY, V, overfit_batch, random_batch, train_translator

from anatomy import decode
from anatomy.attention.kv_cache import any_overflow
from anatomy.errors import BadInputError
from anatomy.seq2seq import (
    BOS,
    EOS,
    MODELS,
    PAD,
    build_model,
    count_params,
    default_model_config,
    registry,
)

# More variants for the cheap equivalence checks (random parameters, no training).
SMALL_RS = {"d_emb": 8, "d_enc": 8, "d_dec": 12, "d_attn": 8, "d_readout": 10}  # RNNsearch
VARIANTS = [(name, cfg) for name, cfg in TINY.items()] + [
    (
        "rnnenc",
        {"cell": "gru", "d_emb": 8, "d_hidden": 12, "feed_context": True, "reverse_source": True},
    ),
    ("rnnsearch", dict(SMALL_RS, cell="lstm")),
    ("rnnsearch", dict(SMALL_RS, cell="gru", readout_state="previous")),
    ("rnnsearch", dict(SMALL_RS, cell="lstm", readout="maxout")),
    ("rnnsearch", dict(SMALL_RS, cell="gru_paper", readout_state="previous", readout="maxout")),
    ("luong", {"cell": "gru", "d_emb": 8, "d_hidden": 12, "score": "dot"}),
    ("luong", {"cell": "rnn", "d_emb": 8, "d_hidden": 12, "score": "concat", "d_attn": 6}),
    (
        "transformer",
        {
            "d_model": 16,
            "n_heads": 2,
            "d_ff": 32,
            "norm": "pre",
            "share_embeddings": True,
            "tie_output": False,
            "dropout_rate": 0.3,
        },
    ),
]
# Every positional encoding and norm option of the Transformer, and the deep recurrent
# encoders: incremental decoding must equal teacher forcing for each (RoPE's cached keys
# rotated at their own positions, ALiBi's bias over the cache's slots).
SMALL_TF = {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_decoder_layers": 2, "dropout_rate": 0.0}
VARIANTS += [
    ("transformer", dict(SMALL_TF, positions="learned", max_positions=12, norm="none")),
    (
        "transformer",
        dict(SMALL_TF, positions="rope", rope_base=100.0, rope_scale=2.0)
        | {"norm": "deepnorm", "n_encoder_layers": 3},
    ),
    ("transformer", dict(SMALL_TF, positions="alibi", norm="pre")),
    ("transformer", dict(SMALL_TF, positions="rope", residual=False)),
    ("rnnenc", {"cell": "gru", "d_emb": 8, "d_hidden": 12, "n_layers": 3, "residual": True}),
    ("rnnsearch", dict(SMALL_RS, cell="lstm", n_layers=2, residual=True, layer_norm=True)),
]
# ConvS2S's kernel widths and depths (buffered decoding keeps the last K - 1 inputs per layer)
TINY_CONV = TINY["convs2s"]
VARIANTS += [
    (
        "convs2s",
        dict(TINY_CONV, kernel_size=2, n_encoder_layers=1, n_decoder_layers=3)
        | {"scale_encoder_grad": False},
    ),
    ("convs2s", dict(TINY_CONV, kernel_size=4, d_conv=16, dropout_rate=0.3)),
    ("convs2s", dict(TINY_CONV, kernel_size=1, n_decoder_layers=1)),
]
# The RNN translators with linear-recurrence cells (their encoders, and RNNenc's decoder, run
# the associative scan in the teacher-forced pass and one step at a time when decoding)
LINEAR_SIZES = {
    "rnnenc": {"d_emb": 16, "d_hidden": 32, "reverse_source": True, "feed_context": True},
    "rnnsearch": {"d_emb": 16, "d_enc": 16, "d_dec": 32, "d_attn": 16, "d_readout": 32},
}
VARIANTS += [
    (name, dict(size, cell=cell))
    for name, size in LINEAR_SIZES.items()
    for cell in ("sru", "qrnn", "mingru", "mamba")
]
# RNNenc with a matrix state: two layers handing their states on, reversed source, an MLP
VARIANTS += [
    ("rnnenc_mixer", dict(mixer="gated_deltanet", d_model=16, n_heads=2, n_layers=2, d_ff=24,
                          form="sequential", reverse_source=True)),
]  # fmt: skip
VARIANT_IDS = [f"{n}-{i}" for i, (n, _) in enumerate(VARIANTS)]


@pytest.fixture(scope="module")
def batch():
    return random_batch(0)


# ---------------------------------------------------------------- registry and configs


def test_every_registered_model_is_in_the_contract():
    """A registered model without a tiny config would be skipped by every contract test."""
    assert set(TINY) == set(registry.names()) == {name for name, _ in VARIANTS}


def test_unknown_model_name_lists_choices():
    with pytest.raises(ValueError, match="unknown model 'lstm_seq2seq'.*rnnenc.*transformer"):
        build_model("lstm_seq2seq", None, V, V)
    with pytest.raises(ValueError, match="unknown model"):
        default_model_config("nope")


def test_bad_configs_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown config fields \\['d_modle'\\]"):
        build_model("transformer", {"d_modle": 64}, V, V)
    with pytest.raises(ValueError, match="share_embeddings"):
        build_model("transformer", {"share_embeddings": True}, V, V + 1)
    with pytest.raises(ValueError, match="score"):
        build_model("luong", {"score": "cosine"}, V, V)
    with pytest.raises(ValueError, match="cell"):
        build_model("rnnenc", {"cell": "tcn"}, V, V)
    with pytest.raises(ValueError, match="tgt_vocab_size"):
        build_model("rnnsearch", None, V, None)


def test_default_param_counts_are_comparable():
    """docs/design.md's default sizes: each default model has 1.1M-1.9M parameters at 1,000 words."""
    counts = {}
    for name in MODELS:
        model = build_model(name, default_model_config(name), 1000, 1000)
        counts[name] = count_params(jax.eval_shape(model.init, jax.random.key(0)))
    assert all(1.1e6 < c < 1.9e6 for c in counts.values()), counts
    assert counts["transformer"] < counts["rnnenc"] < counts["rnnsearch"], counts


# ---------------------------------------------------------------- equivalences


def stepwise_logits(model, params, batch):
    """Logits [B, T, V] from encode / init_state / step fed the teacher's tokens."""
    memory = model.encode(params, batch["src"], batch["src_len"])
    state = model.init_state(params, memory, batch["tgt_in"].shape[1])

    def body(state, tokens):  # tokens [B]
        logits, state = model.step(params, memory, state, tokens)
        return state, logits

    _, logits = jax.lax.scan(body, state, jnp.asarray(batch["tgt_in"]).T)  # [T, B, V]
    return jnp.swapaxes(logits, 0, 1)


@pytest.mark.parametrize("name,cfg", VARIANTS, ids=VARIANT_IDS)
def test_incremental_decoding_equals_teacher_forcing_and_padding_is_invisible(name, cfg, batch):
    shared = cfg.get("share_embeddings", False)
    model = build_model(name, cfg, V if shared else V + 1, V)  # unequal vocabs where allowed
    # every leaf moved off its init (biases start at zero, LN scales at one), so a bias or a
    # scale that only one of the two paths applies changes the logits
    noise = np.random.default_rng(1)
    params = jax.tree_util.tree_map(
        lambda p: p + 0.1 * noise.normal(size=p.shape).astype(p.dtype),
        model.init(jax.random.key(1)),
    )
    # Three more source columns, and garbage ids (not pad) at every padded position.
    src = np.pad(batch["src"], ((0, 0), (0, 3)))
    padded = dict(batch, src=np.where(src == PAD, 7, src).astype(np.int32))

    @jax.jit  # one compilation for all three computations
    def everything(params, batch, padded):
        return (
            model.apply(params, batch),
            stepwise_logits(model, params, batch),
            model.apply(params, padded),
        )

    full, step, pad = map(np.asarray, everything(params, batch, padded))
    assert full.shape == batch["tgt_in"].shape + (V,)
    tol = dict(rtol=1e-5, atol=1e-5 * np.abs(full).max())
    np.testing.assert_allclose(step, full, **tol)  # cached / incremental == full prefix
    np.testing.assert_allclose(pad, full, **tol)  # padding (and what it holds) changes nothing


@pytest.mark.slow
def test_transformer_decode_state_is_per_row_and_flags_overflow(batch):
    """Two rows at different positions (states built apart, concatenated along the batch
    axis) step exactly as each alone and as the teacher-forced pass at those positions;
    stepping past init_state's max_len sets the cache overflow flag and gives NaN logits."""
    model = build_model("transformer", TINY["transformer"], V, V)
    params = model.init(jax.random.key(5))
    memory = model.encode(params, batch["src"], batch["src_len"])
    tgt = jnp.asarray(batch["tgt_in"])  # [B, T]
    cat = lambda *trees: jax.tree.map(lambda *x: jnp.concatenate(x, 0), *trees)

    def fed(row, n, cap=6):  # row's memory and its state after the first n teacher tokens
        mem = jax.tree.map(lambda x: x[row : row + 1], memory)
        state = model.init_state(params, mem, cap)
        for t in range(n):
            _, state = model.step(params, mem, state, tgt[row : row + 1, t])
        return mem, state

    (m0, s0), (m1, s1) = fed(0, 3), fed(1, 1)
    for cache in cat(s0, s1):  # every layer's cache: each row at its own position
        np.testing.assert_array_equal(cache.length, [3, 1])
    nxt = jnp.stack([tgt[0, 3], tgt[1, 1]])  # [2]
    both, _ = model.step(params, cat(m0, m1), cat(s0, s1), nxt)
    alone = jnp.concatenate(
        [model.step(params, m0, s0, nxt[:1])[0], model.step(params, m1, s1, nxt[1:])[0]]
    )
    full = model.apply(params, batch)  # [B, T, V]
    np.testing.assert_allclose(both, alone, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(both, jnp.stack([full[0, 3], full[1, 1]]), rtol=1e-5, atol=1e-5)

    mem, state = fed(0, 2, cap=2)  # full: the third step has no slot
    assert not bool(any_overflow(state))
    logits, state = model.step(params, mem, state, tgt[:1, 2])
    assert bool(any_overflow(state)) and np.isnan(np.asarray(logits)).all()


@pytest.mark.slow
def test_dropout_needs_rng_and_changes_training_logits(batch):
    name, cfg = next(v for v in VARIANTS if v[1].get("dropout_rate", 0.0) > 0)
    model = build_model(name, cfg, V, V)
    params = model.init(jax.random.key(2))
    with pytest.raises(ValueError, match="rng"):
        model.apply(params, batch, deterministic=False)
    a = model.apply(params, batch, rng=jax.random.key(0), deterministic=False)
    b = model.apply(params, batch, rng=jax.random.key(0), deterministic=False)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, model.apply(params, batch))


def test_attention_intermediates(batch):
    s_len, t_len = batch["src"].shape[1], batch["tgt_in"].shape[1]
    invalid = np.arange(s_len)[None, None] >= batch["src_len"][:, None, None]  # [B, 1, S]
    for name in ("rnnsearch", "luong"):
        model = build_model(name, TINY[name], V, V)
        _, inter = model.apply(model.init(jax.random.key(3)), batch, return_intermediates=True)
        a = np.asarray(inter["alignments"])
        assert a.shape == (3, t_len, s_len)
        np.testing.assert_allclose(a.sum(-1), 1.0, rtol=1e-5)
        assert (a[np.broadcast_to(invalid, a.shape)] == 0).all()
    model = build_model("transformer", dict(TINY["transformer"], n_decoder_layers=2), V, V)
    _, inter = model.apply(model.init(jax.random.key(3)), batch, return_intermediates=True)
    assert len(inter["cross_attention_layers"]) == 2
    assert inter["cross_attention"].shape == (3, 4, t_len, s_len)
    first, last = map(np.asarray, inter["cross_attention_layers"])
    np.testing.assert_array_equal(
        inter["cross_attention"], last
    )  # 'cross_attention' is the last layer
    assert not np.allclose(first, last)
    for w in (first, last):  # rows are distributions over the real source positions only
        np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)
        assert (w[np.broadcast_to(invalid[:, None], w.shape)] == 0).all()
    future = np.triu(np.ones((t_len, t_len), bool), 1)  # [t, t]: key after query
    for w in map(np.asarray, inter["decoder_self_attention_layers"]):
        assert w.shape == (3, 4, t_len, t_len) and (w[..., future] == 0).all()
    for w in map(np.asarray, inter["encoder_self_attention_layers"]):
        assert w.shape == (3, 4, s_len, s_len)
        assert (w[np.broadcast_to(invalid[:, None], w.shape)] == 0).all()


# ---------------------------------------------------------------- training and decoding


@pytest.fixture(scope="module")
def trained():
    batch = overfit_batch()
    out = {}
    for name, cfg in TINY.items():
        model = build_model(name, cfg, V, V)
        params, loss = train_translator(model, batch)
        out[name] = (model, params, float(loss))
    return batch, out


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TINY))
def test_overfits_and_decodes_its_targets(trained, name):
    batch, models = trained
    model, params, loss = models[name]
    assert loss < 0.05, f"{name}: final loss {loss}"
    t_len = batch["tgt_out"].shape[1]
    tokens = decode.greedy(model, params, batch["src"], batch["src_len"], t_len)
    np.testing.assert_array_equal(tokens, batch["tgt_out"])
    beam1, scores = decode.beam_search(
        model, params, batch["src"], batch["src_len"], beam_size=1, max_len=t_len
    )
    np.testing.assert_array_equal(beam1, tokens)
    assert (np.asarray(scores) <= 0).all()


PAPER_READOUTS = [
    {"readout_state": "previous"},
    {"readout": "maxout"},
    {"readout_state": "previous", "readout": "maxout"},
]


@pytest.mark.parametrize("options", PAPER_READOUTS, ids=lambda o: "-".join(o.values()))
def test_rnnsearch_paper_readouts_overfit_and_decode(options):
    """Bahdanau et al.'s readout (s_{i-1}, maxout): each option trains and decodes back."""
    batch = overfit_batch()
    model = build_model("rnnsearch", dict(TINY["rnnsearch"], **options), V, V)
    params, loss = train_translator(model, batch)
    assert float(loss) < 0.05, f"{options}: final loss {float(loss)}"
    tokens = decode.greedy(model, params, batch["src"], batch["src_len"], batch["tgt_out"].shape[1])
    np.testing.assert_array_equal(tokens, batch["tgt_out"])
    shapes = jax.tree.map(np.shape, params)
    pool = 2 if options.get("readout") == "maxout" else 1
    assert shapes["readout"]["w"][1] == pool * TINY["rnnsearch"]["d_readout"]


def test_rnnsearch_readout_options_change_the_function_and_are_checked(batch):
    base_model = build_model("rnnsearch", TINY["rnnsearch"], V, V)
    prev = build_model("rnnsearch", dict(TINY["rnnsearch"], readout_state="previous"), V, V)
    params = base_model.init(jax.random.key(6))
    assert not np.allclose(base_model.apply(params, batch), prev.apply(params, batch))
    with pytest.raises(ValueError, match="readout_state must be one of current/previous"):
        build_model("rnnsearch", {"readout_state": "next"}, V, V)
    with pytest.raises(ValueError, match="readout must be one of tanh/maxout"):
        build_model("rnnsearch", {"readout": "relu"}, V, V)


@pytest.mark.parametrize("name", ["rnnsearch", "transformer"])
def test_large_beam_finds_the_exhaustive_optimum(name):
    """Target vocab 7 (pad, bos, eos, unk never generated; three words), 4 steps: the
    4**4 = 256 sequences of generated tokens all fit in the beam."""
    v, max_len = 7, 4
    model = build_model(name, TINY[name], V, v)
    params = model.init(jax.random.key(4))
    # rnnsearch scaled up: peaked enough that its optimum is [6, 6, 4, eos] for row 0;
    # the Transformer's (scaled down, flat) is [eos] alone.
    scale = {"rnnsearch": 3.0, "transformer": 0.7}[name]
    params = jax.tree_util.tree_map(lambda x: x * scale, params)
    b = random_batch(1, n=2)
    tokens, scores = decode.beam_search(
        model,
        params,
        b["src"],
        b["src_len"],
        beam_size=(v - 3) ** max_len,
        max_len=max_len,
        alpha=0.6,
    )
    ex_tokens, ex_scores = decode.exhaustive_search(
        model, params, b["src"], b["src_len"], max_len, alpha=0.6
    )
    np.testing.assert_array_equal(tokens, ex_tokens)
    np.testing.assert_allclose(scores, ex_scores, rtol=1e-5)


# ---------------------------------------------------------------- positions, norms, deep encoders


@pytest.mark.slow
@pytest.mark.parametrize("positions", ["learned", "rope", "alibi"])
def test_transformer_positions_train_and_decode_step_by_step(positions):
    """Each encoding trains (teacher forcing), and greedy decoding through the KV cache picks
    at every step the token the teacher-forced pass ranks first after the same prefix: the
    trained model decodes as it trains. Learned positions and RoPE fit the reversal task
    and decode it back; ALiBi learns it more slowly (its encoder has no absolute positions
    for the cross-attention to align by, and this task aligns target i with source s-1-i)."""
    batch = overfit_batch()
    model = build_model("transformer", dict(TINY["transformer"], positions=positions), V, V)
    params, loss = train_translator(model, batch)
    t_len = batch["tgt_out"].shape[1]
    tokens = np.asarray(decode.greedy(model, params, batch["src"], batch["src_len"], t_len))
    fed = dict(batch, tgt_in=np.concatenate([np.full((len(tokens), 1), BOS), tokens[:, :-1]], 1))
    ranked = np.asarray(jnp.argmax(decode.mask_never_generated(model.apply(params, fed)), -1))
    upto = np.cumsum(np.cumsum(tokens == EOS, 1), 1) <= 1  # up to the first eos
    np.testing.assert_array_equal(tokens[upto], ranked[upto])
    if positions == "alibi":
        assert float(loss) < 0.5, f"alibi: final loss {float(loss)}"
    else:
        assert float(loss) < 0.05, f"{positions}: final loss {float(loss)}"
        np.testing.assert_array_equal(tokens, batch["tgt_out"])


@pytest.mark.slow
@pytest.mark.parametrize("positions", ["rope", "alibi", "learned"])
def test_transformer_overflow_is_nan_for_every_encoding(batch, positions):
    model = build_model("transformer", dict(SMALL_TF, positions=positions), V, V)
    params = model.init(jax.random.key(5))
    memory = model.encode(params, batch["src"], batch["src_len"])
    state = model.init_state(params, memory, 2)
    for t in range(2):
        logits, state = model.step(params, memory, state, jnp.asarray(batch["tgt_in"][:, t]))
        assert np.isfinite(np.asarray(logits)).all() and not bool(any_overflow(state))
    logits, state = model.step(params, memory, state, jnp.asarray(batch["tgt_in"][:, 2]))
    assert bool(any_overflow(state)) and np.isnan(np.asarray(logits)).all()


def test_transformer_position_and_norm_choices_are_checked(batch):
    with pytest.raises(BadInputError, match="permutation-equivariant"):
        build_model("transformer", {"positions": "none"}, V, V)
    with pytest.raises(BadInputError, match="even head width"):
        build_model("transformer", dict(SMALL_TF, positions="rope", n_heads=16), V, V)
    with pytest.raises(BadInputError, match="deepnorm' scales the residual"):
        build_model("transformer", {"norm": "deepnorm", "residual": False}, V, V)
    with pytest.raises(BadInputError, match="rope_base must be a positive number"):
        build_model("transformer", {"positions": "rope", "rope_base": 0.0}, V, V)
    p = 6  # the batch's longest source and target
    model = build_model("transformer", dict(SMALL_TF, positions="learned", max_positions=p), V, V)
    params = model.init(jax.random.key(0))
    memory = model.encode(params, batch["src"], batch["src_len"])
    with pytest.raises(BadInputError, match="budget of 7 positions exceeds max_positions=6"):
        model.init_state(params, memory, p + 1)
    long = dict(batch, tgt_in=np.pad(batch["tgt_in"], ((0, 0), (0, 4))))
    with pytest.raises(BadInputError, match="sequence of 10 positions exceeds max_positions=6"):
        model.apply(params, long)


def test_transformer_deepnorm_scales_the_init_by_each_sides_beta():
    """The encoder-decoder constants (N encoder, M decoder layers): β_enc = 0.87 (N^4 M)^(-1/16)
    on the encoder's value, output and FFN weights, β_dec = (12 M)^(-1/4) on the decoder's
    (both attentions); queries, keys and embeddings untouched."""
    from anatomy.attention import deepnorm_constants

    n, m = 3, 2
    cfg = dict(SMALL_TF, n_encoder_layers=n, n_decoder_layers=m)
    plain = build_model("transformer", cfg, V, V).init(jax.random.key(0))
    deep = build_model("transformer", dict(cfg, norm="deepnorm"), V, V).init(jax.random.key(0))
    consts = deepnorm_constants(n, m)
    np.testing.assert_allclose(
        consts["encoder"], (0.81 * (n**4 * m) ** (1 / 16), 0.87 * (n**4 * m) ** (-1 / 16))
    )
    np.testing.assert_allclose(consts["decoder"], ((3 * m) ** 0.25, (12 * m) ** -0.25))
    np.testing.assert_array_equal(deep["tgt_emb"], plain["tgt_emb"])
    for side, beta in (("encoder", consts["encoder"][1]), ("decoder", consts["decoder"][1])):
        for d, p in zip(deep[side], plain[side]):
            for attn in [k for k in d if k.endswith("attn")]:
                np.testing.assert_array_equal(d[attn]["w_q"], p[attn]["w_q"])
                np.testing.assert_array_equal(d[attn]["w_k"], p[attn]["w_k"])
                np.testing.assert_allclose(d[attn]["w_v"], beta * p[attn]["w_v"], rtol=1e-6)
                np.testing.assert_allclose(d[attn]["w_o"], beta * p[attn]["w_o"], rtol=1e-6)
            np.testing.assert_allclose(d["ffn"]["w1"], beta * p["ffn"]["w1"], rtol=1e-6)
            np.testing.assert_allclose(d["ffn"]["w2"], beta * p["ffn"]["w2"], rtol=1e-6)


@pytest.mark.parametrize("name", ["rnnenc", "rnnsearch"])
def test_one_plain_encoder_layer_is_the_model_of_before(batch, name):
    """n_layers=1 without LayerNorm keeps the one-layer parameters (same tree, same digits)
    whatever residual says; a deep encoder is the stack's tree; a stack of another cell is
    a clear error."""
    base_model = build_model(name, TINY[name], V, V)
    same = build_model(name, dict(TINY[name], residual=True), V, V)
    params = base_model.init(jax.random.key(0))
    assert jax.tree.structure(params) == jax.tree.structure(same.init(jax.random.key(0)))
    np.testing.assert_array_equal(base_model.apply(params, batch), same.apply(params, batch))
    deep = build_model(name, dict(TINY[name], n_layers=2), V, V).init(jax.random.key(0))
    assert "encoder" in deep and ("enc_fw" not in deep)
    with pytest.raises(BadInputError, match=f"{name}: cell must be one of 'lstm', 'gru'"):
        build_model(name, dict(TINY[name], cell="gru_paper", n_layers=2), V, V)
    with pytest.raises(BadInputError, match=f"{name}: n_layers must be a positive integer"):
        build_model(name, dict(TINY[name], n_layers=0), V, V)
