"""A deep recurrent stack: n_layers LSTM or GRU layers, each one ``run`` over the sequence.

Layer l reads the outputs of layer l - 1 (layer 1 reads x) and is scanned over all of time
before layer l + 1 starts, as torch's multi-layer nn.LSTM / nn.GRU (L·N serial steps):

    y_0 = x                                                    [b, t, d_in]
    h_l = Cell_l(y_{l-1})                                      [b, t, H]
    y_l = Dropout(LN_l(h_l)) + y_{l-1}                         [b, t, H]
          (LN_l only with layer_norm, Dropout only for l < L, + y_{l-1} only with residual
          and l >= 2; the plain stack is y_l = h_l)
    ys  = y_L

residual: GNMT's (Wu et al. 2016) connection around every layer from the second
on, where input and output widths always match (H); layer 1 has none even when d_in = H.
layer_norm: LayerNorm (learned scale and bias over H) on each layer's CELL OUTPUT h_l, before
the residual sum; the cell's equations are unchanged. This is not RNMT+'s per-gate
LayerNorm (Chen et al. 2018, applied to the gate pre-activations inside the cell). With both,
y_l = y_{l-1} + LN(Cell(y_{l-1})): the residual path itself is never normalised.
dropout (torch's nn.LSTM ``dropout``): on every layer's branch but the last's, after the
LayerNorm and before the residual sum, when dropout_rate > 0 and an rng is given.

With lengths, every layer's outputs are exactly zero past each sequence's length (LN's bias
included), and its carry stays at the last real step, as ``run``. reverse=True reads every
sequence backwards within its length (the outputs stay aligned with x, as ``run``'s).

Parameters: {'layers': [cell params per layer], 'ln': [{'scale': [H], 'bias': [H]} per
layer]} ('ln' only with layer_norm; a bidirectional stack has 'fw' and 'bw' in place of
'layers'); the cells and init_layer_norm declare their axes.

Incremental use (a language model decoding one token at a time): ``stack_step`` runs one
position through every layer with the cells' one-step form, from ``zero_stack_carry``; fed
a sequence step by step it equals ``run_stack`` (tests/test_recurrence_stack.py).

A bidirectional stack (``init_stack(..., bidirectional=True)``; ``run_stack`` reads it from
its params' 'fw' / 'bw'), for an encoder that reads the whole source: each layer is
``scan.bidirectional`` over the layer below, as torch's nn.LSTM(bidirectional=True,
num_layers=L) (layer 1 [d_in -> 2H], the others [2H -> 2H]), with the same residual (from
layer 2 on) and LayerNorm (over 2H) options:

    y_l = Dropout(LN_l([→h_l ; ←h_l])) + y_{l-1}              [b, t, 2H]
"""

import jax
import jax.numpy as jnp

from anatomy.errors import BadInputError
from anatomy.layers import dropout, init_layer_norm, layer_norm
from anatomy.mixers import get_cell
from anatomy.scan import bidirectional, reverse_padded, run

STACK_CELLS = ("lstm", "gru")


def check_stack_cell(cell, field="cell"):
    """``cell`` if it is one of STACK_CELLS, else BadInputError naming ``field`` and the choices."""
    if not isinstance(cell, str) or cell not in STACK_CELLS:
        choices = ", ".join(repr(c) for c in STACK_CELLS)
        raise BadInputError(f"{field} must be one of {choices} for a recurrent stack; got {cell!r}")
    return cell


