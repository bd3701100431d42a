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


def time_fn(
    fn, *args, warmup=2, repeats=5, wall_clock=time.perf_counter, cpu_clock=time.process_time
):
    """Time fn(*args) (already jitted, or any function returning JAX arrays).

    Args:
      fn: callable; its outputs are waited on with jax.block_until_ready.
      warmup: untimed calls first (compilation, caches).
      repeats: timed calls; the median is the headline.
      wall_clock, cpu_clock: seconds now, wall and process CPU (injectable, for tests).
    Returns: dict(median_s, min_s, times_s [repeats], cpu_s (median process CPU time per
      call, all threads), cpus_s [repeats], cpu_over_wall, utilisation = cpu_over_wall /
      n_cores, cores).
    """
    if repeats < 1 or warmup < 0:
        raise ValueError(f"time_fn: need repeats >= 1 and warmup >= 0, got {repeats}, {warmup}")
    for _ in range(warmup):
        jax.block_until_ready(fn(*args))
    walls, cpus = [], []
    for _ in range(repeats):
        c0, t0 = cpu_clock(), wall_clock()
        jax.block_until_ready(fn(*args))
        walls.append(wall_clock() - t0)
        cpus.append(cpu_clock() - c0)
    return timing_stats(walls, cpus, n_cores())


def timing_stats(walls, cpus, cores):
    """The arithmetic of time_fn on measured numbers (pure: no clock is read here).

    Args:
      walls: wall-clock seconds per timed call [repeats].
      cpus: process CPU seconds per call, all threads [repeats].
      cores: cores the process may run on.
    Returns: dict(median_s = median(walls), min_s = min(walls), times_s = walls,
      cpu_s = median(cpus), cpus_s = cpus, cpu_over_wall = Σ cpus / Σ walls,
      utilisation = cpu_over_wall / cores, cores).

    The ratio is of sums, not a median of ratios, so one call's timer granularity does not
    dominate. It is a measurement, not a bound: for calls of a few microseconds the CPU time of
    the other threads is accounted coarsely and the ratio can exceed 1.
    """
    walls, cpus = np.asarray(walls, np.float64), np.asarray(cpus, np.float64)
    if walls.ndim != 1 or walls.shape != cpus.shape or walls.size == 0:
        raise ValueError(
            f"timing_stats: walls and cpus must be equal-length non-empty lists, "
            f"got shapes {walls.shape} and {cpus.shape}"
        )
    if cores < 1:
        raise ValueError(f"timing_stats: cores must be >= 1, got {cores}")
    ratio = float(np.sum(cpus) / max(np.sum(walls), 1e-12))
    return {
        "median_s": float(np.median(walls)),
        "min_s": float(np.min(walls)),
        "times_s": [float(w) for w in walls],
        "cpu_s": float(np.median(cpus)),
        "cpus_s": [float(c) for c in cpus],
        "cpu_over_wall": ratio,
        "utilisation": ratio / cores,
        "cores": int(cores),
    }
