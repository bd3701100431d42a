"""probes.depth: the critical path of a compiled program counts dependent ops, not all ops."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from anatomy import probes
from anatomy.mixers.quasi import linear_recurrence
from anatomy.probes.depth import compiled_critical_path
from experiments.parallelism.claims import linear_parallel

X = jnp.asarray(np.random.default_rng(0).normal(size=(4, 8)), jnp.float32)


def chain(x, k, f=jnp.sin):
    for _ in range(k):
        x = f(x)
    return x


@pytest.mark.parametrize("k", (1, 3, 7))
def test_a_fused_chain_counts_its_ops_and_parallel_chains_their_longest(k):
    assert compiled_critical_path(lambda x: chain(x, k), X) == k
    # two independent chains joined by one add: the longer one, plus the add
    assert compiled_critical_path(lambda x: chain(x, k) + chain(x, 2, jnp.cos), X) == max(k, 2) + 1


def test_a_loop_counts_trips_times_its_body_and_an_unknown_trip_count_is_an_error():
    def scan(x, n):
        return jax.lax.scan(lambda c, _: (jnp.sin(c), None), x, None, length=n)[0]

    paths = [compiled_critical_path(lambda x, n=n: scan(x, n), X) for n in (10, 20, 40)]
    assert paths[1] - paths[0] == 10 and paths[2] - paths[1] == 20  # one sin per step
    with pytest.raises(ValueError, match="no known trip count"):
        compiled_critical_path(lambda x: jax.lax.while_loop(lambda c: c.sum() < 1e3, jnp.exp, x), X)


@pytest.mark.slow
def test_associative_scan_depth_grows_by_a_constant_per_doubling():
    depth = []
    for n in (16, 32, 64, 128):
        a = jnp.asarray(np.random.default_rng(n).uniform(0.1, 0.9, size=(2, n, 4)), jnp.float32)
        depth.append(compiled_critical_path(linear_recurrence, a, a))
    steps = np.diff(depth)
    assert steps.min() > 0 and steps.max() <= 1.5 * steps.min(), depth
    assert depth[-1] < 128  # far below one op per position


def _linear(scan_steps, assoc_steps, r2, exponent):
    """The chapter's linear-recurrence parallel claim on injected parallelism analysis."""
    analysis = {
        "mingru_scan_steps_per_token": scan_steps,
        "mingru_assoc_max_steps": assoc_steps,
        "assoc_depth_per_doubling": 60.0,
        "assoc_depth_log2_r2": r2,
        "depth_exponent": {"mingru_scan": 0.99, "mingru_assoc": exponent},
    }
    return linear_parallel({"analysis": analysis}).verdict


def test_log_depth_verdicts():
    assert _linear(2.0, 0, 0.999, 0.3) == probes.HOLDS
    assert _linear(2.0, 3, 0.999, 0.3) == probes.FAILS  # a loop left
    assert _linear(2.0, 0, 0.999, 0.9) == probes.FAILS  # ~linear depth
    assert _linear(2.0, 0, 0.90, 0.3) == probes.FAILS  # not log-shaped
    assert _linear(1.0, 0, 0.999, 0.3) == probes.FAILS  # scan not 2/token
    assert _linear(float("nan"), 0, 0.999, 0.3) == probes.UNDECIDED  # not measurable
