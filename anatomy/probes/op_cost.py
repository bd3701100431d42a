"""Per-op FLOPs and bytes of an optimised HLO module, each op counted as often as it runs.

An op is one instruction of an executed computation (ENTRY, a loop body, a called
computation) that runs a kernel: a fusion (however many instructions it fuses), a dot, a copy,
a collective... (hlo.FREE_OPS and hlo.CONTROL_OPS run none). For each op:

    flops           dot: 2 · output elements · contracted size (an FMA is 2 FLOPs)
                    elementwise: 1 per output element (transcendentals counted apart:
                    exp, log, tanh, logistic, sqrt, rsqrt, power, erf, sin, cos, ...)
                    reduce: (input - output elements) × the reducer's FLOPs
                    a fusion: the sum over the instructions it fuses
    dot_flops       the part of flops done by dots (matrix units: tensor cores, the MXU), and
                    by library matmuls (XLA:GPU's cuBLAS custom-calls) and convolutions
    bytes           what the op reads and writes in memory, by XLA's HloCostAnalysis rules:
                    operands + result; a fusion reads each parameter once (only the slice a
                    slice / dynamic-slice takes; nothing for the buffer a dynamic-update-slice
                    updates in place, whose write is the update only); gather 2 × output,
                    scatter 3 × updates; a tuple its pointer table (8 bytes an element:
                    no kernel, only so that the totals match XLA's)
    runs            executions per call of the program (hlo.Module.runs: loop trips multiplied)
    footprint       distinct bytes one execution of the op's computation touches (its working
                    set; for a loop body: the bytes touched between two uses of a loop-carried
                    buffer): each op's bytes split between its result (written) and its
                    operands (read, in proportion to their sizes), a buffer touched by several
                    ops counted once at its largest touch

Why per op and not XLA's whole-program cost analysis split by loop bodies: a roofline is a
per-kernel bound (each kernel is limited either by arithmetic or by memory traffic, and
Σ max ≥ max Σ: a compute-bound attention matmul does not hide a memory-bound softmax), the
number of kernels executed is itself one term of the model (dispatch latency), and per-op
costs need no second compilation of each loop body. XLA's totals remain the check:
``profile(text, loops=False)`` reproduces ``cost_analysis()`` (tests/anatomy/probes/test_probes_scaling.py).
"""

from __future__ import annotations

import dataclasses
import math
import re

from anatomy.probes import hlo

TRANSCENDENTAL = frozenset(
    {
        "acosh",
        "erf",
        "exponential",
        "exp",
        "log",
        "logistic",
        "power",
        "sqrt",
        "cbrt",
        "rsqrt",
        "tanh",
        "sine",
        "cosine",
        "sin",
        "cos",
        "exponential-minus-one",
        "expm1",
        "log-plus-one",
        "log1p",
        "atan2",
        "tan",
    }
)
ELEMENTWISE = frozenset(
    {
        "abs",
        "add",
        "and",
        "ceil",
        "clamp",
        "compare",
        "convert",
        "count-leading-zeros",
        "divide",
        "floor",
        "imag",
        "is-finite",
        "maximum",
        "minimum",
        "multiply",
        "negate",
        "not",
        "or",
        "popcnt",
        "real",
        "reduce-precision",
        "remainder",
        "round-nearest-afz",
        "round-nearest-even",
        "select",
        "shift-left",
        "shift-right-arithmetic",
        "shift-right-logical",
        "sign",
        "subtract",
        "xor",
    }
)
COLLECTIVES = frozenset(
    {
        "all-reduce",
        "all-reduce-start",
        "all-gather",
        "all-gather-start",
        "reduce-scatter",
        "all-to-all",
        "collective-permute",
        "collective-permute-start",
        "collective-broadcast",
    }
)
_DONE = ("all-reduce-done", "all-gather-done", "collective-permute-done", "copy-done")
_GEMM = re.compile(r'custom_call_target="[^"]*(?:gemm|matmul)', re.IGNORECASE)
_LHS_CONTRACTING = re.compile(r'"lhs_contracting_dimensions":\s*\[([^\]]*)\]')


