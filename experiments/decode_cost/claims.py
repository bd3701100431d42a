"""decode_cost's claims, judged on what its results.json holds, with their thresholds.

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    decode_cost/<decoder>     the per-token FLOPs' N-dependent exponent against theory
                              (experiments/lab/exponents.py), per decoder of EXPECTED (decoder())
    decode_cost/window_vs_r   the window step's attention against its r+1 slots: O(r·d)
    decode_cost/rnn_vs_d      the LSTM step against its width: O(d²)
    decode_cost/order         at the largest N: RNN < KV cache < recompute (FLOPs)
chapter(results), the rows of the chapter's report, made of those verdicts:
    decode_cost/per_token     the LSTM step's O(d²), flat in N, against the KV cache's O(N·d)
    decode_cost/conv          ConvS2S's buffered step, flat in N, against re-running the prefix
"""

from __future__ import annotations

import dataclasses

from anatomy.probes.claims import Claim, finite, holds, weakest
from experiments.lab.exponents import exponent_claim, exponent_verdict

# decoder -> (the exponent in N its per-token FLOPs should have, the chapter's cost)
EXPECTED = {
    "rnn": (0.0, "O(d²)"),
    "kv_cache": (1.0, "O(N·d)"),
    "recompute": (2.0, "O(N²·d)"),
    "kv_fixed": (0.0, "O(L_max·d), flat in N"),
    "window": (0.0, "O(r·d), flat in N"),
    "conv_buffer": (0.0, "O(K·d²), flat in N"),
    "conv_recompute": (1.0, "O(N·K·d²)"),
}
FLAT_FLOPS_RTOL = 1e-9  # "the per-token cost is the same at every N": FLOP counts (exact
# integers from XLA) differ across N by at most this fraction of the largest
BASIS = {  # how each flops_n_dependent exponent was obtained (n_dependent_fit), for the claims
    "flat": "the same FLOPs at every N (checked): exponent 0",
    "excess": "fitted on FLOPs minus the N = 1 program's",
    "total": "fitted on the total FLOPs (the cost changes with N; the N = 1 subtraction left <= 0)",
}


def flat_in_n(values) -> bool:
    """Per-token costs (FLOP counts) the same at every N: spread <= FLAT_FLOPS_RTOL·max."""
    v = [float(x) for x in values] if finite(*values) else []
    if not v:
        return False
    return max(v) - min(v) <= FLAT_FLOPS_RTOL * max(abs(x) for x in v)


def decoder(results, name) -> Claim:
    """One decoder's per-token FLOPs: the N-dependent exponent against EXPECTED[name]."""
    expected, label = EXPECTED[name]
    f = results["fits"][name]
    dep = f["flops_n_dependent"]
    c = exponent_claim(
        f"decode_cost/{name}",
        f"{name}: per-token cost {label}",
        dep["exponent"],
        expected,
        "N",
        BASIS[dep["basis"]],
    )
    return dataclasses.replace(
        c,
        measured=f"{c.measured} (total N^{f['flops_total']['exponent']:.3f}, "
        f"latency N^{f['latency']['exponent']:.2f}, reported)",
    )


def window_vs_r(results) -> Claim:
    got, radii = results["fits"]["window_vs_r"]["exponent"], results["config"]["window_radius_grid"]
    return exponent_claim(
        "decode_cost/window_vs_r",
        "window step's attention against the window r+1: O(r·d)",
        got,
        1.0,
        "(r+1)",
        f"FLOPs of the step minus the same step with one slot (r = 0), r = {radii[0]}..{radii[-1]}",
    )


def rnn_vs_d(results) -> Claim:
    got = results["fits"]["rnn_vs_d"]["exponent"]
    return exponent_claim("decode_cost/rnn_vs_d", "rnn step against width d", got, 2.0, "d")


def order(results) -> Claim:
    last = {k: v[-1] for k, v in results["raw"].items()}
    rnn, kv, rc = (last[k]["flops"] for k in ("rnn", "kv_cache", "recompute"))
    return Claim(
        f"at N={last['rnn']['n']}: RNN < KV cache < recompute (FLOPs)",
        "ordered",
        f"{rnn:.3g} < {kv:.3g} < {rc:.3g}",
        holds(rnn < kv < rc),
        id="decode_cost/order",
    )


def table(results) -> list[Claim]:
    decoders = [decoder(results, name) for name in EXPECTED]
    return [*decoders, window_vs_r(results), rnn_vs_d(results), order(results)]


def _made_of(results, names) -> tuple[str, float]:
    """(the weakest verdict of the claims of `names`, decoders or 'rnn_vs_d', and their worst
    |fitted − expected| exponent)."""
    fits, parts, pairs = results["fits"], [], []
    for name in names:
        if name == "rnn_vs_d":
            parts.append(rnn_vs_d(results))
            pairs.append((fits[name]["exponent"], 2.0))
        else:
            parts.append(decoder(results, name))
            pairs.append((fits[name]["flops_n_dependent"]["exponent"], EXPECTED[name][0]))
    return weakest(c.verdict for c in parts), exponent_verdict(pairs)[1]


def per_token_row(results) -> Claim:
    f = results["fits"]
    rn, rd = f["rnn"]["flops_n_dependent"]["exponent"], f["rnn_vs_d"]["exponent"]
    kv, rc = (f[k]["flops_n_dependent"]["exponent"] for k in ("kv_cache", "recompute"))
    verdict, dev = _made_of(results, ["rnn", "rnn_vs_d", "kv_cache"])
    return Claim(
        "decoding a token costs O(d²) for an RNN, O(N·d) for a Transformer with a KV cache",
        "LSTM step N^0·d^2; KV cache N^1",
        f"per-token FLOPs ∝ N^{rn:.2f}·d^{rd:.2f} (LSTM step) vs N^{kv:.2f} (KV cache; "
        f"recompute N^{rc:.2f})",
        verdict,
        f"XLA FLOPs, N-dependent part; worst exponent off by {dev:.3f}; latency exponents "
        f"{f['rnn']['latency']['exponent']:.2f} (LSTM) vs "
        f"{f['kv_cache']['latency']['exponent']:.2f} (KV), reported, not judged",
        id="decode_cost/per_token",
    )


def conv_row(results) -> Claim:
    f = results["fits"]
    buf, rec = (f[k]["flops_n_dependent"]["exponent"] for k in ("conv_buffer", "conv_recompute"))
    verdict, dev = _made_of(results, ["conv_buffer", "conv_recompute"])
    return Claim(
        "a convolution decoder's step keeps a K-1 input buffer: its cost is flat in N",
        "buffered step N^0; re-running the prefix N^1",
        f"per-token FLOPs ∝ N^{buf:.2f} with the K-1 input buffer (re-running the prefix "
        f"N^{rec:.2f})",
        verdict,
        f"XLA FLOPs of one causal GLU block step; worst exponent off by {dev:.3f}",
        id="decode_cost/conv",
    )


def chapter(results) -> list[Claim]:
    return [per_token_row(results), conv_row(results)]


def rules() -> list[str]:
    """How these verdicts are decided, for the report's "How verdicts are decided"."""
    return [
        "* Decode cost flat in N (exponent 0) only when the per-token FLOPs are the same at "
        f"every N (within {FLAT_FLOPS_RTOL:g} relative); otherwise the exponent is fitted.",
    ]
