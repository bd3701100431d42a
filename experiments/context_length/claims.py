"""context_length's claims, judged on what its results.json holds, by the one verdict rule.

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    context_length/task_shortcut       the task needs every position of L: the window reader
                                       (every key, the values of the first 3L/4 tokens only)
                                       does not pass the bar of "learned the task at L"
    context_length/model/<name>        every model's excess loss at L .. 8L and its retrieval
                                       at ft_factor·L, in the window of L and beyond (reported)
    context_length/learned/<name>      each pre-trained model learned the task at L: it closes
                                       the gap to the oracle on the last quarter of L, and
                                       retrieves at L (the gate of the claims below)
    context_length/press_sinusoidal    sinusoidal positions blow up soon past L (Press et al.
                                       2022, Fig. 1)
    context_length/press_alibi         ALiBi stays flat out to 8L (the same figure)
    context_length/extension/pi, /ntk  RoPE + interpolation (+ a raised base), after the short
                                       fine-tune at ft_factor·L, works there and does what
                                       plain RoPE given the same fine-tune does not
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
difference between two models is paired by seed) and judged by its 95% interval over the
seeds against a range stated here, before the run. A loss is the mean loss of the value tokens
(the tokens context can predict; keys are noise); a model's "excess" at length N is its loss
minus the oracle's on the same sequences; its "rise" at N is excess(N) − excess(L); its
"generalisation gap" is its rise at ft_factor·L. A claim about a model is judged only when
that model learned the task at L (context_length/learned/<name> holds); else it is not shown.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from anatomy.probes.claims import (
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
# "The change of encoding does something the fine-tune alone does not": the extended model's
# retrieval beyond L exceeds plain RoPE's after the same fine-tune by at least this.
ADVANTAGE = 0.1

EXTENSIONS = {"pi": "rope+pi+ft", "ntk": "rope+ntk+ft"}  # the two extensions, fine-tuned
CONTROL = "rope+ft"  # plain RoPE given the same fine-tune
WINDOW_FRACTION = 3 / 4  # the window reader reads the values of the first 3L/4 tokens


# --- what a claim reads from results.json (one value per seed) ---------------------------------


def L(results) -> int:
    return results["train_length"]


def has(results, name) -> bool:
    return name in results["models"]


def _floats(xs) -> np.ndarray:
    return np.array(
        [np.nan if x is None else float(x) for x in np.ravel(np.asarray(xs, dtype=object))]
    ).reshape(np.shape(np.asarray(xs, dtype=object)))


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
    """[seed] excess of `name` at `length` minus excess of `ref` (default: itself) at L."""
    return excess(results, name, length) - excess(results, ref or name, L(results))


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
    uncertainty is the streams')."""
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


def retrieves(chance) -> Range:
    bar = chance + ABOVE_CHANCE * (1.0 - chance)
    return Range.at_least(bar, f"≥ {bar:.3f} (well above chance {chance:.3f}; one-sided)")


def at_chance(chance) -> Range:
    top = chance + AT_CHANCE_MARGIN
    return Range.at_most(top, f"≤ {top:.3f} (at chance {chance:.3f}; one-sided)")


FLAT = Range.at_most(LOSS_TOLERANCE, f"≤ {LOSS_TOLERANCE:g} nats (flat; one-sided)")
BLOWS_UP = Range.at_least(LOSS_TOLERANCE, f"≥ {LOSS_TOLERANCE:g} nats (blows up; one-sided)")
LEARNED = Range.at_least(LEARNED_FRACTION, f"≥ {LEARNED_FRACTION:g} (one-sided)")


# --- a claim made of parts, and the gate -------------------------------------------------------


def composite(cid, claim, parts, detail="") -> Claim:
    """The Claim `cid` made of parts [(label, Interval, Range)]: each judged by the one rule,
    the claim's verdict the weakest of theirs (MISSING without parts)."""
    judged = [(label, iv, rng, *judge(iv, rng)) for label, iv, rng in parts]
    reasons = [(label, reason) for label, _, _, v, reason in judged if v != HOLDS and reason]
    if len(reasons) > 1 and len({r for _, r in reasons}) == 1 and len(reasons) == len(judged):
        why = [reasons[0][1]]  # one reason for every part ("1 seed: fewer than 3"): said once
    else:
        why = [f"{label}: {reason}" for label, reason in reasons]
    return Claim(
        claim,
        "; ".join(f"{label} {rng}" for label, _, rng, _, _ in judged),
        "; ".join(f"{label} {iv}" for label, iv, _, _, _ in judged),
        weakest(v for *_, v, _ in judged),
        "; ".join([*why, detail] if detail else why),
        id=cid,
    )


