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
included), and its carry stays at the last real step, as ``run``.

Parameters: {'layers': [cell params per layer], 'ln': [{'scale': [H], 'bias': [H]} per
layer]} ('ln' only with layer_norm); the cells and init_layer_norm declare their axes.
"""

import jax
import jax.numpy as jnp

from anatomy.errors import BadInputError
from anatomy.layers import dropout, init_layer_norm, layer_norm
from anatomy.recurrence.registry import get_cell
from anatomy.recurrence.scan import run

STACK_CELLS = ("lstm", "gru")


def check_stack_cell(cell, field="cell"):
    """``cell`` if it is one of STACK_CELLS, else BadInputError naming ``field`` and the choices."""
    if not isinstance(cell, str) or cell not in STACK_CELLS:
        choices = ", ".join(repr(c) for c in STACK_CELLS)
        raise BadInputError(f"{field} must be one of {choices} for a recurrent stack; got {cell!r}")
    return cell


def init_stack(key, cell, d_in, d_hidden, n_layers, residual=False, layer_norm=False):
    """Parameters of an n_layers stack of ``cell`` ('lstm' | 'gru'): layer 1 [d_in -> H], the
    others [H -> H], each from the cell's own init (torch's U(-1/√H, 1/√H)).

    residual creates no parameters (checked here, pass the same flag to ``run_stack``);
    layer_norm adds 'ln', one LayerNorm (scale 1, bias 0) per layer.
    """
    check_stack_cell(cell)
    if not isinstance(n_layers, int) or n_layers < 1:
        raise BadInputError(f"n_layers must be a positive integer, got {n_layers!r}")
    if not isinstance(residual, bool) or not isinstance(layer_norm, bool):
        raise BadInputError(
            f"residual and layer_norm must be booleans, got {residual!r}, {layer_norm!r}"
        )
    init = get_cell(cell).init
    keys = jax.random.split(key, n_layers)
    params = {
        "layers": [init(keys[i], d_in if i == 0 else d_hidden, d_hidden) for i in range(n_layers)]
    }
    if layer_norm:
        params["ln"] = [init_layer_norm(d_hidden) for _ in range(n_layers)]
    return params


def run_stack(
    params,
    x,
    lengths=None,
    *,
    cell,
    residual=False,
    carry0=None,
    dropout_rate=0.0,
    rng=None,
    hoist=True,
    vjp="autodiff",
    return_intermediates=False,
):
    """Run the stack over x [b, t, d_in] (see the module docstring for the equations).

    Args:
      params: from ``init_stack``; layer_norm is on iff it holds 'ln'.
      x: [b, t, d_in]. lengths: [b] int or None (as ``run``).
      cell: 'lstm' | 'gru', the cell init_stack was given. residual: as in the module doc.
      carry0: None (zeros), or a list with one initial carry per layer.
      dropout_rate, rng: dropout between layers (not after the last); rng=None = evaluation.
      hoist, vjp: ``run``'s paths, the same for every layer.
      return_intermediates: also return every layer's outputs y_l, a list of [b, t, H].
    Returns:
      (carries, ys): carries = [final carry of layer 1, ..., of layer L] (LSTMState for the
      LSTM, h [b, H] for the GRU; torch's h_n / c_n stacked over layers), ys = y_L [b, t, H];
      with return_intermediates, (carries, ys, [y_1, ..., y_L]).
    """
    check_stack_cell(cell)
    layers, norms = params["layers"], params.get("ln")
    n_layers = len(layers)
    if norms is not None and len(norms) != n_layers:
        raise BadInputError(f"stack params: {n_layers} layers but {len(norms)} LayerNorms")
    if carry0 is not None and len(carry0) != n_layers:
        raise BadInputError(f"run_stack: carry0 needs one carry per layer ({n_layers})")
    x = jnp.asarray(x)
    lengths = None if lengths is None else jnp.asarray(lengths)
    valid = None
    if lengths is not None:
        valid = (jnp.arange(x.shape[1])[None, :] < lengths[:, None])[..., None]  # [b, t, 1]
    rngs = [None] * n_layers if rng is None else list(jax.random.split(rng, n_layers))

    carries, outputs, y = [], [], x
    for i, p in enumerate(layers):
        c0 = None if carry0 is None else carry0[i]
        final, h = run(cell, p, y, lengths=lengths, carry0=c0, hoist=hoist, vjp=vjp)  # [b, t, H]
        if norms is not None:
            h = layer_norm(norms[i], h)  # [b, t, H]
            if valid is not None:
                h = jnp.where(valid, h, jnp.zeros_like(h))  # LN(0) = bias: back to zero
        if i < n_layers - 1:  # torch's inter-layer dropout; on the branch, not the residual
            h = dropout(h, dropout_rate, rngs[i], deterministic=rngs[i] is None)
        if residual and i > 0:
            h = h + y  # widths match from layer 2 on: [b, t, H]
        carries.append(final)
        outputs.append(h)
        y = h
    if return_intermediates:
        return carries, y, outputs
    return carries, y