def init_stack(
    key, cell, d_in, d_hidden, n_layers, residual=False, layer_norm=False, bidirectional=False
):
    """Parameters of an n_layers stack of ``cell`` ('lstm' | 'gru'), each layer from the
    cell's own init (torch's U(-1/√H, 1/√H)).

    One direction: {'layers': [...]}, layer 1 [d_in -> H], the others [H -> H], layer l from
    jax.random.split(key, n_layers)[l]. bidirectional: {'fw': [...], 'bw': [...]}, layer 1
    [d_in -> H] per direction, the others [2H -> H]; layer l's two directions from
    jax.random.split(jax.random.split(key, n_layers)[l]).
    residual creates no parameters (checked here, pass the same flag to ``run_stack``);
    layer_norm adds 'ln', one LayerNorm (scale 1, bias 0) per layer, over H (2H both ways).
    """
    check_stack_cell(cell)
    _check_flags(n_layers, residual, layer_norm)
    if not isinstance(bidirectional, bool):
        raise BadInputError(f"bidirectional must be a boolean, got {bidirectional!r}")
    init = get_cell(cell).init
    keys = jax.random.split(key, n_layers)
    if bidirectional:
        both = [jax.random.split(k) for k in keys]
        params = {
            d: [init(k[j], d_in if i == 0 else 2 * d_hidden, d_hidden) for i, k in enumerate(both)]
            for j, d in enumerate(("fw", "bw"))
        }
    else:
        params = {
            "layers": [init(k, d_in if i == 0 else d_hidden, d_hidden) for i, k in enumerate(keys)]
        }
    if layer_norm:
        width = 2 * d_hidden if bidirectional else d_hidden
        params["ln"] = [init_layer_norm(width) for _ in range(n_layers)]
    return params


def _check_flags(n_layers, residual, layer_norm):
    if not isinstance(n_layers, int) or isinstance(n_layers, bool) or n_layers < 1:
        raise BadInputError(f"n_layers must be a positive integer, got {n_layers!r}")
    if not isinstance(residual, bool) or not isinstance(layer_norm, bool):
        raise BadInputError(
            f"residual and layer_norm must be booleans, got {residual!r}, {layer_norm!r}"
        )


def _valid(x, lengths):
    """[b, t, 1] bool (True at real steps), or None without lengths."""
    if lengths is None:
        return None
    return (jnp.arange(x.shape[1])[None, :] < lengths[:, None])[..., None]


def _norm_drop_residual(h, y, i, n_layers, norms, valid, residual, dropout_rate, rng):
    """A layer's cell output h -> its output: LN (zero again past the lengths), dropout
    (not after the last layer), the residual y (layer 2 on)."""
    if norms is not None:
        h = layer_norm(norms[i], h)
        if valid is not None:
            h = jnp.where(valid, h, jnp.zeros_like(h))  # LN(0) = bias: back to zero
    if i < n_layers - 1:  # torch's inter-layer dropout; on the branch, not the residual
        h = dropout(h, dropout_rate, rng, deterministic=rng is None)
    if residual and i > 0:
        h = h + y  # widths match from layer 2 on
    return h


