"""parallelism's recurrent layer: one LSTM (anatomy.mixers.cells), hidden cfg.d, over x [B, N, d].

    c_t, h_t = LSTM(c_{t-1}, h_{t-1}, x_t)      t = 1..N, one step after another (jax.lax.scan)

Its compiled gradient loops N times forward and N times backward; XLA's cost analysis counts a
loop body once, so its FLOPs are 3 × the loop-corrected forward count (probes.scan_cost).
"""

import jax.numpy as jnp

from anatomy import probes
from anatomy.mixers import get_cell
from anatomy.mixers.cells import LSTMState, init_lstm
from anatomy.scan import run as run_cell


def init(key, cfg):
    return init_lstm(key, cfg.d, cfg.d)


def loss(params, x):
    return jnp.sum(run_cell(get_cell("lstm"), params, x)[1] ** 2)


def flops(exe, params, x):
    """FLOPs of one forward+backward pass: 3 × the loop-corrected forward cost."""
    b, d = x.shape[0], params["w_h"].shape[0]
    carry = LSTMState(jnp.zeros((b, d)), jnp.zeros((b, d)))
    fwd = probes.scan_cost(
        lambda p, x: run_cell(get_cell("lstm"), p, x)[1],
        (params, x),
        get_cell("lstm").recur,
        (params, carry, jnp.ones((b, 4 * d))),
    )
    return 3.0 * fwd["flops"]


LAYERS = {"lstm": (loss, init, flops)}
