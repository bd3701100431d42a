"""crossover's claims, judged on what its results.json holds, with their thresholds.

table(results):
    crossover/<mixer>        <mixer> (default form) overtakes dense attention in training
                             time where the two programs' FLOP counts put the crossing: N*
                             from the medians over the timing rounds, its interval a
                             percentile bootstrap over those rounds from 8 of them (a
                             resample without a crossing is censored beyond the lengths
                             measured; below 8, each round's own crossing and their t
                             interval on a log scale); the range,
                             stated by the FLOP counts before any timing: [¼, 4] × N_f
                             (`expected_range`; not judged from a run whose 1-minute load
                             exceeded the rule's (under_load: 2 before it, 3 after), nor
                             while other processes kept more than OTHERS_MAX cores busy)
    crossover/headline       the same for HEADLINE (gated DeltaNet, flash-linear-attention's
                             own comparison against FlashAttention-2)
    crossover/lstm_serial    the LSTM's compiled forward + backward takes 2N serial steps (N
                             each way; exact, read from the compiled HLO)
    crossover/scan_serial    every chunked mixer's takes 2N / chunk (a scan over chunks, each
                             way; exact) once N spans more than one chunk
    crossover/assoc_serial   an associative scan's takes none (exact: no loop; its depth grows
                             with log N, shown in the steps table)
    crossover/attention_serial  dense attention's takes none (exact: no loop at all)
    crossover/memory         peak memory: dense attention's grows as N^2, every recurrence's
                             and chunked attention's as N (fitted exponents, exact:
                             experiments/lab/exponents.py)
    crossover/fla_anchor     flash-linear-attention's published GB200 crossover: an estimate
                             for that machine (needs an accelerator), never a verdict here
chapter(results):
    crossover/third_wall     training cost: a chunked recurrence overtakes attention where its
                             FLOP counts put it, and its scan takes far fewer serial steps than
                             the LSTM's N (weakest of headline, lstm_serial, scan_serial,
                             assoc_serial, attention_serial)

**The expected range, from FLOP counts** (not from a GPU table). Per token and head of width
d, dense attention's scores cost about 4·N·d FLOPs forward (QKᵀ and PV over all N keys); a
chunked recurrence with chunks of C about 10·C·d + (2/3)·C² + 8·d² (gated DeltaNet: Q Kᵀ, K Kᵀ
and the masked product inside its chunk, the UT transform's inverse and its two products, the
d×d state read and written once a token), whatever N. The two cross at

    N_f ≈ 2.5·C + 2·d + C²/(6·d)   (+ the projections' difference)

a few times chunk + head size: about 250 at C = 64 and d = 16, the benchmark's 4 heads of a
64-wide model (`analytic_flop_crossing`). The claim reads N_f exactly from the FLOP counts of
the very programs timed (probes.op_cost over their optimised HLO, loop trips counted; every
count is in results.json and is a property of the compiled program, known before anything is
timed: `flop_crossing`). Time is FLOPs over rate, so the crossing in time is N_f × ρ, ρ the
FLOP rate of attention's program over the recurrence's near the crossing. Neither program is
known to run faster per FLOP on this CPU (attention's products are larger, but its N×N softmax
is memory-bound), so the claim allows ρ within a factor 4 either way (RATE_BAND): the expected
N* is [N_f / 4, 4·N_f], about 60 to 1000, where a GPU table says 4K. The band is stated here,
before the run; the rate each program reached is reported beside the verdict.

FLA's published figures (GB200, fwd + bwd, FlashAttention-2 0.48 ms vs Gated DeltaNet 1.97 ms
at N = 1K; 15.37 vs 4.74 ms at 8K: a crossover near 4K) are shown beside ours as what they
are, another machine's numbers: never a verdict here.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from anatomy.probes import crossover as cross
from anatomy.probes import fit_power_law
from anatomy.probes.claims import (
    BOOTSTRAP_MIN,
    FAILS,
    MISSING,
    UNDECIDED,
    Claim,
    Range,
    bootstrap_interval,
    estimate,
    exact,
    judge,
    judged,
    power_from,
    t_interval,
    under_load,
    weakest,
)
from experiments.lab.exponents import exponent_verdict
from experiments.lab.twins import composite

DENSE, CHUNKED = "attention (dense)", "attention (chunked)"
HEADLINE = "gated_deltanet"
CHUNK = 64  # anatomy.scan.linear.CHUNK, the chunked forms' chunk (the mixer default)
RATE_BAND = (0.25, 4.0)  # the rate ratio ρ (attention's over the recurrence's) the range allows
# Flash-linear-attention's README table (GB200, fwd+bwd, ms), N -> (FlashAttention-2, GDN)
FLA_TABLE = {1024: (0.48, 1.97), 8192: (15.37, 4.74)}
FLA_CROSSOVER = 4096  # "the crossover near 4K" read from that table
PILOT = "results/crossover/pilot.json"
# a timing verdict needs an idle machine: other processes may keep at most this many of the
# cores busy while a length is timed (results["others_cores"], read from /proc/stat)
OTHERS_MAX = 0.25


def busy(results):
    """(the most cores other processes kept busy while a length was timed, its N), or None
    when the run did not record it."""
    got = [(v, n) for v, n in zip(results.get("others_cores") or [], results["lengths"])
           if v is not None]  # fmt: skip
    return max(got) if got else None


def _common(results, a, b, key="median_s"):
    """(lengths, index) where both contenders have `key`."""
    c = results["contenders"]
    idx = [i for i in range(len(results["lengths"]))
           if c[a].get(key, [None] * (i + 1))[i] is not None
           and c[b].get(key, [None] * (i + 1))[i] is not None]  # fmt: skip
    return [results["lengths"][i] for i in idx], idx


def flop_crossing(results, mixer, against=DENSE):
    """N_f: where `against`'s FLOP count (of the program timed: probes.op_cost, loop trips
    counted) first exceeds `mixer`'s,
    joined point to point in log-log (probes.crossover); the first length when it already
    does there, None when it never does (or fewer than 2 lengths have both counts)."""
    c = results["contenders"]
    ns, idx = _common(results, against, mixer, "flops")
    if len(ns) < 2:
        return None
    return cross(ns, [c[against]["flops"][i] for i in idx], [c[mixer]["flops"][i] for i in idx])


def expected_range(results, mixer, against=DENSE):
    """(Range of N*, N_f) from the FLOP counts: N_f × RATE_BAND (module docstring); (None, why)
    when the counts never cross inside the lengths."""
    nf = flop_crossing(results, mixer, against)
    if nf is None:
        return None, f"{against}'s FLOP count never exceeds {mixer}'s inside the lengths"
    lo, hi = RATE_BAND[0] * nf, RATE_BAND[1] * nf
    text = (
        f"N* in [{lo:.0f}, {hi:.0f}]: [{RATE_BAND[0]:g}, {RATE_BAND[1]:g}] × N_f = {nf:.0f}, "
        "where the two programs' FLOP counts cross (not a GPU table)"
    )
    return Range.between(lo, hi, text), nf


def _rounds(results, label, idx):
    return np.array([results["contenders"][label]["rounds_s"][i] for i in idx]).T  # [round, N]


def round_crossings(results, mixer, against=DENSE):
    """Each timing round's own N* (its times across N; NaN where it has no crossing)."""
    ns, idx = _common(results, against, mixer)
    if len(ns) < 2:
        return []
    a, b = _rounds(results, against, idx), _rounds(results, mixer, idx)
    got = [cross(ns, ra, rb) for ra, rb in zip(a, b)]
    return [math.nan if g is None else g for g in got]