@dataclasses.dataclass(frozen=True)
class OpCost:
    """One executed op: where it is, what it does once, and how often it runs."""

    name: str
    computation: str
    opcode: str
    flops: float  # per execution, dots' included (transcendentals not)
    dot_flops: float  # per execution, the dots' share of flops
    transcendentals: float  # per execution
    bytes: float  # per execution, read + written
    runs: float  # executions per call of the program
    loop_depth: int  # while loops around it
    kernel: bool = True  # False: no kernel runs (a tuple's pointer table, counted in bytes only)
    dot_dtype: str = ""  # element type of its (first) dot's operands, '' without a dot
    footprint: float = 0.0  # distinct bytes one execution of its computation touches


def _dims(ins: hlo.Instruction, key: str) -> list[int]:
    v = ins.attr(key)
    return [int(x) for x in re.findall(r"\d+", v)] if v else []


def _elements(shape: str) -> int:
    return sum(math.prod(d) for _, d in hlo.arrays(shape))


class _Costs:
    """FLOPs of instructions (fused ones included) and bytes of top-level ops, for one module."""

    def __init__(self, module: hlo.Module):
        self.m = module
        self._comp_flops: dict[str, tuple[float, float, float]] = {}

    # -- FLOPs ------------------------------------------------------------------------------
    def computation_flops(self, comp: str) -> tuple[float, float, float]:
        """(flops, dot_flops, transcendentals) of one execution of every instruction of comp."""
        if comp not in self._comp_flops:
            total = [0.0, 0.0, 0.0]
            for ins in self.m.computations.get(comp, ()):
                for k, v in enumerate(self.instruction_flops(ins)):
                    total[k] += v
            self._comp_flops[comp] = tuple(total)
        return self._comp_flops[comp]

    def instruction_flops(self, ins: hlo.Instruction) -> tuple[float, float, float]:
        op = ins.opcode
        if op == "fusion":
            return self.computation_flops(ins.attr("calls").lstrip("%"))
        if op in TRANSCENDENTAL:
            return 0.0, 0.0, float(_elements(ins.shape))
        if op in ELEMENTWISE:
            return float(_elements(ins.shape)), 0.0, 0.0
        if op == "dot":
            lhs = hlo.arrays(self.m.operand_shapes(ins)[0])[0][1]
            width = math.prod(lhs[d] for d in _dims(ins, "lhs_contracting_dims"))
            f = 2.0 * _elements(ins.shape) * width
            return f, f, 0.0
        if op in ("reduce", "reduce-window", "scatter", "map", "all-reduce", "all-reduce-start"):
            sub = self.computation_flops(ins.attr("to_apply").lstrip("%"))
            if op == "reduce":
                out = hlo.arrays(ins.shape)[0][1]
                count = _elements(self.m.operand_shapes(ins)[0]) - math.prod(out)
            elif op == "reduce-window":
                window = re.search(r"size=([\dx]+)", ins.attrs)
                size = math.prod(int(s) for s in window.group(1).split("x")) if window else 1
                count = (size - 1) * math.prod(hlo.arrays(ins.shape)[0][1])
            elif op == "scatter":
                count = _elements(self.m.operand_shapes(ins)[-1])
            else:  # map, all-reduce: one application per output element
                count = _elements(ins.shape)
            return sub[0] * count, 0.0, sub[2] * count
        if op in ("rng", "rng-bit-generator"):
            return 0.0, 0.0, float(_elements(ins.shape))
        if op == "sort":
            n = _elements(self.m.operand_shapes(ins)[0])
            return float(n * math.ceil(math.log2(max(n, 2)))), 0.0, 0.0
        if op == "convolution":
            return self._convolution_flops(ins)
        if op == "custom-call" and _GEMM.search(ins.attrs):
            return self._gemm_flops(ins)
        return 0.0, 0.0, 0.0

    def _gemm_flops(self, ins):
        """A library matmul (XLA:GPU's cuBLAS / cuBLASLt custom-calls): 2 · output elements ·
        contracted size, the contracting dimensions read from its backend_config."""
        lhs = hlo.arrays(self.m.operand_shapes(ins)[0])[0][1]
        dims = _LHS_CONTRACTING.search(ins.attrs)
        picked = [int(d) for d in re.findall(r"\d+", dims.group(1))] if dims else [len(lhs) - 1]
        out = hlo.arrays(ins.shape)[0][1]  # the result (a tuple also holds a workspace)
        f = 2.0 * math.prod(out) * math.prod(lhs[d] for d in picked)
        return f, f, 0.0

    def _convolution_flops(self, ins):
        """2 · output elements · (kernel spatial positions · input features / groups): dense,
        no dilation or padding correction (no convolution runs in anatomy's programs)."""
        rhs = hlo.arrays(self.m.operand_shapes(ins)[1])[0][1]
        labels = ins.attr("dim_labels") or ""
        kernel = labels.split("_")[1].split("->")[0] if "_" in labels else ""
        spatial = [rhs[i] for i, c in enumerate(kernel) if c.isdigit()]
        in_feat = rhs[kernel.index("i")] if "i" in kernel else 1
        f = 2.0 * _elements(ins.shape) * math.prod(spatial) * in_feat
        return f, f, 0.0

    def dot_dtype(self, ins: hlo.Instruction) -> str:
        """Element type of the first dot's left operand in `ins` (itself or its fusion)."""
        if ins.opcode in ("dot", "custom-call", "convolution"):
            arrays = hlo.arrays(self.m.operand_shapes(ins)[0])
            return arrays[0][0] if arrays else ""
        if ins.opcode == "fusion":
            for inner in self.m.computations.get(ins.attr("calls"), ()):
                found = self.dot_dtype(inner)
                if found:
                    return found
        return ""

    # -- bytes ------------------------------------------------------------------------------
    def op_bytes(self, ins: hlo.Instruction) -> float:
        op, m = ins.opcode, self.m
        shapes = m.operand_shapes(ins)
        if op in hlo.FREE_OPS:
            return 0.0
        if op == "fusion":
            return self._fusion_bytes(ins)
        if op == "dynamic-update-slice":
            return 2 * hlo.shape_bytes(shapes[1]) + sum(map(hlo.shape_bytes, shapes[2:]))
        if op == "dynamic-slice":
            return 2 * hlo.shape_bytes(ins.shape) + sum(map(hlo.shape_bytes, shapes[1:]))
        if op == "slice":
            return 2 * hlo.shape_bytes(ins.shape)
        if op == "gather":
            return 2 * hlo.shape_bytes(ins.shape) + hlo.shape_bytes(shapes[1])
        if op == "scatter":
            return 3 * hlo.shape_bytes(shapes[-1]) + hlo.shape_bytes(shapes[1])
        return hlo.shape_bytes(ins.shape) + sum(map(hlo.shape_bytes, shapes))

    def _fusion_bytes(self, fusion: hlo.Instruction) -> float:
        comp = fusion.attr("calls").lstrip("%")
        body = self.m.computations[comp]
        users = self.m.users(comp)
        by_name = {i.name: i for i in body}
        root = next((i for i in body if i.root), body[-1])
        # written: each output (a tuple root: each element), an in-place update its update only
        outs = [by_name.get(o) for o in root.operands] if root.opcode == "tuple" else [root]
        written = 0.0
        for out in outs:
            if out is not None and out.opcode == "dynamic-update-slice":
                written += hlo.shape_bytes(self.m.operand_shapes(out)[1])
            elif out is not None:
                written += hlo.shape_bytes(out.shape)
        # read: each parameter once, or the slices taken of it
        read = 0.0
        for p in body:
            if p.opcode == "parameter":
                read += self._parameter_read(p, users.get(p.name, []))
        return written + read

    def footprint(self, comp: str) -> float:
        """Distinct bytes one execution of comp touches (module doc, `footprint`)."""
        touched: dict[str, float] = {}
        for ins in self.m.computations[comp]:
            if ins.opcode in hlo.FREE_OPS or ins.opcode in hlo.CONTROL_OPS or ins.opcode == "tuple":
                continue
            moved = self.op_bytes(ins)
            written = min(hlo.shape_bytes(ins.shape), moved)
            touched[ins.name] = max(touched.get(ins.name, 0.0), written)
            sizes = [hlo.shape_bytes(s) for s in self.m.operand_shapes(ins)]
            for name, size in zip(ins.operands, sizes):
                share = (moved - written) * size / (sum(sizes) or 1.0)
                touched[name] = max(touched.get(name, 0.0), share)
        return sum(touched.values())

    def _parameter_read(self, p: hlo.Instruction, users: list) -> float:
        size, seen = 0.0, False
        for u in users:
            if u.opcode == "slice":
                size += hlo.shape_bytes(u.shape)
            elif u.opcode == "dynamic-slice" and u.operands[0] == p.name:
                size += hlo.shape_bytes(u.shape)
            elif u.opcode == "dynamic-update-slice" and u.operands[0] == p.name:
                continue  # the buffer updated in place: not read
            elif u.opcode in ("broadcast", "reshape"):
                size += hlo.shape_bytes(p.shape)
            elif not seen:
                seen = True
                size += hlo.shape_bytes(p.shape)
        return size


