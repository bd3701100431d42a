"""The one residual stack: a mixer per layer, wired by norm, residual, FFN and dropout options.

Letters: b batch, t positions, m stream width (the mixers' d_model; 2·d_model both ways), f FFN
width, L layers. Layer l = 1..L is a block of one or two sub-layers, each G wired by ``norm``
(x the sub-layer's input [b, t, m], D dropout, r = 1 with the residual, else 0):

    'pre'       x <- r·x + D(G(LN(x)))        pre-LN (Xiong et al. 2020; the caller adds the
                                              final LN a pre-LN stack ends with)
    'post'      x <- LN(r·x + D(G(x)))        post-LN (Vaswani et al. 2017)
    'deepnorm'  x <- LN(α·x + D(G(x)))        DeepNet (Wang et al. 2022), decoder-only
                                              constants for L layers: α = (2L)^(1/4), and
                                              β = (8L)^(-1/4) on the attention's value and
                                              output and the FFN's initial weights
    'output'    x <- r·x + D(LN(G(x)))        LN on the mixer's output before the residual
                                              sum (the deep LSTM / GRU stacks; not RNMT+'s
                                              per-gate LN); zero again past the lengths
    'none'      x <- r·x + D(G(x))

    block:  x <- Sub(x, Mixer_l)   then, with d_ff > 0,   x <- Sub(x, FFN)     [b, t, m]
            FFN(z) = ReLU(z W1 + b1) W2 + b2, W1 [m, f]

residual: 'all' (around every sub-layer), 'from2' (GNMT's, Wu et al. 2016: from layer 2 on,
where input and output widths always match), 'none'. dropout (active with a rate > 0 and
an rng; layer l's key is split(rng, L)[l]): 'between' (torch's nn.LSTM dropout: on the
mixer's branch of every layer but the last, the layer's key itself), 'branches' (on each
sub-layer's branch, the key split in two: mixer, FFN), 'transformer' (torch's
TransformerEncoderLayer: split in three, the mixer's branch, after the FFN's ReLU, the FFN's
branch).

keys, how block l's key k_l = split(key, L)[l] reaches its parameters: 'layer' (the mixer's
registered init takes k_l itself; no FFN, no conv: the deep LSTM / GRU stacks), 'split'
((k_mix, k_ffn) = split(k_l), the mixer's registered init takes k_mix: the decoder-only
Transformer), 'block' ((k_mix, k_ffn) = split(k_l), then Mixer.init(k_mix) splits again for
its short conv: the mixer stacks). A family's presets (anatomy.lm) pick the keys its
parameters were always drawn with, so each family's numbers are those of before.

bidirectional (an encoder that reads the whole source; cell mixers only, 'layer' keys): each
layer runs its cell forwards and backwards within the lengths (recurrence.bidirectional,
torch's nn.LSTM(bidirectional=True, num_layers=L)); layer 1 reads d_in, the others 2·d_model,
the stream is [→h ; ←h], 2·d_model wide, each direction from split(k_l). d_in: layer 1's
input width (a cell's; 0 = d_model). reverse: every layer reads each sequence backwards
within its length (the outputs stay aligned with x).

Parameters: {'blocks': [per layer {'mixer': the Mixer's ({'fw', 'bw'} both ways), 'ln1' /
'out_ln1' (the mixer's sub-layer LN: 'out_' with norm='output'), 'ffn', 'ln2' / 'out_ln2'
(with d_ff)}]}.

Incremental use: ``stack_step`` runs one position through every layer with each mixer's step
form over the per-layer states of ``init_stack_state`` (a KV cache of capacity max_len for
an attention mixer, a carry for a recurrence); fed a sequence it gives ``apply_stack``'s rows.
``apply_stack`` takes per-layer states to start from and returns the final ones on request
(stopped at each row's length), so a stack can hand its state on (an encoder to its decoder).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from anatomy.attention.layers import deepnorm_constants
from anatomy.attention.multihead import MHA_AXES
from anatomy.axes import declare
from anatomy.errors import BadInputError
from anatomy.layers import FFN_AXES, dropout, ffn, init_ffn, init_layer_norm, layer_norm
from anatomy.mixers import Mixer, build_mixer, get_mixer
from anatomy.scan import bidirectional as run_both_ways
from anatomy.scan import reverse_padded

NORMS = ("pre", "post", "deepnorm", "output", "none")
RESIDUALS = ("all", "from2", "none")
DROPOUTS = ("between", "branches", "transformer")
KEYS = ("layer", "split", "block")
LETTERS = ("R", "A")  # a pattern's letters: the recurrent mixer, softmax attention
STACK_CELLS = ("lstm", "gru")  # the cells of the deep recurrent stacks (a preset's choice)


def parse_pattern(pattern, n_layers):
    """A hybrid's pattern as a tuple of n_layers letters ('' = all 'R'), else BadInputError:
    'RRAR' is Griffin's recipe in miniature (a few attention layers among recurrent ones)."""
    if not pattern:
        return ("R",) * n_layers
    if len(pattern) != n_layers or set(pattern) - set(LETTERS):
        raise BadInputError(
            f"pattern must be {n_layers} letters of {'/'.join(LETTERS)} (one per layer: R a "
            f"recurrent mixer, A attention), or '' for all R; got {pattern!r}"
        )
    return tuple(pattern)