def crossing(results, mixer, against=DENSE):
    """(N* from the medians or None, its Interval over the timing rounds, lengths).

    With BOOTSTRAP_MIN rounds or more, a percentile bootstrap of the medians' crossing (rounds
    resampled together; a resample with no crossing inside the lengths is censored: +inf,
    beyond them); with fewer, each round's own crossing and their t interval on a log scale (a
    round that never crosses makes it non-finite: the claim is then undecided)."""
    ns, idx = _common(results, against, mixer)
    if len(ns) < 2:
        return None, None, ns
    a, b = _rounds(results, against, idx), _rounds(results, mixer, idx)

    def stat(rows):  # rows [round, 2N]: both contenders' rounds, resampled together
        n = len(ns)
        got = cross(ns, np.median(rows[:, :n], 0), np.median(rows[:, n:], 0))
        return math.nan if got is None else got

    c = results["contenders"]
    point = cross(
        ns, [c[against]["median_s"][i] for i in idx], [c[mixer]["median_s"][i] for i in idx]
    )
    if a.shape[0] < BOOTSTRAP_MIN:  # each round's own crossing, a t interval on a log scale
        each = [math.inf if x is None else x for x in (cross(ns, ra, rb) for ra, rb in zip(a, b))]
        return point, t_interval(each, over="timing rounds", scale="log"), ns
    interval = bootstrap_interval(np.concatenate([a, b], axis=1), stat, over="timing rounds")
    return point, interval, ns


