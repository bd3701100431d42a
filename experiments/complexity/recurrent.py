"""complexity's recurrent layer: one cell of anatomy.mixers (config.cell, an LSTM by default)
over N steps, O(N·d²). XLA counts a while loop's body once, so its FLOPs are corrected with
anatomy.probes.scan_cost (the trip count read from the compiled HLO); the uncorrected count is
kept to show the undercount."""

import jax
import jax.numpy as jnp

from anatomy import probes
from anatomy.mixers import get_cell
from anatomy.scan import run as run_cell


def recurrent_cost(cfg, n, d):
    """Loop-corrected FLOPs of a recurrent layer over N steps (and the uncorrected ones)."""
    spec = get_cell(cfg.cell)
    k1, k2 = jax.random.split(jax.random.PRNGKey(cfg.seed))
    params = spec.init(k1, d, d)
    xs = jax.random.normal(k2, (cfg.batch, n, d), jnp.float32)
    gates = params["w_h"].shape[1]  # G·H
    carry = spec.zero_carry(cfg.batch, d, jnp.float32)
    c = probes.scan_cost(
        lambda p, x: run_cell(spec, p, x)[1],
        (params, xs),
        spec.recur,
        (params, carry, jnp.ones((cfg.batch, gates))),
    )
    return {
        "flops": c["flops"],
        "bytes": c["bytes"],
        "flops_uncorrected": c["raw"]["flops"],
        "trip_count": c["trip_count"],
    }
