"""A decoder-only (causal, language-model style) Transformer stack over embeddings.

Letters: b batch, t positions, m model dim, h heads, d head dim, L cache capacity.

    x_0 = x + PE(t)                      (positions 'sinusoidal' or 'learned'; else x_0 = x)
    x_l = Block_l(x_{l-1})   l = 1..n    Block = causal self-attention then FFN, each wired
                                         by norm / residual (layers.py: post-LN, pre-LN,
                                         DeepNorm, none); RoPE / ALiBi act inside the
                                         self-attention (positions.py)
    out = x_n                            [b, t, m]; position t sees positions <= t only

positions (positions.POSITIONS): 'sinusoidal' (Vaswani et al. 2017), 'learned' (a table
params['positions'] of max_positions rows), 'rope' (Su et al. 2021; rope_base, and
rope_scale = position interpolation, Chen et al. 2023), 'alibi' (Press et al. 2022: the
causal -slope·(t - s)), 'none' (NoPE, Kazemnejad et al. 2023: the causal mask is the only
signal of order). The booleans True / False are the older spelling of 'sinusoidal' / 'none'.
norm='deepnorm' uses DeepNet's decoder-only constants for the stack's n layers,
α = (2n)^(1/4) on the residual and β = (8n)^(-1/4) on the initial value, output and FFN
weights (layers.deepnorm_constants): pass the same norm to init and to the stack.

The blocks are encoder-layer parameter trees {'self_attn', 'ln1', 'ffn', 'ln2'}
(init_block = layers.init_encoder_layer): with a causal mask an encoder layer is a
decoder-only block. decoder_only_step is the same stack one position at a time, each
layer's keys and values appended to its KVCache (RoPE rotates each key at its own position
before it is cached; ALiBi's bias is computed from the cache's slot positions): O(length·d)
attention per token per layer instead of re-running the prefix (O(t²·d)). Its output equals
decoder_only's at that position for every encoding (tests/anatomy/attention/test_decoder_only.py).

Embedding, its scale, the final LayerNorm of a pre-LN stack and the readout are the
caller's (anatomy.lm puts them around this stack; long_range, gradient_decay and
decode_cost use it bare).
"""

import jax
import jax.numpy as jnp

from anatomy.attention import kv_cache
from anatomy.attention.layers import (
    _ffn_block,
    _sublayer,
    check_norm,
    deepnorm_constants,
    encoder_layer,
    init_encoder_layer,
)
from anatomy.attention.masks import causal_mask
from anatomy.attention.multihead import cached_self_attention
from anatomy.attention.positions import encoding
from anatomy.errors import BadInputError

init_block = init_encoder_layer  # (key, d_model, n_heads, d_ff, *, norm, beta) -> one block


def stack_encoding(positions, rope_base=10000.0, rope_scale=1.0):
    """positions.Encoding of a decoder-only stack (True / False: 'sinusoidal' / 'none')."""
    if isinstance(positions, bool):
        positions = "sinusoidal" if positions else "none"
    return encoding(positions, rope_base, rope_scale)


def _alpha(norm, n_layers):
    return deepnorm_constants(0, n_layers)["decoder"][0] if norm == "deepnorm" else 1.0


def init_decoder_only(
    key, n_layers, d_model, n_heads, d_ff, *, norm="post", positions="sinusoidal", max_positions=0
):
    """{'layers': [n_layers blocks]} (+ 'positions': {'table': [P, m]} for 'learned'), block l
    from jax.random.split(key, n_layers)[l], the table from jax.random.fold_in(key, n_layers).

    norm: 'none' builds blocks without LayerNorms; 'deepnorm' scales their initial value,
    output and FFN weights by β = (8 n_layers)^(-1/4). max_positions: rows of the learned
    table (positions='learned' only). A stack built from other keys is
    {'layers': [init_block(k, ...) for k in keys]}.
    """
    if n_layers < 1:
        raise BadInputError(f"init_decoder_only: n_layers must be >= 1, got {n_layers}")
    check_norm(norm)
    enc = stack_encoding(positions)
    beta = deepnorm_constants(0, n_layers)["decoder"][1] if norm == "deepnorm" else 1.0
    keys = jax.random.split(key, n_layers)
    p = {"layers": [init_block(k, d_model, n_heads, d_ff, norm=norm, beta=beta) for k in keys]}
    if enc.kind == "learned":
        if int(max_positions) < 1:
            raise BadInputError("init_decoder_only: positions='learned' needs max_positions >= 1")
        p["positions"] = enc.init_table(jax.random.fold_in(key, n_layers), max_positions, d_model)
    return p


def _width(layer):
    return layer["ffn"]["w1"].shape[0]


def _check(params, x, what, *, one_step=False):
    if not isinstance(params, dict) or not params.get("layers"):
        raise BadInputError(f"{what}: params must be {{'layers': [blocks...]}} with >= 1 block")
    if x.ndim != 3 or (one_step and x.shape[1] != 1):
        want = "[b, 1, m]" if one_step else "[b, t, m]"
        raise BadInputError(f"{what}: x must be {want}, got shape {x.shape}")
    m = _width(params["layers"][0])
    if x.shape[-1] != m:
        raise BadInputError(f"{what}: x has width {x.shape[-1]}, the stack d_model {m}")