def analytic_flop_crossing(chunk, d_head):
    """N_f from the per-token counts of the module docstring (forward; the backward pass
    scales both sides alike): 4·N·d = 10·C·d + (2/3)·C² + 8·d², the projections left out."""
    return (10 * chunk * d_head + 2 / 3 * chunk**2 + 8 * d_head**2) / (4 * d_head)


def rate_ratio(results, mixer, against=DENSE, near=None):
    """(N, ρ): the FLOP rate (FLOPs / median s) of `against` over `mixer`'s at the length
    timed nearest `near` (in log N; None: the longest); None without counts."""
    c = results["contenders"]
    ns, idx = _common(results, against, mixer)
    idx = [i for i in idx if c[against].get("flops", [None] * (i + 1))[i]
           and c[mixer].get("flops", [None] * (i + 1))[i]]  # fmt: skip
    if not idx:
        return None
    lengths = results["lengths"]
    i = idx[-1] if near is None else min(idx, key=lambda j: abs(math.log(lengths[j] / near)))
    rate = lambda e: e["flops"][i] / e["median_s"][i]
    return lengths[i], rate(c[against]) / rate(c[mixer])


def overtakes(results, mixer, cid=None, pilot=None) -> Claim:
    """`mixer` overtakes dense attention where FLOP counts put it (module docstring)."""
    cid = cid or f"crossover/{mixer}"
    claim = f"{mixer} overtakes dense attention in training time where FLOP counts put it"
    if mixer not in results["contenders"] or DENSE not in results["contenders"]:
        return Claim(claim, "—", "—", MISSING, id=cid)
    point, interval, ns = crossing(results, mixer)
    if len(ns) < 2:
        return Claim(claim, "—", "—", MISSING, "timed together at fewer than 2 lengths", id=cid)
    rng, nf = expected_range(results, mixer)
    form = results["contenders"][mixer]["form"]
    if rng is None:
        return Claim(claim, "—", "—", MISSING, f"{form}: {nf}", id=cid)
    where = f"{form} form; N* from the medians {'none' if point is None else f'{point:.0f}'}"
    ratio = rate_ratio(results, mixer, near=point)
    if ratio:
        where += f"; ρ (attention's FLOP rate over its) {ratio[1]:.2g} at N = {ratio[0]}"
    power = None
    if pilot and mixer in pilot.get("contenders", {}):
        values = [v for v in round_crossings(pilot, mixer) if finite_pos(v)]
        if len(values) >= 2:
            power = power_from(values, rng, seeds=interval.n, scale="log", pilot=PILOT,
                               source="the FLOP counts of the two programs times [¼, 4] "
                                      "(claims.py's docstring)")  # fmt: skip

    def undecided_or_fails(verdict, measured, why):
        return Claim(claim, str(rng), measured, verdict, f"{why}; {where}", id=cid,
                     power=power.text() if power else "")  # fmt: skip

    loaded = under_load(results.get("load_before_after"), results.get("cores"))
    if loaded:
        return undecided_or_fails(UNDECIDED, str(interval), loaded)
    load = busy(results)
    if load is not None and load[0] > OTHERS_MAX:
        return undecided_or_fails(UNDECIDED, str(interval),
                                  f"timed while other processes kept {load[0]:.2f} cores busy "
                                  f"(at N = {load[1]}; at most {OTHERS_MAX} allowed): an idle "
                                  "rerun would decide it")  # fmt: skip
    if interval.lo == math.inf:  # no resample crosses: slower at every length timed
        if ns[-1] >= rng.hi:
            return undecided_or_fails(FAILS, f"no crossing up to N = {ns[-1]}",
                                      f"above the range's upper edge {rng.hi:.0f}: no "
                                      f"resample crosses up to N = {ns[-1]}")  # fmt: skip
        return undecided_or_fails(UNDECIDED, f"no crossing up to N = {ns[-1]}",
                                  f"no resample crosses up to N = {ns[-1]}, inside the "
                                  "range: a longer N would decide it")  # fmt: skip
    if rng.lo <= ns[0] and interval.lo <= ns[0]:
        # a resample faster already at the shortest N says only "at or below it": the range
        # reaches below the lengths timed, so such an interval cannot be judged against it
        return undecided_or_fails(UNDECIDED, str(interval),
                                  f"some resamples are faster already at N = {ns[0]} and the "
                                  "range reaches below it: a sweep from N = "
                                  f"{max(1, int(rng.lo // 2))} would decide it")  # fmt: skip
    return judged(cid, claim, interval, rng, where, power=power)


