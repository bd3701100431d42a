"""Why gated DeltaNet's chunked timings did not track its work (experiments/crossover/GATED_DELTANET.md), measured.

    python -m experiments.crossover.gdn_probe --lengths 256,1024,4096 --rounds 11 --out f.json
    python -m experiments.crossover.gdn_probe ... --burn 2   (beside 2 busy-looping processes)

Per N, the crossover's own case (benchmarks/cases_mixers.py (mixer_case), width 64, 4 heads,
forward + backward) in three variants, interleaved round by round:

    trsm, OpenBLAS 2 threads   the former chunked form: T applied by
                               jax.scipy.linalg.solve_triangular, which XLA:CPU runs as a
                               call into LAPACK's strsm (scipy's OpenBLAS, its own threads)
    trsm, OpenBLAS 1 thread    the same program, OpenBLAS told to use one thread
    matmul inverse             the library's form: T = (I + diag(β) A)⁻¹ by recursive
                               halving (deltanet.unit_lower_inverse), XLA matmuls only

and per call its wall time, the process's CPU time (CPU / wall: the cores it kept busy,
spinning included) and its threads' context switches (every thread's, from /proc: a handoff
between threads that must wait for the scheduler is one). --burn K runs K busy-looping
processes beside it while it times (the load of another job on the machine). Also: the custom calls of each compiled program and the LAPACK calls they make per run (one per
matrix of the batch: jaxlib's trsm kernel loops over it), the FLOP count of each program
(probes.op_cost, loop trips counted; a custom call counts 0),
the programs compiled during the timed rounds (jax_log_compiles: a recompilation would show),
and the fraction of subnormal float32 values among the decays γ (a denormal slow path would
grow with it). The mixer benchmark's case is timed as is; nothing here is judged.
"""

import argparse
import contextlib
import ctypes
import glob
import json
import logging
import os
import re
import time

import jax
import jax.numpy as jnp
import numpy as np

from anatomy.mixers import gated_deltanet as deltanet
from anatomy.probes.op_cost import profile
from anatomy.scan.linear import linear_scan


