"""context_length's claims, judged on what its results.json holds, by the one verdict rule.

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    context_length/task_shortcut       the task needs every position of L: the window reader
                                       (every key, the values of the first 3L/4 tokens only)
                                       does not pass the bar of "learned the task at L"
    context_length/model/<name>        every model's excess loss at L .. 8L and its retrieval
                                       at ft_factor·L, in the window of L and beyond (reported)
    context_length/learned/<name>      each pre-trained model learned the task at L: it closes
                                       the gap to the oracle on the last quarter of L, and
                                       retrieves at L (the precondition of the claims below)
    context_length/press_sinusoidal    sinusoidal positions blow up soon past L (Press et al.
                                       2022, Fig. 1)
    context_length/press_alibi         ALiBi stays flat out to 8L (the same figure)
    context_length/extension/pi, /ntk  RoPE + interpolation (+ a raised base), after the short
                                       fine-tune at ft_factor·L, works there, and gets there at
                                       least twice as fast as plain RoPE given the same
                                       fine-tune (its fine-tune curve against the control's)
    context_length/extension           "extending the context is a change of positional
                                       encoding": one of the two holds
    context_length/lstm_beyond         "the LSTM cannot use the extra context": its retrieval
                                       beyond L, after the same fine-tune, at chance
    context_length/nope                NoPE generalises past L better than RoPE and ALiBi
                                       (Kazemnejad et al. 2023)
    context_length/lstm_generalises    the LSTM generalises past L better than every
                                       Transformer (Delétang et al. 2023)
chapter(results), what the chapter's report and docs quote:
    context_length/context_extension   claim 9: the weakest of context_length/extension and
                                       context_length/lstm_beyond

Every quantity is measured per seed (the seeds train every model on the same batches, so a
difference between two models is paired by seed, over the seeds both ran) and judged by its
95% t interval over the seeds against a range stated here, before the run, with where the
range comes from; a retrieval accuracy's interval is clipped at its bounds. A loss is the mean
loss of the value tokens (the tokens context can predict; keys are noise); a model's "excess"
at length N is its loss minus the oracle's on the same sequences; its "rise" at N is excess(N)
− excess(L); its "generalisation gap" is its rise at ft_factor·L. A claim about a model is
judged only when that model learned the task at L (context_length/learned/<name> holds); when
it did not, the claim's verdict is "did not learn", with the numbers that failed it.

Each judged claim carries its power (anatomy.probes.claims.Power): the committed design-seed
pilot's effect and spread of the same quantity (results/context_length/pilot.json), and the
half-width the judged run's seeds give at that spread.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable

import numpy as np

from anatomy.probes.claims import (
    DID_NOT_LEARN,
    FAILS,
    HOLDS,
    MISSING,
    REPORTED,
    UNDECIDED,
    Claim,
    Interval,
    Range,
    bootstrap_interval,
    judge,
    power_from,
    t_interval,
    weakest,
)

# "Learned the task at L": on the value tokens of the last quarter of L (where a reader of a
# fixed window of early positions pays most), the loss closes at least this fraction of the
# gap from knowing nothing (log V) to the oracle.
LEARNED_FRACTION = 0.9
# "Retrieves": probe accuracy >= 1/V + ABOVE_CHANCE·(1 − 1/V) (0.53 for V = 16); "at chance":
# accuracy <= 1/V + AT_CHANCE_MARGIN.
ABOVE_CHANCE = 0.5
AT_CHANCE_MARGIN = 0.05
# "Flat" (Press et al. 2022: perplexity within a few percent past L): a rise of the excess loss
# of at most this many nats per value token (log 1.05 = 0.049: 5% in perplexity); "blows up":
# a rise of at least this.
LOSS_TOLERANCE = 0.05
GAP_MARGIN = 0.02  # nats: "generalises better" means a generalisation gap smaller by this
# "The change of encoding speeds the extension up": after s fine-tune steps the extended model
# retrieves beyond L at least as well as plain RoPE after SPEEDUP·s steps (Chen et al. 2023
# report more than 10x for position interpolation against direct fine-tuning).
SPEEDUP = 2

EXTENSIONS = {"pi": "rope+pi+ft", "ntk": "rope+ntk+ft"}  # the two extensions, fine-tuned
CONTROL = "rope+ft"  # plain RoPE given the same fine-tune
WINDOW_FRACTION = 3 / 4  # the window reader reads the values of the first 3L/4 tokens
PILOT = "results/context_length/pilot.json"

# where each range comes from (a citation or a derivation), printed with each claim's power
SOURCE_LEARNED = (
    f"derived: {LEARNED_FRACTION:g} lies above the ~0.85 that a reader of the first 3L/4 tokens "
    "closes on the same streams (context_length/task_shortcut), so a model that passes reads "
    "past a fixed window; retrieval halfway from chance 1/V to perfect"
)
SOURCE_RETRIEVES = (
    "derived: halfway from chance 1/V to perfect retrieval (a model that reads only the last L "
    "tokens retrieves a key planted beyond L at exactly 1/V)"
)
SOURCE_AT_CHANCE = (
    "derived: a model whose context is the last L tokens retrieves a key planted beyond L at "
    f"exactly 1/V; {AT_CHANCE_MARGIN:g} is the tolerance stated before the run (about a tenth "
    "of the way from chance to 'retrieves')"
)
SOURCE_FLAT = (
    "Press et al. 2022 (Fig. 1): an encoding that extrapolates keeps its perplexity within a "
    f"few percent past L; 5% is log 1.05 = {LOSS_TOLERANCE:g} nats"
)
SOURCE_BLOWS_UP = (
    "Press et al. 2022 (Fig. 1): sinusoidal perplexity climbs steeply within a few hundred "
    f"tokens past L; 'blows up' is a rise past the {LOSS_TOLERANCE:g} nats of 'flat'"
)
SOURCE_SPEEDUP = (
    "Chen et al. 2023: position interpolation reached the extended window within 1,000 "
    "fine-tune steps where direct fine-tuning (the control here) had not after 10,000, more "
    f"than 10x faster; the claim here is {SPEEDUP}x: after s steps the extension retrieves "
    f"beyond L at least as well as plain RoPE after {SPEEDUP}s (0 on this difference)"
)
SOURCE_GAP = (
    f"stated before the run: {GAP_MARGIN:g} nats (2% in perplexity) is the smallest difference "
    "of generalisation gaps read as 'better', below the 5% of 'flat'"
)


# --- what a claim reads from results.json (one value per seed) ---------------------------------


def L(results) -> int:
    return results["train_length"]


def has(results, name) -> bool:
    return name in results["models"]


def _floats(xs) -> np.ndarray:
    return np.array(
        [np.nan if x is None else float(x) for x in np.ravel(np.asarray(xs, dtype=object))]
    ).reshape(np.shape(np.asarray(xs, dtype=object)))


def seeds(results, name) -> list[int]:
    """The seeds `name` ran on (a result without the list: 0 .. n-1, one per row)."""
    m = results["models"][name]
    return list(m["seeds"]) if "seeds" in m else list(range(len(m["value_loss_by_position"])))


def on_common_seeds(results, *named) -> list[np.ndarray]:
    """Per-seed values [(name, values)] restricted to the seeds every name ran on, in order:
    a difference between two models is paired by seed (the same batches)."""
    common = [
        s for s in seeds(results, named[0][0]) if all(s in seeds(results, m) for m, _ in named)
    ]
    return [np.asarray(v)[[seeds(results, m).index(s) for s in common]] for m, v in named]


def _by_position(results, name) -> np.ndarray:
    """[seeds, pairs] the value loss of each pair (NaN: no such model)."""
    if not has(results, name):
        return np.full((1, 1), np.nan)
    return _floats(results["models"][name]["value_loss_by_position"])


def _pairs(length) -> slice:
    return slice(0, int(length) // 2)


def tail_pairs(train_length) -> slice:
    """The value pairs of the last quarter of L (where "learned" is measured)."""
    return slice(3 * int(train_length) // 8, int(train_length) // 2)


def _tail(results) -> slice:
    return tail_pairs(L(results))


def oracle_loss(results, length) -> float:
    return float(np.mean(_floats(results["oracle"]["value_loss_by_position"])[_pairs(length)]))


def value_loss(results, name, length) -> np.ndarray:
    """[seed] the model's mean value loss over sequences of `length`."""
    return _by_position(results, name)[:, _pairs(length)].mean(axis=1)


