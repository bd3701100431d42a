"""Every threshold behind a verdict, in one place, and the rules that apply them.

The verdicts are anatomy.probes.claims's vocabulary (HOLDS, CAVEAT, FAILS, NOT_SHOWN, ...).
The walls experiments judge their own claims with these rules and the report judges the
chapter's table with the same ones; thresholds_markdown() writes them out for report.md.
"""

from __future__ import annotations

import numpy as np

from anatomy.probes.claims import CAVEAT, FAILS, HOLDS, NOT_SHOWN, VERDICTS

# "Well above chance": recall at least this fraction of the way from chance (1/V) to perfect,
# acc >= 1/V + ABOVE_CHANCE·(1 − 1/V) (0.5625 for V = 8). A model at chance recalls nothing, so
# matching another one at chance shows no long-range recall.
ABOVE_CHANCE = 0.5

# Thresholds behind every verdict (written out in report.md by thresholds_markdown()).
EXPONENT_TOL = 0.15  # |fitted − theoretical exponent| <= this: holds
EXPONENT_CAVEAT_TOL = 0.30  # ... <= this: holds with a caveat; beyond: does not hold
STEPS_TOL = 0.05  # |serial steps per token − expected| <= this (the counts are exact)
DECAY_FACTOR = 10.0  # 'decays': gradient norm falls more than 10x over the fit distance;
# 'direct': it changes by less than 10x over the same distance
RECALL_MARGIN = 0.02  # attention's recall at the largest k >= best recurrent − this,
# and well above chance (ABOVE_CHANCE)
ENC_SHORT_FLOOR = 40.0  # RNNenc learned: >= this BLEU on the shortest bucket (1-10 tokens) ...
ENC_DROP = 25.0  # ... and the bottleneck bit: it falls by >= this to the longest bucket
BLEU_GAP = 10.0  # no-attention BLEU on the longest bucket this far below attention's
FLAT_RATIO = 0.8  # attention keeps >= this fraction of its shortest-bucket BLEU
BLEU_TIE = 1.0  # BLEU within this counts as level
MIN_BLEU = 10.0  # below this overall BLEU a model has not learned: no quality claim holds
SPEEDUP_RANGE = (5.0, 10.0)  # the chapter's wall-clock claim: attention 5-10x faster ...
SPEEDUP_N = 512  # ... at N = 512; a ratio >= SPEEDUP_RANGE[0] there holds (faster is stronger)
SPEEDUP_CAVEAT_MIN = 2.0  # a clear but smaller speed-up, in [this, 5x), or >= 5x at another N:
# a caveat; below this (a ratio near 1, or attention slower) the claim does not hold
CORES_MARGIN = 0.1  # attention must keep this many more cores busy than the LSTM
LOG_DEPTH_R2 = 0.98  # associative scan: depth = a + b·log2 N fits with R² >= this ...
LOG_DEPTH_EXPONENT = 0.5  # ... and its power-law exponent in N is <= this (a scan's is 1)

# Tolerances of the walls experiments' own claims (each experiment imports its own)
STEPS_EXACT_TOL = 1e-6  # loop trips per token read from the compiled HLO are exact counts
ONE_CORE_TOL = 0.2  # "the recurrence keeps one core busy": |busy cores − 1| <= this
TIME_EXPONENT_TOL = 0.25  # wall-time exponents (noisy, unlike FLOPs): |fitted − theory| <= this
DEPTH_EXPONENT_TOL = 0.1  # a scan's compiled depth against N: |exponent − 1| <= this
FLAT_DEPTH_TOL = 0.05  # a conv stack's compiled depth against N: |exponent − 0| <= this
FLAT_FLOPS_RTOL = 1e-9  # "the per-token cost is the same at every N": FLOP counts (exact
# integers from XLA) differ across N by at most this fraction of the largest
AT_CHANCE_MARGIN = 0.05  # "at chance": accuracy <= 1/V + this (the eval's noise is ~0.005)
NEAR_ONE = 0.01  # a gradient rate within this of 1 neither vanishes nor explodes
PASCANU_SLACK = 0.02  # fitted rate <= (1 + this)·γ·σ_max: Pascanu's bound holds (fit noise)
EXPLODE_FACTOR = 10.0  # "the raw gradient grows with T": last >= this × first
CLIP_RTOL = 1e-6  # the clipped gradient norm <= clip_norm·(1 + this) (float rounding)
CHUNKED_EQUAL_RTOL = 1e-5  # chunked attention equals full attention to this (relative)