def _chunked_trsm(q, k, v, beta, log_alpha, h0, chunk):
    """The former chunked form (before unit_lower_inverse): identical algebra, T applied by
    solve_triangular, which XLA:CPU lowers to LAPACK's strsm."""
    bsz, n_time, n_heads, dk = k.shape
    c = max(1, min(int(chunk), n_time))
    n = -(-n_time // c)
    pad = lambda x: jnp.pad(x, [(0, 0), (0, n * c - n_time)] + [(0, 0)] * (x.ndim - 2))
    chunks = lambda x: jnp.moveaxis(pad(x).reshape((bsz, n, c) + x.shape[2:]), 3, 2)
    qc, kc, vc = chunks(q), chunks(k), chunks(v)
    bc, gc = chunks(beta), jnp.cumsum(chunks(log_alpha), axis=-1)
    t = jnp.arange(c)
    diff = gc[..., :, None] - gc[..., None, :]
    incl = t[:, None] >= t[None, :]
    ratio = jnp.where(incl, jnp.exp(jnp.where(incl, diff, 0.0)), 0.0)
    kk = jnp.einsum("...tk,...sk->...ts", kc, kc)
    strict = jnp.where(t[:, None] > t[None, :], ratio * kk, 0.0)
    lower = jnp.eye(c, dtype=k.dtype) + bc[..., :, None] * strict
    solve = lambda rhs: jax.scipy.linalg.solve_triangular(
        lower, rhs, lower=True, unit_diagonal=True
    )
    gamma = jnp.exp(gc)
    u_tilde = solve(bc[..., None] * vc)
    w = solve((bc * gamma)[..., None] * kc)
    k_hat = jnp.exp(gc[..., -1:] - gc)[..., None] * kc
    eye = jnp.eye(dk, dtype=k.dtype)
    m_chunk = gamma[..., -1, None, None] * eye - jnp.einsum("...sk,...sj->...kj", k_hat, w)
    b_chunk = jnp.einsum("...sk,...sv->...kv", k_hat, u_tilde)
    ends, h_last = linear_scan(m_chunk, b_chunk, h0, transition="matrix")
    starts = jnp.concatenate([h0[:, None], ends[:, :-1]], axis=1)
    qk = jnp.einsum("...tk,...sk->...ts", qc, kc) * ratio
    u = u_tilde - jnp.einsum("...sk,...kv->...sv", w, starts)
    y = jnp.einsum("...tk,...kv->...tv", gamma[..., None] * qc, starts)
    y = y + jnp.einsum("...ts,...sv->...tv", qk, u)
    y = jnp.moveaxis(y, 3, 2).reshape((bsz, n * c, n_heads, -1))
    return y[:, :n_time], h_last


@contextlib.contextmanager
def _former_form():
    """deltanet's chunked form swapped for the trsm one while a program is traced."""
    keep = deltanet._chunked
    deltanet._chunked = _chunked_trsm
    try:
        yield
    finally:
        deltanet._chunked = keep


def openblas():
    """scipy's OpenBLAS (the library jaxlib's LAPACK calls reach), or None."""
    import scipy

    libs = glob.glob(os.path.join(os.path.dirname(scipy.__file__) + ".libs", "*openblas*.so*"))
    if not libs:
        return None
    lib = ctypes.CDLL(libs[0])
    lib.scipy_openblas_get_config.restype = ctypes.c_char_p
    return lib


def _switches():
    """Context switches of every thread of this process so far (0 without /proc)."""
    total = 0
    for task in glob.glob("/proc/self/task/*/status"):
        try:
            with open(task) as f:
                for line in f:
                    if "ctxt_switches" in line:  # voluntary and nonvoluntary
                        total += int(line.split()[-1])
        except OSError:
            continue
    return total


def lapack_calls(hlo_text):
    """LAPACK trsm calls one run of the program makes: per lapack_*trsm* custom call, the
    product of its result's batch dimensions (all but the last two)."""
    calls = 0
    for line in hlo_text.splitlines():
        if 'custom_call_target="lapack_' not in line or "trsm" not in line:
            continue
        shape = re.search(r"= f\d+\[([\d,]*)\]", line)
        dims = [int(d) for d in shape.group(1).split(",") if d] if shape else []
        calls += int(np.prod(dims[:-2])) if len(dims) > 2 else 1
    return calls


def _burners(k):
    """k busy-looping child processes (another job's load), to be terminated by the caller."""
    import subprocess
    import sys

    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(k)]


