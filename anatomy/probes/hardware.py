"""Hardware tables for the cost model (anatomy/probes/roofline.py): named accelerators from
their published figures, and this machine's measured by `measure`.

A Hardware holds rates and latencies, each with where it comes from:

    matmul_flops      {'float32': FLOP/s, 'bfloat16': FLOP/s}: dots (tensor cores, the MXU)
    vector_flops      FLOP/s of everything else (elementwise, reductions)
    bandwidth         main-memory bytes/s (HBM; DRAM on a CPU)
    op_latency        seconds one executed op costs beyond its work (a kernel launch, a thunk)
    loop_latency      seconds one while-loop iteration costs beyond its ops
    call_latency      seconds one call of a compiled program costs beyond its ops (dispatch
                      from Python, argument handling, the executable's launch)
    link_bandwidth    bytes/s one device sends to the others (one direction), for collectives
    collective_latency  α: seconds one collective costs beyond its bytes
    caches            ((bytes, bytes/s), ...) ascending: an op moving at most `bytes` streams at
                      that rate (a CPU's level-2 and level-3 caches, measured; none for the
                      accelerators: every op at HBM speed, an assumption that over-prices small
                      ops whose operands sit in L2)
    loop_bandwidth    bytes/s of an op inside a loop whose body's working set (op_cost's
                      footprint) exceeds the last cache tier: the body evicts what the next
                      iteration reuses, so the op streams from main memory however small it is
                      (measured on a CPU: a loop of 1 MiB ops over 4 × the last tier; None: the
                      op's own tier, as for the accelerators)
    first_touch_bandwidth  bytes/s at which a program's fresh buffers (temporaries and
                      outputs, compiled.memory_analysis()) are first written: on a CPU each call
                      allocates them and the OS maps and zeroes every page on first touch;
                      None (no such cost) for an accelerator's preallocated memory
    sources           {field: the published figure's source, or how it was measured}
    assumptions       {field: what is assumed where nothing is published}

Published figures are dense (no structured sparsity). The latencies of accelerators are not
published: they are assumptions, stated beside the table, and experiments/scaling/on_device.py
measures them on a real GPU.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
import time

import jax
import jax.numpy as jnp
import numpy as np

from anatomy.errors import BadInputError

TERA, GIGA, MICRO = 1e12, 1e9, 1e-6


@dataclasses.dataclass(frozen=True)
class Hardware:
    """One device's rates and latencies (module doc); link figures None for a lone device."""

    name: str
    matmul_flops: dict
    vector_flops: float
    bandwidth: float
    op_latency: float
    loop_latency: float
    call_latency: float = 0.0
    link_bandwidth: float | None = None
    collective_latency: float | None = None
    caches: tuple = ()
    loop_bandwidth: float | None = None
    first_touch_bandwidth: float | None = None
    sources: dict = dataclasses.field(default_factory=dict)
    assumptions: dict = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def scaled(self, **factors) -> Hardware:
        """A copy with fields multiplied (e.g. op_latency=2.0): the sensitivity of a prediction."""
        return dataclasses.replace(self, **{k: getattr(self, k) * v for k, v in factors.items()})

    def at_fraction(self, fraction: float) -> Hardware:
        """A copy whose rates (matmul and vector FLOP/s, memory and cache bandwidths) are
        `fraction` of these: the achieved share of a published peak, a sensitivity."""
        f = float(fraction)
        return dataclasses.replace(
            self,
            matmul_flops={k: v * f for k, v in self.matmul_flops.items()},
            vector_flops=self.vector_flops * f,
            bandwidth=self.bandwidth * f,
            caches=tuple((size, rate * f) for size, rate in self.caches),
            loop_bandwidth=self.loop_bandwidth and self.loop_bandwidth * f,
        )

    def without(self, *terms: str) -> Hardware:
        """A copy with cost-model terms switched off (TERMS_OFF: its rates infinite, its
        latencies zero, a tier or a correction absent): what the model predicts without them."""
        bad = [t for t in terms if t not in TERMS_OFF]
        if bad:
            raise BadInputError(f"no cost-model term {bad}; choose from {list(TERMS_OFF)}")
        changes = {}
        for t in terms:
            changes.update(TERMS_OFF[t](self))
        return dataclasses.replace(self, **changes)