def finite_pos(v) -> bool:
    return v is not None and math.isfinite(v) and v > 0


def _serial(results, label):
    return results["contenders"][label]["serial_steps"]


def _exact_parts(values, rng):
    return [judge(exact(v, "read from the compiled HLO"), rng) for v in values]


def lstm_serial(results) -> Claim:
    cid, claim = "crossover/lstm_serial", "the LSTM's forward + backward takes 2N serial steps"
    if "lstm" not in results["contenders"]:
        return Claim(claim, "—", "—", MISSING, id=cid)
    pairs = [(s, n) for s, n in zip(_serial(results, "lstm"), results["lengths"]) if s is not None]
    parts = _exact_parts([s / (2 * n) for s, n in pairs], Range.around(1.0, 0.01, "2N"))
    return Claim(claim, "steps = 2N at every N (N forward, N backward)",
                 ", ".join(f"N={n}: {s}" for s, n in pairs),
                 weakest(v for v, _ in parts), id=cid)  # fmt: skip


def scan_serial(results) -> Claim:
    cid = "crossover/scan_serial"
    claim = "a chunked scan's forward + backward takes 2N / chunk serial steps"
    c, ns = results["contenders"], results["lengths"]
    chunked = [m for m, e in c.items() if e["form"] == "chunked" and m not in (DENSE, CHUNKED)]
    if not chunked:
        return Claim(claim, "—", "—", MISSING, "no mixer runs its chunked form here", id=cid)
    parts, shown = [], []
    for m in chunked:
        pairs = [(s, n) for s, n in zip(c[m]["serial_steps"], ns) if s is not None and n > CHUNK]
        parts += _exact_parts([s / (2 * n / CHUNK) for s, n in pairs], Range.around(1.0, 0.01))
        shown.append(f"{m}: {c[m]['serial_steps']}")
    if not parts:
        return Claim(claim, "—", "; ".join(shown), MISSING, f"no N above one chunk ({CHUNK})",
                     id=cid)  # fmt: skip
    return Claim(claim, f"steps = 2N / {CHUNK} for N > {CHUNK}", "; ".join(shown),
                 weakest(v for v, _ in parts), id=cid)  # fmt: skip


def assoc_serial(results) -> Claim:
    cid, claim = "crossover/assoc_serial", "an associative scan's program has no serial loop"
    c = results["contenders"]
    assoc = [m for m, e in c.items() if e["form"] == "associative"]
    if not assoc:
        return Claim(claim, "—", "—", MISSING, "no associative form timed", id=cid)
    steps = [s for m in assoc for s in c[m]["serial_steps"] if s is not None]
    parts = _exact_parts(steps, Range.at_most(0.0, "0 loops"))
    depth = "; ".join(f"{m}: critical path {c[m]['critical_path']}" for m in assoc)
    return Claim(claim, "0 loops", depth, weakest(v for v, _ in parts), id=cid)


