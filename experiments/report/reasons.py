"""The scorecard's "why, or what would decide it" cell in words: one sentence a row.

Each row's sentence is written here for the verdict it reads now, its numbers read from the
judged claims (the committed results, through scorecard.judged): what the measurement shows,
in the chapter's terms, and for a row that does not hold or is undecided what went the other
way or what would decide it. A row whose verdict has no sentence here (a re-run moved it) falls
back to scorecard.why, the parts' own clauses, so a page never states a reason written for
another verdict. A measured text that no longer reads as a sentence expects is a ReasonError
naming the claim, never a wrong number.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from anatomy.probes.claims import DID_NOT_LEARN, FAILS, HOLDS, UNDECIDED
from experiments.report import scorecard

_NUM = r"(-?[\d,]*\.?\d+(?:e[-+]?\d+)?)"


class ReasonError(ValueError):
    """A claim's measured text does not read as its row's sentence expects."""


def _text(cid: str, field: str = "measured") -> str:
    c = scorecard.judged(cid)
    if c is None:
        raise ReasonError(f"{cid}: not judged (no committed result)")
    return getattr(c, field)


def num(cid: str, pattern: str, field: str = "measured") -> float:
    """The number `pattern`'s one group catches in claim `cid`'s measured text (or `field`)."""
    m = re.search(pattern.replace("NUM", _NUM), _text(cid, field))
    if m is None:
        raise ReasonError(f"{cid}: no {pattern!r} in its {field} text")
    return float(m.group(1).replace(",", ""))


def interval(cid: str, after: str = "", field: str = "measured") -> tuple[float, float, float]:
    """(mean, low, high) of the first 'x [lo, hi]' after `after` in claim `cid`'s text; a
    bound printed '1 (the bound)' reads as its number."""
    bound = r"(?: \(the bound\))?"
    pattern = rf"{re.escape(after)}\s*{_NUM} \[{_NUM}{bound}, {_NUM}{bound}\]"
    m = re.search(pattern, _text(cid, field))
    if m is None:
        raise ReasonError(f"{cid}: no interval after {after!r} in its {field} text")
    return tuple(float(g.replace(",", "")) for g in m.groups())


def f(x: float, digits: int = 2) -> str:
    """A number for a sentence: `digits` significant digits, whole numbers plainly."""
    if x == int(x) and abs(x) >= 10:
        return f"{int(x):,}"
    return f"{x:.{digits}g}"


def fx(x: float) -> str:
    """An exponent or a rate, two decimals kept: 'N^1.00'."""
    return f"{x:.2f}"


def fi(m: tuple[float, float, float], digits: int = 2) -> str:
    """'0.18 [-0.095, 0.46]'."""
    return f"{f(m[0], digits)} [{f(m[1], digits)}, {f(m[2], digits)}]"


def _gradients() -> str:
    g, lr = "gradient_decay/gradients", "long_range/recall"
    settings = re.search(r"within γ·σ_max for (\d+ of \d+)", _text(g))
    if settings is None:
        raise ReasonError(f"{g}: no 'within γ·σ_max for n of m'")
    recall = dict(
        (name, float(v))
        for name, v in re.findall(r"(\w+) (\d\.\d+)", _text(lr).split("means over seeds:")[1])
    )
    chance = recall.pop("chance")
    attention = recall.pop("transformer")
    best = max(recall, key=recall.get)
    k = num(lr, r"x\(t−(\d+)\)")
    return (
        f"a tanh RNN's gradient shrinks at the rate γ·σ_max bounds ({settings.group(1)} "
        f"settings), gates that carry ease it, and attention's does not shrink (per-step rate "
        f"{fx(num(g, r'self-attention.s per-step rate is NUM'))}); {f(k)} steps back "
        f"attention recalls {fx(attention)}, the best other model ({best}) {fx(recall[best])}, "
        f"chance {fx(chance)}"
    )


def _bottleneck() -> str:
    b = "rnn_vs_attn/bottleneck"
    bleu = {m: num(b, rf"{m} NUM \[") for m in ("rnnenc", "rnnsearch", "transformer")}
    return (
        f"on sources of 61 tokens and more RNNenc scores {f(bleu['rnnenc'], 3)} BLEU, "
        f"RNNsearch {f(bleu['rnnsearch'], 3)} and the Transformer {f(bleu['transformer'], 3)}; "
        f"RNNenc falls {f(num(b, r'fall from 1-10: NUM'), 3)} from the shortest sources"
    )


def _serial() -> str:
    p = "parallelism/parallel_training"
    return (
        f"the LSTM's compiled training step runs {fx(num(p, r'= NUM·N'))}·N serial steps, "
        f"attention's none; at N = 512 attention keeps "
        f"{f(num(p, r'at N=512: NUM'))} more of the 2 cores busy"
    )


def _cost_per_layer() -> str:
    c = "complexity/per_layer"
    lstm, att = num(c, r"N\^NUM"), num(c, r"vs N\^NUM")
    return (
        f"fitted FLOP exponents match the formulas: the LSTM's N^{fx(lstm)}, "
        f"attention's N^{fx(att)}; convolution and a window of r grow "
        f"linearly in k and r (every exponent within its tolerance)"
    )


def _memory() -> str:
    m = "attention_memory/memory"
    full, chunked, less = num(m, r"∝ N\^NUM"), num(m, r"vs N\^NUM"), num(m, r"; NUMx less")
    return (
        f"compiled memory grows as N^{fx(full)} with the weights and "
        f"N^{fx(chunked)} chunked: {f(less)}× less at N = 8,192"
    )


def _wall_clock() -> str:
    cpu, gpu = "parallelism/wall_clock", "scaling/speed_ratio"
    return (
        f"on this CPU attention trains at {fi(interval(cpu))}× the LSTM's speed at N = 512, "
        f"not 5-10×: the chapter's figure is a GPU's; a cost model estimates "
        f"{f(num(gpu, r'^NUM'), 3)}× on an H100 (an estimate, not a measurement)"
    )


def _decoding() -> str:
    d = "decode_cost/per_token"
    lstm, kv, again = (num(d, p) for p in (r"∝ N\^NUM", r"vs N\^NUM", r"recompute N\^NUM"))
    return (
        f"per-token FLOPs do not grow with N for the LSTM (N^{fx(lstm)}) and "
        f"grow as N^{fx(kv)} with a KV cache "
        f"(N^{fx(again)} recomputing the prefix)"
    )


def _quality() -> str:
    q, t = "rnn_vs_attn/quality_cost", "scaling/time_to_loss"
    gap = interval(q, "transformer − rnnsearch:")
    ratio = interval(t)
    return (
        f"at the same tokens RNNsearch translates best here: the Transformer is "
        f"{f(-gap[0])} BLEU behind it ({fi(gap)}); the time to the same validation loss "
        f"on this CPU is undecided ({fi(ratio)}× over 3 seeds, against 1/10-1/4: a longer run "
        f"would decide it), and a cost model puts it at "
        f"{f(num('scaling/time_to_loss_accelerator', r'^NUM'))}× on an H100 (an estimate)"
    )


def _stackability() -> str:
    s = "depth/steady_gain"
    last = interval(s, "g(4→8) vs g(1→2), ≥ 1/2")
    seeds = re.search(r"about (\d+) seeds", _text(s, "detail"))
    decide = (
        f"about {seeds.group(1)} seeds would decide it if the mean stays"
        if seeds
        else "a curve that leaves the edge would decide it"
    )
    lstm = interval("depth/stackability", "pre-LN − that LSTM", "detail")
    return (
        f"pre-LN stacks keep gaining with depth and plain RNN stacks and stacks without "
        f"residuals break (an LSTM with residuals and LayerNorm stacks too, {f(lstm[0])} nats "
        f"below pre-LN's best loss), but whether the gain per doubling is steady sits on its edge: "
        f"g(4→8) − g(1→2)/2 = {fi(last)} nats against ≥ 0 (5 seeds); {decide}"
    )


def _context() -> str:
    pi, n, lstm = (f"context_length/{x}" for x in ("extension/pi", "extension/ntk", "lstm_beyond"))
    pi_speed, speed = interval(pi, "(paired by seed)"), interval(n, "(paired by seed)")
    beyond = interval(lstm, "at 4L")
    edge = num(lstm, r"straddles the edge NUM", "detail")
    chance = num(lstm, r"chance NUM", "expected")
    seeds = re.search(r"about (\d+) seeds", _text(n, "detail"))
    more = f"about {seeds.group(1)} seeds would decide it" if seeds else "undecided"
    return (
        f"both changes of encoding extend RoPE to 4L (retrieval beyond L: position "
        f"interpolation {fx(interval(pi, 'at 4L')[0])}, a raised base {fx(interval(n, 'at 4L')[0])}"
        f"), but position interpolation adapts no "
        f"faster than plain RoPE given the same fine-tune ({fi(pi_speed)} against ≥ 0) and "
        f"the raised base's (NTK) speed-up sits on its edge ({fi(speed)}: {more}); "
        f"the LSTM's retrieval beyond L at 4L, {fi(beyond)}, straddles its edge "
        f"{f(edge, 3)} (near chance, {f(chance, 2)}): a longer run would decide it"
    )


def _scale_out() -> str:
    s, est = "scaling/structure", "scaling/near_linear"
    return (
        f"the compiled programs show a Transformer step's collectives fixed per layer and "
        f"outside the time loop, the LSTM's inside it "
        f"({f(num(s, r'fewest: NUM'))} per time step and layer); near-linear scaling on 8 "
        f"H100s is a cost model's estimate ({f(num(est, r'^NUM'), 2)} of linear), not a "
        f"measurement"
    )


def _part(cid: str, holds: str, fails: str, undecided: str) -> str:
    """A recall part in words for the verdict it reads: `holds` or `fails` with its interval,
    else (undecided) `undecided` with its interval and what would decide it."""
    c = scorecard.judged(cid)
    if c is None:
        raise ReasonError(f"{cid}: not judged (no committed result)")
    m = fi(interval(cid), 3)  # accuracies: three digits
    if c.verdict == HOLDS:
        return f"{holds} ({m})"
    if c.verdict == FAILS:
        return f"{fails} ({m})"
    seeds = re.search(r"about (\d+) seeds", c.detail)
    decide = f"about {seeds.group(1)} seeds would decide it" if seeds else "a longer run would"
    return f"{undecided} is undecided ({m}: {decide})"


def _recall() -> str:
    a, m = "recall/attention_every_n", "recall/matrix_vs_diagonal"
    worst = min(num(a, rf"N={n}: NUM") for n in (64, 128, 256))
    failed = re.match(r"([\w:=]+) did not learn recall", _text(m, "detail"))
    if failed is None:
        raise ReasonError(f"{m}: no 'X did not learn recall' in its detail")
    g = "recall/grows_with_state"  # its detail: "largest (N B) − smallest (N B), ..."
    large, small = num(g, r"\(NUM B\) − ", "detail"), num(g, r" − [\w:=]+ \(NUM B\)", "detail")
    span = f"from {f(small)} to {f(large)} B"
    hybrid = _part("recall/hybrid", "a hybrid with one attention layer closes most of the gap",
                   "a hybrid with one attention layer does not close most of the gap",
                   "whether a hybrid closes most of the gap")  # fmt: skip
    grows = _part(g, f"Based's recall grows {span}", f"Based's recall does not grow {span}",
                  f"Based's growth {span}")  # fmt: skip
    falls = _part("recall/falls_with_k", "it falls as K grows", "it does not fall as K grows",
                  "its fall with K at N = 256")  # fmt: skip
    return (
        f"attention solves MQAR (≥ {f(worst, 3)} at N = 64, 128 and 256); {hybrid}; {grows}; "
        f"{falls}; {failed.group(1)} never learns it (accuracy × K "
        f"{f(num(m, r'accuracy × K = NUM', 'detail'))} < 1.5), so matrix against diagonal is "
        f"not judged: a run long enough for Mamba would decide it"
    )


def _copying() -> str:
    c, g = "copy/attention_within", "copy/gap/mamba2"
    gap = interval(g)
    return (
        f"attention copies within the training length ({f(interval(c)[0], 3)}); the LSTM, "
        f"mLSTM and RG-LRU fall behind it beyond, but Mamba-2's gap {fi(gap)} straddles the "
        f"edge {f(num(g, r'straddles the edge NUM', 'detail'))} (6 seeds): more seeds at this "
        f"spread cannot clear it, a longer run would"
    )


def _crossover() -> str:
    h = "crossover/headline"
    lo, hi = (num(h, p, "expected") for p in (r"N\* in \[NUM,", r"N\* in \[[\d.]+, NUM\]"))
    return (
        f"on this CPU the recurrences overtake dense attention at N* = {fi(interval(h), 3)}, "
        f"inside [{f(lo)}, {f(hi)}], the range the programs' FLOP counts give (where they cross, "
        f"{f(num(h, r'N_f = NUM', 'expected'))}, within a factor 4); a chunked scan's program "
        f"takes {f(num('crossover/scan_serial', r'steps = NUM', 'expected'))}N/"
        f"{f(num('crossover/scan_serial', r'N / NUM', 'expected'))} serial steps, the LSTM's "
        f"2N, attention's none"
    )


def _matrix_state() -> str:
    b = "rnnenc_state/bigger_state"
    return (
        f"an mLSTM matrix state lifts RNNenc on sources of 61 tokens and more from "
        f"{f(num(b, r'rnnenc NUM'), 3)} to {fi(interval(b, 'BLEU 61+'), 3)} BLEU; the best "
        f"attention model stays {f(interval(b, 'still ahead: holds (', 'detail')[0], 3)} "
        f"BLEU ahead"
    )


# heading -> (the verdict its sentence is written for, the sentence)
SENTENCES: dict[str, tuple[str, Callable[[], str]]] = {
    "Gradients over distance": (HOLDS, _gradients),
    "The fixed-vector bottleneck": (HOLDS, _bottleneck),
    "Serial steps": (HOLDS, _serial),
    "Cost per layer": (HOLDS, _cost_per_layer),
    "Attention memory": (HOLDS, _memory),
    "Wall clock at N = 512": (FAILS, _wall_clock),
    "Decoding a token": (HOLDS, _decoding),
    "Quality at a fraction of the cost": (FAILS, _quality),
    "Stackability": (UNDECIDED, _stackability),
    "Context extension": (UNDECIDED, _context),
    "Scaling across machines": (HOLDS, _scale_out),
    "Recall against state size": (DID_NOT_LEARN, _recall),
    "Copying": (UNDECIDED, _copying),
    "Training cost today": (HOLDS, _crossover),
    "The bottleneck with a matrix state": (HOLDS, _matrix_state),
}


def why(entry: scorecard.Entry) -> str:
    """The row's sentence when its verdict is the one the sentence was written for, else the
    parts' own clauses (scorecard.why)."""
    verdict, _ = scorecard.verdicts(entry)
    written = SENTENCES.get(entry.heading)
    if written is None or written[0] != verdict:
        return scorecard.why(entry)
    return written[1]()
