"""parallelism's claims, judged on what its results.json holds, with their thresholds.

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    parallelism/lstm_steps, attention_steps, chunked_steps   serial loop trips of the compiled
                                                             gradients (exact counts)
    parallelism/speedup, one_core, busy_margin, useful_work  wall time, busy cores, GFLOP/s at N0
                                                             (t intervals over the timing repeats:
                                                             a ratio per repeat on a log scale;
                                                             no timing verdict from a loaded run)
    parallelism/lstm_time, attention_time                    wall-time exponents in N
    parallelism/mingru_scan_steps, mingru_assoc_steps,       the minGRU by jax.lax.scan and by
        assoc_log_depth, scan_linear_depth, scan_over_assoc  associative scan
    parallelism/conv_steps, conv_depth, conv_field           the GLU convolution stack
chapter(results), the rows of the chapter's report, made of those verdicts:
    parallelism/distance           serial steps: the LSTM's N, attention's none
    parallelism/parallel_training  the same, and attention keeps more cores busy (the weaker)
    parallelism/wall_clock         the 5-10x speed-up at N = 512 (parallelism/speedup)
    parallelism/conv_distance      the conv stack: no loop, a field of 1 + L·(K-1)
    parallelism/linear_parallel    the minGRU: N loop steps by scan, none and log N depth by
                                   associative scan
"""

from __future__ import annotations

import dataclasses

import numpy as np

from anatomy.probes import fit_power_law
from anatomy.probes.claims import (
    MISSING,
    REPORTED,
    UNDECIDED,
    Claim,
    Interval,
    Power,
    Range,
    exact,
    finite,
    holds,
    judged,
    power_from,
    t_interval,
    under_load,
    weakest,
)
from experiments.lab import committed
from experiments.lab.thresholds import SPEEDUP_N, SPEEDUP_RANGE

# the chapter's speed-up (SPEEDUP_RANGE at SPEEDUP_N) is scaling's too: experiments/lab/thresholds.py
STEPS_TOL = 1e-6  # loop trips per token from the compiled HLO are exact counts: only the
# fit's float rounding is allowed
ONE_CORE_TOL = 0.2  # "the recurrence keeps one core busy": busy cores within 1 ± this
TIME_EXPONENT_TOL = 0.25  # the LSTM's wall time against N: exponent within 1 ± this
DEPTH_EXPONENT_TOL = 0.1  # a scan's compiled depth against N: exponent within 1 ± this
FLAT_DEPTH_TOL = 0.05  # a conv stack's compiled depth against N: exponent within 0 ± this
LOG_DEPTH_R2 = 0.98  # associative scan: depth = a + b·log2 N fits with R² >= this ...
LOG_DEPTH_EXPONENT = 0.5  # ... and its power-law exponent in N is <= this (a scan's is 1)
CORES_MARGIN = 0.1  # parallel training: attention keeps at least this many more cores busy
TIMING = "timing repeats"  # what a timing interval is over (the repeats of one run)
PILOT = "results/parallelism/pilot.json"
SOURCES = {
    "speedup": "the chapter's figure for GPUs (5-10x at N = 512), two-sided",
    "busy": f"derived: attention's N positions are parallel work the LSTM's step lacks, so it "
    f"keeps more cores busy; ≥ {CORES_MARGIN:g} of a core is the smallest difference this "
    f"run's 2 cores resolve (one-sided)",
}


def _power(results, values_of, rng: Range, source: str, scale: str = "linear") -> Power | None:
    """The Power of a timed claim from the committed pilot's per-repeat values
    (`values_of(pilot results)`), against this run's repeats; None without a pilot."""
    pilot = committed.pilot("parallelism")
    if pilot is None:
        return None
    try:
        values = values_of(pilot)
    except (KeyError, StopIteration, TypeError):
        return None
    n = (results.get("config") or {}).get("repeats") or len(values_of(results))
    return power_from(values, rng, seeds=n, source=source, pilot=PILOT, scale=scale)


