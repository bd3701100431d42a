"""report's convolutional rows (ConvS2S's layer, anatomy.conv): cost, distance, decoding.

Each entry of ROWS is (name, RNN claim, convolution claim, sources, plot prefixes, measure)
for report_rows.RowSpec; a measure function reads the walls' results.json (keys listed in
report_sources.REQUIRED) and returns (measured, verdict, why), the verdict from
experiments/thresholds.py.
"""

from __future__ import annotations

from anatomy.probes.claims import FAILS, HOLDS
from experiments.thresholds import exponent_verdict


def _conv_complexity(r):
    f = r["complexity"]["fits"]["conv"]
    got = {a: f[a]["exponent"] for a in ("N", "d", "k")}
    v, dev = exponent_verdict([(got["N"], 1.0), (got["d"], 2.0), (got["k"], 1.0)])
    return (
        f"1-D convolution FLOPs ∝ N^{got['N']:.2f}·d^{got['d']:.2f}·k^{got['k']:.2f}",
        v,
        f"XLA cost analysis of anatomy.conv.conv1d; worst exponent off by {dev:.3f}",
    )


def _conv_distance(r):
    a, c = r["parallelism"]["analysis"], r["parallelism"]["config"]
    k = c["kernel_size"]
    fields = {int(n): w for n, w in a["conv_receptive_field"].items()}
    want = {n: 1 + n * (k - 1) for n in fields}
    v = HOLDS if a["conv_max_steps"] == 0 and fields == want else FAILS
    span = a["conv_layers_to_span"]
    n_max = max(span, key=int) if span else None
    return (
        f"serial loop steps {a['conv_max_steps']}; L = 1..{len(fields)} layers of K={k} see "
        + ", ".join(str(w) for w in fields.values())
        + " positions"
        + (f" (spanning N={n_max} takes {span[n_max]} layers)" if n_max else ""),
        v,
        "loops from the compiled HLO; receptive field from the gradient's support, expected "
        "1 + L·(K-1) (no dilation; log_K N layers need dilated convolutions)",
    )


def _conv_decode(r):
    f = r["decode_cost"]["fits"]
    buf = f["conv_buffer"]["flops_n_dependent"]["exponent"]
    rec = f["conv_recompute"]["flops_total"]["exponent"]
    v, dev = exponent_verdict([(buf, 0.0), (rec, 1.0)])
    return (
        f"per-token FLOPs ∝ N^{buf:.2f} with the K-1 input buffer (re-running the prefix "
        f"N^{rec:.2f})",
        v,
        f"XLA FLOPs of one causal GLU block step; worst exponent off by {dev:.3f}",
    )


ROWS = (
    (
        "per-layer time complexity, convolution (kernel k)",
        "O(N·d²)",
        "O(k·N·d²)",
        ("complexity",),
        ("complexity",),
        _conv_complexity,
    ),
    (
        "distance between any two positions, convolution (kernel k, L layers)",
        "O(N) steps",
        "no serial steps; O(N/k) layers (O(log_k N) dilated)",
        ("parallelism",),
        ("parallelism",),
        _conv_distance,
    ),
    (
        "incremental decode latency, convolution (input buffer)",
        "O(d²)",
        "O(k·d²), flat in N",
        ("decode_cost",),
        ("decode_cost",),
        _conv_decode,
    ),
)