def excess(results, name, length) -> np.ndarray:
    """[seed] loss above the oracle's at `length` (the same held-out sequences)."""
    return value_loss(results, name, length) - oracle_loss(results, length)


def rise(results, name, length, ref=None) -> np.ndarray:
    """[seed] excess of `name` at `length` minus excess of `ref` (default: itself) at L, paired
    by seed."""
    ref = ref or name
    if not (has(results, name) and has(results, ref)):
        return np.full(1, np.nan)
    a, b = on_common_seeds(
        results,
        (name, excess(results, name, length)),
        (ref, excess(results, ref, L(results))),
    )
    return a - b


def gap(results, name) -> np.ndarray:
    """[seed] generalisation gap: the rise at ft_factor·L (0: no worse past L)."""
    return rise(results, name, results["ft_length"])


def _closed(loss, oracle, log_v):
    return 1.0 - (loss - oracle) / (log_v - oracle)


def closed(results, name) -> np.ndarray:
    """[seed] the fraction of the gap from log V to the oracle closed on the last quarter of L."""
    oracle = np.mean(_floats(results["oracle"]["value_loss_by_position"])[_tail(results)])
    loss = _by_position(results, name)[:, _tail(results)].mean(axis=1)
    return _closed(loss, oracle, results["log_values"])