def _busy_diff(results) -> np.ndarray:
    """Busy cores attention − LSTM at N0, per timing repeat (the r-th call of each)."""
    n0 = results["analysis"]["ratio_n"]
    attn, lstm = _busy(results, "attention", n0), _busy(results, "lstm", n0)
    n = min(len(attn), len(lstm))
    return attn[:n] - lstm[:n]


def _time_ratio(results) -> np.ndarray:
    """LSTM / attention wall time at N0, per timing repeat."""
    n0 = results["analysis"]["ratio_n"]
    num, den = _times(results, "lstm", n0), _times(results, "attention", n0)
    n = min(len(num), len(den))
    return np.asarray(num[:n]) / np.asarray(den[:n])


def _times(results, layer, n) -> np.ndarray:
    """The wall seconds of each timed call of `layer` at N = n."""
    return np.asarray(next(r["times_s"] for r in results["raw"][layer] if r["n"] == n))


def loaded(results) -> str:
    """Why a timing of this run cannot be judged ('' when it can): its 1-minute load average
    before or after the run above MAX_TIMING_LOAD (anatomy.probes.claims.under_load)."""
    load = results["analysis"].get("load_average_before_after") or []
    return under_load(load, _cores(results))


def _busy(results, layer, n) -> np.ndarray | None:
    """Busy cores (process CPU / wall) of each timed call of `layer` at N = n; None for a
    result written before the per-call CPU times were recorded."""
    row = next(r for r in results["raw"][layer] if r["n"] == n)
    if "cpus_s" not in row:
        return None
    return np.asarray(row["cpus_s"]) / np.asarray(row["times_s"])


def ratio_interval(num: np.ndarray, den: np.ndarray) -> Interval:
    """num / den per timing repeat (the r-th call of each), and the t interval of their
    geometric mean over the repeats (a ratio: on a log scale)."""
    n = min(len(num), len(den))
    return t_interval(np.asarray(num[:n]) / np.asarray(den[:n]), over=TIMING, scale="log")


def exponent_interval(results, layer) -> Interval:
    """The wall-time exponent in N of `layer`: the power law fitted to each repeat's times
    over N (the r-th call at every N), and the t interval of those exponents."""
    rows = results["raw"][layer]
    ns = [r["n"] for r in rows]
    times = np.stack([np.asarray(r["times_s"]) for r in rows], axis=1)  # [repeats, len(ns)]
    return t_interval([fit_power_law(ns, t)["exponent"] for t in times], over=TIMING)


def log_depth_verdict(r2, exponent) -> str:
    """The associative scan's compiled depth grows as log N: a + b·log2 N fits with R² >=
    LOG_DEPTH_R2 and its power-law exponent in N is <= LOG_DEPTH_EXPONENT."""
    return holds(finite(r2, exponent) and r2 >= LOG_DEPTH_R2 and exponent <= LOG_DEPTH_EXPONENT)


def _cores(results):
    return results["raw"]["lstm"][0].get("cores", 1)


def _per_token(results, key, claim, cid) -> Claim:
    """N serial loop steps forward and N backward: analysis[key] = 2 steps per token."""
    slope = results["analysis"][key]
    c = judged(cid, claim, exact(slope), Range.around(2.0, STEPS_TOL, "2 steps per token"))
    return dataclasses.replace(c, measured=f"{slope:.3f} per token")


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
    n0 = a["ratio_n"]
    lo, hi = SPEEDUP_RANGE
    rng = Range.between(lo, hi, f"{lo:g}-{hi:g}x at N = {SPEEDUP_N} (the chapter, for GPUs)")
    cid, claim = "parallelism/speedup", f"attention trains {lo:g}-{hi:g}x faster than an LSTM"
    if n0 != SPEEDUP_N:
        return Claim(
            claim,
            str(rng),
            f"measured at N={n0}",
            UNDECIDED,
            f"the claim is at N = {SPEEDUP_N}: this run cannot measure it",
            id=cid,
        )
    got = ratio_interval(_times(results, "lstm", n0), _times(results, "attention", n0))
    return judged(
        cid,
        claim,
        got,
        rng,
        f"LSTM / attention fwd+bwd wall time at N={n0} on {_cores(results)} cores "
        f"({a['device_kind']}), not a GPU",
        undecided=loaded(results),
        power=_power(results, _time_ratio, rng, SOURCES["speedup"], scale="log"),
    )


