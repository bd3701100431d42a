"""The cost model: predicted time of one call of a compiled program on a Hardware table.

    time = Σ_ops runs · max(dot_flops / matmul_peak + other_flops / vector_peak,
                            bytes / bandwidth(bytes))               (roofline, per op)
         + call_latency + ops · op_latency
         + loop_iterations · loop_latency                           (latency: serial steps)
         + Σ_collectives runs · (α + wire_bytes / link_bandwidth)   (communication)

with every op counted as often as it runs (op_cost: loop bodies × their trip counts, nested
loops multiplied through), ops = kernels executed, loop_iterations = while-loop iterations,
other_flops = non-dot FLOPs + transcendentals, bandwidth(bytes) the rate of the first cache
tier the op fits and the main-memory rate otherwise (hardware.py), except inside a loop whose
body's working set (op_cost's footprint) exceeds the last tier: there the body evicts what the
next iteration reuses and a small op streams at hw.loop_bandwidth when the table has one
(measured on a CPU; none for the accelerators), wire_bytes by ring
algorithms (collectives.py); on a CPU also the first write of the call's fresh buffers
(fresh_bytes / first_touch_bandwidth: the OS maps and zeroes each new page).
The three terms add: on one in-order stream of kernels a latency is paid whatever the kernel
does, and a collective blocks the ops that need its result.

precision: None (as compiled) charges each dot at the peak of its operands' element type
(bf16 / f16: matmul_flops['bfloat16'], else 'float32') and bytes as compiled: for a program
compiled on the device it runs on. 'float32' charges every dot at matmul_flops['float32'].
'bfloat16' re-prices a float32 program compiled here (XLA:CPU computes in float32 whatever the
model asked for) as bf16 compute with float32 master parameters (train.compute_dtype=
'bfloat16'): dots at matmul_flops['bfloat16'] and HALF the bytes of every op and collective,
since the activations, their gradients and the dots' operands are 2-byte numbers (the float32
update of master parameters and Adam moments is under-counted by this, and is a small share of
a step in every program here). The op graph is the one the compiler produced: for a program
compiled here, XLA:CPU's fusion decisions, not an accelerator compiler's.
"""

from __future__ import annotations

from collections.abc import Sequence

from anatomy.errors import BadInputError
from anatomy.probes.hardware import Hardware
from anatomy.probes.op_cost import COLLECTIVES, OpCost

PRECISIONS = {None: 1.0, "float32": 1.0, "bfloat16": 0.5}  # precision -> bytes per byte compiled
_HALF = ("bf16", "f16")
TERMS = ("compute", "memory", "latency", "communication")


def _bandwidth(hw: Hardware, n_bytes: float, loop_footprint: float = 0.0) -> float:
    """The memory rate an op moving n_bytes sees: the first cache tier it fits (hardware.py),
    at most hw.loop_bandwidth when it runs in a loop body whose working set (loop_footprint
    bytes, 0 outside loops) exceeds the last tier."""
    for size, rate in hw.caches:
        if n_bytes <= size:
            if hw.loop_bandwidth and loop_footprint > hw.caches[-1][0]:
                return min(rate, hw.loop_bandwidth)
            return rate
    return hw.bandwidth


def predict(
    ops: Sequence[OpCost],
    hw: Hardware,
    *,
    collectives: Sequence[dict] = (),
    loop_iterations: float = 0.0,
    precision: str | None = None,
    fused_loops: bool = False,
    fresh_bytes: float = 0.0,
) -> dict:
    """Predicted seconds of one call of a program (module doc) and its terms.

    ops: op_cost.op_costs(text); collectives: collectives.collectives(text) (their ops are
    charged here, not in the roofline); loop_iterations: op_cost.profile(text)
    ['loop_iterations']. fused_loops: charge the op latency once per loop iteration instead of
    once per op inside loops (as if each loop body ran as one kernel, e.g. a fused recurrent
    cell); the work is unchanged. fresh_bytes: the buffers a call allocates (temporaries and
    outputs, compiled.memory_analysis()), charged to memory at hw.first_touch_bandwidth when
    the table has one.
    Returns dict(seconds, compute (Σ over compute-bound ops), memory (Σ over memory-bound ops),
    latency, communication, dominant (the largest of TERMS), precision, n_ops).
    """
    if precision not in PRECISIONS:
        raise BadInputError(f"precision {precision!r}: choose None, 'float32' or 'bfloat16'")
    scale = PRECISIONS[precision]
    compute = memory = 0.0
    n_ops = 0.0
    for o in ops:
        if o.opcode in COLLECTIVES or not o.kernel:
            continue
        kind = precision or ("bfloat16" if o.dot_dtype in _HALF else "float32")
        c = o.dot_flops / hw.matmul_flops[kind]
        c += (o.flops - o.dot_flops + o.transcendentals) / hw.vector_flops
        footprint = scale * o.footprint if o.loop_depth > 0 else 0.0
        m = scale * o.bytes / _bandwidth(hw, scale * o.bytes, footprint)
        if c >= m:
            compute += o.runs * c
        else:
            memory += o.runs * m
        n_ops += o.runs if not (fused_loops and o.loop_depth > 0) else 0
    if fused_loops:
        n_ops += loop_iterations
    if hw.first_touch_bandwidth and fresh_bytes:
        memory += scale * fresh_bytes / hw.first_touch_bandwidth
    latency = hw.call_latency + n_ops * hw.op_latency + loop_iterations * hw.loop_latency
    comm = 0.0
    if collectives:
        if hw.link_bandwidth is None or hw.collective_latency is None:
            raise BadInputError(f"{hw.name} has no link figures: it cannot price collectives")
        comm = sum(
            c["runs"] * (hw.collective_latency + scale * c["wire_bytes"] / hw.link_bandwidth)
            for c in collectives
        )
    terms = {"compute": compute, "memory": memory, "latency": latency, "communication": comm}
    return {
        "seconds": sum(terms.values()),
        **terms,
        "dominant": max(TERMS, key=terms.get),
        "precision": precision,
        "n_ops": n_ops,
    }


def predict_text(
    text: str,
    hw: Hardware,
    *,
    precision: str | None = None,
    with_collectives: bool | None = None,
    fused_loops: bool = False,
) -> dict:
    """predict() from an HLO module's text (op costs, loop iterations and, when the program has
    any and with_collectives is not False, its collectives)."""
    from anatomy.probes import collectives as coll
    from anatomy.probes import hlo, op_cost

    m = hlo.Module(text)
    cs = coll.collectives(m, text)
    if with_collectives is None:
        with_collectives = bool(cs)
    return predict(
        op_cost.op_costs(m),
        hw,
        collectives=cs if with_collectives else (),
        loop_iterations=op_cost.profile(m)["loop_iterations"],
        precision=precision,
        fused_loops=fused_loops,
    )
