"""decode_cost's recurrent decoder: one LSTM step (anatomy.mixers.cells.lstm_cell) from its state,
whatever the position N of the token: O(d²) per token."""

import jax
import jax.numpy as jnp

from anatomy import probes
from anatomy.mixers.cells import LSTMState, init_lstm, lstm_cell


def _carry(batch, d):
    return LSTMState(jnp.full((batch, d), 0.1), jnp.full((batch, d), 0.1))


def programs(cfg, x_t):
    """(fn, args) of the LSTM step for the next token x_t [b, 1, d]."""
    lstm = init_lstm(jax.random.PRNGKey(cfg.seed), cfg.d, cfg.d)
    return {
        "rnn": (lambda p, c, x: lstm_cell(p, c, x), (lstm, _carry(cfg.batch, cfg.d), x_t[:, 0]))
    }


def step_flops(cfg, d):
    """XLA FLOPs of one LSTM step at width d (batch cfg.batch)."""
    params = init_lstm(jax.random.PRNGKey(cfg.seed), d, d)
    return probes.xla_cost(lstm_cell, params, _carry(cfg.batch, d), jnp.ones((cfg.batch, d)))[
        "flops"
    ]