INF = float("inf")
# term -> the fields that switch it off (roofline.predict then charges nothing for it)
TERMS_OFF = {
    "compute": lambda hw: {
        "matmul_flops": {k: INF for k in hw.matmul_flops},
        "vector_flops": INF,
    },
    "memory": lambda hw: {
        "bandwidth": INF,
        "caches": (),
        "loop_bandwidth": None,
        "first_touch_bandwidth": None,
    },
    "latency": lambda hw: {"op_latency": 0.0, "loop_latency": 0.0, "call_latency": 0.0},
    "caches": lambda hw: {"caches": (), "loop_bandwidth": None},  # every op at main memory
    "loop_bandwidth": lambda hw: {"loop_bandwidth": None},
    "first_touch": lambda hw: {"first_touch_bandwidth": None},
    "communication": lambda hw: {"link_bandwidth": INF, "collective_latency": 0.0},
}


_GPU_LAUNCH = (
    "not published; assumed: a CUDA kernel launch from XLA's host-side executor costs a few "
    "µs (NVIDIA's CUDA best-practice guide puts launch overhead in the µs range); 5 µs"
)
_GPU_LOOP = (
    "not published; assumed: an XLA:GPU while loop copies its predicate to the host every "
    "iteration (one device-to-host sync, ~10 µs) unless XLA unrolls it or runs it as a "
    "CUDA graph"
)
_CALL = (
    "not published; assumed: one jitted call from Python (dispatch, argument checks, the "
    "executable's launch) costs ~20 µs, the order JAX's own dispatch takes on a CPU"
)
_PEAK = (
    "the published peak rates are taken as what every kernel achieves (real kernels reach a "
    "fraction of them, small ones far less; estimates print their sensitivity to this)"
)
_NCCL_ALPHA = (
    "not published; assumed: NCCL's small-message all-reduce latency on one 8-GPU NVLink "
    "node is ~10-20 µs (nccl-tests); 15 µs"
)


def _nvidia_gpu(name, sheet, bf16_tflops, fp32_tflops, memory, memory_gbs, nvlink_gbs):
    """An NVIDIA GPU from its datasheet's dense figures (each source text made from the number
    it cites, so the two cannot drift apart) and the latencies assumed for every one.

    bf16_tflops: dense BF16 tensor rate; float32 dots run at half of it, as TF32 on the tensor
    cores (JAX's default precision). fp32_tflops: the non-tensor FP32 rate. memory, memory_gbs:
    the HBM generation and its GB/s. nvlink_gbs: NVLink GB/s per GPU, both directions."""
    return Hardware(
        name,
        matmul_flops={"bfloat16": bf16_tflops * TERA, "float32": bf16_tflops / 2 * TERA},
        vector_flops=fp32_tflops * TERA,
        bandwidth=memory_gbs * GIGA,
        op_latency=5 * MICRO,
        loop_latency=10 * MICRO,
        call_latency=20 * MICRO,
        link_bandwidth=nvlink_gbs / 2 * GIGA,
        collective_latency=15 * MICRO,
        sources={
            "matmul_flops": f"NVIDIA {sheet} datasheet: BF16 tensor {bf16_tflops:g} TFLOP/s "
            f"dense ({2 * bf16_tflops:g} with sparsity); float32 dots at JAX's default "
            f"precision run as TF32 on tensor cores (JAX docs, 'Matmul precision'): "
            f"{bf16_tflops / 2:g} dense",
            "vector_flops": f"datasheet FP32 (non-tensor) {fp32_tflops:g} TFLOP/s",
            "bandwidth": f"datasheet {memory} {memory_gbs:,} GB/s",
            "link_bandwidth": f"datasheet NVLink {nvlink_gbs:g} GB/s per GPU, both directions: "
            f"{nvlink_gbs / 2:g} GB/s each way",
        },
        assumptions={
            "achieved_rates": _PEAK,
            "op_latency": _GPU_LAUNCH,
            "loop_latency": _GPU_LOOP,
            "call_latency": _CALL,
            "collective_latency": _NCCL_ALPHA,
        },
    )


