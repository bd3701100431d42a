"""Serial depth of a compiled program: its longest chain of dependent operations.

``hlo_sequential_steps`` (cost.py) counts loop iterations, which is 0 both for attention and
for an associative scan; what separates the two is depth. The critical path of an optimised
HLO module is, over the ENTRY computation's dataflow graph,

    path(instruction) = max(path(operand) for its operands) + weight(instruction)
    weight = 0     parameter, constant, tuple, get-tuple-element, bitcast (no work)
             path of the called computation    fusion (calls=), call (to_apply=)
             trip_count · path(body)           while (XLA's known_trip_count; none: error)
             max over the branches             conditional
             1     any other instruction (a reduce or a dot counts 1, however wide)

So a fused elementwise chain of k ops counts k, a scan over N steps N · (its body's path), an
associative scan over N about c · log2 N (its up- and down-sweep levels).
"""

import functools
import re

from anatomy.probes.cost import _TRIP, _split_computations, compiled

_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_OPCODE = re.compile(r"\s([a-z][a-z0-9\-]*)\(")
_NAME = re.compile(r"%([\w.\-]+)")
_FREE = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all"}


def _attr(rest, key):
    m = re.search(rf"\b{key}=%?([\w.\-]+)", rest)
    return m.group(1) if m else None


def hlo_critical_path(hlo_text):
    """The longest chain of dependent operations of an HLO module (see the module doc); int."""
    comps, entry = _split_computations(hlo_text)

    @functools.cache
    def path(name):
        depth, total = {}, 0
        for line in comps.get(name, ()):
            m = _INSTR.match(line)
            if m is None:
                continue
            instr, rest = m.groups()
            op = _OPCODE.search(" " + rest)
            op = op.group(1) if op else ""
            before = max((depth[n] for n in _NAME.findall(rest) if n in depth), default=0)
            if op in _FREE:
                weight = 0
            elif op in ("fusion", "call"):
                weight = max(1, path(_attr(rest, "calls") or _attr(rest, "to_apply")))
            elif op == "while":
                trip = _TRIP.search(rest)
                if trip is None:
                    raise ValueError(f"while loop {instr} has no known trip count")
                weight = int(trip.group(1)) * max(1, path(_attr(rest, "body")))
            elif op == "conditional":
                names = re.findall(r"(?:true|false)_computation=%?([\w.\-]+)", rest)
                group = re.search(r"branch_computations=\{([^}]*)\}", rest)
                if group:
                    names += [b.strip().lstrip("%") for b in group.group(1).split(",")]
                weight = max([path(b) for b in names if b] or [1])
            else:
                weight = 1
            depth[instr] = before + weight
            total = max(total, depth[instr])
        return total

    return path(entry)


def compiled_critical_path(fn, *args):
    """hlo_critical_path of the compiled (optimised) HLO of jit(fn)(*args)."""
    return hlo_critical_path(compiled(fn, *args).as_text())