def reader_closed(results) -> Interval:
    """The same fraction for the window reader (task.window_reader_value_loss) on the same
    held-out streams, with its bootstrap interval over the streams (no model, no seed: the
    uncertainty is the streams', 64 of them)."""
    log_v = results["log_values"]
    pairs = np.stack(
        [
            _floats(results["window_reader"]["tail_by_stream"]),
            _floats(results["oracle"]["tail_by_stream"]),
        ],
        axis=1,
    )  # [E, 2]: (reader, oracle) per stream

    def stat(rows):
        return float(_closed(rows[:, 0].mean(), rows[:, 1].mean(), log_v))

    return bootstrap_interval(pairs, stat, over="held-out streams")


def in_window(results):
    """k in the window of L: the key within the last L - 2 tokens."""
    return lambda k: k <= L(results) - 2


def beyond(results):
    """k beyond L (the probe plants these keys at absolute positions >= L)."""
    return lambda k: k > L(results)


def _probe(results, name, length) -> tuple[list[int], np.ndarray]:
    """(the k at `length`, accuracy [k, seed]); NaN when the model or the length is missing."""
    if not has(results, name) or length not in results["probe_lengths"]:
        return [], np.full((0, 1), np.nan)
    i = results["probe_lengths"].index(length)
    return list(results["k_grid"][i]), _floats(results["models"][name]["probe"][i])


def retrieval(results, name, length, keep) -> np.ndarray:
    """[seed] probe accuracy at `length`, mean over the k with keep(k) (NaN: none)."""
    ks, acc = _probe(results, name, length)
    rows = [i for i, k in enumerate(ks) if keep(k)]
    return acc[rows].mean(axis=0) if rows else np.full(acc.shape[1], np.nan)


def curve(results, name, keep) -> tuple[list[int], np.ndarray]:
    """(the fine-tune steps, retrieval [step, seed] at ft_factor·L, mean over the k with
    keep(k)) along `name`'s fine-tune; ([], empty) when it has no curve."""
    m = results["models"].get(name) if has(results, name) else None
    if m is None or "curve" not in m:
        return [], np.full((0, 1), np.nan)
    i = results["probe_lengths"].index(results["ft_length"])
    rows = [j for j, k in enumerate(results["k_grid"][i]) if keep(k)]
    acc = _floats(m["curve"]["probe"])  # [step, k, seed]
    return list(m["curve"]["steps"]), acc[:, rows].mean(axis=1)


def speedup_steps(results, name) -> list[tuple[int, int]]:
    """The pairs (s, SPEEDUP·s), s > 0, both on `name`'s and the control's curves."""
    ours, _ = curve(results, name, beyond(results))
    theirs, _ = curve(results, CONTROL, beyond(results))
    return [(s, SPEEDUP * s) for s in ours if s > 0 and SPEEDUP * s in theirs]