def _heads(params):
    return params["layers"][0]["self_attn"]["w_q"].shape[1]


def decoder_only(
    params,
    x,
    *,
    norm="post",
    residual=True,
    positions="sinusoidal",
    rope_base=10000.0,
    rope_scale=1.0,
    dropout_rate=0.0,
    rng=None,
    return_layers=False,
    eps=1e-5,
):
    """The causal stack over embeddings x [b, t, m] -> [b, t, m].

    params: a dict whose 'layers' is the list of blocks (a model may keep its embedding and
    readout beside them). norm, residual: the blocks' wiring (layers.py; 'pre' adds no final
    LN here). positions, rope_base, rope_scale: the module docstring's encodings.
    dropout_rate, rng: dropout inside the blocks (rng=None: none). return_layers: also
    return every block's output, a list of n [b, t, m].
    """
    _check(params, x, "decoder_only")
    check_norm(norm, residual)
    enc = stack_encoding(positions, rope_base, rope_scale)
    t, m = x.shape[1], x.shape[2]
    added = enc.added(t, m, params.get("positions"))
    if added is not None:
        x = x + added
    pos = jnp.arange(t)
    rotary, bias = enc.attention(_heads(params), pos, pos)
    mask = causal_mask(t, t)
    kw = dict(norm=norm, residual=residual, alpha=_alpha(norm, len(params["layers"])), eps=eps)
    rngs = (
        [None] * len(params["layers"])
        if rng is None
        else jax.random.split(rng, len(params["layers"]))
    )
    outs = []
    for layer, r in zip(params["layers"], rngs):
        x = encoder_layer(
            layer, x, mask, rotary=rotary, bias=bias, dropout_rate=dropout_rate, rng=r, **kw
        )
        outs.append(x)
    return (x, outs) if return_layers else x


def init_decoder_only_cache(params, batch, max_len, dtype=None):
    """One empty KVCache of capacity max_len per layer (a list)."""
    caches = []
    for layer in params["layers"]:
        _, n_heads, d_head = layer["self_attn"]["w_k"].shape
        dt = dtype or layer["self_attn"]["w_k"].dtype
        caches.append(kv_cache.init_cache(batch, max_len, n_heads, d_head, dt))
    return caches


def block_step(
    layer,
    x_t,
    cache,
    *,
    norm="post",
    residual=True,
    alpha=1.0,
    rotary=None,
    bias=None,
    eps=1e-5,
    append=kv_cache.append,
    attend=kv_cache.attend,
):
    """One block, one position: x_t [b, 1, m] and the block's KVCache -> (out, new cache).

    The step's key/value is appended first, so the query sees itself and every cached
    position (the causal mask is implicit; multihead.cached_self_attention). rotary / bias:
    this step's RoPE and ALiBi (positions.Encoding.step_attention). append(cache, k, v) /
    attend(cache, q) -> (o, w): the cache's two operations (e.g. sliding_window's rolling
    cache, which takes no bias).
    """
    kw = dict(norm=norm, residual=residual, alpha=alpha, eps=eps, rate=0.0, rng=None)

    def self_attn(z):
        out, _, new_cache = cached_self_attention(
            layer["self_attn"], z, cache, rotary=rotary, bias=bias, append=append, attend=attend
        )
        return out, new_cache

    y, new_cache = _sublayer(x_t, self_attn, layer.get("ln1"), **kw)
    y, _ = _sublayer(y, _ffn_block(layer["ffn"], 0.0, None), layer.get("ln2"), **kw)
    return y, new_cache


def decoder_only_step(
    params,
    x_t,
    caches,
    *,
    norm="post",
    residual=True,
    positions="sinusoidal",
    rope_base=10000.0,
    rope_scale=1.0,
    eps=1e-5,
):
    """The stack at the next position: x_t [b, 1, m] (its embedding), caches (one KVCache per
    layer, all holding the same number of past positions) -> (out [b, 1, m], new caches).

    This step's position is the caches' current length (shared [] or per row [b]): the
    added encoding is read there (NaN once the cache is full: nothing overflows unseen for
    'sinusoidal' and 'learned'), RoPE rotates the query and the new key there, ALiBi
    biases the cache's slots by their distance to it.
    """
    _check(params, x_t, "decoder_only_step", one_step=True)
    if len(caches) != len(params["layers"]):
        raise BadInputError(
            f"decoder_only_step: {len(caches)} caches for {len(params['layers'])} layers"
        )
    check_norm(norm, residual)
    enc = stack_encoding(positions, rope_base, rope_scale)
    b, cap, m = x_t.shape[0], caches[0].k.shape[1], x_t.shape[-1]
    pos = jnp.broadcast_to(caches[0].length, (b,))  # [b]
    added = enc.added_at(pos, cap, m, params.get("positions"))  # [b, m] or None
    if added is not None:
        x_t = x_t + added[:, None, :]
    rotary, bias = enc.step_attention(_heads(params), pos, cap)
    kw = dict(norm=norm, residual=residual, alpha=_alpha(norm, len(params["layers"])), eps=eps)
    new = []
    for layer, cache in zip(params["layers"], caches):
        x_t, cache = block_step(layer, x_t, cache, rotary=rotary, bias=bias, **kw)
        new.append(cache)
    return x_t, new