def thresholds_markdown() -> str:
    return "\n".join(
        [
            f"* Exponents: |fitted − theory| ≤ {EXPONENT_TOL} holds, ≤ {EXPONENT_CAVEAT_TOL} holds "
            "with a caveat, else does not hold (the worst exponent of the row decides).",
            f"* Serial steps (exact counts from the compiled HLO): the RNN's per-token slope within "
            f"{STEPS_TOL} of theory (1 forward, 2 forward + backward) and zero loops in attention "
            "hold; any other count does not hold.",
            f"* Decay: the gradient norm falls by more than {DECAY_FACTOR:g}x over the fitted "
            f"distance (RNN) / changes by less than {DECAY_FACTOR:g}x (attention); recall at the "
            f"largest k: attention ≥ best recurrent − {RECALL_MARGIN} and at least "
            f"{ABOVE_CHANCE:.0%} of the way from chance (1/V) to perfect recall.",
            f"* Bottleneck: only when RNNenc learned short sentences (≥ {ENC_SHORT_FLOOR:g} BLEU on the "
            f"shortest bucket; else {NOT_SHOWN}) and then fell (≥ {ENC_DROP:g} BLEU lower on the "
            f"longest; else it does not hold here): no-attention BLEU on the longest bucket ≥ "
            f"{BLEU_GAP:g} below every "
            f"attention model, each of which keeps ≥ {FLAT_RATIO:.0%} of its shortest-bucket BLEU.",
            f"* Wall clock (the chapter: {SPEEDUP_RANGE[0]:g}-{SPEEDUP_RANGE[1]:g}x at N = "
            f"{SPEEDUP_N}): an LSTM/attention time ratio ≥ {SPEEDUP_RANGE[0]:g} at N = {SPEEDUP_N} "
            f"holds; a ratio in [{SPEEDUP_CAVEAT_MIN:g}, {SPEEDUP_RANGE[0]:g}), or ≥ "
            f"{SPEEDUP_RANGE[0]:g} at another N, holds with a caveat; below {SPEEDUP_CAVEAT_MIN:g} "
            "(about as fast, or slower) it does not hold.",
            f"* Parallel training: attention keeps ≥ {CORES_MARGIN} more cores busy than the LSTM, "
            f"else a caveat.",
            f"* Quality and cost: the Transformer's BLEU within {BLEU_TIE:g} of the best RNN model's "
            f"or above holds when its training time is no longer, holds with a caveat when it is; "
            f"behind in BLEU, or below {MIN_BLEU:g} BLEU for every model, it does not hold.",
            f"* Linear recurrences (minGRU): with jax.lax.scan {STEPS_TOL}-exact 2 loop steps "
            "per token (fwd+bwd); with jax.lax.associative_scan no loop and a compiled depth "
            f"a + b·log2 N (R² ≥ {LOG_DEPTH_R2}, N^e with e ≤ {LOG_DEPTH_EXPONENT}). Their "
            f"recall: ≥ the LSTM's − {RECALL_MARGIN} at the farthest k where the LSTM is well "
            f"above chance ({NOT_SHOWN} if it is at none).",
            "* Work of a linear recurrence by associative scan (minGRU, Mamba) against the same "
            f"layer by jax.lax.scan: the scan's FLOPs must grow as N^1 (±{EXPONENT_TOL}) and the "
            "parallel/sequential FLOP ratio no faster than log2 N over the grid (else it does not "
            f"hold); the parallel exponent within {EXPONENT_TOL} of the scan's holds (O(N) work), "
            "above it holds with a caveat (the log factor is spent).",
            "* Decode cost flat in N (exponent 0) only when the per-token FLOPs are the same at "
            f"every N (within {FLAT_FLOPS_RTOL:g} relative); otherwise the exponent is fitted.",
            "* Gated recurrence reaches further: at the farthest k where the LSTM is well above "
            f"chance, LSTM > RNN + {RECALL_MARGIN} holds, else it does not hold ({NOT_SHOWN} when "
            "the LSTM is well above chance at no k).",
            f"* Verdicts: {', '.join(VERDICTS)}.",
        ]
    )


def well_above_chance(accuracy: float, chance: float) -> bool:
    """accuracy >= chance + ABOVE_CHANCE·(1 − chance); False for NaN."""
    return bool(np.isfinite(accuracy) and accuracy >= chance + ABOVE_CHANCE * (1.0 - chance))


def _finite(*xs) -> bool:
    return all(x is not None and np.isfinite(x) for x in xs)


def exponent_verdict(pairs) -> tuple[str, float]:
    """[(fitted, theory), ...] -> (verdict, worst |fitted − theory|)."""
    if not pairs or not all(_finite(m, e) for m, e in pairs):
        return FAILS, float("nan")
    dev = max(abs(m - e) for m, e in pairs)
    return (HOLDS if dev <= EXPONENT_TOL else CAVEAT if dev <= EXPONENT_CAVEAT_TOL else FAILS), dev