def speedup(results, name) -> np.ndarray:
    """[seed] mean over speedup_steps of (name's retrieval beyond L after s steps) − (the
    control's after SPEEDUP·s), paired by seed: ≥ 0 when `name` is at least SPEEDUP times as
    fast (NaN when the curves are missing)."""
    pairs = speedup_steps(results, name)
    if not pairs:
        return np.full(1, np.nan)
    ours_steps, ours = curve(results, name, beyond(results))
    theirs_steps, theirs = curve(results, CONTROL, beyond(results))
    a = np.mean([ours[ours_steps.index(s)] for s, _ in pairs], axis=0)
    b = np.mean([theirs[theirs_steps.index(t)] for _, t in pairs], axis=0)
    a, b = on_common_seeds(results, (name, a), (CONTROL, b))
    return a - b


def retrieves(chance) -> Range:
    bar = chance + ABOVE_CHANCE * (1.0 - chance)
    return Range.at_least(bar, f"≥ {bar:.3f} (well above chance {chance:.3f}; one-sided)")


def at_chance(chance) -> Range:
    top = chance + AT_CHANCE_MARGIN
    return Range.at_most(top, f"≤ {top:.3f} (at chance {chance:.3f}; one-sided)")


FLAT = Range.at_most(LOSS_TOLERANCE, f"≤ {LOSS_TOLERANCE:g} nats (flat; one-sided)")
BLOWS_UP = Range.at_least(LOSS_TOLERANCE, f"≥ {LOSS_TOLERANCE:g} nats (blows up; one-sided)")
LEARNED = Range.at_least(LEARNED_FRACTION, f"≥ {LEARNED_FRACTION:g} (one-sided)")
FASTER = Range.at_least(0.0, f"≥ 0 (at least {SPEEDUP}x as fast; one-sided)")
BETTER = Range.at_least(GAP_MARGIN, f"≥ {GAP_MARGIN:g} nats (one-sided)")
ACCURACY = (0.0, 1.0)  # a retrieval accuracy's bounds
DIFFERENCE = (-1.0, 1.0)  # a difference of two accuracies


# --- a claim made of parts, its power, and the precondition ------------------------------------


@dataclasses.dataclass(frozen=True)
class Part:
    """One judged quantity of a claim: label, the per-seed values from a results dict, the
    range, where the range comes from, and the bounds of a bounded quantity."""

    label: str
    values: Callable[[dict], np.ndarray]
    rng: Range
    source: str
    bounds: tuple[float, float] | None = None


@functools.cache
def _committed_pilot():
    from experiments.lab import committed

    return committed.pilot("context_length")


def pilot():
    """The committed design-seed pilot's results (None when none is committed)."""
    return _committed_pilot()


def _power(part: Part, n: int):
    """Power of `part` at n judged seeds from the pilot's values of the same quantity (None
    without a pilot or without two finite pilot values)."""
    p = pilot()
    if p is None:
        return None
    try:
        with warnings.catch_warnings():  # a model the pilot lacks: NaN, said below
            warnings.simplefilter("ignore", RuntimeWarning)
            values = np.asarray(part.values(p), float)
    except (KeyError, IndexError, ValueError, TypeError):
        return None
    if np.sum(np.isfinite(values)) < 2 or not np.all(np.isfinite(values)):
        return None
    return power_from(values, part.rng, seeds=n, source=part.source, pilot=PILOT)


def composite(cid, claim, results, parts, detail="", precondition=None) -> Claim:
    """The Claim `cid` made of `parts` (Part), each judged by the one rule on its t interval
    over the seeds, the claim's verdict the weakest of theirs (MISSING without parts);
    precondition: (verdict, reason) that replaces the verdict (a model did not learn); power:
    each part's, from the pilot."""
    judged = []
    for p in parts:
        iv = t_interval(p.values(results), bounds=p.bounds)
        judged.append((p, iv, *judge(iv, p.rng)))
    reasons = [(p.label, reason) for p, _, v, reason in judged if v != HOLDS and reason]
    if len(reasons) > 1 and len({r for _, r in reasons}) == 1 and len(reasons) == len(judged):
        why = [reasons[0][1]]  # one reason for every part ("1 seed: fewer than 3"): said once
    else:
        why = [f"{label}: {reason}" for label, reason in reasons]
    verdict = weakest(v for *_, v, _ in judged)
    if precondition is not None:
        verdict, why = precondition[0], [precondition[1]]
    powers = [(p.label, _power(p, iv.n)) for p, iv, _, _ in judged]
    return Claim(
        claim,
        "; ".join(f"{p.label} {p.rng}" for p, *_ in judged),
        "; ".join(f"{p.label} {iv}" for p, iv, _, _ in judged),
        verdict,
        "; ".join([*why, detail] if detail else why),
        id=cid,
        power="; ".join(f"{label}: {pw.text()}" for label, pw in powers if pw is not None),
    )


