"""What XLA says a program costs, and how many steps of it must run one after another.

* ``xla_cost(fn, *args)``: FLOPs / bytes / transcendentals from
  ``jax.jit(fn).lower(*args).compile().cost_analysis()``. In jax 0.10.2 that returns a
  dict (older releases returned a list with one dict per program; both are accepted).
* XLA's cost analysis counts a ``while`` body ONCE, not times its trip count (measured:
  a tanh RNN over T=16 and T=64 steps reports the same loop cost). ``scan_cost`` corrects
  for that: total = cost(program) + (trip_count - 1) · cost(one step), with the trip count
  read from the compiled HLO (``known_trip_count``), not assumed.
* ``hlo_sequential_steps`` / ``jaxpr_sequential_steps``: the number of loop iterations the
  compiled program must run in sequence (trip counts, multiplied through nesting). An RNN
  has N of them forward and N backward; self-attention has none.
"""

import re

import jax
from jax.extend import core as jex_core

COST_KEYS = ("flops", "bytes accessed", "transcendentals")


def _as_dict(ca):
    """cost_analysis() output (dict, or list of dicts in older jax) -> one dict of floats."""
    if ca is None:
        raise ValueError("cost_analysis() returned None on this backend")
    if isinstance(ca, dict):
        ca = [ca]
    out = {}
    for entry in ca:
        for k, v in entry.items():
            out[k] = out.get(k, 0.0) + float(v)
    return out


def compiled(fn, *args):
    """jax.jit(fn).lower(*args).compile(), the object cost and HLO are read from."""
    return jax.jit(fn).lower(*args).compile()


def cost_of(executable):
    """XLA's cost analysis of a compiled executable (from ``compiled``).

    Returns: dict(flops, bytes, transcendentals) as floats (loop bodies counted once).
    """
    ca = _as_dict(executable.cost_analysis())
    return {
        "flops": ca.get("flops", 0.0),
        "bytes": ca.get("bytes accessed", 0.0),
        "transcendentals": ca.get("transcendentals", 0.0),
    }


def xla_cost(fn, *args):
    """XLA's cost analysis of jit(fn)(*args): dict(flops, bytes, transcendentals), loop bodies once."""
    return cost_of(compiled(fn, *args))


# ------------------------------------------------------------------ HLO while loops