# NVIDIA datasheets, dense figures: name: (datasheet, BF16 tensor TFLOP/s, FP32 non-tensor
# TFLOP/s, memory, its GB/s, NVLink GB/s per GPU both directions)
GPU_DATASHEETS = {
    "H100 SXM": ("H100 Tensor Core GPU (SXM5)", 989.4, 66.9, "HBM3", 3350, 900),
    "A100 80GB": ("A100 (SXM4 80GB)", 312, 19.5, "HBM2e", 2039, 600),
}

ACCELERATORS = {
    **{name: _nvidia_gpu(name, *sheet) for name, sheet in GPU_DATASHEETS.items()},
    "TPU v5e": Hardware(
        "TPU v5e",
        matmul_flops={"bfloat16": 197 * TERA, "float32": 197 * TERA},
        vector_flops=197 * TERA / 16,
        bandwidth=819 * GIGA,
        op_latency=1 * MICRO,
        loop_latency=1 * MICRO,
        call_latency=20 * MICRO,
        link_bandwidth=200 * GIGA,
        collective_latency=10 * MICRO,
        sources={
            "matmul_flops": "Cloud TPU v5e documentation: 197 TFLOP/s bf16 per chip; float32 "
            "dots at JAX's default precision run as bfloat16 on the MXU (JAX docs, 'Matmul "
            "precision')",
            "bandwidth": "Cloud TPU v5e documentation: HBM2 819 GB/s",
            "link_bandwidth": "Cloud TPU v5e documentation: 400 GB/s bidirectional ICI per "
            "chip (4 ports, 2D torus): 200 GB/s each way",
        },
        assumptions={
            "achieved_rates": _PEAK,
            "vector_flops": "not published; assumed 1/16 of the MXU rate (elementwise work is "
            "memory-bound at 819 GB/s long before this matters)",
            "op_latency": "not published; assumed 1 µs: the whole program runs on the chip, "
            "no host launch per op",
            "loop_latency": "not published; assumed 1 µs: loops run on the chip's scalar unit",
            "call_latency": _CALL,
            "collective_latency": "not published; assumed 10 µs per ICI collective",
        },
    ),
}


def get(name: str) -> Hardware:
    """A named accelerator's table; BadInputError naming the choices."""
    if name not in ACCELERATORS:
        raise BadInputError(f"unknown accelerator {name!r}; choose one of {sorted(ACCELERATORS)}")
    return ACCELERATORS[name]


# ------------------------------------------------------------------ measuring this machine


def interleaved_medians(
    calls: dict, rounds: int, warmup: int = 2, run_in: int = 0, clock=time.perf_counter
) -> dict:
    """{key: (median seconds, all seconds)} of calls[key] = (fn, args) or (fn, args, repeats):
    the calls made in turn each round (`repeats` times in a row: cheap micro-benchmarks get
    more samples), so load that comes and goes hits all of them alike; `warmup` untimed calls
    each first (compilation, caches). run_in: untimed calls of each at the start of its turn
    in every round, so that a timed call follows a call of the same program (its caches and
    allocator in the state its own previous call left, as in a training loop that runs one
    step after another) rather than whatever ran before it in the round."""
    calls = {k: (c[0], c[1], c[2] if len(c) > 2 else 1) for k, c in calls.items()}
    for fn, args, _ in calls.values():
        for _ in range(warmup):
            jax.block_until_ready(fn(*args))
    times = {k: [] for k in calls}
    for _ in range(rounds):
        for k, (fn, args, repeats) in calls.items():
            for _ in range(run_in):
                jax.block_until_ready(fn(*args))
            for _ in range(repeats):
                t0 = clock()
                jax.block_until_ready(fn(*args))
                times[k].append(clock() - t0)
    return {k: (float(np.median(v)), v) for k, v in times.items()}