def any_of(verdicts) -> str:
    """One verdict for a claim that holds when one of its instances holds ("changing the
    encoding extends the context": by interpolation, or by a raised base): HOLDS if one
    holds, FAILS if every one fails, MISSING if there are none, else the weakest of those
    that do not fail (did not learn, undecided)."""
    verdicts = list(verdicts)
    if not verdicts:
        return MISSING
    if HOLDS in verdicts:
        return HOLDS
    if all(v == FAILS for v in verdicts):
        return FAILS
    return weakest(v for v in verdicts if v != FAILS)


def learned_parts(results, name) -> list[Part]:
    return [
        Part(
            "gap to the oracle closed on the last quarter of L",
            lambda r: closed(r, name),
            LEARNED,
            SOURCE_LEARNED,
        ),
        Part(
            "retrieval at L, mean over k",
            lambda r: retrieval(r, name, L(r), in_window(r)),
            retrieves(results["chance"]),
            SOURCE_RETRIEVES,
            ACCURACY,
        ),
    ]


def learned(results, name) -> Claim:
    """context_length/learned/<name>: the weakest of (the gap closed on the last quarter of
    L >= LEARNED_FRACTION, the retrieval at L (mean over k) well above chance). The loss part
    is what a reader of a fixed window of early positions fails (task_shortcut); the probe
    part, that the model retrieves a planted key at all."""
    return composite(
        f"context_length/learned/{name}",
        f"{name} learned the task at L: it reads every position of L, not a window of them",
        results,
        learned_parts(results, name),
    )


def precondition(results, names):
    """None when every one of `names` learned the task at L; else (DID_NOT_LEARN, the reason
    in words with its numbers) when one did not, or (UNDECIDED, why) when whether it did is
    undecided."""
    failed, open_ = [], []
    for m in names:
        got = learned(results, m)
        if got.verdict == HOLDS:
            continue
        c = float(np.nanmean(closed(results, m)))
        r = float(np.nanmean(retrieval(results, m, L(results), in_window(results))))
        bar = retrieves(results["chance"]).lo
        said = (
            f"it closes {c:.2f} of the gap to the oracle on the last quarter of L (bar "
            f"{LEARNED_FRACTION:g}) and retrieves {r:.3f} at L (bar {bar:.3f}, chance "
            f"{results['chance']:.4f})"
        )
        if got.verdict == UNDECIDED:
            open_.append(f"whether {m} learned the task at L is undecided: {said}; {got.detail}")
        else:
            failed.append(f"{m} did not learn the task at L: {said}")
    if failed:
        return DID_NOT_LEARN, "; ".join(failed)
    if open_:
        return UNDECIDED, "; ".join(open_)
    return None


# --- the claims --------------------------------------------------------------------------------


def _mean(xs) -> float:
    xs = np.asarray(xs, float)
    return float(np.nanmean(xs)) if np.isfinite(xs).any() else float("nan")


def _fold(results, n) -> str:
    return f"{n // L(results)}L"


def task_shortcut(results) -> list[Claim]:
    if "window_reader" not in results:
        return []
    w = results["window_reader"]["window"]
    iv = reader_closed(results)
    rng = Range.at_most(LEARNED_FRACTION, f"≤ {LEARNED_FRACTION:g} (one-sided)")
    verdict, reason = judge(iv, rng)
    return [
        Claim(
            f"the task needs every position of L: a reader that sees every key but only the "
            f"values among the first {w} tokens (3L/4) does not pass the bar of 'learned'",
            f"its gap closed on the last quarter of L {rng}",
            f"its gap closed on the last quarter of L {iv}",
            verdict,
            "; ".join(
                x
                for x in (
                    reason,
                    f"and it retrieves at chance wherever the probed key lies past token {w} "
                    f"(k < {L(results) - 2 - w} at L)",
                )
                if x
            ),
            id="context_length/task_shortcut",
        )
    ]