def one_core(results) -> Claim:
    a, cores = results["analysis"], _cores(results)
    n0, claim = a["ratio_n"], "the recurrence keeps one core busy, whatever the machine has"
    rng = Range.around(1.0, ONE_CORE_TOL, f"1 ± {ONE_CORE_TOL:g} cores of {cores}")
    busy = _busy(results, "lstm", n0)
    if busy is None:
        return Claim(
            claim, str(rng), "per-call CPU times not recorded", MISSING, id="parallelism/one_core"
        )
    attn = _busy(results, "attention", n0)
    got = t_interval(busy, over=TIMING)
    why = f"LSTM busy cores at N={n0} (process CPU / wall); attention {np.median(attn):.2f}"
    return judged_unless_loaded(results, "parallelism/one_core", claim, got, rng, why)


def useful_work(results) -> Claim:
    raw, n0 = results["raw"], results["analysis"]["ratio_n"]
    flops = {k: next(r["flops"] for r in raw[k] if r["n"] == n0) for k in ("attention", "lstm")}
    # GFLOP/s attention / GFLOP/s LSTM = (F_a / F_l) · (t_l / t_a): the FLOPs are exact
    speed = ratio_interval(_times(results, "lstm", n0), _times(results, "attention", n0))
    scale = flops["attention"] / flops["lstm"]
    got = dataclasses.replace(
        speed, point=speed.point * scale, lo=speed.lo * scale, hi=speed.hi * scale
    )
    return judged(
        "parallelism/useful_work",
        f"attention does more useful work per second (N={n0})",
        got,
        Range.at_least(1.0, "GFLOP/s attention / LSTM ≥ 1 (one-sided)"),
        "XLA FLOPs of each program over its wall time",
        undecided=loaded(results),
    )