def run_stack(
    params,
    x,
    lengths=None,
    *,
    cell,
    residual=False,
    carry0=None,
    reverse=False,
    dropout_rate=0.0,
    rng=None,
    hoist=True,
    vjp="autodiff",
    return_intermediates=False,
):
    """Run the stack over x [b, t, d_in] (see the module docstring for the equations).

    Args:
      params: from ``init_stack``; layer_norm is on iff it holds 'ln', bidirectional iff it
        holds 'fw' and 'bw'.
      x: [b, t, d_in]. lengths: [b] int or None (as ``run``).
      cell: 'lstm' | 'gru', the cell init_stack was given. residual: as in the module doc.
      carry0: None (zeros), or a list with one initial carry per layer (one direction only).
      reverse: read each sequence backwards within its length (every layer; outputs stay
        aligned with x, the carries are those after reading position 0; one direction only).
      dropout_rate, rng: dropout between layers (not after the last); rng=None = evaluation.
      hoist, vjp: ``run``'s paths, the same for every layer.
      return_intermediates: also return every layer's outputs y_l, a list of [b, t, H].
    Returns:
      (carries, ys): carries = [final carry of layer 1, ..., of layer L] (LSTMState for the
      LSTM, h [b, H] for the GRU; torch's h_n / c_n stacked over layers), ys = y_L [b, t, H];
      with return_intermediates, (carries, ys, [y_1, ..., y_L]). Bidirectional: each carry
      is (forward, backward) (scan.bidirectional's: the forward carry after the last real
      step, the backward one after reading position 0) and every y_l is [b, t, 2H].
    """
    spec = get_cell(check_stack_cell(cell))
    both_ways = "fw" in params
    if both_ways and len(params["fw"]) != len(params["bw"]):
        raise BadInputError("bidirectional stack params: 'fw' and 'bw' differ in length")
    if both_ways and (carry0 is not None or reverse):
        raise BadInputError("run_stack: a bidirectional stack takes no carry0 and no reverse")
    layers = list(zip(params["fw"], params["bw"])) if both_ways else params["layers"]
    norms, n_layers = params.get("ln"), len(layers)
    if norms is not None and len(norms) != n_layers:
        raise BadInputError(f"stack params: {n_layers} layers but {len(norms)} LayerNorms")
    if carry0 is not None and len(carry0) != n_layers:
        raise BadInputError(f"run_stack: carry0 needs one carry per layer ({n_layers})")
    x = jnp.asarray(x)
    lengths = None if lengths is None else jnp.asarray(lengths)
    if reverse:
        x = reverse_padded(x, lengths)
    valid = _valid(x, lengths)
    rngs = [None] * n_layers if rng is None else list(jax.random.split(rng, n_layers))

    carries, outputs, y = [], [], x
    for i, p in enumerate(layers):
        if both_ways:  # h [b, t, 2H], final (forward carry, backward carry)
            h, final = bidirectional(spec, *p, y, lengths=lengths, hoist=hoist, vjp=vjp)
        else:  # h [b, t, H]
            c0 = None if carry0 is None else carry0[i]
            final, h = run(spec, p, y, lengths=lengths, carry0=c0, hoist=hoist, vjp=vjp)
        h = _norm_drop_residual(h, y, i, n_layers, norms, valid, residual, dropout_rate, rngs[i])
        carries.append(final)
        outputs.append(h)
        y = h
    if reverse:
        outputs = [reverse_padded(o, lengths) for o in outputs]
        y = outputs[-1]
    if return_intermediates:
        return carries, y, outputs
    return carries, y


def zero_stack_carry(params, batch, *, cell, dtype=jnp.float32):
    """One zero carry per layer (a list), the stack's carry before the first step."""
    check_stack_cell(cell)
    _one_direction(params, "zero_stack_carry")
    spec = get_cell(cell)
    return [spec.zero_carry(batch, p["w_h"].shape[0], dtype) for p in params["layers"]]


def _one_direction(params, what):
    if "fw" in params:
        raise BadInputError(
            f"{what}: a bidirectional stack reads the whole sequence; it has no one-step form"
        )


def stack_step(params, carries, x_t, *, cell, residual=False):
    """One position through every layer (no dropout): x_t [b, d_in] and one carry per layer
    -> (new carries, y_L [b, H]), the module docstring's equations with each cell's one-step
    form. Fed x[:, 0], x[:, 1], ... from zero_stack_carry it gives run_stack's ys row by row
    and, at the end, its final carries."""
    check_stack_cell(cell)
    _one_direction(params, "stack_step")
    spec = get_cell(cell)
    layers, norms = params["layers"], params.get("ln")
    if len(carries) != len(layers):
        raise BadInputError(f"stack_step: {len(carries)} carries for {len(layers)} layers")
    new, y = [], x_t
    for i, p in enumerate(layers):
        carry, h = spec.cell(p, carries[i], y)  # [b, H]
        h = _norm_drop_residual(h, y, i, len(layers), norms, None, residual, 0.0, None)
        new.append(carry)
        y = h
    return new, y