def models(results) -> list[Claim]:
    c, nf = results["chance"], results["ft_length"]
    folds = "/".join(_fold(results, m) for m in results["lengths"])
    rows = []
    for name, m in results["models"].items():
        ex = " / ".join(f"{_mean(excess(results, name, k)):.3f}" for k in results["lengths"])
        win = _mean(retrieval(results, name, nf, in_window(results)))
        far = _mean(retrieval(results, name, nf, beyond(results)))
        n = len(seeds(results, name))
        rows.append(
            Claim(
                f"{name}: excess loss over the oracle at {folds}; retrieval at {_fold(results, nf)} "
                f"within the window of L, beyond L",
                f"oracle loss {' / '.join(f'{oracle_loss(results, k):.3f}' for k in results['lengths'])}; "
                f"chance {c:.3f}",
                f"{ex}; {win:.2f}, {far:.2f} (mean of {n} seed{'s' if n != 1 else ''})",
                REPORTED,
                f"{m['stage']}" + (f" from {m['from']}" if m["from"] != name else ""),
                id=f"context_length/model/{name}",
            )
        )
    return rows


def pretrained(results) -> list[str]:
    return [m for m, r in results["models"].items() if r["from"] == m]


def learned_all(results) -> list[Claim]:
    return [learned(results, m) for m in pretrained(results)]


def press_sinusoidal(results) -> list[Claim]:
    if not has(results, "sinusoidal") or len(results["lengths"]) < 2:
        return []
    n2 = results["lengths"][1]
    return [
        composite(
            "context_length/press_sinusoidal",
            "sinusoidal positions blow up soon past L (Press et al. 2022, Fig. 1)",
            results,
            [
                Part(
                    f"rise of its excess loss from L to {_fold(results, n2)}",
                    lambda r: rise(r, "sinusoidal", n2),
                    BLOWS_UP,
                    SOURCE_BLOWS_UP,
                )
            ],
            precondition=precondition(results, ["sinusoidal"]),
        )
    ]


def press_alibi(results) -> list[Claim]:
    if not has(results, "alibi"):
        return []
    longer = [m for m in results["lengths"] if m > L(results)]
    return [
        composite(
            "context_length/press_alibi",
            f"ALiBi stays flat out to {_fold(results, max(results['lengths']))} (Press et al. 2022, Fig. 1)",
            results,
            [
                Part(
                    f"rise to {_fold(results, m)}",
                    lambda r, m=m: rise(r, "alibi", m),
                    FLAT,
                    SOURCE_FLAT,
                )
                for m in longer
            ],
            precondition=precondition(results, ["alibi"]),
        )
    ]


def extension_parts(results, how) -> list[Part]:
    name = EXTENSIONS[how]
    nf, c = results["ft_length"], results["chance"]
    fold = _fold(results, nf)
    pairs = speedup_steps(results, name)
    return [
        Part(
            f"rise of its excess loss at {fold} over RoPE's at L",
            lambda r: rise(r, name, r["ft_length"], "rope"),
            FLAT,
            SOURCE_FLAT,
        ),
        Part(
            f"retrieval beyond L at {fold}",
            lambda r: retrieval(r, name, r["ft_length"], beyond(r)),
            retrieves(c),
            SOURCE_RETRIEVES,
            ACCURACY,
        ),
        Part(
            f"retrieval within the window of L at {fold}",
            lambda r: retrieval(r, name, r["ft_length"], in_window(r)),
            retrieves(c),
            SOURCE_RETRIEVES,
            ACCURACY,
        ),
        Part(
            f"retrieval beyond L after s steps minus {CONTROL}'s after {SPEEDUP}s, mean over "
            f"(s, {SPEEDUP}s) in {pairs or 'none'} (paired by seed)",
            lambda r: speedup(r, name),
            FASTER,
            SOURCE_SPEEDUP,
            DIFFERENCE,
        ),
    ]


