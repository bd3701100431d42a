"""parallelism's claims, judged on what its results.json holds, with their thresholds.

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    parallelism/lstm_steps, attention_steps, chunked_steps   serial loop trips of the compiled
                                                             gradients (exact counts)
    parallelism/speedup, one_core, useful_work               wall time, busy cores, GFLOP/s at N0
    parallelism/lstm_time, attention_time                    wall-time exponents in N
    parallelism/mingru_scan_steps, mingru_assoc_steps,       the minGRU by jax.lax.scan and by
        assoc_log_depth, scan_linear_depth, scan_over_assoc  associative scan
    parallelism/conv_steps, conv_depth, conv_field           the GLU convolution stack
chapter(results), the rows of the chapter's report, made of those verdicts:
    parallelism/distance           serial steps: the LSTM's N, attention's none
    parallelism/parallel_training  the same, and attention keeps more cores busy (else a caveat)
    parallelism/wall_clock         the 5-10x speed-up at N = 512 (parallelism/speedup)
    parallelism/conv_distance      the conv stack: no loop, a field of 1 + L·(K-1)
    parallelism/linear_parallel    the minGRU: N loop steps by scan, none and log N depth by
                                   associative scan
"""

from __future__ import annotations

from anatomy.probes.claims import (
    CAVEAT,
    FAILS,
    HOLDS,
    REPORTED,
    Claim,
    finite,
    holds,
    verdict,
    weakest,
)

STEPS_TOL = 1e-6  # loop trips per token from the compiled HLO are exact counts: only the
# fit's float rounding is allowed
ONE_CORE_TOL = 0.2  # "the recurrence keeps one core busy": |busy cores − 1| <= this
TIME_EXPONENT_TOL = 0.25  # wall-time exponents (noisy, unlike FLOPs): |fitted − theory| <= this
DEPTH_EXPONENT_TOL = 0.1  # a scan's compiled depth against N: |exponent − 1| <= this
FLAT_DEPTH_TOL = 0.05  # a conv stack's compiled depth against N: |exponent − 0| <= this
LOG_DEPTH_R2 = 0.98  # associative scan: depth = a + b·log2 N fits with R² >= this ...
LOG_DEPTH_EXPONENT = 0.5  # ... and its power-law exponent in N is <= this (a scan's is 1)
SPEEDUP_RANGE = (5.0, 10.0)  # the chapter's wall-clock claim: attention 5-10x faster ...
SPEEDUP_N = 512  # ... at N = 512; a ratio >= SPEEDUP_RANGE[0] there holds (faster is stronger)
SPEEDUP_CAVEAT_MIN = 2.0  # a clear but smaller speed-up, in [this, 5x), or >= 5x at another N:
# a caveat; below this (a ratio near 1, or attention slower) the claim does not hold
CORES_MARGIN = 0.1  # parallel training: attention keeps this many more cores busy than the LSTM


def speedup_verdict(ratio, n) -> str:
    """LSTM/attention wall-time ratio against the chapter's "5-10x faster" at N = 512.

    HOLDS: ratio >= SPEEDUP_RANGE[0] at N = SPEEDUP_N (more than 10x is a stronger claim).
    CAVEAT: a clear but smaller speed-up, SPEEDUP_CAVEAT_MIN <= ratio < SPEEDUP_RANGE[0], or
    a ratio >= SPEEDUP_RANGE[0] measured at another N. FAILS: ratio < SPEEDUP_CAVEAT_MIN
    (attention about as fast as the LSTM, or slower), or no finite ratio.
    """
    if not finite(ratio) or ratio < SPEEDUP_CAVEAT_MIN:
        return FAILS
    if ratio >= SPEEDUP_RANGE[0] and n == SPEEDUP_N:
        return HOLDS
    return CAVEAT


def parallel_training_verdict(steps: str, busy) -> str:
    """Parallel training: the serial-steps verdict `steps`, a caveat when it holds but attention
    did not keep CORES_MARGIN more cores busy than the LSTM (busy = (lstm, attention) cores)."""
    if steps != HOLDS:
        return steps
    return HOLDS if finite(*busy) and busy[1] >= busy[0] + CORES_MARGIN else CAVEAT


