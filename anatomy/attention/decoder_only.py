"""A decoder-only (causal, language-model style) Transformer stack over embeddings.

Letters: b batch, t positions, m model dim, h heads, d head dim, L cache capacity.

    x_0 = x + PE(t)                      (sinusoidal positions, unless positions=False)
    x_l = Block_l(x_{l-1})   l = 1..n    Block = causal self-attention then FFN, each with
                                         residual + LayerNorm, post-LN or pre-LN (layers.py)
    out = x_n                            [b, t, m]; position t sees positions <= t only

The blocks are encoder-layer parameter trees {'self_attn', 'ln1', 'ffn', 'ln2'}
(init_block = layers.init_encoder_layer): with a causal mask an encoder layer is a
decoder-only block. decoder_only_step is the same stack one position at a time, each
layer's keys and values appended to its KVCache: O(length·d) attention per token per layer
instead of re-running the prefix (O(t²·d)). Its output equals decoder_only's at that
position (tests/test_decoder_only.py).

Embedding, its scale and the readout are the caller's: this is the part the
experiments (long_range, gradient_decay, decode_cost) share.
"""

import jax

from anatomy.attention import kv_cache
from anatomy.attention.layers import _sublayer, encoder_layer, init_encoder_layer
from anatomy.attention.masks import causal_mask
from anatomy.attention.multihead import output_projection, project_kv, project_q
from anatomy.attention.positions import sinusoidal
from anatomy.errors import BadInputError
from anatomy.layers import ffn

init_block = init_encoder_layer  # (key, d_model, n_heads, d_ff) -> one block's parameters


def init_decoder_only(key, n_layers, d_model, n_heads, d_ff):
    """{'layers': [n_layers blocks]}, block l from jax.random.split(key, n_layers)[l].

    A stack built from other keys is {'layers': [init_block(k, ...) for k in keys]}.
    """
    if n_layers < 1:
        raise BadInputError(f"init_decoder_only: n_layers must be >= 1, got {n_layers}")
    keys = jax.random.split(key, n_layers)
    return {"layers": [init_block(k, d_model, n_heads, d_ff) for k in keys]}


def _check(params, x, what, *, one_step=False):
    if not isinstance(params, dict) or not params.get("layers"):
        raise BadInputError(f"{what}: params must be {{'layers': [blocks...]}} with >= 1 block")
    if x.ndim != 3 or (one_step and x.shape[1] != 1):
        want = "[b, 1, m]" if one_step else "[b, t, m]"
        raise BadInputError(f"{what}: x must be {want}, got shape {x.shape}")
    m = params["layers"][0]["ln1"]["scale"].shape[0]
    if x.shape[-1] != m:
        raise BadInputError(f"{what}: x has width {x.shape[-1]}, the stack d_model {m}")


def decoder_only(params, x, *, pre_ln=False, positions=True, eps=1e-5):
    """The causal stack over embeddings x [b, t, m] -> [b, t, m] (no dropout).

    params: a dict whose 'layers' is the list of blocks (a model may keep its embedding and
    readout beside them). positions: add sinusoidal(t, m) to x first. pre_ln: pre-LN blocks
    (no final LN).
    """
    _check(params, x, "decoder_only")
    t, m = x.shape[1], x.shape[2]
    if positions:
        x = x + sinusoidal(t, m)
    mask = causal_mask(t, t)
    for layer in params["layers"]:
        x = encoder_layer(layer, x, mask, pre_ln=pre_ln, eps=eps)
    return x


def init_decoder_only_cache(params, batch, max_len, dtype=None):
    """One empty KVCache of capacity max_len per layer (a list)."""
    caches = []
    for layer in params["layers"]:
        _, n_heads, d_head = layer["self_attn"]["w_k"].shape
        dt = dtype or layer["self_attn"]["w_k"].dtype
        caches.append(kv_cache.init_cache(batch, max_len, n_heads, d_head, dt))
    return caches


def block_step(
    layer, x_t, cache, *, pre_ln=False, eps=1e-5, append=kv_cache.append, attend=kv_cache.attend
):
    """One block, one position: x_t [b, 1, m] and the block's KVCache -> (out, new cache).

    The step's key/value is appended first, so the query sees itself and every cached
    position (the causal mask is implicit). append(cache, k, v) / attend(cache, q) -> (o, w):
    the cache's two operations (e.g. sliding_window's rolling cache).
    """
    sa = layer["self_attn"]
    kw = dict(pre_ln=pre_ln, eps=eps, rate=0.0, rng=None)

    def self_attn(z):
        k_t, v_t = project_kv(sa, z)  # [b, 1, h, d] each
        new_cache = append(cache, k_t, v_t)
        o, _ = attend(new_cache, project_q(sa, z))  # [b, 1, h, d]
        return output_projection(sa, o), new_cache

    y, new_cache = _sublayer(x_t, self_attn, layer["ln1"], **kw)
    y, _ = _sublayer(y, lambda z: (ffn(layer["ffn"], z), None), layer["ln2"], **kw)
    return y, new_cache


def decoder_only_step(params, x_t, caches, *, pre_ln=False, positions=True, eps=1e-5):
    """The stack at the next position: x_t [b, 1, m] (its embedding), caches (one KVCache per
    layer, all holding the same number of past positions) -> (out [b, 1, m], new caches).

    positions: add the sinusoidal position of this step (= the caches' current length;
    shared lengths only, as init_decoder_only_cache makes them).
    """
    _check(params, x_t, "decoder_only_step", one_step=True)
    if len(caches) != len(params["layers"]):
        raise BadInputError(
            f"decoder_only_step: {len(caches)} caches for {len(params['layers'])} layers"
        )
    if positions:
        if caches[0].length.ndim != 0:
            raise BadInputError("decoder_only_step: positions need one shared cache length")
        cap, m = caches[0].k.shape[1], x_t.shape[-1]
        table = sinusoidal(cap, m)  # [L, m]
        x_t = x_t + jax.lax.dynamic_slice_in_dim(table, caches[0].length, 1)[None]
    new = []
    for layer, cache in zip(params["layers"], caches):
        x_t, cache = block_step(layer, x_t, cache, pre_ln=pre_ln, eps=eps)
        new.append(cache)
    return x_t, new