def any_of(verdicts) -> str:
    """One verdict for a claim that holds when one of its instances holds ("changing the
    encoding extends the context": by interpolation, or by a raised base): HOLDS if one
    holds, FAILS if every one fails, MISSING if there are none, else UNDECIDED."""
    verdicts = list(verdicts)
    if not verdicts:
        return MISSING
    if HOLDS in verdicts:
        return HOLDS
    return FAILS if all(v == FAILS for v in verdicts) else UNDECIDED


def learned(results, name) -> Claim:
    """context_length/learned/<name>: the weakest of (the gap closed on the last quarter of
    L >= LEARNED_FRACTION, the retrieval at L (mean over k) well above chance). The loss part
    is what a reader of a fixed window of early positions fails (task_shortcut); the probe
    part, that the model retrieves a planted key at all."""
    return composite(
        f"context_length/learned/{name}",
        f"{name} learned the task at L: it reads every position of L, not a window of them",
        [
            (
                "gap to the oracle closed on the last quarter of L",
                t_interval(closed(results, name)),
                LEARNED,
            ),
            (
                "retrieval at L, mean over k",
                t_interval(retrieval(results, name, L(results), in_window(results))),
                retrieves(results["chance"]),
            ),
        ],
    )


def gated(results, names, claim: Claim) -> Claim:
    """`claim`, or UNDECIDED when one of `names` did not learn the task at L (the reason
    named): a model that did not learn cannot show what the claim is about."""
    off = [(m, learned(results, m).verdict) for m in names]
    off = [f"{m} did not learn the task at L ({v})" for m, v in off if v != HOLDS]
    if not off:
        return claim
    return dataclasses.replace(
        claim, verdict=UNDECIDED, detail="; ".join([*off, claim.detail]).strip("; ")
    )


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
    return [
        composite(
            "context_length/task_shortcut",
            f"the task needs every position of L: a reader that sees every key but only the "
            f"values among the first {w} tokens (3L/4) does not pass the bar of 'learned'",
            [
                (
                    "its gap closed on the last quarter of L",
                    reader_closed(results),
                    Range.at_most(LEARNED_FRACTION, f"≤ {LEARNED_FRACTION:g} (one-sided)"),
                )
            ],
            f"and it retrieves at chance wherever the probed key lies past token {w} "
            f"(k < {L(results) - 2 - w} at L)",
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
        rows.append(
            Claim(
                f"{name}: excess loss over the oracle at {folds}; retrieval at {_fold(results, nf)} "
                f"within the window of L, beyond L",
                f"oracle loss {' / '.join(f'{oracle_loss(results, k):.3f}' for k in results['lengths'])}; "
                f"chance {c:.3f}",
                f"{ex}; {win:.2f}, {far:.2f} (mean of {_seeds(m)})",
                REPORTED,
                f"{m['stage']}" + (f" from {m['from']}" if m["from"] != name else ""),
                id=f"context_length/model/{name}",
            )
        )
    return rows


def _seeds(model) -> str:
    n = len(model["value_loss_by_position"])
    return f"{n} seed" + ("s" if n != 1 else "")


def pretrained(results) -> list[str]:
    return [m for m, r in results["models"].items() if r["from"] == m]


def learned_all(results) -> list[Claim]:
    return [learned(results, m) for m in pretrained(results)]


def press_sinusoidal(results) -> list[Claim]:
    if not has(results, "sinusoidal") or len(results["lengths"]) < 2:
        return []
    n2 = results["lengths"][1]
    return [
        gated(
            results,
            ["sinusoidal"],
            composite(
                "context_length/press_sinusoidal",
                "sinusoidal positions blow up soon past L (Press et al. 2022, Fig. 1)",
                [
                    (
                        f"rise of its excess loss from L to {_fold(results, n2)}",
                        t_interval(rise(results, "sinusoidal", n2)),
                        BLOWS_UP,
                    )
                ],
            ),
        )
    ]


def press_alibi(results) -> list[Claim]:
    if not has(results, "alibi"):
        return []
    longer = [m for m in results["lengths"] if m > L(results)]
    return [
        gated(
            results,
            ["alibi"],
            composite(
                "context_length/press_alibi",
                f"ALiBi stays flat out to {_fold(results, max(results['lengths']))} (Press et al. 2022, Fig. 1)",
                [
                    (f"rise to {_fold(results, m)}", t_interval(rise(results, "alibi", m)), FLAT)
                    for m in longer
                ],
            ),
        )
    ]


def extension_by(results, how) -> list[Claim]:
    """context_length/extension/<how>: RoPE extended by `how`, fine-tuned, at ft_factor·L."""
    name = EXTENSIONS[how]
    if not has(results, name) or not has(results, "rope"):
        return []
    nf, c = results["ft_length"], results["chance"]
    far, win = beyond(results), in_window(results)
    own = retrieval(results, name, nf, far)
    claim = composite(
        f"context_length/extension/{how}",
        f"RoPE extended by {'position interpolation' if how == 'pi' else 'a raised base (NTK-aware)'}, "
        f"{results['ft_steps']} fine-tune steps at {_fold(results, nf)}: it works at {_fold(results, nf)} "
        f"and does what plain RoPE given the same fine-tune does not",
        [
            (
                f"rise of its excess loss at {_fold(results, nf)} over RoPE's at L",
                t_interval(rise(results, name, nf, "rope")),
                FLAT,
            ),
            (f"retrieval beyond L at {_fold(results, nf)}", t_interval(own), retrieves(c)),
            (
                f"retrieval within the window of L at {_fold(results, nf)}",
                t_interval(retrieval(results, name, nf, win)),
                retrieves(c),
            ),
            (
                f"retrieval beyond L minus {CONTROL}'s (paired by seed)",
                t_interval(own - retrieval(results, CONTROL, nf, far)),
                Range.at_least(ADVANTAGE, f"≥ {ADVANTAGE:g} (one-sided)"),
            ),
        ],
    )
    if results["models"][name]["params"] != results["models"]["rope"]["params"]:
        claim = dataclasses.replace(
            claim,
            verdict=FAILS,
            detail=f"{name}'s parameters differ from RoPE's: not the same model",
        )
    return [gated(results, ["rope"], claim)]


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
        gated(
            results,
            ["lstm"],
            composite(
                "context_length/lstm_beyond",
                "the LSTM cannot use the extra context (retrieval from beyond L)",
                [
                    (
                        f"{name}: retrieval beyond L at {_fold(results, nf)}",
                        t_interval(retrieval(results, name, nf, beyond(results))),
                        at_chance(results["chance"]),
                    )
                ],
            ),
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
    parts = [
        (
            f"{m}'s gap − {own}'s",
            t_interval(gap(results, m) - gap(results, own)),
            Range.at_least(GAP_MARGIN, f"≥ {GAP_MARGIN:g} nats (one-sided)"),
        )
        for m in compared
    ]
    note = f"{', '.join(left_out)} did not learn the task at L: left out" if left_out else ""
    if not parts:
        out = Claim(
            claim,
            f"gaps (rise to {nf}) below every other's by ≥ {GAP_MARGIN:g} nats",
            "—",
            UNDECIDED,
            f"no other model learned the task at L: nothing to compare ({note})",
            id=cid,
        )
    else:
        out = composite(cid, claim, parts, note)
    return [gated(results, [own], out)]


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
        "against a range stated before the run (anatomy.probes.claims.judge): inside, holds; "
        "outside, does not hold here; straddling an edge or fewer than 3 seeds, not shown. A "
        "claim made of parts is its weakest part. Differences between two models are paired "
        "by seed (the same batches).",
        "* Losses are the mean loss of the value tokens (keys are noise); excess = loss − the "
        "oracle's on the same sequences; the rise at N = excess(N) − excess(L). 'Flat': a rise "
        f"≤ {LOSS_TOLERANCE:g} nats (log 1.05: 5% in perplexity); 'blows up': ≥ that.",
        f"* A model learned the task at L when, on the last quarter of L, its loss closes ≥ "
        f"{LEARNED_FRACTION:g} of the gap from log V to the oracle, and its retrieval at L (mean "
        "over k) is well above chance (context_length/learned/<name>). A claim about a "
        f"model that did not is {UNDECIDED!r}. A reader of the first 3L/4 tokens fails that "
        "bar (context_length/task_shortcut).",
        f"* Well above chance: accuracy ≥ 1/V + {ABOVE_CHANCE:g}·(1 − 1/V); at chance: ≤ 1/V + "
        f"{AT_CHANCE_MARGIN:g}. Retrieval within the window of L: the probe at ft_factor·L over "
        "k ≤ L − 2; beyond L: over k > L, the key at an absolute position ≥ L.",
        "* An extension (RoPE + interpolation, or + a raised base, fine-tuned at ft_factor·L) "
        f"holds when its rise there over RoPE at L is flat, it retrieves within the window and "
        f"beyond L, and its retrieval beyond L exceeds that of plain RoPE given the same "
        f"fine-tune ({CONTROL}) by ≥ {ADVANTAGE:g}; context_length/extension holds when one "
        "extension does.",
        f"* Generalises better: a generalisation gap (the rise at ft_factor·L) smaller than "
        f"every other's by ≥ {GAP_MARGIN:g} nats, for each other model that learned the task.",
    ]