def log_depth_verdict(r2, exponent) -> str:
    """The associative scan's compiled depth grows as log N: a + b·log2 N fits with R² >=
    LOG_DEPTH_R2 and its power-law exponent in N is <= LOG_DEPTH_EXPONENT."""
    return holds(finite(r2, exponent) and r2 >= LOG_DEPTH_R2 and exponent <= LOG_DEPTH_EXPONENT)


def _cores(results):
    return results["raw"]["lstm"][0].get("cores", 1)


def _per_token(results, key, claim, cid) -> Claim:
    """N serial loop steps forward and N backward: analysis[key] = 2 steps per token."""
    slope = results["analysis"][key]
    return Claim(
        claim, "2 steps per token", f"{slope:.3f} per token", verdict(slope, 2.0, STEPS_TOL), id=cid
    )


def _no_loop(results, key, claim, cid) -> Claim:
    """No serial loop over positions: analysis[key], the most loop trips at any N, is 0."""
    steps = results["analysis"][key]
    return Claim(claim, "0", str(steps), holds(steps == 0), id=cid)


def lstm_steps(results) -> Claim:
    claim = "RNN: N serial steps (forward) + N (backward)"
    return _per_token(results, "lstm_steps_per_token", claim, "parallelism/lstm_steps")


def attention_steps(results) -> Claim:
    claim = "self-attention: no serial steps over positions"
    return _no_loop(results, "attention_max_steps", claim, "parallelism/attention_steps")


def chunked_steps(results) -> Claim:
    chunked, block_k = results["chunked_attention_steps"], results["config"]["chunk_block_k"]
    return Claim(
        f"chunked attention: serial steps are its key blocks (block_k = {block_k}), not N",
        "2·ceil(N / block_k) (forward + backward)",
        ", ".join(f"N={r['n']}: {r['steps_hlo']}" for r in chunked),
        holds(all(r["steps_hlo"] == 2 * r["key_blocks"] for r in chunked)),
        "loop trips of the compiled gradient; a block of keys per step, all queries at once",
        id="parallelism/chunked_steps",
    )


def speedup(results) -> Claim:
    a = results["analysis"]
    ratio, n0 = a["ratio_lstm_over_attention"], a["ratio_n"]
    lo = SPEEDUP_RANGE[0]
    return Claim(
        f"attention trains 5-10x faster than an LSTM at N={n0} (chapter: N=512, GPU)",
        "5-10x",
        f"{ratio:.2f}x on {_cores(results)} cores ({a['device_kind']})",
        speedup_verdict(ratio, n0),
        f"≥ {lo:g}x at N={SPEEDUP_N} holds, {SPEEDUP_CAVEAT_MIN:g}-{lo:g}x (or ≥ {lo:g}x at "
        "another N) is a caveat, less does not hold",
        id="parallelism/speedup",
    )


def one_core(results) -> Claim:
    a, cores = results["analysis"], _cores(results)
    ul, ua = a["utilisation_at_ratio_n"]["lstm"], a["utilisation_at_ratio_n"]["attention"]
    return Claim(
        f"the recurrence keeps one core busy, whatever the machine has (N={a['ratio_n']})",
        f"≈ 1 core of {cores}",
        f"LSTM {ul * cores:.2f} cores (attention {ua * cores:.2f})",
        holds(abs(ul * cores - 1.0) <= ONE_CORE_TOL),
        id="parallelism/one_core",
    )


def useful_work(results) -> Claim:
    raw, n0 = results["raw"], results["analysis"]["ratio_n"]
    at_g = next(r["gflops_per_s"] for r in raw["attention"] if r["n"] == n0)
    ls_g = next(r["gflops_per_s"] for r in raw["lstm"] if r["n"] == n0)
    return Claim(
        f"attention does more useful work per second (N={n0})",
        "GFLOP/s attention > LSTM",
        f"attention {at_g:.2f}, LSTM {ls_g:.2f} GFLOP/s",
        holds(at_g > ls_g),
        id="parallelism/useful_work",
    )


