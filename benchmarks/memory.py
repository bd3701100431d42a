"""Peak memory of one call, beyond its inputs, for every implementation of a case.

JAX sides: XLA's compiled memory analysis of the very jitted function the timing calls,
temp + output buffers (the buffer assignment is static, so this is exact for the program,
and no call is needed). torch sides: one call under torch.profiler with profile_memory=True;
the CPU allocator's peak total during the call minus its total just before it.
"""

import json
import os
import tempfile

METHOD = (
    "JAX: XLA's compiled memory analysis of the jitted function the timing calls "
    "(temp + output buffers); torch: the CPU allocator's peak during one call under "
    "torch.profiler(profile_memory=True) minus its total before the call."
)


def jax_bytes(jitted, *args):
    """temp + output bytes of XLA's compiled program for jitted(*args)."""
    return compiled_bytes(jitted.lower(*args).compile())


def compiled_bytes(compiled):
    """temp + output bytes of a compiled XLA program (jax's Compiled)."""
    ma = compiled.memory_analysis()
    return int(ma.temp_size_in_bytes + ma.output_size_in_bytes)


def torch_bytes(fn):
    """Peak bytes the CPU allocator holds during one call of fn, beyond what it held before."""
    from torch.profiler import ProfilerActivity, profile

    fn()  # warm: lazy initialisation allocates once, not per call
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    finally:
        os.remove(path)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    mem = [e["args"] for e in events if e.get("name") == "[memory]" and "args" in e]
    mem = [a for a in mem if a.get("Device Type", 0) == 0]  # CPU allocations only
    if not mem:
        return 0
    before = mem[0]["Total Allocated"] - mem[0]["Bytes"]
    return int(max(a["Total Allocated"] for a in mem) - before)


def impl_bytes(impl, mode):
    """Peak bytes of impl's `mode` ('fwd' or 'fwdbwd') call; None where it has no such pass."""
    if mode not in impl.passes:
        return None
    if impl.memory is not None:  # JAX: from the compiled program
        return impl.memory(mode)
    return torch_bytes(impl.passes[mode])


def measure(cases, only=None, modes=("fwd", "fwdbwd"), skip=("1 thread",)):
    """{(case index, label, mode): bytes} for every implementation and pass of `cases`.

    only: optional case indices to measure (default all). Labels holding any of `skip` are
    left out ("torch 1 thread" allocates as "torch" does).
    """
    out = {}
    for i, case in enumerate(cases):
        if only is not None and i not in only:
            continue
        for label, impl in case.impls.items():
            if any(s in label for s in skip):
                continue
            for mode in modes:
                b = impl_bytes(impl, mode)
                if b is not None:
                    out[(i, label, mode)] = b
    return out


MEMORY_CASES = ("scaled dot-product", "multi-head attention", "encoder layer")


def memory_cases(cases):
    """Indices of the cases whose peak memory is measured: the attention ones and the RNNs."""
    return [i for i, c in enumerate(cases) if c.name.startswith(MEMORY_CASES + ("LSTM", "GRU"))]


def render_memory(cases, memory, modes):
    """The peak-memory table's markdown lines: a row per case and pass (modes: (mode, name)
    pairs), a column per label."""
    from anatomy.tables import markdown_table

    labels = []
    for _, lb, _ in memory:
        if lb not in labels:
            labels.append(lb)
    labels.sort(key=lambda lb: not lb.startswith("anatomy"))  # ours first; stable otherwise
    rows = []
    for i, c in enumerate(cases):
        for mode, mode_name in modes:
            got = {lb: b for (j, lb, m), b in memory.items() if j == i and m == mode}
            if got:
                rows.append(
                    [c.name, c.shape, mode_name]
                    + [f"{got[lb] / 1e6:.3g}" if lb in got else "" for lb in labels]
                )
    return [
        "### Peak memory of one call, MB (beyond its inputs; JAX: XLA's compiled temp + output "
        "buffers; torch: the CPU allocator's peak under torch.profiler)",
        "",
        markdown_table(["benchmark", "shape", "pass"] + labels, rows),
        "",
        METHOD,
        "",
    ]