def memory(results) -> Claim:
    cid = "crossover/memory"
    claim = "peak memory: dense attention's grows as N^2, the recurrences' as N"
    c, ns = results["contenders"], results["lengths"]
    pairs, shown = [], []
    for label, e in c.items():
        pts = [(n, b) for n, b in zip(ns, e["memory_bytes"]) if b is not None and n > CHUNK]
        if len(pts) < 2:
            continue
        fitted = fit_power_law(*zip(*pts))["exponent"]
        theory = 2.0 if label == DENSE else 1.0
        pairs.append((fitted, theory))
        shown.append(f"{label}: N^{fitted:.2f}")
    if not pairs:
        return Claim(claim, "—", "—", MISSING, id=cid)
    verdict, worst = exponent_verdict(pairs)
    return Claim(claim, "dense N^2, the rest N^1 (± the exponent rule's tolerance)",
                 "; ".join(shown), verdict, f"worst |fitted − theory| {worst:.2f}",
                 id=cid)  # fmt: skip


def attention_serial(results) -> Claim:
    cid, claim = "crossover/attention_serial", "dense attention's program has no serial loop"
    if DENSE not in results["contenders"]:
        return Claim(claim, "—", "—", MISSING, id=cid)
    steps = [s for s in _serial(results, DENSE) if s is not None]
    parts = [
        judge(exact(s, "read from the compiled HLO"), Range.at_most(0.0, "0 loops")) for s in steps
    ]
    return Claim(claim, "0", ", ".join(map(str, steps)), weakest(v for v, _ in parts), id=cid)


def anchor(results) -> Claim:
    """FLA's crossover, reported beside ours as an estimate for another machine."""
    return judged(
        "crossover/fla_anchor",
        "flash-linear-attention's GB200 table: Gated DeltaNet overtakes FlashAttention-2",
        estimate(FLA_CROSSOVER, "read from FLA's published GB200 table, not measured here"),
        Range.between(1024, 8192),
        f"published: 1K {FLA_TABLE[1024][0]} vs {FLA_TABLE[1024][1]} ms, "
        f"8K {FLA_TABLE[8192][0]} vs {FLA_TABLE[8192][1]} ms",
    )


def _pilot():
    from experiments.lab import committed

    return committed.pilot("crossover")


def table(results, pilot=None) -> list[Claim]:
    """Every claim; pilot: the design-seed pilot's results (None: the committed one, if any)."""
    pilot = _pilot() if pilot is None else pilot
    c = results["contenders"]
    mixers = [m for m in c if m not in (DENSE, CHUNKED, "lstm") and "(" not in m]
    each = {m: overtakes(results, m, pilot=pilot) for m in mixers}
    head = each.get(HEADLINE) or overtakes(results, HEADLINE, pilot=pilot)
    return [
        dataclasses.replace(head, id="crossover/headline"),
        *each.values(),
        lstm_serial(results),
        scan_serial(results),
        assoc_serial(results),
        attention_serial(results),
        memory(results),
        anchor(results),
    ]


PARTS = ("crossover/headline", "crossover/lstm_serial", "crossover/scan_serial",
         "crossover/assoc_serial", "crossover/attention_serial")  # fmt: skip


def chapter(results, pilot=None, judged_table=None) -> list[Claim]:
    """The chapter's claim, from table(results, pilot) (or `judged_table`, already judged)."""
    by = {c.id: c for c in (judged_table or table(results, pilot))}
    claim = ("the third wall today: a chunked recurrence trains in parallel (N / chunk serial "
             "steps, not N) and overtakes attention as N grows, where its FLOP counts put it")  # fmt: skip
    parts = [by[p] for p in PARTS]
    return [composite("crossover/third_wall", claim, parts)]


def rules() -> list[str]:
    """How these verdicts are decided, for the report's "How verdicts are decided"."""
    return [
        "* crossover: N* is where a recurrence's forward + backward time curve crosses dense "
        "attention's (log-log interpolation between measured lengths, probes.crossover); its "
        "interval is over the timing rounds (a percentile bootstrap from 8 rounds, a resample "
        "without a crossing censored beyond the lengths; below 8, each round's own crossing and "
        "their t interval on a log scale); the claim is that N* lies within "
        f"[{RATE_BAND[0]:g}, {RATE_BAND[1]:g}] times N_f, where the two programs' FLOP counts "
        "(loop trips counted) cross. Serial steps are exact counts read from the compiled programs. "
        f"FLA's published GB200 crossover (~{FLA_CROSSOVER}) is an estimate for that machine, "
        "never judged here.",
    ]
