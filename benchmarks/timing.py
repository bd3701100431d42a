"""Timing discipline (docs/design.md, "Measuring speed") and the machine's own matmul rate.

Every implementation of a case is warmed up first (JAX compiles on its first call, outside
the timing), then timed in ROUNDS: each round calls every implementation once (a block of
`inner` back-to-back calls for very short ones), rotating the order from round to round,
so a burst of load from other processes hits all sides alike. The headline is the median
over rounds; spread = (p75 - p25) / median says how noisy it was.
"""

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time

import numpy as np

from anatomy.probes.timing import n_cores  # the cores this process may run on: XLA's pool size


def argument_parser(prog, doc, quick_help):
    """A timing script's parser: its docstring as --help, and the flags every such script
    takes: --quick (help ``quick_help``) and --rounds (None: the preset's)."""
    ap = argparse.ArgumentParser(
        prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help=quick_help)
    ap.add_argument("--rounds", type=int, default=None, help="interleaved timing rounds")
    return ap


def _summary(samples):
    s = np.asarray(samples)
    med = float(np.median(s))
    p25, p75 = np.percentile(s, [25, 75])
    return {
        "median_s": med,
        "min_s": float(s.min()),
        "spread": float((p75 - p25) / med),
        "samples_s": [float(v) for v in s],
    }


def time_interleaved(
    fns, *, rounds, warmup=1, target_s=0.02, max_inner=64, budget_s=None, min_rounds=3
):
    """Median wall time per call of each zero-argument callable, interleaved in rounds.

    Args:
      fns: {label: fn}; each fn returns only once its work is done (JAX: block_until_ready).
      rounds: timed rounds (samples per label). warmup: untimed calls per label first
        (plus one untimed calibration call).
      target_s: a sample lasts at least about this long (inner calls averaged), so the
        timer's resolution and Python's call overhead do not dominate sub-millisecond calls.
      budget_s: if given, fewer rounds (but at least min_rounds) when the calibration
        calls say `rounds` would take longer than this.
    Returns:
      {label: {'median_s', 'min_s', 'spread', 'samples_s', 'inner'}}.
    """
    if rounds < 1:
        raise ValueError(f"time_interleaved: rounds must be >= 1, got {rounds}")
    labels, inner, per_round = list(fns), {}, 0.0
    for label in labels:
        for _ in range(warmup):
            fns[label]()
        t0 = time.perf_counter()
        fns[label]()
        dt = time.perf_counter() - t0
        inner[label] = int(min(max_inner, max(1, np.ceil(target_s / dt))))
        per_round += inner[label] * dt
    if budget_s is not None:
        rounds = int(min(rounds, max(min_rounds, budget_s // max(per_round, 1e-9))))
    samples = {label: [] for label in labels}
    for r in range(rounds):
        order = labels[r % len(labels) :] + labels[: r % len(labels)]  # rotate who goes first
        for label in order:
            fn, k = fns[label], inner[label]
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            samples[label].append((time.perf_counter() - t0) / k)
    return {label: dict(_summary(samples[label]), inner=inner[label]) for label in labels}


def matmul_rates(n, *, rounds, seed=0):
    """The machine's float32 matmul rate: an [n, n] x [n, n] product in NumPy, JAX and torch
    (torch with its threads and with one thread).

    Returns ({library: GFLOP/s from the median time}, {library: GFLOP/s from the fastest
    call}, raw timings); 2 n³ FLOPs per product. On a loaded machine the fastest call is
    the better estimate of what the cores can do.
    """
    import jax
    import torch

    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    ja, jb = jax.device_put(a), jax.device_put(b)
    ta, tb = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
    jmm = jax.jit(lambda x, y: x @ y)
    fns = {
        "numpy": lambda: a @ b,
        "jax": lambda: jax.block_until_ready(jmm(ja, jb)),
        "torch": lambda: torch.mm(ta, tb),
    }

    def torch_1(n_threads=None):
        n_threads = torch.get_num_threads() if n_threads is None else n_threads
        torch.set_num_threads(1)
        try:
            return torch.mm(ta, tb)
        finally:
            torch.set_num_threads(n_threads)

    fns["torch 1 thread"] = torch_1
    times = time_interleaved(fns, rounds=rounds, warmup=1, target_s=0.0)
    rate = lambda s: 2.0 * n**3 / s / 1e9
    return (
        {k: rate(v["median_s"]) for k, v in times.items()},
        {k: rate(v["min_s"]) for k, v in times.items()},
        times,
    )


def load_average():
    """The 1, 5 and 15-minute load averages as text ('n/a' where the OS has none)."""
    try:
        return ", ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def machine_info():
    """CPU model, cores, versions of everything timed, the date."""
    import flax
    import jax
    import jaxlib
    import torch

    model = platform.processor() or "unknown"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        model = next(
            (ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")),
            model,
        )
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "cpu": model,
        "cores": n_cores(),
        "torch_threads": torch.get_num_threads(),
        "python": sys.version.split()[0],
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "flax": flax.__version__,
        "torch": torch.__version__,
        "numpy": np.__version__,
        "platform": platform.platform(),
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
    }


def torch_ops(fn, keywords=("rnn", "lstm", "gru", "attention", "transformer", "flash", "mkldnn")):
    """Which torch kernels ran: the aten ops of one call of fn whose names hold a keyword."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    names = {e.key for e in prof.key_averages()}
    return sorted(
        n for n in names if n.startswith("aten::") and any(k in n.lower() for k in keywords)
    )