def time_exponents(results) -> list[Claim]:
    return [
        judged(
            "parallelism/lstm_time",
            "LSTM time grows linearly in N",
            exponent_interval(results, "lstm"),
            Range.around(1.0, TIME_EXPONENT_TOL, f"N^(1 ± {TIME_EXPONENT_TOL:g})"),
            undecided=loaded(results),
        ),
        judged(
            "parallelism/attention_time",
            "attention time grows faster than linearly in N (its N²·d term)",
            exponent_interval(results, "attention"),
            Range.between(1.0, 2.0, "N^1..2"),
            undecided=loaded(results),
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
    c = judged(
        "parallelism/scan_linear_depth",
        "scan: serial depth grows linearly in N",
        exact(e_scan),
        Range.around(1.0, DEPTH_EXPONENT_TOL, f"N^(1 ± {DEPTH_EXPONENT_TOL:g})"),
    )
    per_token = a["depth_per_token"]["mingru_scan"]
    return dataclasses.replace(c, measured=f"N^{e_scan:.2f} ({per_token:.1f} ops per token)")


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
    c = judged(
        "parallelism/conv_depth",
        "convolution: serial depth does not grow with N (it is L layers deep)",
        exact(a["conv_depth_exponent"]),
        Range.around(0.0, FLAT_DEPTH_TOL, f"N^(0 ± {FLAT_DEPTH_TOL:g})"),
        "depth = critical path of the optimised HLO of grad (anatomy.probes.depth)",
    )
    return dataclasses.replace(
        c, measured=f"{lo}..{hi} dependent ops (N^{a['conv_depth_exponent']:.3f})"
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
        busy_margin(results),
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


def busy_margin(results) -> Claim:
    """Attention keeps more cores busy than the LSTM: busy cores attention − LSTM at N0."""
    n0 = results["analysis"]["ratio_n"]
    claim = "attention keeps more cores busy than the LSTM"
    rng = Range.at_least(CORES_MARGIN, f"≥ {CORES_MARGIN:g} more busy cores (one-sided)")
    lstm = _busy(results, "lstm", n0)
    if lstm is None:
        return Claim(
            claim,
            str(rng),
            "per-call CPU times not recorded",
            MISSING,
            id="parallelism/busy_margin",
        )
    got = t_interval(_busy_diff(results), over=TIMING)
    why = f"busy cores = process CPU / wall, per call (the r-th of each), at N={n0}"
    power = _power(results, _busy_diff, rng, SOURCES["busy"])
    return judged(
        "parallelism/busy_margin", claim, got, rng, why, undecided=loaded(results), power=power
    )


def parallel_training(results) -> Claim:
    a, cores = results["analysis"], _cores(results)
    busy = busy_margin(results)
    load = a.get("load_average_before_after")
    return Claim(
        "training is parallel over positions for attention, serial for the LSTM",
        "LSTM: 2 loop steps per token; attention: none, and more cores busy",
        f"serial steps = {a['lstm_steps_per_token']:.2f}·N (LSTM, fwd+bwd) vs "
        f"{a['attention_max_steps']} (attention); busy cores attention − LSTM at "
        f"N={a['ratio_n']}: {busy.measured} of {cores}",
        weakest([_serial_steps(results), busy.verdict]),
        "steps from the compiled HLO's while loops (exact); busy cores = CPU time / wall time"
        + (f" ({busy.detail})" if busy.detail else "")
        + (
            f"; 1-minute load average before / after the run {load[0]:.1f} / {load[1]:.1f} "
            f"on {cores} cores"
            if load and finite(*load)
            else ""
        ),
        id="parallelism/parallel_training",
    )


def judged_unless_loaded(results, cid, claim, got, rng, why) -> Claim:
    """A busy-core claim by the one rule, or undecided naming the load when other processes
    competed for the cores (busy cores then measure the contention, not the program)."""
    return judged(cid, claim, got, rng, why, undecided=loaded(results))


def wall_clock(results) -> Claim:
    return dataclasses.replace(
        speedup(results),
        claim="attention trains 5-10x faster than an LSTM at N = 512",
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
    """Each claim's range, for the report's "How verdicts are decided" (the rule itself:
    anatomy.probes.claims.rule_text)."""
    lo, hi = SPEEDUP_RANGE
    return [
        f"* Serial steps (exact counts from the compiled HLO): the RNN's 2 loop steps per token "
        f"(forward + backward, ± {STEPS_TOL:g}) and no loop in attention.",
        f"* Wall clock (the chapter: {lo:g}-{hi:g}x at N = {SPEEDUP_N}, for GPUs): the LSTM / "
        "attention time ratio on this machine, per timing repeat, its t interval on a log "
        f"scale, against [{lo:g}, {hi:g}]; no timing is judged from a run whose load exceeded "
        "2.",
        f"* Parallel training: the serial steps, and attention keeping ≥ {CORES_MARGIN:g} more "
        "cores busy than the LSTM (interval over the timing repeats); the weaker decides.",
        "* Linear recurrences (minGRU): with jax.lax.scan 2 loop steps per token (fwd+bwd, "
        f"within {STEPS_TOL:g}); with jax.lax.associative_scan no loop and a compiled depth "
        f"a + b·log2 N (R² ≥ {LOG_DEPTH_R2}, N^e with e ≤ {LOG_DEPTH_EXPONENT}).",
    ]
