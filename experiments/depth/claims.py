"""depth's claims, judged on what its results.json holds, with their thresholds.

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    depth/pre_ln_stacks           pre-LN does not get worse with depth beyond its seed spread
    depth/no_residual_breaks      pre-LN without its residual fails or degrades by L = 8
    depth/no_layernorm_breaks     residual without LayerNorm fails or degrades by L = 8
    depth/post_ln_needs_warmup    post-LN breaks with depth without warmup, stacks with it
    depth/deepnorm_stacks         DeepNorm does not get worse with depth
    depth/steady_gain             each doubling of depth lowers pre-LN's loss (the chapter's
                                  "fairly steady gain per layer")
    depth/lstm_plain_degrades     the plain LSTM stack degrades past a few layers (GNMT)
    depth/lstm_residual_stacks    residual LSTM stacks (GNMT)
    depth/lstm_residual_ln_stacks residual + LayerNorm LSTM stacks (GNMT, RNMT+)
    depth/xiong_slope             the last layer's gradient at init against L: post-LN flat,
                                  pre-LN ~ L^(-1/2) (Xiong et al. 2020, Theorem 1)
    depth/serial_steps            the forward program's serial steps: L·N for the LSTM stack,
                                  none for the Transformer
    depth/time_per_step           reported, never judged (it moves with the machine's load)
chapter(results), what the chapter's closing table cites (its 'stackability' row), made of
those verdicts, never a second judgement of the same numbers:
    depth/stackability            "a block of self-attention + FFN + residual + LayerNorm
                                  stacks, without the RNN problem that adding layers makes
                                  training fail". Two-sided: the Transformer side is
                                  depth/pre_ln_stacks and depth/no_residual_breaks (the
                                  residual is what makes it stack), the RNN side
                                  depth/lstm_plain_degrades. It holds when both sides hold and
                                  residual + LayerNorm do not rescue the LSTM; a caveat when
                                  they do (GNMT, RNMT+: the problem is the plain stack's) or
                                  when the plain LSTM does not degrade here; it does not hold
                                  when the Transformer side does not.

Every rule reads the validation losses of the trained seeds (null in results.json = NaN).
A seed FAILS at a depth when its loss is NaN or no better than the unigram loss of the same
characters (within FAIL_MARGIN). A depth DEGRADES when its mean loss is worse than the best
mean at a shallower depth by more than the seed spread (SPREAD_K pooled standard deviations,
at least MIN_TOL). A variant STACKS when no depth of the grid fails or degrades; it BREAKS by
L when some depth in (1, L] does.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from anatomy.probes.claims import CAVEAT, FAILS, HOLDS, MISSING, NOT_SHOWN, REPORTED, Claim, weakest

FAIL_MARGIN = 0.05  # a seed within this many nats of the unigram loss learned no context: failed
SPREAD_K = 2.0  # 'beyond the seed spread': more than this many pooled seed stds apart
MIN_TOL = 0.01  # ... and at least this many nats (three seeds can agree to the digit)
BREAK_DEPTH = 8  # 'removing the residual makes it fail or degrade by L = this'
FEW_LAYERS = 4  # GNMT: plain stacks 'work well up to 4 layers'; degrading counts past this
XIONG_POST = 0.0  # Theorem 1: post-LN's last-layer gradient does not depend on L: slope 0
XIONG_PRE = -0.5  # ... pre-LN's scales as L^(-1/2)
XIONG_TOL = 0.15  # a fitted slope within this of the theorem's matches it
XIONG_ORDER = 0.15  # caveat: pre-LN's slope negative and below post-LN's by at least this


# ------------------------------------------------------------------ statistics of a variant


def _losses(values) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in values], np.float64)


def failed(loss, unigram) -> bool:
    """NaN, or no better than the unigram loss (within FAIL_MARGIN)."""
    return loss is None or not math.isfinite(loss) or loss >= unigram - FAIL_MARGIN


def depth_stats(results, name) -> dict[int, dict]:
    """{L: {'mean', 'std' (over the finite seeds; NaN if none), 'failed' (count), 'seeds'}}."""
    unigram = results["data"]["unigram_loss"]
    out = {}
    for key, row in results["variants"][name]["depths"].items():
        loss = _losses(row["valid_loss"])
        finite = loss[np.isfinite(loss)]
        out[int(key)] = {
            "mean": float(finite.mean()) if finite.size else math.nan,
            "std": float(finite.std(ddof=1)) if finite.size > 1 else 0.0,
            "failed": int(sum(failed(x, unigram) for x in loss)),
            "seeds": int(loss.size),
        }
    return dict(sorted(out.items()))


def tolerance(a: dict, b: dict) -> float:
    """The least difference of two depths' means that is beyond their seed spread."""
    return max(SPREAD_K * math.sqrt((a["std"] ** 2 + b["std"] ** 2) / 2), MIN_TOL)