def extension_by(results, how) -> list[Claim]:
    """context_length/extension/<how>: RoPE extended by `how`, fine-tuned, at ft_factor·L."""
    name = EXTENSIONS[how]
    if not has(results, name) or not has(results, "rope"):
        return []
    nf = results["ft_length"]
    claim = composite(
        f"context_length/extension/{how}",
        f"RoPE extended by {'position interpolation' if how == 'pi' else 'a raised base (NTK-aware)'}, "
        f"{results['ft_steps']} fine-tune steps at {_fold(results, nf)}: it works at "
        f"{_fold(results, nf)}, and gets there at least {SPEEDUP}x as fast as plain RoPE given "
        "the same fine-tune",
        results,
        extension_parts(results, how),
        precondition=precondition(results, ["rope"]),
    )
    if results["models"][name]["params"] != results["models"]["rope"]["params"]:
        claim = dataclasses.replace(
            claim,
            verdict=FAILS,
            detail=f"{name}'s parameters differ from RoPE's: not the same model",
        )
    return [claim]


def extension(results) -> list[Claim]:
    parts = [c for how in EXTENSIONS for c in extension_by(results, how)]
    if not parts:
        return []
    return [
        Claim(
            "extending the context is a change of positional encoding (RoPE + interpolation or "
            f"a raised base, {results['ft_steps']} fine-tune steps at {_fold(results, results['ft_length'])})",
            " or ".join(c.id for c in parts) + " holds",
            "; ".join(f"{c.id.rsplit('/', 1)[1]}: {c.verdict}" for c in parts),
            any_of(c.verdict for c in parts),
            "the weakest part of each is in its own row",
            id="context_length/extension",
        )
    ]


def lstm_beyond(results) -> list[Claim]:
    if not has(results, "lstm"):
        return []
    name = "lstm+ft" if has(results, "lstm+ft") else "lstm"
    nf = results["ft_length"]
    return [
        composite(
            "context_length/lstm_beyond",
            "the LSTM cannot use the extra context (retrieval from beyond L)",
            results,
            [
                Part(
                    f"{name}: retrieval beyond L at {_fold(results, nf)}",
                    lambda r: retrieval(r, name, r["ft_length"], beyond(r)),
                    at_chance(results["chance"]),
                    SOURCE_AT_CHANCE,
                    ACCURACY,
                )
            ],
            precondition=precondition(results, ["lstm"]),
        )
    ]


def _gap_claim(results, own, others, claim, cid) -> list[Claim]:
    """`own`'s generalisation gap below each of `others` that learned the task at L by
    GAP_MARGIN, paired by seed; the weakest over them."""
    present = [m for m in others if has(results, m)]
    if not has(results, own) or not present:
        return []
    compared = [m for m in present if learned(results, m).verdict == HOLDS]
    left_out = [m for m in present if m not in compared]
    nf = _fold(results, results["ft_length"])
    note = f"{', '.join(left_out)} did not learn the task at L: left out" if left_out else ""
    gate = precondition(results, [own])
    if not compared:
        verdict, why = gate or (
            UNDECIDED,
            "no other model learned the task at L: nothing to compare",
        )
        return [
            Claim(
                claim,
                f"gaps (rise to {nf}) below every other's by ≥ {GAP_MARGIN:g} nats",
                "—",
                verdict,
                "; ".join(x for x in (why, note) if x),
                id=cid,
            )
        ]

    def diff(r, m):
        a, b = on_common_seeds(r, (m, gap(r, m)), (own, gap(r, own)))
        return a - b

    parts = [
        Part(f"{m}'s gap − {own}'s", lambda r, m=m: diff(r, m), BETTER, SOURCE_GAP)
        for m in compared
    ]
    return [composite(cid, claim, results, parts, note, precondition=gate)]


def nope(results) -> list[Claim]:
    return _gap_claim(
        results,
        "none",
        ("rope", "alibi"),
        "NoPE generalises past L better than RoPE and ALiBi (Kazemnejad et al. 2023)",
        "context_length/nope",
    )


