"""The recurrent contender: an LSTM stack (the structure read for 8 devices) and one LSTM layer
(the `parallelism` experiment's, timed here against the cost model).

Both are pure (init, loss) pairs over continuous inputs, so the programs hold only the
recurrence (no embedding, no softmax):
    stack  L LSTM layers of width d (anatomy.stack), loss = mean((y_L − target)²);
           per layer 4·(d + d)·d + 4d parameters: 8d² + 4d
    layer  one LSTM layer of width d, loss = Σ h_t² (parallelism's)
Under tensor parallelism anatomy's rules split each gate matmul's 4H output columns over
'model' (logical axis 'hidden'), so every time step needs the other devices' gates.
"""

import jax.numpy as jnp

from anatomy.mixers import get_cell
from anatomy.mixers.cells import init_lstm
from anatomy.scan import run as run_cell
from anatomy.stack import apply_stack, init_stack, recurrent_stack

NAME = "LSTM"


def stack(d: int, n_layers: int, vjp: str = "fused"):
    """(init(key) -> params, loss(params, batch) -> scalar) of an L-layer LSTM stack, batch =
    {'x': [b, n, d], 'y': [b, n, d]}. vjp: 'fused' (anatomy's custom VJP: the weight
    gradients as one matmul after the backward loop) or 'autodiff' (jax.lax.scan's transpose:
    a weight-gradient matmul inside every backward step)."""

    lstm = recurrent_stack("lstm", d, n_layers, hoist=True, vjp=vjp)

    def init(key):
        return init_stack(key, lstm)

    def loss(params, batch):
        ys = apply_stack(params, lstm, batch["x"])  # [b, n, d]
        return jnp.mean((ys - batch["y"]) ** 2)

    return init, loss


def layer(d: int, n_heads: int):
    """(init(key) -> params, loss(params, x) -> scalar): parallelism's LSTM layer (n_heads is
    unused: the same signature as attention.layer)."""
    del n_heads

    def init(key):
        return init_lstm(key, d, d)

    def loss(params, x):
        return jnp.sum(run_cell(get_cell("lstm"), params, x)[1] ** 2)

    return init, loss