def _best_below(stats, n_layers):
    shallower = [s for d, s in stats.items() if d < n_layers and math.isfinite(s["mean"])]
    return min(shallower, key=lambda s: s["mean"], default=None)


def broken_at(stats, n_layers) -> str | None:
    """Why depth n_layers is broken ('k/n seeds failed', 'worse than L=..'), or None."""
    s = stats[n_layers]
    if s["failed"]:
        return f"{s['failed']}/{s['seeds']} seeds failed at L={n_layers}"
    best = _best_below(stats, n_layers)
    if best is not None and s["mean"] > best["mean"] + tolerance(s, best):
        d = next(d for d, x in stats.items() if x is best)
        return f"L={n_layers} {s['mean']:.3f} worse than L={d} {best['mean']:.3f}"
    return None


def breaks_by(stats, limit=None) -> str | None:
    """The first reason a depth L <= limit breaks the stack (None: none does)."""
    for d in stats:
        if limit is not None and d > limit:
            break
        why = broken_at(stats, d)
        if why:
            return why
    return None


def flat_steps(stats) -> list[str]:
    """The steps of the depth grid that do not lower the mean loss beyond the seed spread."""
    depths = list(stats)
    flat = []
    for a, b in zip(depths, depths[1:]):
        sa, sb = stats[a], stats[b]
        if sb["failed"] or not sb["mean"] < sa["mean"] - tolerance(sa, sb):
            flat.append(f"L={a}->{b}: {sa['mean']:.3f} -> {sb['mean']:.3f}")
    return flat


def bottom_over_top(results, name) -> tuple[int, float] | None:
    """(L, ‖g_layer 1‖ / ‖g_layer L‖ at init, means over seeds) at the deepest L > 1."""
    depths = sorted(int(d) for d in results["variants"][name]["depths"])
    if depths[-1] < 2:
        return None
    rows = results["variants"][name]["depths"][str(depths[-1])]["init_grad_layers"]
    g = np.array([[np.nan if x is None else x for x in r] for r in rows], np.float64)
    return depths[-1], float(np.mean(g[:, 0]) / np.mean(g[:, -1]))


def _means(stats) -> str:
    return ", ".join(
        f"L={d} {s['mean']:.3f}±{s['std']:.3f}"
        + (f" ({s['failed']} failed)" if s["failed"] else "")
        for d, s in stats.items()
    )


def _has(results, *names) -> bool:
    return all(n in results["variants"] for n in names)


def _judged(cid, claim, expected, needs=()):
    """The frame every claim below shares: ``judge(results) -> (measured, verdict, detail)``
    becomes ``f(results) -> Claim`` with this id, claim and expectation, and MISSING
    ('not run (...)') when a variant it needs is not in the results."""

    def wrap(judge):
        @functools.wraps(judge)
        def judged(results) -> Claim:
            if not _has(results, *needs):
                return Claim(claim, expected, f"not run ({', '.join(needs)})", MISSING, id=cid)
            return Claim(claim, expected, *judge(results), id=cid)

        return judged

    return wrap


# ------------------------------------------------------------------ the claims


def _stacks(name, cid, claim):
    """HOLDS when `name` neither fails nor degrades at any depth of the grid."""
    expected = f"no failed seed; no depth worse than a shallower one by > {SPREAD_K:g}σ"

    @_judged(cid, claim, expected, [name])
    def judge(results):
        stats = depth_stats(results, name)
        if len(stats) < 2:
            return _means(stats), NOT_SHOWN, "one depth only"
        why = breaks_by(stats)
        return _means(stats), HOLDS if why is None else FAILS, why or ""

    return judge


def _breaks(name, cid, claim):
    """HOLDS when `name` fails or degrades at some depth in (1, BREAK_DEPTH]."""

    @_judged(cid, claim, f"fails or degrades by L={BREAK_DEPTH}", [name])
    def judge(results):
        stats = depth_stats(results, name)
        if not [d for d in stats if 1 < d <= BREAK_DEPTH]:
            return _means(stats), NOT_SHOWN, "no depth in the range"
        why = breaks_by(stats, BREAK_DEPTH)
        return (
            _means(stats),
            HOLDS if why else FAILS,
            why or f"neither fails nor degrades up to L={BREAK_DEPTH}",
        )

    return judge


