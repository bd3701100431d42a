"""A stack of mixer blocks, recurrent and attention mixed by a pattern string.

Letters: b batch, t positions, m model width, f MLP width, L layers.

    x_l = x_{l-1} + Mixer_l(LN(x_{l-1}))        [b, t, m]   pre-LN residual blocks
    x_l = x_l + FFN(LN(x_l))                    (when d_ff > 0: the MLP after each mixer)

pattern: one letter per layer, 'R' (the recurrent mixer) or 'A' (softmax attention); ''
means every layer 'R'. 'RRAR' is Griffin's recipe in miniature (a few attention layers among
recurrent ones). The stack takes the built Mixers, one per layer, as a tuple (hashable, so it
can be a static argument), so the pattern is resolved once, by the caller (anatomy.lm).

mixer_stack_step runs the stack one position at a time over the per-layer states of
mixer_stack_state; fed a sequence it gives mixer_stack's rows. mixer_stack takes per-layer
states to start from and returns the final ones on request (stopped at each row's length),
so a recurrent stack can hand its state on (an encoder to its decoder).
"""

import jax

from anatomy.errors import BadInputError
from anatomy.layers import dropout, ffn, init_ffn, init_layer_norm, layer_norm

LETTERS = ("R", "A")  # recurrent mixer, softmax attention


def parse_pattern(pattern, n_layers):
    """The pattern as a tuple of n_layers letters ('' = all 'R'), else BadInputError."""
    if not pattern:
        return ("R",) * n_layers
    if len(pattern) != n_layers or set(pattern) - set(LETTERS):
        raise BadInputError(
            f"pattern must be {n_layers} letters of {'/'.join(LETTERS)} (one per layer: R a "
            f"recurrent mixer, A attention), or '' for all R; got {pattern!r}"
        )
    return tuple(pattern)


def init_mixer_stack(key, mixers, d_model, d_ff=0):
    """{'blocks': [{'ln1', 'mixer', ('ln2', 'ffn' when d_ff)} per layer]}; block l from
    jax.random.split(key, L)[l]."""
    blocks = []
    for k, mixer in zip(jax.random.split(key, len(mixers)), mixers):
        k_mix, k_ffn = jax.random.split(k)
        block = {"ln1": init_layer_norm(d_model), "mixer": mixer.init(k_mix)}
        if d_ff:
            block.update(ln2=init_layer_norm(d_model), ffn=init_ffn(k_ffn, d_model, d_ff))
        blocks.append(block)
    return {"blocks": blocks}


def _check(params, mixers):
    if len(params["blocks"]) != len(mixers):
        raise BadInputError(
            f"mixer stack: {len(params['blocks'])} blocks of parameters for {len(mixers)} mixers"
        )


def mixer_stack(
    params, mixers, x, *, states=None, lengths=None, return_states=False, dropout_rate=0.0,
    rng=None, return_layers=False,
):  # fmt: skip
    """x [b, t, m] -> [b, t, m] (and every block's output with return_layers). Dropout on each
    residual branch when rng is given and dropout_rate > 0.

    states: one state per layer to continue from (None: every layer from zero); lengths [b]:
    each layer's state stops at a row's last real token; return_states: also every layer's
    final state (then (x, states), or (x, outs, states) with return_layers). A recurrent
    encoder hands its final states to a decoder this way; an 'A' (attention) layer has no
    such state and refuses them (Mixer.apply)."""
    _check(params, mixers)
    n = len(mixers)
    rngs = [None] * n if rng is None else list(jax.random.split(rng, n))
    stateful = states is not None or lengths is not None or return_states
    states = [None] * n if states is None else list(states)
    if len(states) != n:
        raise BadInputError(f"mixer stack: {len(states)} states for {n} layers")
    outs, finals = [], []
    for block, mixer, r, s in zip(params["blocks"], mixers, rngs, states):
        r1, r2 = (None, None) if r is None else jax.random.split(r)
        h = layer_norm(block["ln1"], x)
        if stateful:
            y, s = mixer.apply(block["mixer"], h, s, lengths=lengths, return_state=True)
            finals.append(s)
        else:
            y = mixer.apply(block["mixer"], h)
        x = x + dropout(y, dropout_rate, r1, r1 is None)
        if "ffn" in block:
            y = ffn(block["ffn"], layer_norm(block["ln2"], x))
            x = x + dropout(y, dropout_rate, r2, r2 is None)
        outs.append(x)
    head = (x, outs) if return_layers else (x,)
    if return_states:
        return (*head, finals)
    return head if return_layers else x


def mixer_stack_state(params, mixers, batch, max_len=None):
    """The decoding state: one per layer (a KV cache of capacity max_len for 'A' layers)."""
    _check(params, mixers)
    return [m.init_state(b["mixer"], batch, max_len) for b, m in zip(params["blocks"], mixers)]


def mixer_stack_step(params, mixers, states, x_t):
    """One position: x_t [b, m] and the per-layer states -> (out [b, m], new states)."""
    _check(params, mixers)
    new = []
    for block, mixer, state in zip(params["blocks"], mixers, states):
        y, state = mixer.step(block["mixer"], state, layer_norm(block["ln1"], x_t))
        x_t = x_t + y
        if "ffn" in block:
            x_t = x_t + ffn(block["ffn"], layer_norm(block["ln2"], x_t)[:, None])[:, 0]
        new.append(state)
    return x_t, new