def op_costs(text_or_module, loops: bool = True) -> list[OpCost]:
    """Every executed op of an HLO module (text or hlo.Module) with its per-execution FLOPs and
    bytes and its runs per call (loops=False: loop bodies once, as XLA's cost analysis)."""
    m = text_or_module if isinstance(text_or_module, hlo.Module) else hlo.Module(text_or_module)
    runs, depth = m.runs(loops), m.loop_depth
    costs = _Costs(m)
    out = []
    for comp, n in runs.items():
        footprint = costs.footprint(comp)
        for ins in m.computations[comp]:
            if ins.opcode == "tuple":
                size = 8.0 * hlo.tuple_size(ins.shape)
                out.append(OpCost(ins.name, comp, "tuple", 0, 0, 0, size, n, depth[comp], False))
                continue
            if ins.opcode in hlo.FREE_OPS or ins.opcode in hlo.CONTROL_OPS or ins.opcode in _DONE:
                continue
            flops, dot_flops, trans = costs.instruction_flops(ins)
            out.append(
                OpCost(
                    ins.name,
                    comp,
                    ins.opcode,
                    flops,
                    dot_flops,
                    trans,
                    costs.op_bytes(ins),
                    n,
                    depth.get(comp, 0),
                    dot_dtype=costs.dot_dtype(ins) if dot_flops else "",
                    footprint=footprint,
                )
            )
    return out