def time_exponents(results) -> list[Claim]:
    te = results["analysis"]["time_exponent"]
    return [
        Claim(
            "LSTM time grows linearly in N",
            "N^1",
            f"N^{te['lstm']['exponent']:.2f}",
            verdict(te["lstm"]["exponent"], 1.0, TIME_EXPONENT_TOL),
            id="parallelism/lstm_time",
        ),
        Claim(
            "attention time grows faster than linearly (N²·d term)",
            "N^1..2",
            f"N^{te['attention']['exponent']:.2f}",
            holds(te["attention"]["exponent"] > 1.0),
            id="parallelism/attention_time",
        ),
    ]


def mingru_scan_steps(results) -> Claim:
    claim = "minGRU with jax.lax.scan: N serial steps (forward) + N (backward)"
    return _per_token(
        results, "mingru_scan_steps_per_token", claim, "parallelism/mingru_scan_steps"
    )


def mingru_assoc_steps(results) -> Claim:
    claim = "minGRU with jax.lax.associative_scan: no serial loop over positions"
    return _no_loop(results, "mingru_assoc_max_steps", claim, "parallelism/mingru_assoc_steps")


def assoc_log_depth(results) -> Claim:
    a = results["analysis"]
    e_assoc, r2 = a["depth_exponent"]["mingru_assoc"], a["assoc_depth_log2_r2"]
    return Claim(
        "associative scan: serial depth grows as log N",
        f"depth ≈ a + b·log2 N (R² ≥ {LOG_DEPTH_R2}, ≤ N^{LOG_DEPTH_EXPONENT})",
        f"+{a['assoc_depth_per_doubling']:.0f} ops per doubling of N (R² {r2:.3f}), "
        f"N^{e_assoc:.2f}",
        log_depth_verdict(r2, e_assoc),
        "depth = critical path of the optimised HLO of grad (anatomy.probes.depth)",
        id="parallelism/assoc_log_depth",
    )


def scan_linear_depth(results) -> Claim:
    a = results["analysis"]
    e_scan = a["depth_exponent"]["mingru_scan"]
    return Claim(
        "scan: serial depth grows linearly in N",
        "N^1",
        f"N^{e_scan:.2f} ({a['depth_per_token']['mingru_scan']:.1f} ops per token)",
        verdict(e_scan, 1.0, DEPTH_EXPONENT_TOL),
        id="parallelism/scan_linear_depth",
    )


def scan_over_assoc(results) -> Claim:
    a = results["analysis"]
    n_max = max(r["n"] for r in results["raw"]["mingru_scan"])
    ratio = a["mingru_scan_over_assoc_time"][str(n_max)]
    return Claim(
        f"minGRU time, jax.lax.scan over associative scan (N={n_max})",
        "> 1 where the hardware runs the log N levels' work in parallel",
        f"{ratio:.2f}x on {_cores(results)} cores "
        f"({a.get('device_kind') or 'device not recorded'})",
        REPORTED,
        "its work against the scan's is measured by complexity (parallel_work)",
        id="parallelism/scan_over_assoc",
    )


def conv_steps(results) -> Claim:
    cfg = results["config"]
    claim = (
        f"convolution ({cfg['conv_layers']} GLU blocks, K={cfg['kernel_size']}): no serial "
        "steps over positions"
    )
    return _no_loop(results, "conv_max_steps", claim, "parallelism/conv_steps")


def conv_depth(results) -> Claim:
    a = results["analysis"]
    lo, hi = a["conv_depth_range"]
    return Claim(
        "convolution: serial depth does not grow with N (it is L layers deep)",
        "N^0",
        f"{lo}..{hi} dependent ops (N^{a['conv_depth_exponent']:.3f})",
        verdict(a["conv_depth_exponent"], 0.0, FLAT_DEPTH_TOL),
        "depth = critical path of the optimised HLO of grad (anatomy.probes.depth)",
        id="parallelism/conv_depth",
    )