def steps_verdict(rnn_per_token, expected, attn_steps, *, cores=None) -> str:
    """Serial steps: the RNN's loop steps per token == `expected`, attention's loops == 0.

    Holds only when both structural counts are what the claim says: the RNN's slope within
    STEPS_TOL of `expected` (1 for a forward pass, 2 for forward + backward) and no loop in
    attention; any other count (a fraction of N, 2N where N was claimed, a loop in attention)
    does not hold. cores=(lstm_cores_busy, attention_cores_busy): the structure holding but
    attention not keeping CORES_MARGIN more cores busy is a caveat.
    """
    if not _finite(rnn_per_token) or attn_steps != 0:
        return FAILS
    if abs(rnn_per_token - expected) > STEPS_TOL:
        return FAILS
    if cores is not None and not (_finite(*cores) and cores[1] >= cores[0] + CORES_MARGIN):
        return CAVEAT
    return HOLDS


def decays(rate, distance) -> bool:
    """A per-step gradient rate that falls more than DECAY_FACTOR-fold over `distance` steps."""
    return _finite(rate) and rate > 0 and -np.log(rate) * distance > np.log(DECAY_FACTOR)


def direct(rate, distance) -> bool:
    """A per-step gradient rate that changes less than DECAY_FACTOR-fold over `distance`."""
    return _finite(rate) and rate > 0 and abs(np.log(rate)) * distance < np.log(DECAY_FACTOR)


def decay_verdict(rnn_rate, attn_rate, distance, recall) -> str:
    """RNN gradient decays (rate^D < 1/DECAY_FACTOR), attention's does not; recall agrees."""
    if not _finite(rnn_rate, attn_rate) or rnn_rate <= 0 or attn_rate <= 0:
        return FAILS
    grads_ok = decays(rnn_rate, distance) and direct(attn_rate, distance)
    return HOLDS if grads_ok and recall else CAVEAT if grads_ok or recall else FAILS


def recall_ok(t_acc, recurrent_accs, chance) -> bool:
    """Attention's recall at the largest k: well above chance, and level with or above the best
    recurrent model's (matching recurrent models that sit at chance shows nothing)."""
    return (
        _finite(t_acc)
        and bool(recurrent_accs)
        and well_above_chance(t_acc, chance)
        and t_acc >= max(recurrent_accs) - RECALL_MARGIN
    )


def bottleneck_verdict(enc_short, enc_long, attn_short: dict, attn_long: dict) -> str:
    """RNNenc learns short sentences and then collapses with length; attention models do not.

    NOT_SHOWN unless RNNenc reached ENC_SHORT_FLOOR on the shortest bucket (a model that never
    learned cannot show a bottleneck); FAILS when it learned and did not fall by ENC_DROP. Then:
    no-attention BLEU on the longest bucket BLEU_GAP below every attention model, each of which
    keeps FLAT_RATIO of its shortest-bucket BLEU.
    """
    if not attn_long or not _finite(enc_short, enc_long, *attn_long.values()):
        return NOT_SHOWN
    if enc_short < ENC_SHORT_FLOOR:
        return NOT_SHOWN
    if enc_short - enc_long < ENC_DROP:
        return FAILS
    best_gap = min(attn_long.values()) - enc_long
    flat = all(
        attn_short.get(m, 0) > 0 and attn_long[m] >= FLAT_RATIO * attn_short[m] for m in attn_long
    )
    if best_gap >= BLEU_GAP and flat:
        return HOLDS
    return CAVEAT if best_gap > 0 and (flat or best_gap >= BLEU_GAP) else FAILS


def speedup_verdict(ratio, n) -> str:
    """LSTM/attention wall-time ratio against the chapter's "5-10x faster" at N = 512.

    HOLDS: ratio >= SPEEDUP_RANGE[0] at N = SPEEDUP_N (more than 10x is a stronger claim).
    CAVEAT: a clear but smaller speed-up, SPEEDUP_CAVEAT_MIN <= ratio < SPEEDUP_RANGE[0], or
    a ratio >= SPEEDUP_RANGE[0] measured at another N. FAILS: ratio < SPEEDUP_CAVEAT_MIN
    (attention about as fast as the LSTM, or slower), or no finite ratio.
    """
    if not _finite(ratio) or ratio < SPEEDUP_CAVEAT_MIN:
        return FAILS
    if ratio >= SPEEDUP_RANGE[0] and n == SPEEDUP_N:
        return HOLDS
    return CAVEAT