pre_ln_stacks = _stacks(
    "pre", "depth/pre_ln_stacks", "pre-LN: the stack does not get worse with depth"
)
no_residual_breaks = _breaks(
    "no_residual",
    "depth/no_residual_breaks",
    "pre-LN without the residual fails or degrades by L=8",
)
no_layernorm_breaks = _breaks(
    "no_layernorm",
    "depth/no_layernorm_breaks",
    "residual without LayerNorm fails or degrades by L=8",
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


@_judged(
    "depth/post_ln_needs_warmup",
    "post-LN needs warmup as it deepens (Xiong et al. 2020)",
    "without warmup: fails or degrades with depth; with warmup: stacks",
    ["post", "post_warmup"],
)
def post_ln_warmup(results):
    cold, warm = depth_stats(results, "post"), depth_stats(results, "post_warmup")
    if len(cold) < 2:
        return _means(cold), NOT_SHOWN, "one depth only"
    why_cold, why_warm = breaks_by(cold), breaks_by(warm)
    return (
        f"no warmup: {_means(cold)}; warmup: {_means(warm)}",
        HOLDS if why_cold and not why_warm else FAILS,
        f"without warmup: {why_cold or 'stacks'}; with warmup: {why_warm or 'stacks'}",
    )


@_judged(
    "depth/steady_gain",
    "each added layer gives a fairly steady gain (pre-LN)",
    f"every doubling of L lowers the loss by > {SPREAD_K:g}σ",
    ["pre"],
)
def steady_gain(results):
    stats = depth_stats(results, "pre")
    depths = list(stats)
    if len(depths) < 2:
        return _means(stats), NOT_SHOWN, "one depth only"
    flat = flat_steps(stats)
    gains = [stats[a]["mean"] - stats[b]["mean"] for a, b in zip(depths, depths[1:])]
    measured = "gain per step of the grid: " + ", ".join(f"{g:+.3f}" for g in gains)
    steady = [
        n
        for n in results["variants"]
        if len(depth_stats(results, n)) > 1 and not flat_steps(depth_stats(results, n))
    ]
    detail = ("no gain beyond the spread at " + "; ".join(flat) + ". ") if flat else ""
    detail += f"Every step of the grid gains beyond the spread for: {', '.join(steady) or 'none'}"
    return measured, HOLDS if not flat else FAILS, detail


@_judged(
    "depth/lstm_plain_degrades",
    "plain RNN stacks stop training as layers are added (LSTM; GNMT)",
    f"fails or degrades at some L > {FEW_LAYERS}",
    ["lstm"],
)
def lstm_plain_degrades(results):
    stats = depth_stats(results, "lstm")
    deep = [d for d in stats if d > FEW_LAYERS]
    if not deep:
        return _means(stats), NOT_SHOWN, f"no depth past {FEW_LAYERS}"
    whys = [w for w in (broken_at(stats, d) for d in deep) if w]
    ratio = bottom_over_top(results, "lstm")
    grads = f"; at init, layer 1's gradient is {ratio[1]:.2g}x layer {ratio[0]}'s" if ratio else ""
    return (
        _means(stats),
        HOLDS if whys else FAILS,
        ("; ".join(whys) or f"no depth past {FEW_LAYERS} fails or degrades") + grads,
    )


@_judged(
    "depth/xiong_slope",
    "last layer's gradient at init against L: post-LN flat, pre-LN ~ L^-1/2 (Xiong 2020)",
    f"slope post {XIONG_POST:g}±{XIONG_TOL:g}, pre {XIONG_PRE:g}±{XIONG_TOL:g}; caveat: "
    f"pre < 0 and < post − {XIONG_ORDER:g}",
    ["post", "pre"],
)
def xiong_slope(results):
    fits = [results["variants"][n]["xiong_fit"] for n in ("post", "pre")]
    if any(f is None for f in fits):
        return "no fit (one depth, or a non-finite norm)", NOT_SHOWN, ""
    post, pre = (f["exponent"] for f in fits)
    measured = f"post-LN L^{post:+.3f}, pre-LN L^{pre:+.3f}"
    if abs(post - XIONG_POST) <= XIONG_TOL and abs(pre - XIONG_PRE) <= XIONG_TOL:
        verdict, detail = HOLDS, ""
    elif pre < 0 and pre < post - XIONG_ORDER:
        verdict = CAVEAT
        detail = (
            "the direction holds (pre-LN's last-layer gradient falls with depth, post-LN's "
            "does not), the exponents do not match the theorem within the tolerance"
        )
    else:
        verdict, detail = FAILS, ""
    others = ", ".join(
        f"{n} L^{v['xiong_fit']['exponent']:+.3f}"
        for n, v in results["variants"].items()
        if n not in ("post", "pre") and v["xiong_fit"] is not None
    )
    return measured, verdict, "; ".join(x for x in (detail, others) if x)


def serial_steps(results) -> Claim:
    claim = "serial steps of the forward program: L·N for the LSTM stack, none for the Transformer"
    expected = "LSTM L·N at every L; attention 0"
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
    return Claim(claim, expected, measured, HOLDS if ok else FAILS, "compiled HLO = jaxpr", id=cid)


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
    lstm_residual_stacks,
    lstm_residual_ln_stacks,
    xiong_slope,
    serial_steps,
    time_per_step,
)