_COMP_START = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_CALLEE = re.compile(
    r"\b(calls|to_apply|body|condition|true_computation|false_computation)="
    r"%?([\w.\-]+)"
)
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_TRIP = re.compile(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"(\d+)"')


def _split_computations(hlo_text):
    """HLO module text -> ({name: [instruction lines]}, entry name)."""
    comps, entry, current = {}, None, None
    for line in hlo_text.splitlines():
        if current is None:
            m = _COMP_START.match(line)
            if m and not line.startswith(" "):
                current = m.group(1)
                comps[current] = []
                if line.startswith("ENTRY"):
                    entry = current
        elif line.strip() == "}":
            current = None
        else:
            comps[current].append(line)
    if entry is None:
        raise ValueError("no ENTRY computation found in the HLO text")
    return comps, entry


def while_loops(hlo_text):
    """Every while instruction in an HLO module: list of dict(computation, body, trip_count).

    trip_count is XLA's ``known_trip_count`` (None when XLA could not determine it).
    """
    comps, _ = _split_computations(hlo_text)
    loops = []
    for name, lines in comps.items():
        for line in lines:
            if " while(" not in line:
                continue
            body = re.search(r"\bbody=%?([\w.\-]+)", line)
            trip = _TRIP.search(line)
            loops.append(
                {
                    "computation": name,
                    "body": body.group(1) if body else None,
                    "trip_count": int(trip.group(1)) if trip else None,
                }
            )
    return loops


def hlo_sequential_steps(hlo_text):
    """Serial loop iterations of an HLO module, from its while loops' known trip counts.

    steps(computation) = Σ over its while loops of trip_count · max(1, steps(body))
                         + Σ over other called computations of their steps
                         (max over the branches of a conditional).
    A loop without a known trip count raises ValueError (the count would be a guess).
    Returns: int (0 for a loop-free program such as self-attention).
    """
    comps, entry = _split_computations(hlo_text)
    memo = {}

    def steps(name, stack=()):
        if name in memo:
            return memo[name]
        if name in stack or name not in comps:
            return 0
        total = 0
        for line in comps[name]:
            if " while(" in line:
                body = re.search(r"\bbody=%?([\w.\-]+)", line).group(1)
                trip = _TRIP.search(line)
                if trip is None:
                    raise ValueError(f"while loop with body {body} has no known trip count")
                total += int(trip.group(1)) * max(1, steps(body, stack + (name,)))
                continue
            for _kind, callee in _CALLEE.findall(line):  # XLA:CPU wraps loops in call(to_apply=)
                total += steps(callee, stack + (name,))
            for group in _BRANCHES.findall(line):
                names = [b.strip().lstrip("%") for b in group.split(",") if b.strip()]
                total += max([steps(b, stack + (name,)) for b in names] or [0])
        memo[name] = total
        return total

    return steps(entry)


def compiled_sequential_steps(fn, *args):
    """hlo_sequential_steps of the compiled (optimised) HLO of jit(fn)(*args)."""
    return hlo_sequential_steps(compiled(fn, *args).as_text())


# ------------------------------------------------------------------ jaxpr loops


def _sub_jaxprs(params):
    for v in params.values():
        for item in v if isinstance(v, (tuple, list)) else (v,):
            if isinstance(item, jex_core.ClosedJaxpr):
                yield item.jaxpr
            elif isinstance(item, jex_core.Jaxpr):
                yield item


def _jaxpr_steps(jaxpr):
    total = 0
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        subs = list(_sub_jaxprs(eqn.params))
        if name == "scan":
            inner = max([_jaxpr_steps(j) for j in subs] or [0])
            total += int(eqn.params["length"]) * max(1, inner)
        elif name == "while":
            raise ValueError(
                "a while_loop's trip count is not in the jaxpr; use hlo_sequential_steps"
            )
        elif name == "cond":
            total += max([_jaxpr_steps(j) for j in subs] or [0])
        else:
            total += sum(_jaxpr_steps(j) for j in subs)
    return total


def jaxpr_sequential_steps(fn, *args):
    """Serial steps of fn(*args) read from its jaxpr: Σ scan `length` × inner steps.

    Returns: int. Raises ValueError on a while_loop (its trip count is data, not a param).
    """
    return _jaxpr_steps(jax.make_jaxpr(fn)(*args).jaxpr)


# ------------------------------------------------------------------ loop-corrected cost


def scan_cost(fn, args, step_fn, step_args):
    """Cost of a program with ONE serial loop, the loop body counted trip_count times.

    XLA counts a while body once. With T the loop's known_trip_count in the compiled HLO:
        total = cost(fn) + (T - 1) · cost(step_fn)
    where step_fn(*step_args) is the work one iteration does (e.g. the cell's recurrent step).

    Returns: dict(flops, bytes, transcendentals, trip_count, raw=cost(fn), step=cost(step_fn)).
    Raises ValueError unless the program has exactly one while loop with a known trip count.
    """
    exe = compiled(fn, *args)
    loops = while_loops(exe.as_text())
    if len(loops) != 1 or loops[0]["trip_count"] is None:
        raise ValueError(
            f"scan_cost expects exactly one while loop with a known trip count, got {loops}"
        )
    trips = loops[0]["trip_count"]
    raw = cost_of(exe)
    step = xla_cost(step_fn, *step_args)
    out = {k: raw[k] + (trips - 1) * step[k] for k in raw}
    out.update(trip_count=trips, raw=raw, step=step)
    return out