def quality_cost_verdict(t_bleu, t_seconds, rnn_bleu, rnn_seconds) -> str:
    """Transformer at least level in BLEU with the best RNN model, and trained no slower.

    Quality is the claim's core: behind in BLEU it does not hold however cheap the training;
    level but slower to train holds with a caveat.
    """
    if not _finite(t_bleu, t_seconds, rnn_bleu, rnn_seconds) or max(t_bleu, rnn_bleu) < MIN_BLEU:
        return FAILS
    level, cheaper = t_bleu >= rnn_bleu - BLEU_TIE, t_seconds <= rnn_seconds
    if not level:
        return FAILS
    return HOLDS if cheaper else CAVEAT


def log_depth_verdict(scan_steps_per_token, assoc_steps, r2, exponent) -> str:
    """A linear recurrence two ways: jax.lax.scan runs 2 loop steps per token (fwd + bwd), the
    associative scan none, with a compiled depth that grows as log N (R² >= LOG_DEPTH_R2 for
    a + b·log2 N, power-law exponent <= LOG_DEPTH_EXPONENT)."""
    if not _finite(scan_steps_per_token, r2, exponent):
        return FAILS
    loops = abs(scan_steps_per_token - 2.0) <= STEPS_TOL and assoc_steps == 0
    return HOLDS if loops and r2 >= LOG_DEPTH_R2 and exponent <= LOG_DEPTH_EXPONENT else FAILS


def linear_recall_verdict(acc, lstm_acc, lstm_recalls) -> str:
    """A linear recurrence's recall against the LSTM's at the farthest k where the LSTM is
    well above chance: NOT_SHOWN if there is no such k, else HOLDS if acc >= lstm − margin."""
    if not lstm_recalls:
        return NOT_SHOWN
    return HOLDS if _finite(acc, lstm_acc) and acc >= lstm_acc - RECALL_MARGIN else FAILS


def gated_reach_verdict(lstm_accs, rnn_accs, k_grid, chance) -> tuple[str, int | None]:
    """ "Gated recurrence reaches further than the plain RNN", judged at the farthest k where
    the LSTM is well above chance: (verdict, that k).

    HOLDS when the LSTM is well above chance there (well_above_chance) and above the plain
    RNN by more than RECALL_MARGIN; FAILS when the RNN is level with it or ahead; NOT_SHOWN
    (k None) when the LSTM is well above chance at no k: a model that did not learn recall
    cannot show that gating helps it.
    """
    reach = [k for k, a in zip(k_grid, lstm_accs) if well_above_chance(a, chance)]
    if not reach:
        return NOT_SHOWN, None
    k = max(reach)
    i = list(k_grid).index(k)
    lstm, rnn = lstm_accs[i], rnn_accs[i]
    return (HOLDS if _finite(rnn) and lstm > rnn + RECALL_MARGIN else FAILS), k


def flat_in_n(values) -> bool:
    """Per-token costs (FLOP counts) the same at every N: spread <= FLAT_FLOPS_RTOL·max."""
    v = np.asarray(values, float)
    return bool(
        v.size and np.all(np.isfinite(v)) and np.ptp(v) <= FLAT_FLOPS_RTOL * np.max(np.abs(v))
    )


def parallel_work_verdict(scan_exponent, assoc_exponent, ratios, n_grid) -> str:
    """A linear recurrence by associative scan against the same one by jax.lax.scan: the
    parallel form costs no more work, asymptotically, than the sequential one beyond a log factor.

    ratios: assoc FLOPs / scan FLOPs at each N of n_grid (ascending). FAILS unless the
    sequential scan's work is N^1 (within EXPONENT_TOL; else the reference is not what it
    should be) and the ratio grows no faster than log2 N over the grid
    (ratio[-1]/ratio[0] <= log2 N_max / log2 N_min). Within that: HOLDS when the parallel
    form's exponent is within EXPONENT_TOL of the scan's (O(N) work, like the scan), CAVEAT
    when it is above that (O(N log N): the log factor the claim allows is spent).
    """
    if not _finite(scan_exponent, assoc_exponent) or len(ratios) < 2 or len(ratios) != len(n_grid):
        return FAILS
    if not all(_finite(r) and r > 0 for r in ratios) or min(n_grid) < 2:
        return FAILS
    if abs(scan_exponent - 1.0) > EXPONENT_TOL:
        return FAILS
    if ratios[-1] / ratios[0] > np.log2(n_grid[-1]) / np.log2(n_grid[0]):
        return FAILS
    return HOLDS if assoc_exponent - scan_exponent <= EXPONENT_TOL else CAVEAT