def table(results) -> list[Claim]:
    return [judge(results) for judge in TABLE]


def stackability(results, judged=None) -> Claim:
    """The chapter's claim, made of the table's verdicts (judged: table(results) if given)."""
    by = {c.id: c for c in (judged or table(results))}
    t = weakest([by["depth/pre_ln_stacks"].verdict, by["depth/no_residual_breaks"].verdict])
    plain = by["depth/lstm_plain_degrades"].verdict
    rln = by["depth/lstm_residual_ln_stacks"].verdict
    claim = (
        "a block of self-attention + FFN + residual + LayerNorm stacks, without the RNN "
        "problem that adding layers makes training fail"
    )
    expected = (
        "pre-LN stacks and breaks without its residual; the plain LSTM degrades past "
        f"{FEW_LAYERS} layers"
    )
    measured = (
        f"pre-LN stacks: {by['depth/pre_ln_stacks'].verdict}; no residual breaks: "
        f"{by['depth/no_residual_breaks'].verdict}; plain LSTM degrades: {plain}; "
        f"LSTM + residual + LN stacks: {rln}"
    )
    if t != HOLDS:
        verdict, detail = t, "the Transformer side does not hold"
    elif plain == HOLDS and rln == FAILS:
        verdict, detail = HOLDS, ""
    elif plain == HOLDS:
        verdict = CAVEAT
        detail = (
            "the plain LSTM stack degrades (GNMT's finding), but residual + LayerNorm make the "
            "LSTM stack too (GNMT, RNMT+): the RNN's problem is the plain stack's, and the "
            "Transformer's tools fix it"
            if rln == HOLDS
            else f"residual + LayerNorm LSTM: {rln}"
        )
    elif plain in (MISSING, NOT_SHOWN):
        verdict, detail = plain, "the plain LSTM stack's side is not measured past a few layers"
    else:
        verdict = CAVEAT
        detail = (
            "the Transformer side holds, but the plain LSTM stack does not degrade past "
            f"{FEW_LAYERS} layers at this budget: the RNN's problem is not seen here"
        )
    return Claim(claim, expected, measured, verdict, detail, id="depth/stackability")


def chapter(results) -> list[Claim]:
    """The claims the chapter's closing table cites: depth/stackability."""
    return [stackability(results)]


def rules() -> list[str]:
    """How these verdicts are decided, for report.md."""
    return [
        f"* A seed fails when its validation loss is NaN or within {FAIL_MARGIN:g} nats of the "
        "unigram loss of the same characters.",
        f"* A depth degrades when its mean loss is above the best shallower depth's by more "
        f"than {SPREAD_K:g} pooled seed standard deviations (at least {MIN_TOL:g} nats).",
        "* A variant stacks when no depth of the grid fails or degrades; it breaks by L when a "
        f"depth in (1, L] does (L = {BREAK_DEPTH} for the residual and LayerNorm ablations; past "
        f"{FEW_LAYERS} for the plain LSTM, GNMT's 'up to 4 layers').",
        f"* Xiong's slopes: the log-log slope of the last layer's W^(2,L) gradient norm at init "
        f"(mean over seeds) against L, within {XIONG_TOL:g} of 0 (post-LN) and of -0.5 "
        f"(pre-LN); the right direction alone (pre-LN < 0 and below post-LN by "
        f"{XIONG_ORDER:g}) is a caveat.",
        "* Time per step is reported, never judged.",
        "* The chapter's claim (depth/stackability) is made of the table's verdicts: it holds "
        "when pre-LN stacks, pre-LN without its residual breaks and the plain LSTM degrades "
        "while residual + LayerNorm do not rescue the LSTM; a caveat when they do, or when the "
        "plain LSTM does not degrade; not shown when the plain LSTM is not run past "
        f"{FEW_LAYERS} layers (not measured when it is not run at all); it does not hold when "
        "the Transformer side does not.",
    ]