def conv_field(results) -> Claim:
    """L = 1..conv_layers blocks see 1 + L·(K-1) positions (read from the gradient's support)."""
    a, k = results["analysis"], results["config"]["kernel_size"]
    fields = a["conv_receptive_field"]  # {"L": positions} (JSON keys)
    want = {n: 1 + int(n) * (k - 1) for n in fields}
    span = a["conv_layers_to_span"]
    n_max = max(span, key=int) if span else 0
    return Claim(
        "convolution: L layers see 1 + L·(K-1) positions (no dilation)",
        ", ".join(f"L={n}: {w}" for n, w in want.items()),
        ", ".join(f"L={n}: {w}" for n, w in fields.items()),
        holds(fields == want),
        f"so spanning N={n_max} takes {span.get(n_max, '-')} layers "
        f"(⌈(N-1)/(K-1)⌉; log_K N only with dilated convolutions), attention 1"
        "; field read from the gradient's support",
        id="parallelism/conv_field",
    )


def table(results) -> list[Claim]:
    return [
        lstm_steps(results),
        attention_steps(results),
        chunked_steps(results),
        speedup(results),
        one_core(results),
        useful_work(results),
        *time_exponents(results),
        mingru_scan_steps(results),
        mingru_assoc_steps(results),
        assoc_log_depth(results),
        scan_linear_depth(results),
        scan_over_assoc(results),
        conv_steps(results),
        conv_depth(results),
        conv_field(results),
    ]


def _serial_steps(results) -> str:
    """The LSTM's N loop steps (forward + backward) and attention's none, both as claimed."""
    return weakest([lstm_steps(results).verdict, attention_steps(results).verdict])


def distance(results) -> Claim:
    a = results["analysis"]
    fwd = a["lstm_steps_per_token"] / 2  # the compiled program runs N forward + N backward
    attn = a["attention_max_steps"]
    return Claim(
        "the distance between two positions: N serial steps for the LSTM, none for attention",
        "LSTM: 1 step per token forward; attention: no loop",
        f"serial steps in the compiled forward pass = {fwd:.2f}·N (LSTM) vs "
        f"{attn} (attention: one layer joins any two positions)",
        _serial_steps(results),
        f"forward slope {fwd:.3f} steps/token (half of the fwd+bwd {2 * fwd:.3f}), attention "
        f"loops {attn}",
        id="parallelism/distance",
    )


def parallel_training(results) -> Claim:
    a, cores = results["analysis"], _cores(results)
    util = a["utilisation_at_ratio_n"]
    busy = (util["lstm"] * cores, util["attention"] * cores)
    v = parallel_training_verdict(_serial_steps(results), busy)
    load = a.get("load_average_before_after")
    return Claim(
        "training is parallel over positions for attention, serial for the LSTM",
        "LSTM: 2 loop steps per token; attention: none, and more cores busy",
        f"serial steps = {a['lstm_steps_per_token']:.2f}·N (LSTM, fwd+bwd) vs "
        f"{a['attention_max_steps']} (attention); busy cores at N={a['ratio_n']}: "
        f"{busy[0]:.2f} vs {busy[1]:.2f} of {cores}",
        v,
        "steps from the compiled HLO's while loops; busy cores = CPU time / wall time"
        + ("" if v != CAVEAT else "; caveat: attention did not keep more cores busy here")
        + (
            f"; 1-minute load average before / after the run {load[0]:.1f} / {load[1]:.1f} "
            f"on {cores} cores"
            if load and finite(*load)
            else ""
        ),
        id="parallelism/parallel_training",
    )


def wall_clock(results) -> Claim:
    a = results["analysis"]
    ratio, n = a["ratio_lstm_over_attention"], a["ratio_n"]
    cores = results["raw"]["lstm"][0].get("cores", "?")
    device = (results.get("provenance") or {}).get("device_kind") or "device not recorded"
    lo = SPEEDUP_RANGE[0]
    return Claim(
        "attention trains 5-10x faster than an LSTM at N = 512",
        "5-10x at N = 512",
        f"LSTM/attention fwd+bwd time at N={n}: {ratio:.2f}x ({cores} cores, {device})",
        speedup(results).verdict,
        f"the chapter's figure is for GPUs at N={SPEEDUP_N}; ≥ {lo:g}x there holds, "
        f"{SPEEDUP_CAVEAT_MIN:g}-{lo:g}x is a caveat, below {SPEEDUP_CAVEAT_MIN:g}x it does not "
        "hold",
        id="parallelism/wall_clock",
    )


