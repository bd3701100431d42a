"""Causal softmax self-attention as a mixer: the layer a hybrid stack puts among recurrent ones.

Letters: b batch, t positions, m model width, h heads, d head width, L cache capacity.

    out = MHA(x, x, causal mask)     [b, t, m]   (anatomy.attention.multi_head_attention,
                                                  RoPE or ALiBi inside, Hard-ALiBi heads,
                                                  or no positions)
    step: the KV cache of capacity L, [b, L, h, d] keys and values (kv_cache.py), so the state
    a decoder keeps grows with the length: 2 · L · h · d numbers per layer.

Forms: 'dense' (the [b, h, t, t] weights in memory) and 'chunked' (chunked_attention's
online softmax, O(t) memory; no ALiBi).

positions: 'rope' (rope_base, and rope_scale = position interpolation), 'alibi', 'none'
(positions.py), or 'hard_alibi' (Jelassi et al. 2024): the
first n_heads // 2 heads see hard windows of 1, 2, .. tokens behind them, the others no
positions (positions.hard_alibi_bias); dense form only, at least 2 heads.
"""

import jax.numpy as jnp

from anatomy.attention import kv_cache
from anatomy.attention.masks import causal_mask
from anatomy.attention.multihead import cached_self_attention, init_mha, multi_head_attention
from anatomy.attention.positions import encoding, hard_alibi_bias
from anatomy.errors import BadInputError
from anatomy.mixers.spec import MixerSpec

ATTENTION_FORMS = ("dense", "chunked")
POSITIONS = ("rope", "alibi", "none", "hard_alibi")  # the encodings that act inside attention
HARD_ALIBI = "hard_alibi"  # the mixer's own: windowed heads beside NoPE heads (module docstring)


def check_positions(positions, rope_base=10000.0, rope_scale=1.0):
    """The positions.Encoding of ``positions`` (RoPE's base and scale with it)."""
    if positions not in POSITIONS:
        choices = ", ".join(map(repr, POSITIONS))
        raise BadInputError(
            f"attention mixer: positions must be one of {choices}; got {positions!r}"
        )
    return encoding("none" if positions == HARD_ALIBI else positions, rope_base, rope_scale)


def hard_heads(n_heads):
    """How many heads 'hard_alibi' windows: n_heads // 2 (BadInputError below 2 heads)."""
    if int(n_heads) < 2:
        raise BadInputError(f"attention mixer: 'hard_alibi' needs >= 2 heads, got {n_heads}")
    return int(n_heads) // 2


def init_attention(key, d_model, n_heads=4):
    """init_mha's {'w_q', 'w_k', 'w_v': [m, h, d], 'w_o': [h, d, m], biases}."""
    if d_model % n_heads:
        raise BadInputError(
            f"attention mixer: d_model={d_model} not divisible by n_heads={n_heads}"
        )
    return init_mha(key, d_model, n_heads)


def attention(params, x, *, positions="rope", form="dense", rope_base=10000.0, rope_scale=1.0):
    """Causal self-attention over x [b, t, m] -> [b, t, m]."""
    enc = check_positions(positions, rope_base, rope_scale)
    t, n_heads = x.shape[1], params["w_q"].shape[1]
    pos = jnp.arange(t)
    rotary, bias = enc.attention(n_heads, pos, pos)
    if positions == HARD_ALIBI:
        bias = hard_alibi_bias(n_heads, hard_heads(n_heads), pos, pos, x.dtype)
    return multi_head_attention(
        params, x, x, causal_mask(t, t), rotary=rotary, bias=bias, impl=form
    )


def attention_zero_state(params, batch, max_len, dtype=jnp.float32):
    """An empty KVCache of capacity max_len."""
    if max_len is None or int(max_len) < 1:
        raise BadInputError(
            f"attention mixer: its state needs a capacity max_len >= 1, got {max_len}"
        )
    _, n_heads, d_head = params["w_k"].shape
    return kv_cache.init_cache(batch, int(max_len), n_heads, d_head, dtype)


def attention_step(params, cache, x_t, *, positions="rope", rope_base=10000.0, rope_scale=1.0):
    """One position x_t [b, m] through the KV cache -> (out [b, m], cache)."""
    enc = check_positions(positions, rope_base, rope_scale)
    pos = jnp.broadcast_to(cache.length, (x_t.shape[0],))
    n_heads = params["w_q"].shape[1]
    rotary, bias = enc.step_attention(n_heads, pos, cache.k.shape[1])
    if positions == HARD_ALIBI:
        slots = jnp.arange(cache.k.shape[1])
        bias = hard_alibi_bias(n_heads, hard_heads(n_heads), pos[:, None], slots, x_t.dtype)
    out, _, cache = cached_self_attention(params, x_t[:, None], cache, rotary=rotary, bias=bias)
    return out[:, 0], cache


# ------------------------------------------------------------------------- the registration


def _positions(c):
    return dict(positions=c.positions, rope_base=c.rope_base, rope_scale=c.rope_scale)


def _apply(p, x, s, c, form, lengths):
    return attention(p, x, form=form, **_positions(c)), None


SPEC = MixerSpec(
    name="attention",
    init=lambda key, m, c: init_attention(key, m, c.n_heads),
    apply=_apply,
    step=lambda p, s, x, c: attention_step(p, s, x, **_positions(c)),
    zero_state=lambda p, batch, max_len, c, dtype: attention_zero_state(p, batch, max_len, dtype),
    knobs=("n_heads", "positions", "rope_base", "rope_scale"),
    forms=ATTENTION_FORMS,
    stateful_apply=False,
)
