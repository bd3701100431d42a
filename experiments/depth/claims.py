"""depth's claims, judged by the one verdict rule (anatomy.probes.claims) on what its
results.json holds, with every range stated here, before the run.

The losses: the judged seeds' test losses, each (variant, L) at its chosen learning rate. A
seed FAILS when its loss is NaN or no better than the unigram loss of the same characters
(within FAIL_MARGIN); a failed seed is scored at the unigram loss (a model that learned no
context), so a diverged run counts as what it is and every interval stays finite. Then

    Δ(L) = loss(L) − loss(L*)   L* the shallower depth of the grid with the lowest mean loss;
                                its t interval over the seeds (paired: seed s at both depths)
    stacks         Δ(L) ≤ STACK_TOL at every L of the grid past the first (each depth a part;
                   the claim is the weakest of them)
    breaks by L_b  Δ(L) ≥ STACK_TOL at some 1 < L ≤ L_b: holds when one depth's interval lies
                   above, does not hold when every one lies below, otherwise not shown
    gain per layer G(L_k) = (loss(L_{k-1}) − loss(L_k)) / (L_k − L_{k-1}) at each step of the
                   grid (nats per added layer)

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    depth/pre_ln_stacks           pre-LN stacks
    depth/no_residual_breaks      pre-LN without its residual breaks by L = BREAK_DEPTH
    depth/no_layernorm_breaks     residual without LayerNorm breaks by L = BREAK_DEPTH
    depth/post_ln_needs_warmup    post-LN breaks without warmup and stacks with it (both parts)
    depth/deepnorm_stacks         DeepNorm stacks
    depth/steady_gain             "a fairly steady gain per layer" (pre-LN): every step's gain
                                  per layer > 0, and the last step's within a factor
                                  STEADY_FACTOR of the first step's (t interval over seeds)
    depth/lstm_plain_degrades     the plain LSTM stack breaks at some L > FEW_LAYERS (GNMT)
    depth/lstm_plain_stacks_to_4  ... and stacks up to FEW_LAYERS layers (GNMT: "work well up
                                  to 4 layers")
    depth/lstm_residual_stacks    residual LSTM stacks (GNMT)
    depth/lstm_residual_ln_stacks residual + LayerNorm LSTM stacks (GNMT, RNMT+)
    depth/xiong_post_flat         post-LN's last-layer gradient at init ∝ L^a, a = 0 ± XIONG_TOL
    depth/xiong_pre_sqrt          pre-LN's, a = −1/2 ± XIONG_TOL (Xiong et al. 2020, Thm. 1)
    depth/xiong_direction         pre-LN's exponent below post-LN's (one-sided)
    depth/deepnorm_slope          DeepNorm's exponent: reported, not judged (no theorem)
    depth/serial_steps            the forward program's serial steps: L·N for the LSTM stack,
                                  none for the Transformer (exact: read from the program)
    depth/time_per_step           reported, never judged (it moves with the machine's load)
The exponents: each init seed's log-log slope of ‖∂loss/∂W^{2,L}‖ at init against
L, with a t interval over the 2·seeds init seeds (each seed's own fit).

chapter(results), what the chapter's closing table cites (its 'stackability' row), made of
those verdicts, never a second judgement of the same numbers:
    depth/stackability            "a block of self-attention + FFN + residual + LayerNorm
                                  stacks ... with a fairly steady gain per layer, without the
                                  RNN problem that adding layers makes training fail": the
                                  weakest of depth/pre_ln_stacks, depth/no_residual_breaks
                                  (the residual is what makes it stack), depth/steady_gain and
                                  depth/lstm_plain_degrades. When every part holds and
                                  residual + LayerNorm make the LSTM stack as well
                                  (depth/lstm_residual_ln_stacks holds), its detail says
                                  so: the RNN's problem is the plain stack's.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from anatomy.probes.claims import (
    FAILS,
    HOLDS,
    MISSING,
    REPORTED,
    UNDECIDED,
    Claim,
    Range,
    holds,
    judge,
    rule_text,
    t_interval,
    weakest,
)

FAIL_MARGIN = 0.05  # a seed within this many nats of the unigram loss learned no context: failed
STACK_TOL = 0.02  # nats: 'does not get worse with depth' = Δ ≤ this; 'breaks' = Δ ≥ this
BREAK_DEPTH = 8  # 'removing the residual makes it fail or degrade by L = this'
FEW_LAYERS = 4  # GNMT: plain stacks 'work well up to 4 layers'; degrading counts past this
STEADY_FACTOR = 2.0  # 'fairly steady': the last step's gain per layer within this factor of
# the first's, [1/2, 2]
XIONG_POST = 0.0  # Theorem 1: post-LN's last-layer gradient does not depend on L: exponent 0
XIONG_PRE = -0.5  # ... pre-LN's scales as L^(-1/2)
XIONG_TOL = 0.15  # an exponent within this of the theorem's matches it

STACKS = Range.at_most(STACK_TOL, f"Δ ≤ +{STACK_TOL:g} nats at every L (one-sided)")
BREAKS = Range.at_least(STACK_TOL, f"Δ ≥ +{STACK_TOL:g} nats at some L (one-sided)")
GAIN = Range.at_least(0.0, "> 0 at every step (one-sided)")
STEADY = Range.between(
    1 / STEADY_FACTOR,
    STEADY_FACTOR,
    f"last / first gain per layer in [1/{STEADY_FACTOR:g}, {STEADY_FACTOR:g}]",
)
POST_FLAT = Range.around(XIONG_POST, XIONG_TOL, f"0 ± {XIONG_TOL:g} (Theorem 1: flat in L)")
PRE_SQRT = Range.around(XIONG_PRE, XIONG_TOL, f"-0.5 ± {XIONG_TOL:g} (Theorem 1: L^-1/2)")
DIRECTION = Range.at_most(0.0, "≤ 0 (one-sided: pre-LN's falls faster with L)")


# ------------------------------------------------------------------ statistics of a variant


def failed(loss, unigram) -> bool:
    """NaN, or no better than the unigram loss (within FAIL_MARGIN)."""
    return loss is None or not math.isfinite(loss) or loss >= unigram - FAIL_MARGIN


def unigram(results) -> float:
    """The unigram loss of the judged (test) characters."""
    return results["data"]["unigram_loss"]["test"]


def depths_of(results, name) -> list[int]:
    return sorted(int(d) for d in results["variants"][name]["depths"])


def losses(results, name) -> np.ndarray:
    """[seeds, depths] test losses, a failed seed at the unigram loss."""
    u = unigram(results)
    rows = results["variants"][name]["depths"]
    cols = [
        [u if failed(x, u) else float(x) for x in rows[str(d)]["test_loss"]]
        for d in depths_of(results, name)
    ]
    return np.array(cols, np.float64).T


def failures(results, name) -> dict[int, int]:
    """{L: how many seeds failed}."""
    u = unigram(results)
    rows = results["variants"][name]["depths"]
    return {
        d: sum(failed(x, u) for x in rows[str(d)]["test_loss"]) for d in depths_of(results, name)
    }


def changes(results, name) -> list[tuple]:
    """[(L, L*, Interval of Δ(L), why not)] at every depth past the first (module docstring);
    why not: '' or, when a seed at L* failed, why Δ(L) measures nothing (there was no learned
    loss to get worse from)."""
    depths, x = depths_of(results, name), losses(results, name)
    bad = failures(results, name)
    means = x.mean(axis=0)
    out = []
    for j in range(1, len(depths)):
        ref = depths[int(np.argmin(means[:j]))]
        why = f"L={ref} did not learn ({bad[ref]}/{len(x)} seeds failed)" if bad[ref] else ""
        out.append((depths[j], ref, t_interval(x[:, j] - x[:, depths.index(ref)]), why))
    return out


def gains(results, name) -> list[tuple]:
    """[(L_{k-1}, L_k, Interval of the gain per layer G, why not)] at every step of the grid
    (why not: a seed at L_{k-1} failed, so there was no learned loss to gain from)."""
    depths, x = depths_of(results, name), losses(results, name)
    bad = failures(results, name)
    return [
        (
            a,
            b,
            t_interval((x[:, j - 1] - x[:, j]) / (b - a)),
            f"L={a} did not learn ({bad[a]}/{len(x)} seeds failed)" if bad[a] else "",
        )
        for j, (a, b) in enumerate(zip(depths, depths[1:]), start=1)
    ]


def steadiness(results, name):
    """t interval over seeds of the last step's gain per layer over the first's (each seed's own
    ratio: a percentile bootstrap over a handful of seeds would be only [min, max])."""
    depths, x = depths_of(results, name), losses(results, name)
    first, last = depths[1] - depths[0], depths[-1] - depths[-2]
    g0 = (x[:, 0] - x[:, 1]) / first
    g1 = (x[:, -2] - x[:, -1]) / last
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(g0 != 0, g1 / g0, np.nan)
    return t_interval(ratio)


def _slopes(depths, rows):
    """rows [seeds, depths] -> each seed's least-squares slope of log(value) on log L (NaN where
    a value is missing or not positive)."""
    lx = np.log(np.asarray(depths, np.float64))
    lx = lx - lx.mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        ly = np.where(rows > 0, np.log(np.where(rows > 0, rows, 1.0)), np.nan)
    return (ly @ lx) / float(lx @ lx)


def init_grads(results, name) -> tuple[list[int], np.ndarray]:
    """(depths, [init seeds, depths] ‖∂loss/∂W^{2,L}‖ at init; null = NaN)."""
    depths = depths_of(results, name)
    rows = results["variants"][name]["depths"]
    cols = [[math.nan if g is None else g for g in rows[str(d)]["init_grad_xiong"]] for d in depths]
    return depths, np.array(cols, np.float64).T


def exponent(results, name):
    """The exponent of the last layer's gradient at init against L: each init seed's fitted
    slope, and their t interval over the seeds."""
    depths, g = init_grads(results, name)
    return t_interval(_slopes(depths, g), over="init seeds")


def exponent_gap(results, a, b):
    """t interval of a's exponent minus b's, paired by init seed (the same seed's draws)."""
    da, ga = init_grads(results, a)
    db, gb = init_grads(results, b)
    n = min(len(ga), len(gb))
    return t_interval(_slopes(da, ga[:n]) - _slopes(db, gb[:n]), over="init seeds")


def bottom_over_top(results, name) -> tuple[int, float] | None:
    """(L, ‖g_layer 1‖ / ‖g_layer L‖ at init, means over seeds) at the deepest L > 1."""
    depths = depths_of(results, name)
    if depths[-1] < 2:
        return None
    rows = results["variants"][name]["depths"][str(depths[-1])]["init_grad_layers"]
    g = np.array([[np.nan if x is None else x for x in r] for r in rows], np.float64)
    return depths[-1], float(np.mean(g[:, 0]) / np.mean(g[:, -1]))


# ------------------------------------------------------------------ verdicts of parts


def some(verdicts) -> str:
    """One verdict for a claim that any one of its parts shows (some depth breaks): HOLDS when
    a part holds, FAILS when every part fails, UNDECIDED otherwise; MISSING for no part."""
    vs = list(verdicts)
    if not vs:
        return MISSING
    if HOLDS in vs:
        return HOLDS
    return FAILS if all(v == FAILS for v in vs) else UNDECIDED


def _parts(items, rng, fmt) -> tuple[list[str], list[str], list[str]]:
    """(verdicts, measured pieces, reasons) of intervals against `rng`; items: (head...,
    interval, why not): a part with a reason why not is UNDECIDED for that reason."""
    verdicts, shown, why = [], [], []
    for item in items:
        *head, interval, why_not = item
        v, reason = (UNDECIDED, why_not) if why_not else judge(interval, rng)
        verdicts.append(v)
        shown.append(f"{fmt(*head)} {interval}")
        if reason:
            why.append(f"{fmt(*head)}: {reason}")
    return verdicts, shown, why


def _delta(n_layers, ref):
    return f"L={n_layers} (vs {ref})"


def _step(a, b):
    return f"L={a}→{b}"


def _lrs(results, name) -> str:
    rows = results["variants"][name]["depths"]
    return "rate " + ", ".join(
        f"L={d} {rows[str(d)]['learning_rate']:g}" for d in depths_of(results, name)
    )


def _failed(results, name) -> str:
    bad = {d: n for d, n in failures(results, name).items() if n}
    seeds = len(results["variants"][name]["depths"][str(depths_of(results, name)[0])]["test_loss"])
    return ", ".join(f"{n}/{seeds} failed at L={d}" for d, n in bad.items())


def _has(results, *names) -> bool:
    return all(n in results["variants"] for n in names)


def _judged(cid, claim, expected, needs=()):
    """The frame every claim below shares: ``judge(results) -> (measured, verdict, detail)``
    becomes ``f(results) -> Claim`` with this id, claim and expectation, and MISSING
    ('not run (...)') when a variant it needs is not in the results."""

    def wrap(fn):
        @functools.wraps(fn)
        def judged(results) -> Claim:
            if not _has(results, *needs):
                return Claim(claim, expected, f"not run ({', '.join(needs)})", MISSING, id=cid)
            return Claim(claim, expected, *fn(results), id=cid)

        return judged

    return wrap


def stacks(results, name, limit=None) -> tuple[str, str, str]:
    """(measured, verdict, detail): Δ(L) ≤ STACK_TOL at every L (≤ limit) of the grid."""
    items = [c for c in changes(results, name) if limit is None or c[0] <= limit]
    if not items:
        return "one depth only", UNDECIDED, "no depth to compare"
    verdicts, shown, why = _parts(items, STACKS, _delta)
    detail = "; ".join(x for x in (*why, _failed(results, name), _lrs(results, name)) if x)
    return "Δ: " + "; ".join(shown), weakest(verdicts), detail


def breaks(results, name, above=1, limit=None) -> tuple[str, str, str]:
    """(measured, verdict, detail): Δ(L) ≥ STACK_TOL at some above < L (≤ limit)."""
    items = [c for c in changes(results, name) if c[0] > above and (limit is None or c[0] <= limit)]
    if not items:
        return "no depth in the range", UNDECIDED, ""
    verdicts, shown, why = _parts(items, BREAKS, _delta)
    detail = "; ".join(x for x in (*why, _failed(results, name), _lrs(results, name)) if x)
    return "Δ: " + "; ".join(shown), some(verdicts), detail


# ------------------------------------------------------------------ the claims


def _stacks(name, cid, claim):
    @_judged(cid, claim, str(STACKS), [name])
    def fn(results):
        return stacks(results, name)

    return fn


def _breaks(name, cid, claim, above=1, limit=BREAK_DEPTH):
    expected = f"Δ ≥ +{STACK_TOL:g} nats at some {above} < L" + (f" ≤ {limit}" if limit else "")

    @_judged(cid, claim, expected + " (one-sided)", [name])
    def fn(results):
        return breaks(results, name, above, limit)

    return fn


pre_ln_stacks = _stacks(
    "pre", "depth/pre_ln_stacks", "pre-LN: the stack does not get worse with depth"
)
no_residual_breaks = _breaks(
    "no_residual",
    "depth/no_residual_breaks",
    f"pre-LN without the residual fails or degrades by L={BREAK_DEPTH}",
)
no_layernorm_breaks = _breaks(
    "no_layernorm",
    "depth/no_layernorm_breaks",
    f"residual without LayerNorm fails or degrades by L={BREAK_DEPTH}",
)
deepnorm_stacks = _stacks("deepnorm", "depth/deepnorm_stacks", "DeepNorm stacks (Wang et al. 2022)")
lstm_residual_stacks = _stacks(
    "lstm_residual", "depth/lstm_residual_stacks", "residual LSTM stacks (GNMT)"
)
lstm_residual_ln_stacks = _stacks(
    "lstm_residual_ln",
    "depth/lstm_residual_ln_stacks",
    "residual + LayerNorm LSTM stacks (GNMT, RNMT+)",
)
lstm_plain_degrades = _breaks(
    "lstm",
    "depth/lstm_plain_degrades",
    "plain RNN stacks stop training as layers are added (LSTM; GNMT)",
    above=FEW_LAYERS,
    limit=None,
)


@_judged(
    "depth/lstm_plain_stacks_to_4",
    f"plain LSTM stacks work up to {FEW_LAYERS} layers (GNMT)",
    f"Δ ≤ +{STACK_TOL:g} nats at every L ≤ {FEW_LAYERS} (one-sided)",
    ["lstm"],
)
def lstm_plain_stacks_to_4(results):
    measured, verdict, detail = stacks(results, "lstm", FEW_LAYERS)
    ratio = bottom_over_top(results, "lstm")
    grads = f"at init, layer 1's gradient is {ratio[1]:.2g}x layer {ratio[0]}'s" if ratio else ""
    return measured, verdict, "; ".join(x for x in (detail, grads) if x)


@_judged(
    "depth/post_ln_needs_warmup",
    "post-LN needs warmup as it deepens (Xiong et al. 2020)",
    f"without warmup: Δ ≥ +{STACK_TOL:g} at some L; with warmup: Δ ≤ +{STACK_TOL:g} at every L",
    ["post", "post_warmup"],
)
def post_ln_warmup(results):
    cold, warm = breaks(results, "post"), stacks(results, "post_warmup")
    return (
        f"no warmup: {cold[0]}. warmup: {warm[0]}",
        weakest([cold[1], warm[1]]),
        f"without warmup, breaks: {cold[1]} ({cold[2]}). with warmup, stacks: {warm[1]} "
        f"({warm[2]})",
    )


@_judged(
    "depth/steady_gain",
    "each added layer gives a fairly steady gain (pre-LN)",
    f"gain per layer {GAIN}; {STEADY}",
    ["pre"],
)
def steady_gain(results):
    steps = gains(results, "pre")
    if len(steps) < 2:
        return "fewer than two steps of the grid", UNDECIDED, ""
    verdicts, shown, why = _parts(steps, GAIN, _step)
    ratio = steadiness(results, "pre")
    v, reason = (UNDECIDED, steps[0][-1]) if steps[0][-1] else judge(ratio, STEADY)
    depths, x = depths_of(results, "pre"), losses(results, "pre")
    doubling = [
        f"{_step(a, b)} {t_interval(x[:, j - 1] - x[:, j])}"
        for j, (a, b) in enumerate(zip(depths, depths[1:]), start=1)
    ]
    detail = "; ".join(
        [*why, *([f"last/first: {reason}"] if reason else [])]
        + ["gain per step of the grid (not per layer): " + ", ".join(doubling)]
    )
    return (
        "gain per layer: " + "; ".join(shown) + f". last/first {ratio}",
        weakest([*verdicts, v]),
        detail,
    )


def _exponent_claim(cid, claim, name, rng):
    @_judged(cid, claim, str(rng), [name])
    def fn(results):
        interval = exponent(results, name)
        verdict, reason = judge(interval, rng)
        return f"L^a, a = {interval}", verdict, reason

    return fn


xiong_post_flat = _exponent_claim(
    "depth/xiong_post_flat",
    "post-LN: the last layer's gradient at init is flat in L (Xiong et al. 2020, Thm. 1)",
    "post",
    POST_FLAT,
)
xiong_pre_sqrt = _exponent_claim(
    "depth/xiong_pre_sqrt",
    "pre-LN: the last layer's gradient at init falls as L^-1/2 (Xiong et al. 2020, Thm. 1)",
    "pre",
    PRE_SQRT,
)


@_judged(
    "depth/xiong_direction",
    "pre-LN's last-layer gradient at init falls faster with L than post-LN's (the direction)",
    f"pre-LN's exponent − post-LN's {DIRECTION}",
    ["post", "pre"],
)
def xiong_direction(results):
    gap = exponent_gap(results, "pre", "post")
    verdict, reason = judge(gap, DIRECTION)
    return f"a_pre − a_post = {gap}", verdict, reason


@_judged(
    "depth/deepnorm_slope",
    "DeepNorm: the last layer's gradient at init against L (no theorem; beside Xiong's)",
    "reported, not judged",
    ["deepnorm"],
)
def deepnorm_slope(results):
    interval = exponent(results, "deepnorm")
    inside = interval.lo <= XIONG_PRE <= interval.hi
    return (
        f"L^a, a = {interval}",
        REPORTED,
        f"the interval {'contains' if inside else 'does not contain'} pre-LN's theorem's -1/2",
    )


def serial_steps(results) -> Claim:
    claim = "serial steps of the forward program: L·N for the LSTM stack, none for the Transformer"
    expected = "LSTM L·N at every L; attention 0 (exact)"
    cid = "depth/serial_steps"
    got = results["serial_steps"]
    if "recurrent" not in got or "attention" not in got:
        need = "a recurrent and an attention variant"
        return Claim(claim, expected, f"not run ({need})", MISSING, id=cid)
    rnn = {int(d): r for d, r in got["recurrent"].items()}
    att = {int(d): r for d, r in got["attention"].items()}
    ok = all(r["hlo"] == d * r["n"] == r["jaxpr"] for d, r in rnn.items()) and all(
        r["hlo"] == 0 == r["jaxpr"] for r in att.values()
    )
    measured = (
        "LSTM "
        + ", ".join(f"L={d}: {r['hlo']} (N={r['n']})" for d, r in rnn.items())
        + "; attention "
        + ", ".join(f"L={d}: {r['hlo']}" for d, r in att.items())
    )
    return Claim(claim, expected, measured, holds(ok), "compiled HLO = jaxpr", id=cid)


def time_per_step(results) -> Claim:
    parts = []
    for fam in ("attention", "recurrent"):
        names = [n for n, v in results["variants"].items() if v["family"] == fam]
        if not names:
            continue
        rows = results["variants"][names[0]]["depths"]
        parts.append(
            f"{names[0]}: "
            + ", ".join(f"L={d} {1e3 * r['seconds_per_step']:.0f} ms" for d, r in rows.items())
        )
    return Claim(
        "time per step grows with L for both families",
        "reported, not judged (it moves with the machine's load)",
        "; ".join(parts),
        REPORTED,
        "one run's step, the median over the seeds",
        id="depth/time_per_step",
    )


TABLE = (  # the table's claims, in report order
    pre_ln_stacks,
    no_residual_breaks,
    no_layernorm_breaks,
    post_ln_warmup,
    deepnorm_stacks,
    steady_gain,
    lstm_plain_degrades,
    lstm_plain_stacks_to_4,
    lstm_residual_stacks,
    lstm_residual_ln_stacks,
    xiong_post_flat,
    xiong_pre_sqrt,
    xiong_direction,
    deepnorm_slope,
    serial_steps,
    time_per_step,
)


def table(results) -> list[Claim]:
    return [fn(results) for fn in TABLE]


STACKABILITY_PARTS = (  # (id, how the measured column names it)
    ("depth/pre_ln_stacks", "pre-LN stacks"),
    ("depth/no_residual_breaks", "no residual breaks"),
    ("depth/steady_gain", "steady gain per layer"),
    ("depth/lstm_plain_degrades", "plain LSTM degrades"),
)
RESCUE = "depth/lstm_residual_ln_stacks"


def stackability(results, judged=None) -> Claim:
    """The chapter's claim: the weakest of its parts (judged: the table's claims, if already
    judged; else those it reads are judged now)."""
    parts = (pre_ln_stacks, no_residual_breaks, steady_gain, lstm_plain_degrades)
    by = {c.id: c for c in (judged or [fn(results) for fn in (*parts, lstm_residual_ln_stacks)])}
    parts = [by[i].verdict for i, _ in STACKABILITY_PARTS]
    verdict = weakest(parts)
    claim = (
        "a block of self-attention + FFN + residual + LayerNorm stacks, with a fairly steady "
        "gain per layer, without the RNN problem that adding layers makes training fail"
    )
    expected = "every part holds (the claim is its weakest part)"
    measured = "; ".join(f"{text}: {by[i].verdict}" for i, text in STACKABILITY_PARTS)
    measured += f"; LSTM + residual + LN stacks: {by[RESCUE].verdict}"
    weak = [text for (i, text), v in zip(STACKABILITY_PARTS, parts) if v == verdict]
    detail = "" if verdict == HOLDS else f"weakest: {', '.join(weak)}"
    if verdict == HOLDS and by[RESCUE].verdict == HOLDS:
        detail = (
            "residual + LayerNorm make the LSTM stack too (depth/lstm_residual_ln_stacks "
            "holds; GNMT, RNMT+): the RNN's problem is the plain stack's, and the "
            "Transformer's tools fix it"
        )
    return Claim(claim, expected, measured, verdict, detail, id="depth/stackability")


def chapter(results) -> list[Claim]:
    """The claims the chapter's closing table cites: depth/stackability."""
    return [stackability(results)]


def rules() -> list[str]:
    """How these verdicts are decided, for report.md."""
    return [
        f"* {rule_text()}",
        "* Learning rates: every (variant, L) tries the same grid on the design seeds, scored "
        "on the validation windows; the judged seeds train at the chosen rate and are scored "
        "on the test windows (never read by the choice).",
        f"* A seed fails when its test loss is NaN or within {FAIL_MARGIN:g} nats of the "
        "unigram loss of the same characters; it is then scored at the unigram loss.",
        f"* Δ(L): a depth's loss minus that of the shallower depth with the lowest mean, with "
        f"its t interval over the seeds (paired). Stacks: Δ ≤ +{STACK_TOL:g} nats at every "
        f"depth (the weakest of the depths). Breaks: Δ ≥ +{STACK_TOL:g} at some depth (by "
        f"L = {BREAK_DEPTH} for the residual and LayerNorm ablations; past {FEW_LAYERS} for "
        "the plain LSTM, GNMT's 'up to 4 layers'): holds when one depth's interval lies "
        "above, does not hold when every one lies below.",
        f"* Fairly steady gain per layer (pre-LN): every step's gain per added layer > 0, and "
        f"the last step's gain per layer within a factor {STEADY_FACTOR:g} of the first's "
        "(each seed's ratio, t interval over the seeds); the claim is the weakest of these parts.",
        f"* Xiong's exponents: the log-log slope of the last layer's W^(2,L) gradient norm at "
        f"init against L, each init seed's fit, with a t interval over the init seeds: "
        f"post-LN within {XIONG_TOL:g} of 0, pre-LN within {XIONG_TOL:g} of -0.5; the "
        "direction (pre-LN's exponent below post-LN's) is a claim of its own.",
        "* Time per step is reported, never judged.",
        "* The chapter's claim (depth/stackability) is the weakest of pre-LN stacks, pre-LN "
        "without its residual breaks, the steady gain per layer and the plain LSTM degrades; "
        "when all hold and residual + LayerNorm make the LSTM stack too, it holds with that "
        "named caveat.",
    ]
