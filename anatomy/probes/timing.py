"""Wall-clock and CPU-time measurement of jitted functions.

Timing discipline: compile and warm up first, then the median of several repeats, each
ending in ``jax.block_until_ready`` (JAX dispatches asynchronously).

How busy the cores are: utilisation = process CPU time / (wall time · cores). On a CPU
this is the counterpart of the chapter's "one core of sixteen": a serial recurrence keeps
about one core busy whatever the machine has.
"""
import os
import time

import jax
import numpy as np


def n_cores():
    """Cores this process may run on (its CPU affinity set)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def time_fn(fn, *args, warmup=2, repeats=5):
    """Time fn(*args) (already jitted, or any function returning JAX arrays).

    Args:
      fn: callable; its outputs are waited on with jax.block_until_ready.
      warmup: untimed calls first (compilation, caches).
      repeats: timed calls; the median is the headline.
    Returns: dict(median_s, min_s, times_s [repeats], cpu_s (median process CPU time per
      call, all threads), cpu_over_wall, utilisation = cpu_over_wall / n_cores, cores).
    """
    if repeats < 1 or warmup < 0:
        raise ValueError(f"time_fn: need repeats >= 1 and warmup >= 0, got {repeats}, {warmup}")
    for _ in range(warmup):
        jax.block_until_ready(fn(*args))
    walls, cpus = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        jax.block_until_ready(fn(*args))
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    wall, cpu = float(np.median(walls)), float(np.median(cpus))
    cores = n_cores()
    ratio = float(np.sum(cpus) / max(np.sum(walls), 1e-12))
    return {"median_s": wall, "min_s": float(np.min(walls)), "times_s": [float(w) for w in walls],
            "cpu_s": cpu, "cpu_over_wall": ratio, "utilisation": ratio / cores, "cores": cores}
