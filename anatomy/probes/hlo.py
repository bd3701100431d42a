"""An optimised HLO module read as data: instructions, shapes in bytes, and how often each
computation runs in one call of the program.

    m = hlo.Module(compiled(fn, *args).as_text())
    m.computations["region_0.4"]        # [Instruction(name, shape, opcode, operands, attrs)]
    m.runs()                            # {computation: executions per call of the program}
    hlo.shape_bytes("(s32[], f32[8,128]{1,0})")   # 4 + 4096

How often a computation runs (``runs``), walking the call graph from ENTRY:
    ENTRY                            1
    while body                       caller's runs × known_trip_count
    while condition                  caller's runs × (known_trip_count + 1)
    call / async-start / branches    caller's runs (every branch of a conditional counted as
                                     taken: an upper bound; none of the programs here branch)
    fusion bodies, reducers          not executed on their own: they are parts of ONE op
                                     (``op_owner`` maps them to the instruction that runs them)
so nested loops multiply through. A while loop without a known trip count raises ValueError
(a count would be a guess). ``runs(loops=False)`` counts every computation once: the way
XLA's own cost analysis counts a loop body (anatomy/probes/cost.py).

The module text is split into computations by cost.py's reader, and trip counts are read by
the same pattern; this module adds the instructions' structure on top.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re

from anatomy.probes.cost import _TRIP, _split_computations

# bytes per element of each HLO element type (s4/u4 pack two per byte; token has no data)
DTYPE_BYTES = {
    "pred": 1,
    "s4": 0.5,
    "u4": 0.5,
    "s8": 1,
    "u8": 1,
    "f8e4m3fn": 1,
    "f8e5m2": 1,
    "f8e4m3": 1,
    "f8e5m2fnuz": 1,
    "f8e4m3fnuz": 1,
    "s16": 2,
    "u16": 2,
    "f16": 2,
    "bf16": 2,
    "s32": 4,
    "u32": 4,
    "f32": 4,
    "s64": 8,
    "u64": 8,
    "f64": 8,
    "c64": 8,
    "c128": 16,
    "token": 0,
}
_ARRAY = re.compile(r"\b([a-z][a-z0-9]*)\[([^\]]*)\]")
_HEAD = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*")
_OPCODE = re.compile(r"\s*([a-z][a-z0-9\-]*)\(")
_NAMES = re.compile(r"%([\w.\-]+)")

# Instructions that move no data and run no kernel.
FREE_OPS = frozenset(
    {
        "parameter",
        "constant",
        "tuple",
        "get-tuple-element",
        "bitcast",
        "after-all",
        "add-dependency",
        "opt-barrier",
        "domain",
        "partition-id",
        "replica-id",
    }
)
# Instructions whose cost is that of the computations they call (counted through runs()).
CONTROL_OPS = frozenset(
    {"while", "call", "conditional", "async-start", "async-update", "async-done"}
)
# Callees that are one op's inner code, not separately executed computations.
_APPLIERS = ("to_apply", "select", "scatter")


def arrays(shape: str) -> list[tuple[str, tuple[int, ...]]]:
    """[(element type, dims)] of every array in a shape text (a tuple lists each element).

    arrays('(s32[], f32[8,128]{1,0})') -> [('s32', ()), ('f32', (8, 128))]
    """
    out = []
    for dtype, dims in _ARRAY.findall(shape):
        if dtype not in DTYPE_BYTES:
            continue
        sizes = tuple(int(d.lstrip("<=")) for d in dims.split(",") if d.strip())
        out.append((dtype, sizes))
    return out


def shape_bytes(shape: str) -> float:
    """Bytes of every array in a shape text (a tuple: the sum of its elements)."""
    return float(sum(DTYPE_BYTES[t] * math.prod(d) for t, d in arrays(shape)))


def tuple_size(shape: str) -> int:
    """Top-level elements of a tuple shape text (0 for an array)."""
    shape = shape.strip()
    if not shape.startswith("("):
        return 0
    inner, depth, n = shape[1 : _balanced(shape, 0) - 1], 0, 0
    for c in inner:
        depth += c in "([{"
        depth -= c in ")]}"
        n += c == "," and depth == 0
    return n + 1 if inner.strip() else 0


def shape_elements(shape: str) -> int:
    """Elements of the first array in a shape text (0 for a shape without one)."""
    a = arrays(shape)
    return math.prod(a[0][1]) if a else 0


def _balanced(text: str, start: int) -> int:
    """Index just past the bracket group opening at text[start] ('(' or '{')."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack = []
    for i in range(start, len(text)):
        c = text[i]
        if c in pairs:
            stack.append(pairs[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
    raise ValueError(f"unbalanced brackets in HLO text: {text[start : start + 80]!r}")


@dataclasses.dataclass(frozen=True)
class Instruction:
    """One HLO instruction: `name = shape opcode(operands), attrs`."""

    name: str
    shape: str  # result shape text, e.g. 'f32[8,128]{1,0}' or '(s32[], f32[8]{0})'
    opcode: str
    operands: tuple[str, ...]  # operand instruction names, in order
    attrs: str  # the text after the operand list (calls=, dimensions=, backend_config=...)
    root: bool = False

    def attr(self, key: str) -> str | None:
        """The value of attribute `key` as written (up to the next top-level comma; a leading
        % dropped), or None."""
        m = re.search(rf"(?:^|[\s,]){re.escape(key)}=", self.attrs)
        if m is None:
            return None
        i = j = m.end()
        while j < len(self.attrs) and self.attrs[j] not in ", ":
            j = _balanced(self.attrs, j) if self.attrs[j] in "{[(" else j + 1
        return self.attrs[i:j].lstrip("%") or None

    def callees(self) -> list[tuple[str, str]]:
        """[(role, computation)] this instruction calls: calls / to_apply / body / condition /
        branch (each branch of a conditional) / select / scatter."""
        out = []
        for role in ("calls", "to_apply", "body", "condition", "select", "scatter"):
            v = self.attr(role)
            if v:
                out.append((role, v.lstrip("%")))
        for role in ("true_computation", "false_computation"):
            v = self.attr(role)
            if v:
                out.append(("branch", v.lstrip("%")))
        group = self.attr("branch_computations")
        if group:
            out += [("branch", n) for n in _NAMES.findall(group)]
        return out

    @property
    def trip_count(self) -> int | None:
        """A while loop's known_trip_count (None if XLA did not determine one)."""
        m = _TRIP.search(self.attrs)
        return int(m.group(1)) if m else None


def parse_instruction(line: str) -> Instruction | None:
    """An Instruction from one line of a computation's body; None for anything else."""
    head = _HEAD.match(line)
    if head is None:
        return None
    i = head.end()
    if line[i] == "(":
        j = _balanced(line, i)
        shape = line[i:j]
    else:
        j = line.index(" ", i)
        shape = line[i:j]
    op = _OPCODE.match(line, j)
    if op is None:
        return None
    k = op.end() - 1  # the '(' of the operand list
    end = _balanced(line, k)
    operands = tuple(_NAMES.findall(line[k:end]))
    attrs = line[end:].lstrip(", ")
    return Instruction(head.group(2), shape, op.group(1), operands, attrs, bool(head.group(1)))


class Module:
    """An HLO module's computations ({name: [Instruction]}) and its ENTRY's name."""

    def __init__(self, text: str):
        comps, self.entry = _split_computations(text)
        self.computations = {
            name: [ins for ins in map(parse_instruction, lines) if ins is not None]
            for name, lines in comps.items()
        }
        self.by_name = {
            ins.name: ins for body in self.computations.values() for ins in body
        }  # instruction names are unique in a module

    def runs(self, loops: bool = True) -> dict[str, float]:
        """{executed computation: how many times it runs per call of the program} (module doc).

        loops=False: every loop body and condition once (XLA's cost analysis' convention).
        Fusion bodies and reducers are absent: they are not executed on their own.
        """
        counts: dict[str, float] = {}

        def visit(comp: str, n: float, stack: tuple = ()):
            if comp in stack or comp not in self.computations:
                return
            counts[comp] = counts.get(comp, 0.0) + n
            for ins in self.computations[comp]:
                if ins.opcode == "fusion" or ins.opcode == "async-done":
                    continue
                for role, callee in ins.callees():
                    if role in _APPLIERS and ins.opcode != "call":
                        continue  # a reducer / scatter combiner: part of its op
                    factor = 1.0
                    if ins.opcode == "while" and loops:
                        trips = ins.trip_count
                        if trips is None:
                            raise ValueError(f"while loop {ins.name} has no known trip count")
                        factor = trips + 1 if role == "condition" else trips
                    visit(callee, n * factor, stack + (comp,))

        visit(self.entry, 1.0)
        return counts

    @functools.cached_property
    def loop_depth(self) -> dict[str, int]:
        """{executed computation: how many while loops enclose it} (0 for ENTRY)."""
        depth: dict[str, int] = {}

        def visit(comp: str, d: int, stack: tuple = ()):
            if comp in stack or comp not in self.computations:
                return
            depth[comp] = max(depth.get(comp, 0), d)
            for ins in self.computations[comp]:
                if ins.opcode in ("fusion", "async-done"):
                    continue
                for role, callee in ins.callees():
                    if role in _APPLIERS and ins.opcode != "call":
                        continue
                    visit(callee, d + (ins.opcode == "while"), stack + (comp,))

        visit(self.entry, 0)
        return depth

    def operand_shapes(self, ins: Instruction) -> list[str]:
        """The result shape of each operand of `ins` ('' for one not found)."""
        return [self.by_name[o].shape if o in self.by_name else "" for o in ins.operands]

    def users(self, comp: str) -> dict[str, list[Instruction]]:
        """{instruction name: [instructions of `comp` that read it]}."""
        out: dict[str, list[Instruction]] = {}
        for ins in self.computations[comp]:
            for o in ins.operands:
                out.setdefault(o, []).append(ins)
        return out