def check_stack_cell(cell, field="cell"):
    """``cell`` if it is one of STACK_CELLS, else BadInputError naming ``field`` and the choices."""
    if not isinstance(cell, str) or cell not in STACK_CELLS:
        choices = ", ".join(repr(c) for c in STACK_CELLS)
        raise BadInputError(f"{field} must be one of {choices} for a recurrent stack; got {cell!r}")
    return cell


class Stack(NamedTuple):
    """The stack's static options (module docstring); build one with ``make_stack``."""

    mixers: tuple
    norm: str = "pre"
    residual: str = "all"
    d_ff: int = 0
    dropout: str = "branches"
    dropout_rate: float = 0.0
    keys: str = "block"
    bidirectional: bool = False
    d_in: int = 0


def _one_of(value, choices, field):
    if not isinstance(value, str) or value not in choices:
        raise BadInputError(
            f"stack: {field} must be one of {', '.join(map(repr, choices))}; got {value!r}"
        )
    return value


def make_stack(mixers, **options):
    """A checked Stack over ``mixers`` (built Mixers, one per layer) and the module
    docstring's options; a bad one is a BadInputError naming it."""
    mixers = tuple(mixers)
    if not mixers or not all(isinstance(m, Mixer) for m in mixers):
        raise BadInputError(f"stack: mixers must be >= 1 built Mixer, got {mixers!r}")
    s = Stack(mixers, **options)
    _one_of(s.norm, NORMS, "norm")
    _one_of(s.residual, RESIDUALS, "residual")
    _one_of(s.dropout, DROPOUTS, "dropout")
    _one_of(s.keys, KEYS, "keys")
    if s.norm == "deepnorm" and s.residual != "all":
        raise BadInputError("stack: norm='deepnorm' scales the residual: it needs residual='all'")
    for name in ("d_ff", "d_in"):
        v = getattr(s, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise BadInputError(f"stack: {name} must be an int >= 0, got {v!r}")
    if not isinstance(s.bidirectional, bool):
        raise BadInputError(f"stack: bidirectional must be a boolean, got {s.bidirectional!r}")
    if len({m.config.d_model for m in mixers}) != 1:
        raise BadInputError("stack: every mixer must have the same d_model")
    if s.keys == "layer" and s.d_ff:
        raise BadInputError("stack: keys='layer' draws no FFN key; use 'split' or 'block'")
    if s.bidirectional and (s.keys != "layer" or any(_cell(m) is None for m in mixers)):
        raise BadInputError("stack: a bidirectional stack takes cell mixers and keys='layer'")
    return s


def recurrent_stack(
    cell, d_hidden, n_layers, *, d_in=0, residual=False, layer_norm=False, bidirectional=False,
    dropout_rate=0.0, hoist=None, vjp=None,
):  # fmt: skip
    """The deep LSTM / GRU stack (torch's multi-layer nn.LSTM / nn.GRU, L·N serial steps):
    n_layers ``cell`` mixers of hidden size d_hidden (layer 1 reading d_in), GNMT's residual
    ('from2') with residual, LN on each layer's output ('output') with layer_norm, dropout
    'between' layers, keys 'layer' (layer l's cell from split(key, L)[l], both ways from
    split of it); hoist / vjp: the cells' path (None: the backend's default)."""
    check_stack_cell(cell)
    if not isinstance(n_layers, int) or isinstance(n_layers, bool) or n_layers < 1:
        raise BadInputError(f"n_layers must be a positive integer, got {n_layers!r}")
    if not isinstance(residual, bool) or not isinstance(layer_norm, bool):
        raise BadInputError(
            f"residual and layer_norm must be booleans, got {residual!r}, {layer_norm!r}"
        )
    mixer = build_mixer(cell, d_hidden, hoist=hoist, vjp=vjp)
    return make_stack(
        (mixer,) * n_layers, norm="output" if layer_norm else "none",
        residual="from2" if residual else "none", dropout="between", dropout_rate=dropout_rate,
        keys="layer", bidirectional=bidirectional, d_in=d_in,
    )  # fmt: skip


def pre_ln_stack(mixers, d_ff=0, dropout_rate=0.0):
    """Pre-LN residual blocks over ``mixers`` (a hybrid by pattern: 'RRAR'), each with an MLP
    of width d_ff (0 = none), dropout on both 'branches', keys 'block'; the caller adds the
    final LN."""
    return make_stack(
        mixers, norm="pre", d_ff=d_ff, dropout="branches", dropout_rate=dropout_rate, keys="block"
    )


def _cell(mixer):
    return get_mixer(mixer.name).cell


def _width(stack):
    d = stack.mixers[0].config.d_model
    return 2 * d if stack.bidirectional else d


def _init_mixer(key, mixer, d_in, keys, beta):
    """One mixer's parameters from its key (the module docstring's ``keys``)."""
    if keys == "block":
        if d_in != mixer.config.d_model:
            raise BadInputError(f"stack: keys='block' builds mixers at d_model, not d_in={d_in}")
        return mixer.init(key)
    spec, m = get_mixer(mixer.name), mixer.config.d_model
    if mixer.config.conv:
        raise BadInputError(f"stack: keys={keys!r} draws no key for mixer {mixer.name!r}'s conv")
    if d_in == m:
        mix = spec.init(key, m, mixer.config)
    elif spec.cell is not None:
        mix = spec.cell.init(key, d_in, m)
    else:
        raise BadInputError(f"stack: mixer {mixer.name!r} reads d_model={m}, not d_in={d_in}")
    if beta != 1.0:  # DeepNet's β on the attention's value and output projections
        if mixer.name != "attention":
            raise BadInputError(f"stack: norm='deepnorm' scales attention, not {mixer.name!r}")
        mix["w_v"], mix["w_o"] = mix["w_v"] * beta, mix["w_o"] * beta
        mix = declare(mix, MHA_AXES)
    return {"mix": mix}


def _ln_names(norm):
    if norm == "none":
        return None, None
    return ("out_ln1", "out_ln2") if norm == "output" else ("ln1", "ln2")


def _beta_alpha(stack):
    if stack.norm != "deepnorm":
        return 1.0, 1.0
    alpha, beta = deepnorm_constants(0, len(stack.mixers))["decoder"]
    return beta, alpha


def init_stack_block(key, stack, layer=0):
    """Block ``layer``'s parameters (module docstring) drawn from ``key`` itself: init_stack
    gives block l its k_l = split(key, L)[l]; a model that draws its blocks from keys of its
    own builds {'blocks': [init_stack_block(k, stack, l) ...]}."""
    w, mixer = _width(stack), stack.mixers[layer]
    beta, _ = _beta_alpha(stack)
    ln1, ln2 = _ln_names(stack.norm)
    d_in = (stack.d_in or mixer.config.d_model) if layer == 0 else w
    k_mix, k_ffn = (key, None) if stack.keys == "layer" else jax.random.split(key)
    if stack.bidirectional:
        k_fw, k_bw = jax.random.split(k_mix)
        block = {d: _init_mixer(kd, mixer, d_in, "layer", 1.0)
                 for d, kd in (("fw", k_fw), ("bw", k_bw))}  # fmt: skip
    else:
        block = {"mixer": _init_mixer(k_mix, mixer, d_in, stack.keys, beta)}
    if ln1:
        block[ln1] = init_layer_norm(w)
    if stack.d_ff:
        p = init_ffn(k_ffn, w, stack.d_ff)
        if beta != 1.0:
            p["w1"], p["w2"] = p["w1"] * beta, p["w2"] * beta
            p = declare(p, FFN_AXES)
        block["ffn"] = p
        if ln2:
            block[ln2] = init_layer_norm(w)
    return block


def init_stack(key, stack):
    """{'blocks': [...]} (module docstring), block l from jax.random.split(key, L)[l]."""
    keys = jax.random.split(key, len(stack.mixers))
    return {"blocks": [init_stack_block(k, stack, i) for i, k in enumerate(keys)]}


def _sublayer(stack, x, fn, ln, *, residual, alpha, rng, valid=None):
    """The module docstring's wiring around fn: x -> (new x, fn's auxiliary output)."""
    norm, rate = stack.norm, stack.dropout_rate
    drop = lambda y: dropout(y, rate, rng, deterministic=rng is None)
    if norm == "pre":
        y, aux = fn(layer_norm(ln, x))
        y = drop(y)
        return (x + y if residual else y), aux
    y, aux = fn(x)
    if norm == "output":
        y = layer_norm(ln, y)
        if valid is not None:
            y = jnp.where(valid, y, jnp.zeros_like(y))  # LN(0) = bias: back to zero
        y = drop(y)
        return (x + y if residual else y), aux
    y = drop(y)
    if residual:
        y = alpha * x + y if norm == "deepnorm" else x + y
    return (y if norm == "none" else layer_norm(ln, y)), aux


def _dropout_keys(stack, rng, i):
    """(mixer branch, inside the FFN, FFN branch) keys of layer i from its key."""
    if rng is None:
        return None, None, None
    if stack.dropout == "between":
        return (rng if i < len(stack.mixers) - 1 else None), None, None
    if stack.dropout == "branches":
        r1, r2 = jax.random.split(rng)
        return r1, None, r2
    r1, r_ffn, r2 = jax.random.split(rng, 3)
    return r1, r_ffn, r2


def _check(params, stack, what, x=None, *, one_step=False):
    if not isinstance(params, dict) or len(params.get("blocks", ())) != len(stack.mixers):
        raise BadInputError(
            f"{what}: params must be {{'blocks': [...]}} with one block per mixer "
            f"({len(stack.mixers)})"
        )
    if x is None:
        return
    name, want = ("x_t", "[b, d_in]") if one_step else ("x", "[b, t, d_in]")
    if x.ndim != (2 if one_step else 3):
        raise BadInputError(f"{what}: {name} must be {want}, got shape {x.shape}")
    d_in = stack.d_in or stack.mixers[0].config.d_model
    if x.shape[-1] != d_in:
        raise BadInputError(f"{what}: {name} has width {x.shape[-1]}, the stack reads {d_in}")


def _residual(stack, i):
    return stack.residual == "all" or (stack.residual == "from2" and i > 0)


def apply_stack(
    params, stack, x, *, lengths=None, states=None, return_states=False, rng=None,
    reverse=False, return_layers=False,
):  # fmt: skip
    """The stack over x [b, t, d_in] -> y [b, t, m] (the module docstring's equations).

    lengths [b]: each layer's state stops at a row's last real token (with norm='output' the
    outputs are zero past it). states: one per layer to continue from (None: zeros).
    return_states: also every layer's final state (a bidirectional layer's: (forward,
    backward) carries). rng: dropout's key (None: none). reverse: read each row backwards
    within its length. return_layers: also every block's output, a list of L [b, t, m].
    Returns y, (y, layers), (y, states) or (y, layers, states).
    """
    x = jnp.asarray(x)
    _check(params, stack, "stack", x)
    n = len(stack.mixers)
    lengths = None if lengths is None else jnp.asarray(lengths)
    if stack.bidirectional and (states is not None or reverse):
        raise BadInputError("stack: a bidirectional stack takes no states and no reverse")
    states = [None] * n if states is None else list(states)
    if len(states) != n:
        raise BadInputError(f"stack: {len(states)} states for {n} layers")
    stateful = lengths is not None or return_states or any(s is not None for s in states)
    if reverse:
        x = reverse_padded(x, lengths)
    valid = None
    if lengths is not None and stack.norm == "output":
        valid = (jnp.arange(x.shape[1])[None, :] < lengths[:, None])[..., None]  # [b, t, 1]
    rngs = [None] * n if rng is None else list(jax.random.split(rng, n))
    _, alpha = _beta_alpha(stack)
    ln1, ln2 = _ln_names(stack.norm)
    outs, finals = [], []
    for i, (block, mixer, s, r) in enumerate(zip(params["blocks"], stack.mixers, states, rngs)):
        r_mix, r_inner, r_ffn = _dropout_keys(stack, r, i)
        kw = dict(residual=_residual(stack, i), alpha=alpha)

        def mix(z, block=block, mixer=mixer, s=s):
            if stack.bidirectional:
                c = mixer.config
                y, final = run_both_ways(
                    _cell(mixer), block["fw"]["mix"], block["bw"]["mix"], z, lengths=lengths,
                    hoist=c.hoist, vjp=c.vjp,
                )  # fmt: skip
                return y, final
            if stateful:
                return mixer.apply(block["mixer"], z, s, lengths=lengths, return_state=True)
            return mixer.apply(block["mixer"], z), None

        x, final = _sublayer(stack, x, mix, block.get(ln1), rng=r_mix, valid=valid, **kw)
        if "ffn" in block:
            fn = lambda z, p=block["ffn"], r=r_inner: (
                ffn(p, z, dropout_rate=stack.dropout_rate, rng=r),
                None,
            )
            x, _ = _sublayer(stack, x, fn, block.get(ln2), rng=r_ffn, **kw)
        outs.append(x)
        finals.append(final)
    if reverse:
        outs = [reverse_padded(o, lengths) for o in outs]
        x = outs[-1]
    head = (x, outs) if return_layers else (x,)
    if return_states:
        return (*head, finals)
    return head if return_layers else x


def _one_direction(stack, what):
    if stack.bidirectional:
        raise BadInputError(
            f"{what}: a bidirectional stack reads the whole sequence; it has no one-step form"
        )


def init_stack_state(params, stack, batch, max_len=None, dtype=jnp.float32):
    """The decoding state: one per layer, each its Mixer's init_state (a KV cache of capacity
    max_len for attention, the zero carry of a recurrence)."""
    _check(params, stack, "init_stack_state")
    _one_direction(stack, "init_stack_state")
    return [
        m.init_state(b["mixer"], batch, max_len, dtype)
        for b, m in zip(params["blocks"], stack.mixers)
    ]


def stack_step(params, stack, states, x_t):
    """One position (no dropout): x_t [b, d_in] and the per-layer states -> (y_t [b, m], new
    states); fed x[:, 0], x[:, 1], ... from init_stack_state it gives apply_stack's rows."""
    x_t = jnp.asarray(x_t)
    _check(params, stack, "stack_step", x_t, one_step=True)
    _one_direction(stack, "stack_step")
    if len(states) != len(stack.mixers):
        raise BadInputError(f"stack_step: {len(states)} states for {len(stack.mixers)} layers")
    _, alpha = _beta_alpha(stack)
    ln1, ln2 = _ln_names(stack.norm)
    new = []
    for i, (block, mixer, state) in enumerate(zip(params["blocks"], stack.mixers, states)):
        kw = dict(residual=_residual(stack, i), alpha=alpha, rng=None)
        step = lambda z, block=block, mixer=mixer, state=state: mixer.step(block["mixer"], state, z)
        x_t, state = _sublayer(stack, x_t, step, block.get(ln1), **kw)
        if "ffn" in block:  # the FFN reads [b, t, m]: one position
            fn = lambda z, p=block["ffn"]: (ffn(p, z[:, None])[:, 0], None)
            x_t, _ = _sublayer(stack, x_t, fn, block.get(ln2), **kw)
        new.append(state)
    return x_t, new