def conv_distance(results) -> Claim:
    a, k = results["analysis"], results["config"]["kernel_size"]
    fields, span = a["conv_receptive_field"], a["conv_layers_to_span"]
    n_max = max(span, key=int) if span else None
    return Claim(
        "a convolution stack has no serial steps, but needs O(N/k) layers to join N positions",
        "no loop; L layers see 1 + L·(K-1) positions",
        f"serial loop steps {a['conv_max_steps']}; L = 1..{len(fields)} layers of K={k} see "
        + ", ".join(str(w) for w in fields.values())
        + " positions"
        + (f" (spanning N={n_max} takes {span[n_max]} layers)" if n_max else ""),
        weakest([conv_steps(results).verdict, conv_field(results).verdict]),
        "loops from the compiled HLO; receptive field from the gradient's support, expected "
        "1 + L·(K-1) (no dilation; log_K N layers need dilated convolutions)",
        id="parallelism/conv_distance",
    )


def linear_parallel(results) -> Claim:
    a = results["analysis"]
    e = a["depth_exponent"]
    parts = (mingru_scan_steps, mingru_assoc_steps, assoc_log_depth)
    return Claim(
        "a linear recurrence trains in parallel by associative scan",
        "scan: 2 loop steps per token; associative scan: none, depth ∝ log N",
        f"minGRU loop steps {a['mingru_scan_steps_per_token']:.2f}·N (jax.lax.scan) vs "
        f"{a['mingru_assoc_max_steps']} (associative scan); compiled depth N^{e['mingru_scan']:.2f}"
        f" vs +{a['assoc_depth_per_doubling']:.0f} ops per doubling of N (N^{e['mingru_assoc']:.2f})",
        weakest(part(results).verdict for part in parts),
        "depth = critical path of the optimised gradient HLO (anatomy.probes.depth); "
        f"a + b·log2 N fits the associative scan's with R² {a['assoc_depth_log2_r2']:.3f}",
        id="parallelism/linear_parallel",
    )


def chapter(results) -> list[Claim]:
    return [
        distance(results),
        parallel_training(results),
        wall_clock(results),
        conv_distance(results),
        linear_parallel(results),
    ]


def rules() -> list[str]:
    """How these verdicts are decided, for the report's "How verdicts are decided"."""
    lo, hi = SPEEDUP_RANGE
    return [
        f"* Serial steps (exact counts from the compiled HLO): the RNN's per-token slope within "
        f"{STEPS_TOL:g} of theory (2 forward + backward) and zero loops in attention hold; any "
        "other count does not hold.",
        f"* Wall clock (the chapter: {lo:g}-{hi:g}x at N = {SPEEDUP_N}): an LSTM/attention time "
        f"ratio ≥ {lo:g} at N = {SPEEDUP_N} holds; a ratio in [{SPEEDUP_CAVEAT_MIN:g}, {lo:g}), "
        f"or ≥ {lo:g} at another N, holds with a caveat; below {SPEEDUP_CAVEAT_MIN:g} (about as "
        "fast, or slower) it does not hold.",
        f"* Parallel training: attention keeps ≥ {CORES_MARGIN} more cores busy than the LSTM, "
        "else a caveat.",
        "* Linear recurrences (minGRU): with jax.lax.scan 2 loop steps per token (fwd+bwd, "
        f"within {STEPS_TOL:g}); with jax.lax.associative_scan no loop and a compiled depth "
        f"a + b·log2 N (R² ≥ {LOG_DEPTH_R2}, N^e with e ≤ {LOG_DEPTH_EXPONENT}).",
    ]