def profile(text_or_module, loops: bool = True) -> dict:
    """Totals of op_costs over one call of the program:

    dict(flops, dot_flops, transcendentals, bytes: Σ runs × per-execution value;
         ops: Σ runs of kernels (each one dispatch), ops_in_loops: the part inside
         while loops, static_ops: distinct ops in the program text,
         loop_iterations: Σ while-body runs (serial steps, nested loops multiplied),
         collectives: Σ runs of collective ops)
    """
    m = text_or_module if isinstance(text_or_module, hlo.Module) else hlo.Module(text_or_module)
    ops = op_costs(m, loops)
    runs = m.runs(loops)
    iterations = 0.0
    for comp, n in runs.items():
        for ins in m.computations[comp]:
            if ins.opcode == "while":
                iterations += n * ((ins.trip_count or 1) if loops else 1)
    return {
        "flops": sum(o.flops * o.runs for o in ops),
        "dot_flops": sum(o.dot_flops * o.runs for o in ops),
        "transcendentals": sum(o.transcendentals * o.runs for o in ops),
        "bytes": sum(o.bytes * o.runs for o in ops),
        "ops": sum(o.runs for o in ops if o.kernel),
        "ops_in_loops": sum(o.runs for o in ops if o.kernel and o.loop_depth > 0),
        "static_ops": sum(o.kernel for o in ops),
        "loop_iterations": iterations,
        "collectives": sum(o.runs for o in ops if o.opcode in COLLECTIVES),
    }
