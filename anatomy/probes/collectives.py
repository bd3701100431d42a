"""Every collective of a compiled (SPMD-partitioned) program, read from its optimised HLO.

    cs = collectives(compiled(step, *args).as_text())
    cs[0]  # {'name', 'kind': 'all-reduce', 'dtype': 'f32', 'bytes': 2048.0, 'group_size': 8,
           #  'n_groups': 1, 'runs': 7.0, 'loop_depth': 1, 'in_loop': True, 'computation': ...}
    summarize(cs)  # per kind: static count, executions per call, bytes moved per call

kind        all-reduce | all-gather | reduce-scatter | all-to-all | collective-permute
            (async pairs: the -start counts, the -done does not)
bytes       the buffer one device holds: all-reduce its (= the result's) size, all-gather the
            gathered result, reduce-scatter its input, all-to-all and collective-permute the
            result (shapes in an SPMD program are per device)
group_size  devices per replica group (explicit {{0,1},{2,3}} or iota [G,S]<=[dims]T(perm)
            form; no groups = every partition); a collective-permute: its pairs' devices
runs        executions per call of the program: inside a while body, the body's runs (trip
            count, nested loops multiplied through; hlo.Module.runs)
wire_bytes  bytes each device sends over its links for one execution, ring algorithms
            (Thakur et al. 2005; NCCL's bus bandwidth): all-reduce 2(p-1)/p · bytes,
            all-gather / reduce-scatter / all-to-all (p-1)/p · bytes, collective-permute bytes
"""

from __future__ import annotations

import re

import numpy as np

from anatomy.probes import hlo

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
_PARTITIONS = re.compile(r"num_partitions=(\d+)")
_REPLICAS = re.compile(r"replica_count=(\d+)")


def kind_of(opcode: str) -> str | None:
    """The collective an opcode performs ('all-reduce-start' -> 'all-reduce'), else None."""
    base = opcode.removesuffix("-start")
    return base if base in KINDS and not opcode.endswith("-done") else None


def replica_groups(text: str | None, n_devices: int) -> list[list[int]]:
    """Replica groups from an attribute value: '{{0,1},{2,3}}', iota '[2,4]<=[8]' or
    '[4,2]<=[2,4]T(1,0)'; None or '{}' -> one group of every device."""
    if not text or text.strip() in ("{}", "{{}}"):
        return [list(range(n_devices))]
    iota = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
    if iota:
        shape = [int(x) for x in iota.group(1).split(",")]
        dims = [int(x) for x in iota.group(2).split(",")]
        ids = np.arange(int(np.prod(dims))).reshape(dims)
        if iota.group(3):
            ids = ids.transpose([int(x) for x in iota.group(3).split(",")])
        return ids.reshape(shape).tolist()
    return [
        [int(x) for x in g.split(",") if x.strip()] for g in re.findall(r"\{([\d,\s]*)\}", text)
    ]


def wire_factor(kind: str, group_size: int) -> float:
    """Bytes each device sends per byte of the collective's buffer (module doc)."""
    p = max(group_size, 1)
    if kind == "all-reduce":
        return 2.0 * (p - 1) / p
    if kind == "collective-permute":
        return 1.0
    return (p - 1) / p


def _buffer_bytes(kind: str, ins: hlo.Instruction, operand_shapes: list[str]) -> tuple[str, float]:
    """(element type, bytes) of the buffer the module doc defines for this collective."""
    result = hlo.arrays(ins.shape)
    inputs = [a for s in operand_shapes for a in hlo.arrays(s)]
    if kind == "reduce-scatter":
        chosen = inputs
    elif ins.opcode.endswith("-start") and kind != "all-reduce":
        # an async start returns (operands, results[, scratch]): the results follow the operands
        chosen = result[len(inputs) : 2 * len(inputs)] or result
    else:
        chosen = result
    size = sum(hlo.DTYPE_BYTES[t] * int(np.prod(d)) for t, d in chosen)
    dtype = chosen[0][0] if chosen else ""
    return dtype, float(size)


def collectives(text_or_module, text: str | None = None) -> list[dict]:
    """Every collective op of an HLO module (text, or hlo.Module plus its text), as dicts
    (module doc), in program order within each computation."""
    if isinstance(text_or_module, hlo.Module):
        m, source = text_or_module, text or ""
    else:
        m, source = hlo.Module(text_or_module), text_or_module
    found = _PARTITIONS.search(source) or _REPLICAS.search(source)
    n_devices = int(found.group(1)) if found else 1
    runs, depth = m.runs(), m.loop_depth
    out = []
    for comp, n in runs.items():
        for ins in m.computations[comp]:
            kind = kind_of(ins.opcode)
            if kind is None:
                continue
            if kind == "collective-permute":
                pairs = re.findall(r"\{(\d+),(\d+)\}", ins.attr("source_target_pairs") or "")
                groups = [sorted({int(a) for p in pairs for a in p})] if pairs else [[0]]
            else:
                groups = replica_groups(ins.attr("replica_groups"), n_devices)
            dtype, size = _buffer_bytes(kind, ins, m.operand_shapes(ins))
            p = len(groups[0]) if groups else 1
            out.append(
                {
                    "name": ins.name,
                    "kind": kind,
                    "dtype": dtype,
                    "bytes": size,
                    "group_size": p,
                    "n_groups": len(groups),
                    "wire_bytes": size * wire_factor(kind, p),
                    "runs": n,
                    "loop_depth": depth.get(comp, 0),
                    "in_loop": depth.get(comp, 0) > 0,
                    "computation": comp,
                }
            )
    return out


def summarize(cs: list[dict]) -> dict:
    """Totals over collectives(...) per call of the program:

    {'total': {...}, 'by_kind': {kind: {...}}} with, for each, static (ops in the program
    text), executions (Σ runs), in_loop_executions, bytes (Σ runs × bytes) and wire_bytes.
    """

    def tally(rows):
        return {
            "static": len(rows),
            "executions": float(sum(r["runs"] for r in rows)),
            "in_loop_executions": float(sum(r["runs"] for r in rows if r["in_loop"])),
            "bytes": float(sum(r["runs"] * r["bytes"] for r in rows)),
            "wire_bytes": float(sum(r["runs"] * r["wire_bytes"] for r in rows)),
        }

    kinds = sorted({r["kind"] for r in cs})
    return {
        "total": tally(cs),
        "by_kind": {k: tally([r for r in cs if r["kind"] == k]) for k in kinds},
    }