def lstm_generalises(results) -> list[Claim]:
    transformers = [
        m for m in pretrained(results) if results["models"][m]["family"] == "transformer"
    ]
    return _gap_claim(
        results,
        "lstm",
        transformers,
        "the LSTM generalises past L better than every Transformer (Delétang et al. 2023)",
        "context_length/lstm_generalises",
    )


def table(results) -> list[Claim]:
    return [
        *task_shortcut(results),
        *models(results),
        *learned_all(results),
        *press_sinusoidal(results),
        *press_alibi(results),
        *[c for how in EXTENSIONS for c in extension_by(results, how)],
        *extension(results),
        *lstm_beyond(results),
        *nope(results),
        *lstm_generalises(results),
    ]


def context_extension(results) -> Claim:
    ext = next(iter(extension(results)), None)
    lstm = next(iter(lstm_beyond(results)), None)
    halves = [x for x in (ext, lstm) if x is not None]
    return Claim(
        "an LSTM trained at L cannot use a longer context; a Transformer is extended by "
        "changing its positional encoding, the architecture unchanged",
        "context_length/extension and context_length/lstm_beyond hold",
        f"extension: {ext.verdict if ext else MISSING} ({ext.measured if ext else '—'}); "
        f"LSTM: {lstm.verdict if lstm else MISSING} ({lstm.measured if lstm else '—'})",
        weakest([x.verdict for x in halves] + ([MISSING] if len(halves) < 2 else [])),
        "; ".join(f"{x.id}: {x.detail}" for x in halves if x.detail),
        id="context_length/context_extension",
    )


def chapter(results) -> list[Claim]:
    return [context_extension(results)]


def rules() -> list[str]:
    """How these verdicts are decided, for the report's "How verdicts are decided"."""
    return [
        "* Every quantity is measured per seed and judged by its 95% t interval over the seeds "
        "(clipped at 0 and 1 for a retrieval accuracy) against a range stated before the run, "
        "with where it comes from (anatomy.probes.claims.judge): inside, holds; outside, does "
        "not hold here; straddling an edge or fewer than 3 seeds, undecided (with the seeds "
        "that would decide it). A claim made of parts is its weakest part. Differences between "
        "two models are paired by seed (the same batches), over the seeds both ran. Each claim's "
        "power: the design-seed pilot's effect and spread, and the half-width of the judged "
        "seeds.",
        "* Losses are the mean loss of the value tokens (keys are noise); excess = loss − the "
        "oracle's on the same sequences; the rise at N = excess(N) − excess(L). 'Flat': a rise "
        f"≤ {LOSS_TOLERANCE:g} nats (log 1.05: 5% in perplexity); 'blows up': ≥ that.",
        f"* A model learned the task at L when, on the last quarter of L, its loss closes ≥ "
        f"{LEARNED_FRACTION:g} of the gap from log V to the oracle, and its retrieval at L (mean "
        "over k) is well above chance (context_length/learned/<name>). A claim about a "
        f"model that did not is {DID_NOT_LEARN!r}, with the numbers that failed it. A reader of "
        "the first 3L/4 tokens fails that bar (context_length/task_shortcut).",
        f"* Well above chance: accuracy ≥ 1/V + {ABOVE_CHANCE:g}·(1 − 1/V); at chance: ≤ 1/V + "
        f"{AT_CHANCE_MARGIN:g}. Retrieval within the window of L: the probe at ft_factor·L over "
        "k ≤ L − 2; beyond L: over k > L, the key at an absolute position ≥ L.",
        "* An extension (RoPE + interpolation, or + a raised base, fine-tuned at ft_factor·L) "
        "holds when, at the end of the fine-tune, its rise there over RoPE at L is flat and it "
        "retrieves within the window and beyond L, and along the fine-tune it is at least "
        f"{SPEEDUP}x as fast as plain RoPE given the same fine-tune ({CONTROL}): its retrieval "
        f"beyond L after s steps minus the control's after {SPEEDUP}s, mean over the curve's "
        "pairs, ≥ 0 (Chen et al. 2023 report more than 10x); context_length/extension holds "
        "when one extension does.",
        f"* Generalises better: a generalisation gap (the rise at ft_factor·L) smaller than "
        f"every other's by ≥ {GAP_MARGIN:g} nats, for each other model that learned the task.",
    ]