class _Compiles(logging.Handler):
    """Counts 'Compiling ...' records jax logs with jax_log_compiles on."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def emit(self, record):
        if "ompil" in record.getMessage():
            self.n += 1


def _subnormal_fraction(params, x):
    """Of the decays γ_t = α_1 ⋯ α_t inside each 64-step chunk, the fraction that are
    subnormal float32 (0 < γ < 2^-126) and the fraction flushed to exactly 0."""
    _, _, _, _, log_alpha = deltanet._inputs(params, x)
    n_time = log_alpha.shape[1]
    c = min(64, n_time)
    la = np.asarray(log_alpha)[:, : n_time // c * c]
    gam = np.exp(np.cumsum(la.reshape(la.shape[0], -1, c, la.shape[-1]), axis=2)).astype(np.float32)
    tiny = np.finfo(np.float32).tiny
    return float(np.mean((gam > 0) & (gam < tiny))), float(np.mean(gam == 0))


def measure(lengths, rounds, seed=0, burn=0):
    from benchmarks.cases_mixers import mixer_case

    lib = openblas()
    threads0 = lib.scipy_openblas_get_num_threads() if lib else None
    logger = logging.getLogger("jax")
    counter = _Compiles()
    logger.addHandler(counter)
    out = {
        "openblas": lib.scipy_openblas_get_config().decode() if lib else None,
        "openblas_threads": threads0,
        "cpus": len(os.sched_getaffinity(0)),
        "burn": burn,
        "lengths": list(lengths),
        "rows": {},
    }
    for n in lengths:
        rng = np.random.default_rng(seed)
        variants = {}
        with _former_form():
            case, _, _ = mixer_case("gated_deltanet", 1, n, 64, rng, ("chunked",), twin=False)
            old = case.impls["chunked"]
            old.passes["fwdbwd"]()  # traced and compiled with the former form
            old_hlo = old.hlo("fwdbwd")
        rng = np.random.default_rng(seed)
        case, _, _ = mixer_case("gated_deltanet", 1, n, 64, rng, ("chunked",), twin=False)
        new = case.impls["chunked"]
        new.passes["fwdbwd"]()
        new_hlo = new.hlo("fwdbwd")

        def with_threads(fn, k):
            def call():
                if lib:
                    lib.scipy_openblas_set_num_threads(k)
                try:
                    fn()
                finally:
                    if lib:
                        lib.scipy_openblas_set_num_threads(threads0)

            return call

        variants["trsm, OpenBLAS 2 threads"] = with_threads(old.passes["fwdbwd"], 2)
        if lib:
            variants["trsm, OpenBLAS 1 thread"] = with_threads(old.passes["fwdbwd"], 1)
        variants["matmul inverse"] = new.passes["fwdbwd"]
        for fn in variants.values():
            fn()
        jax.config.update("jax_log_compiles", True)
        before = counter.n
        wall = {k: [] for k in variants}
        cpu = {k: [] for k in variants}
        switches = {k: [] for k in variants}
        labels = list(variants)
        procs = _burners(burn)
        try:
            for r in range(rounds):
                for label in labels[r % len(labels) :] + labels[: r % len(labels)]:
                    s0, c0, t0 = _switches(), time.process_time(), time.perf_counter()
                    variants[label]()
                    dt = time.perf_counter() - t0
                    wall[label].append(dt)
                    cpu[label].append((time.process_time() - c0) / dt)
                    switches[label].append(_switches() - s0)
        finally:
            for p in procs:
                p.terminate()
                p.wait()
        jax.config.update("jax_log_compiles", False)
        flops = {"trsm": profile(old_hlo)["flops"], "matmul inverse": profile(new_hlo)["flops"]}
        sub, zero = _subnormal_fraction(*_gdn_params(n, seed))
        out["rows"][str(n)] = {
            "wall_s": wall,
            "median_ms": {k: 1e3 * float(np.median(v)) for k, v in wall.items()},
            "range_ms": {k: [1e3 * min(v), 1e3 * max(v)] for k, v in wall.items()},
            "cpu_per_wall": {k: float(np.median(v)) for k, v in cpu.items()},
            "context_switches": {k: float(np.median(v)) for k, v in switches.items()},
            "lapack_calls": {
                "trsm": lapack_calls(old_hlo),
                "matmul inverse": lapack_calls(new_hlo),
            },
            "custom_calls": {
                "trsm": sorted(set(re.findall(r'custom_call_target="([^"]+)"', old_hlo))),
                "matmul inverse": sorted(set(re.findall(r'custom_call_target="([^"]+)"', new_hlo))),
            },
            "xla_flops": flops,
            "compiles_while_timed": counter.n - before,
            "gamma_subnormal_fraction": sub,
            "gamma_zero_fraction": zero,
            "load": os.getloadavg(),
        }
        row = out["rows"][str(n)]
        print(n, *(json.dumps(row[k]) for k in ("median_ms", "range_ms", "context_switches",
                                                 "lapack_calls")), flush=True)  # fmt: skip
    logger.removeHandler(counter)
    return out


def _gdn_params(n, seed):
    """The case's own weights and input (mixer_case draws them from rng(seed) in this order)."""
    from anatomy import mixers
    from benchmarks.cases_mixers import KNOBS
    from benchmarks.inputs import f32, jitter

    rng = np.random.default_rng(seed)
    mixer = mixers.build_mixer("gated_deltanet", 64, conv=0, **KNOBS["gated_deltanet"])
    params = jitter(jax.tree.map(np.asarray, mixer.init(jax.random.key(0))), rng)
    x = f32(rng.normal(size=(1, n, 64)))
    return params["mix"], jnp.asarray(x)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", default="256,1024,4096")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--burn", type=int, default=0, help="busy-looping processes beside it")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    res = measure([int(n) for n in args.lengths.split(",")], args.rounds, burn=args.burn)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