def _chain(k: int, trips: int):
    """A loop of `trips` iterations whose body runs k dependent tiny dot + tanh ops ([8,16] x
    [16,16]: ~4 kFLOP each): the time is dispatch, not work."""
    w = jnp.eye(16, dtype=jnp.float32) * 0.5

    def body(_, x):
        for _ in range(k):
            x = jnp.tanh(x @ w)
        return x

    return jax.jit(lambda x: jax.lax.fori_loop(0, trips, body, x))


def _stream(trips: int):
    """`trips` in-place passes v <- 0.999·v + 0.001 over an array (each reads + writes it once;
    no allocation, no dispatch per pass)."""
    return jax.jit(lambda v: jax.lax.fori_loop(0, trips, lambda i, u: u * 0.999 + 0.001, v))


def _evicting_loop(chunks: int, chunk: int, trips: int):
    """`trips` iterations over `chunks` arrays of `chunk` bytes, each pass in place and its own
    op (an optimization barrier keeps XLA from fusing them): every op fits a cache, the body's
    working set (chunks · chunk) does not when it is larger than the cache."""

    def body(_, arrays):
        return tuple(jax.lax.optimization_barrier(a * 0.999 + 0.001) for a in arrays)

    fn = jax.jit(lambda arrays: jax.lax.fori_loop(0, trips, body, arrays))
    return fn, (tuple(jnp.full((chunk // 4,), 1.0 + k, jnp.float32) for k in range(chunks)),)


def cache_bytes(level: int, default: int = 0) -> int:
    """Size of cpu0's data / unified cache of `level` as sysfs reports it, else `default`."""
    for d in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
        try:
            with open(os.path.join(d, "level")) as f:
                lvl = int(f.read())
            with open(os.path.join(d, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(d, "size")) as f:
                text = f.read().strip()
        except (OSError, ValueError):
            continue
        m = re.match(r"(\d+)([KMG]?)", text)
        if lvl == level and kind != "Instruction" and m:
            unit = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]
            return int(m.group(1)) * unit
    return default


def _streams(sizes: dict, pass_bytes: int) -> dict:
    """In-place streaming benchmarks {key: dict(fn, args, work, how)} over arrays of sizes[key]
    bytes, about pass_bytes moved per call."""
    from anatomy.probes.op_cost import profile  # op_cost imports nothing of this module

    out = {}
    for key, size in sizes.items():
        passes = max(2, pass_bytes // size)
        fn, x = _stream(passes), jnp.ones((size // 4,), jnp.float32)
        out[key] = dict(
            fn=fn,
            args=(x,),
            size=size,
            work=profile(fn.lower(x).compile().as_text())["bytes"],
            how=f"{passes} in-place passes v <- 0.999·v + 0.001 over {size / 2**20:g} MiB "
            "float32 in one loop (no allocation): bytes of the compiled program / median time",
        )
    return out


def benchmarks(*, quick: bool = False, latency_ks=None, cpu_caches: bool = True) -> dict:
    """The micro-benchmarks `measure` times, {key: dict(fn, args, how, ...)}, for a caller that
    interleaves them with its own programs (interleaved_medians) and then calls host_table:

    matmul           jit(a @ b), float32 [n,n]x[n,n]                   -> FLOP/s = 2n³ / t
    bandwidth        in-place passes over 128 MiB (quick: 32) in one loop, past every cache
                                                                     -> bytes/s = moved / t
    cache_L, ...     the same over half of each CPU cache level L >= 2 (sysfs): a tier each
    loop_stream      loops whose body passes in place over 1 MiB arrays, 4 × the last tier in
                     all, one op each: what a small op in a cache-evicting loop body streams at;
                     12 and 2 iterations (_short)       -> bytes/s = Δ moved / Δ t
    first_touch      jit(2·x) over the same array, a fresh output each call: what writing
                     fresh pages costs beyond streaming  -> bytes/s = size / (t − moved / bw)
    call             one call of jit(x + 1) on a scalar                  -> call_latency = t
    latency_k        loops of `trips` iterations, k dependent tiny dot + tanh ops each
                     -> op_latency, loop_latency by least squares (host_table)
    Bytes and ops per iteration are read from the compiled programs (op_cost). cpu_caches=False
    leaves out the cache tiers and first_touch (an accelerator: its memory is preallocated).
    """
    from anatomy.probes.op_cost import profile

    n = 512 if quick else 1024
    a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
    b = jax.random.normal(jax.random.key(1), (n, n), jnp.float32)
    big = 1 << (25 if quick else 27)
    pass_bytes = 1 << (26 if quick else 28)
    sizes = {"bandwidth": big}
    if cpu_caches:
        for level in (2, 3):
            if cache_bytes(level):
                sizes[f"cache_{level}"] = cache_bytes(level) // 2
    out = {
        "matmul": dict(
            fn=jax.jit(jnp.matmul),
            args=(a, b),
            work=2.0 * n**3,
            how=f"jit(a @ b), float32 [{n},{n}]x[{n},{n}]: 2n³ / median time",
        ),
        **_streams(sizes, pass_bytes),
        "call": dict(
            fn=jax.jit(lambda v: v + 1.0),
            args=(jnp.ones((), jnp.float32),),
            how="one call of jit(x + 1) on a scalar: median time",
        ),
    }
    tiers = [size for key, size in sizes.items() if key.startswith("cache_")]
    if tiers:
        chunk = 1 << 20
        chunks = max(2, 4 * max(tiers) // chunk)
        long_trips = 6 if quick else 12
        for key, trips in (("loop_stream_short", 2), ("loop_stream", long_trips)):
            fn, args = _evicting_loop(chunks, chunk, trips)
            out[key] = dict(
                fn=fn,
                args=args,
                work=profile(fn.lower(*args).compile().as_text())["bytes"],
                how=f"loops whose body passes v <- 0.999·v + 0.001 over {chunks} arrays of "
                f"1 MiB float32 in place, one op each, {long_trips} and 2 iterations: the "
                "difference of their bytes / the difference of their median times (the call's "
                "copies of its arguments cancel)",
            )
    if cpu_caches:
        out["first_touch"] = dict(
            fn=jax.jit(lambda v: v * 2.0),
            args=out["bandwidth"]["args"],
            size=big,
            how=f"jit(2·x) over {big / 2**20:g} MiB float32, a fresh output each call: "
            "size / (time − 2·size / bandwidth)",
        )
    trips = 200 if quick else 1000
    x = jnp.ones((8, 16), jnp.float32)
    if latency_ks is None:
        latency_ks = (1, 4, 16) if quick else (1, 2, 4, 8, 16)
    for k in latency_ks:
        fn = _chain(k, trips)
        ops = profile(fn.lower(x).compile().as_text())["ops"] / trips
        out[f"latency_{k}"] = dict(fn=fn, args=(x,), k=k, trips=trips, ops_per_iteration=ops)
    return out


def bench_calls(benches: dict, repeats: int = 5) -> dict:
    """interleaved_medians' calls for benchmarks(): each `repeats` times per round."""
    return {k: (b["fn"], b["args"], repeats) for k, b in benches.items()}


def host_table(benches: dict, medians: dict, name: str = "this machine") -> tuple[Hardware, dict]:
    """This machine's Hardware from benchmarks() and their median seconds ({key: seconds}), and
    the raw figures. Memory tiers: an op moving at most half a cache level's size streams at
    that level's measured rate, a larger one at the main-memory rate; fresh buffers are first
    written at the first-touch rate. The matmul rate is also used for vector work (the same
    cores; elementwise ops are memory-bound long before it matters). op / loop latency:
    seconds per iteration = loop + (ops per iteration) · op, least squares over k (a negative
    intercept clipped to 0). No link figures: one device."""
    rate = {"matmul": benches["matmul"]["work"] / medians["matmul"]}
    rate.update(
        {
            k: b["work"] / medians[k]
            for k, b in benches.items()
            if "size" in b and k != "first_touch"
        }
    )
    tiers = sorted(k for k in rate if k.startswith("cache_"))
    loop_bandwidth = None
    if "loop_stream" in benches:
        long, short = benches["loop_stream"], benches["loop_stream_short"]
        extra = medians["loop_stream"] - medians["loop_stream_short"]
        loop_bandwidth = (long["work"] - short["work"]) / extra if extra > 0 else None
        rate["loop_stream"] = loop_bandwidth
    caches = tuple((float(benches[k]["size"]), rate[k]) for k in tiers)
    first = None
    if "first_touch" in benches:
        size = benches["first_touch"]["size"]
        extra = medians["first_touch"] - 2.0 * size / rate["bandwidth"]
        first = size / extra if extra > 0 else None
        rate["first_touch"] = first
    lat = [b for b in benches.values() if "ops_per_iteration" in b]
    points = [
        {
            "k": b["k"],
            "ops_per_iteration": b["ops_per_iteration"],
            "seconds_per_iteration": medians[f"latency_{b['k']}"] / b["trips"],
        }
        for b in lat
    ]
    a = np.array([[1.0, p["ops_per_iteration"]] for p in points])
    y = np.array([p["seconds_per_iteration"] for p in points])
    (loop, op), *_ = np.linalg.lstsq(a, y, rcond=None)
    lat_how = (
        f"loops of {lat[0]['trips']} iterations whose bodies run k = {[b['k'] for b in lat]} "
        "dependent [8,16]x[16,16] dot + tanh ops; seconds per iteration = loop + ops · op, "
        "least squares over k (ops per iteration read from each compiled program)"
    )
    sources = {
        "matmul_flops": benches["matmul"]["how"]
        + " (bfloat16: the same; XLA:CPU computes bf16 dots in float32)",
        "vector_flops": "the matmul rate (the same cores)",
        "bandwidth": benches["bandwidth"]["how"],
        "op_latency": lat_how,
        "loop_latency": lat_how,
        "call_latency": benches["call"]["how"],
    }
    if caches:
        sources["caches"] = "; ".join(
            f"level {k[-1]} ({benches[k]['size'] / 2**20:g} MiB, half of it): {benches[k]['how']}"
            for k in tiers
        )
    if "loop_stream" in benches:
        sources["loop_bandwidth"] = benches["loop_stream"]["how"]
    if "first_touch" in benches:
        sources["first_touch_bandwidth"] = benches["first_touch"]["how"]
    hw = Hardware(
        name,
        matmul_flops={"float32": rate["matmul"], "bfloat16": rate["matmul"]},
        vector_flops=rate["matmul"],
        bandwidth=rate["bandwidth"],
        op_latency=float(max(op, 0.0)),
        loop_latency=float(max(loop, 0.0)),
        call_latency=medians["call"],
        caches=caches,
        loop_bandwidth=loop_bandwidth,
        first_touch_bandwidth=first,
        sources=sources,
    )
    return hw, {**rate, "latency_points": points}


def measure(
    name: str = "this machine", *, quick: bool = False, rounds: int = 7
) -> tuple[Hardware, dict]:
    """host_table of benchmarks() timed alone (interleaved among themselves, medians)."""
    benches = benchmarks(quick=quick)
    med = interleaved_medians(bench_calls(benches), rounds)
    return host_table(benches, {k: v[0] for k, v in med.items()}, name)
