"""context_length's claims, judged on what its results.json holds, with their thresholds.

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    context_length/model/<name>        every model's value loss at L .. 8L and its retrieval
                                       within L and beyond L (reported)
    context_length/press_sinusoidal    sinusoidal positions blow up soon past L (Press et al.
                                       2022, Fig. 1)
    context_length/press_alibi         ALiBi stays flat out to 8L (the same figure)
    context_length/extension           "extending the context is a change of positional
                                       encoding": RoPE + interpolation or a raised base, after
                                       the short fine-tune, at ft_factor·L
    context_length/lstm_beyond         "the LSTM cannot use the extra context": its retrieval
                                       beyond L, after the same fine-tune, against chance
    context_length/nope                NoPE generalises past L better than RoPE and ALiBi
                                       (Kazemnejad et al. 2023)
    context_length/lstm_generalises    the LSTM generalises past L better than every
                                       Transformer (Delétang et al. 2023)
chapter(results), what the chapter's report and docs quote, made of those verdicts:
    context_length/context_extension   claim 9: the extension holds and the LSTM cannot use
                                       the extra context

Every loss is the mean loss of the value tokens (the tokens context can predict; keys are
noise). A model's "excess" at length N is its loss minus the oracle's on the same sequences;
its "generalisation gap" is excess(ft_factor·L) − excess(L).
"""

from __future__ import annotations

import math

import numpy as np

from anatomy.probes.claims import CAVEAT, FAILS, HOLDS, NOT_SHOWN, REPORTED, Claim, holds

# "Within 5% of its loss at L", with the oracle's fall taken out (a longer sequence repeats
# more keys, so the best loss falls with N): excess(N) <= excess(L) + this·loss(L), where
# excess = loss − oracle on the same sequences; "blows up": above that.
LOSS_TOLERANCE = 0.05
# "Learned the task at L": the value loss at L closes at least this fraction of the gap from
# knowing nothing (log V) to the oracle. A model that did not learn cannot show a wall past L.
LEARNED_FRACTION = 0.5
# "Well above chance": accuracy >= 1/V + ABOVE_CHANCE·(1 − 1/V) (0.53 for V = 16), as
# long_range's recall claims; "at chance": accuracy <= 1/V + AT_CHANCE_MARGIN.
ABOVE_CHANCE = 0.5
AT_CHANCE_MARGIN = 0.05
GAP_MARGIN = 0.02  # nats: "generalises better" means a generalisation gap smaller by this

EXTENDED = ("rope+pi+ft", "rope+ntk+ft")  # the two extensions, fine-tuned
CONTROL = "rope+ft"  # plain RoPE given the same fine-tune


def _finite(*xs) -> bool:
    return all(isinstance(x, (int, float)) and math.isfinite(x) for x in xs)


def _mean(xs) -> float:
    vals = [x for x in np.ravel(np.asarray(xs, dtype=object)) if x is not None]
    return float(np.mean(np.asarray(vals, float))) if vals else float("nan")


# --- what a claim reads from results.json ------------------------------------------------------


def has(results, name) -> bool:
    return name in results["models"]


def loss_at(results, name, length) -> float:
    """The model's value loss at `length`, mean over seeds (NaN: no such model or length)."""
    if not has(results, name) or length not in results["lengths"]:
        return float("nan")
    return _mean(results["models"][name]["value_loss"][results["lengths"].index(length)])


def oracle_at(results, length) -> float:
    return results["oracle"]["value_loss"][results["lengths"].index(length)]


def excess(results, name, length) -> float:
    """Loss above the oracle's at `length` (the same held-out sequences)."""
    return loss_at(results, name, length) - oracle_at(results, length)


def gap(results, name) -> float:
    """Generalisation gap: excess at ft_factor·L minus excess at L (0: no worse past L)."""
    return excess(results, name, results["ft_length"]) - excess(results, name, L(results))


def L(results) -> int:
    return results["train_length"]


def retrieval(results, name, length, keep) -> float:
    """Probe accuracy at `length`, mean over seeds and over the k with keep(k) (NaN: none)."""
    if not has(results, name) or length not in results["probe_lengths"]:
        return float("nan")
    i = results["probe_lengths"].index(length)
    accs = [a for k, a in zip(results["k_grid"][i], results["models"][name]["probe"][i]) if keep(k)]
    return _mean(accs) if accs else float("nan")


def within(results, name) -> float:
    """Retrieval at length L (every k < L): what the model does where it was trained."""
    return retrieval(results, name, L(results), lambda k: True)


def reach(results, name, length) -> int | None:
    """The farthest k at `length` where the model retrieves well above chance (None: none)."""
    if not has(results, name) or length not in results["probe_lengths"]:
        return None
    i = results["probe_lengths"].index(length)
    accs = results["models"][name]["probe"][i]
    far = [
        k
        for k, a in zip(results["k_grid"][i], accs)
        if well_above_chance(_mean(a), results["chance"])
    ]
    return max(far, default=None)


def beyond(results, name) -> float:
    """Retrieval at ft_factor·L from beyond L (k > L): what the extra context holds."""
    return retrieval(results, name, results["ft_length"], lambda k: k > L(results))


# --- the decisions, each testable on injected numbers ------------------------------------------


def well_above_chance(accuracy, chance) -> bool:
    return _finite(accuracy) and accuracy >= chance + ABOVE_CHANCE * (1.0 - chance)


def at_chance(accuracy, chance) -> bool:
    return _finite(accuracy) and accuracy <= chance + AT_CHANCE_MARGIN


def within_tolerance(excess_n, excess_l, loss_l) -> bool:
    """excess_n <= excess_l + LOSS_TOLERANCE·loss_l (False for NaN): the loss at N is within
    LOSS_TOLERANCE of the loss at L, once the oracle's own change from L to N is taken out."""
    return _finite(excess_n, excess_l, loss_l) and excess_n <= excess_l + LOSS_TOLERANCE * loss_l


def no_worse(results, name, length, ref) -> bool:
    """`name` at `length` is within tolerance of `ref` at L (within_tolerance)."""
    n = L(results)
    return within_tolerance(
        excess(results, name, length), excess(results, ref, n), loss_at(results, ref, n)
    )


def learned(loss_l, oracle_l, log_v) -> bool:
    """The value loss at L closed >= LEARNED_FRACTION of the gap from log V to the oracle."""
    return _finite(loss_l) and loss_l <= oracle_l + (1.0 - LEARNED_FRACTION) * (log_v - oracle_l)


def _learned(results, name) -> bool:
    n = L(results)
    return learned(loss_at(results, name, n), oracle_at(results, n), results["log_values"])


def extension_verdict(ok: dict, control_ok: bool, rope_learned: bool) -> str:
    """ok: {extension: loss within tolerance at ft_factor·L and retrieval beyond L well above
    chance}. NOT_SHOWN if RoPE did not learn at L; HOLDS if an extension is ok and the
    control (plain RoPE, same fine-tune) is not; CAVEAT if the control is ok too (the
    fine-tune, not the change of encoding, did it); FAILS if no extension is ok."""
    if not rope_learned:
        return NOT_SHOWN
    if not any(ok.values()):
        return FAILS
    return CAVEAT if control_ok else HOLDS


def lstm_beyond_verdict(reach_l, beyond_acc, chance) -> str:
    """NOT_SHOWN if the LSTM retrieves well above chance at no k within L (reach_l None: it
    never learned to retrieve); HOLDS if its retrieval beyond L is at chance; FAILS if it is
    well above chance there; CAVEAT between."""
    if reach_l is None:
        return NOT_SHOWN
    if at_chance(beyond_acc, chance):
        return HOLDS
    if well_above_chance(beyond_acc, chance):
        return FAILS
    return CAVEAT


def better_gap_verdict(own, others, own_learned) -> str:
    """HOLDS if `own` gap is below every one of `others` (the models that learned at L) by
    GAP_MARGIN, FAILS otherwise; NOT_SHOWN if `own` did not learn at L, or nothing to compare."""
    if not own_learned or not _finite(own, *others) or not others:
        return NOT_SHOWN
    return holds(own < min(others) - GAP_MARGIN)


# --- the claims --------------------------------------------------------------------------------


def _losses(results, name) -> str:
    return " / ".join(f"{loss_at(results, name, n):.3f}" for n in results["lengths"])


def models(results) -> list[Claim]:
    n, c = L(results), results["chance"]
    lengths = "/".join(f"{n_ // n}L" for n_ in results["lengths"])
    return [
        Claim(
            f"{name}: value loss at {lengths}; retrieval within L, beyond L "
            f"(at {results['ft_length'] // n}L)",
            "oracle "
            + " / ".join(f"{x:.3f}" for x in results["oracle"]["value_loss"])
            + f"; chance {c:.3f}",
            f"{_losses(results, name)}; {within(results, name):.2f}, {beyond(results, name):.2f}",
            REPORTED,
            f"{m['stage']}" + (f" from {m['from']}" if m["from"] != name else ""),
            id=f"context_length/model/{name}",
        )
        for name, m in results["models"].items()
    ]


def press_sinusoidal(results) -> list[Claim]:
    if not has(results, "sinusoidal") or len(results["lengths"]) < 2:
        return []
    n, n2 = results["lengths"][0], results["lengths"][1]
    a, b = excess(results, "sinusoidal", n), excess(results, "sinusoidal", n2)
    verdict = holds(_finite(a, b) and not no_worse(results, "sinusoidal", n2, "sinusoidal"))
    return [
        Claim(
            "sinusoidal positions blow up soon past L (Press et al. 2022, Fig. 1)",
            f"excess at {n2 // n}L > excess at L + {LOSS_TOLERANCE:g}·loss at L",
            f"loss {_losses(results, 'sinusoidal')}; excess {a:.3f} -> {b:.3f}",
            verdict if _learned(results, "sinusoidal") else NOT_SHOWN,
            "" if _learned(results, "sinusoidal") else "it did not learn the task at L",
            id="context_length/press_sinusoidal",
        )
    ]


def press_alibi(results) -> list[Claim]:
    if not has(results, "alibi"):
        return []
    n = L(results)
    longer = [m for m in results["lengths"] if m > n]
    flat = bool(longer) and all(no_worse(results, "alibi", m, "alibi") for m in longer)
    excesses = " / ".join(f"{excess(results, 'alibi', m):.3f}" for m in results["lengths"])
    return [
        Claim(
            f"ALiBi stays flat out to {max(results['lengths']) // n}L (Press et al. 2022, Fig. 1)",
            f"every excess past L <= excess at L + {LOSS_TOLERANCE:g}·loss at L",
            f"loss {_losses(results, 'alibi')}; excess {excesses}",
            holds(flat) if _learned(results, "alibi") else NOT_SHOWN,
            f"retrieval beyond L {beyond(results, 'alibi'):.2f} (chance "
            f"{results['chance']:.3f}): a flat loss alone does not say it reads past L",
            id="context_length/press_alibi",
        )
    ]


def _extension_parts(results):
    n, nf, c = L(results), results["ft_length"], results["chance"]
    ref = loss_at(results, "rope", n)

    def ok(name):
        return has(results, name) and (
            no_worse(results, name, nf, "rope") and well_above_chance(beyond(results, name), c)
        )

    rope_learned = _learned(results, "rope") and well_above_chance(within(results, "rope"), c)
    return ref, {name: ok(name) for name in EXTENDED}, ok(CONTROL), rope_learned


def extension(results) -> list[Claim]:
    if not all(has(results, m) for m in ("rope", *EXTENDED)):
        return []
    n, nf, c = L(results), results["ft_length"], results["chance"]
    ref, ok, control_ok, rope_learned = _extension_parts(results)
    floor = c + ABOVE_CHANCE * (1 - c)
    same = all(
        results["models"][m]["params"] == results["models"]["rope"]["params"] for m in EXTENDED
    )
    parts = [
        f"{m}: loss {loss_at(results, m, nf):.3f} (excess {excess(results, m, nf):.3f}), "
        f"beyond L {beyond(results, m):.2f}"
        for m in (*EXTENDED, CONTROL)
        if has(results, m)
    ]
    why = {
        NOT_SHOWN: "RoPE did not learn the task at L: nothing to extend",
        FAILS: "no extension reached both bars",
        CAVEAT: f"{CONTROL} (plain RoPE, the same fine-tune) reaches both bars too: the "
        "fine-tune at the longer length, not the change of encoding, did it",
        HOLDS: f"{', '.join(m for m, v in ok.items() if v)} reach both bars; {CONTROL} does not",
    }
    verdict = extension_verdict(ok, control_ok, rope_learned)
    return [
        Claim(
            "extending the context is a change of positional encoding (RoPE + interpolation "
            f"or a raised base, {results['ft_steps']} fine-tune steps at {nf // n}L)",
            f"loss at {nf // n}L within {LOSS_TOLERANCE:.0%} of RoPE's at L ({ref:.3f}; excess "
            f"<= {excess(results, 'rope', n) + LOSS_TOLERANCE * ref:.3f}), and retrieval beyond "
            f"L >= {floor:.3f}",
            "; ".join(parts) + f"; same parameters as RoPE: {'yes' if same else 'no'}",
            verdict if same else FAILS,
            why[verdict] if same else "the extended models' parameters differ from RoPE's",
            id="context_length/extension",
        )
    ]


def _lstm_name(results):
    return "lstm+ft" if has(results, "lstm+ft") else "lstm"


def lstm_beyond(results) -> list[Claim]:
    if not has(results, "lstm"):
        return []
    name, c = _lstm_name(results), results["chance"]
    r, b = reach(results, "lstm", L(results)), beyond(results, name)
    verdict = lstm_beyond_verdict(r, b, c)
    why = {
        NOT_SHOWN: "the LSTM retrieves well above chance at no k, even within L",
        HOLDS: f"at chance beyond L; within L it retrieves well above chance up to k = {r}"
        + (
            f" < L = {L(results)}: its state is flooded before L"
            if r and r < L(results) // 2
            else ""
        ),
        CAVEAT: "above chance beyond L, but not well above",
        FAILS: "the LSTM retrieves from beyond L well above chance: it uses the extra context",
    }[verdict]
    return [
        Claim(
            "the LSTM cannot use the extra context (retrieval from beyond L)",
            f"{name}: beyond L <= {c + AT_CHANCE_MARGIN:.3f} (at chance), given it retrieves "
            f">= {c + ABOVE_CHANCE * (1 - c):.3f} at some k within L",
            f"within L {within(results, 'lstm'):.2f} (well above chance "
            + (f"up to k = {r}" if r is not None else "at no k")
            + "); beyond "
            f"L {b:.2f} ({name}), {beyond(results, 'lstm'):.2f} (zero-shot)",
            verdict,
            why,
            id="context_length/lstm_beyond",
        )
    ]


def _gap_claim(results, own, others, claim, cid):
    """`own`'s generalisation gap against those of `others` that learned the task at L."""
    present = [m for m in others if has(results, m)]
    if not has(results, own) or not present:
        return []
    compared = [m for m in present if _learned(results, m)]
    left_out = [m for m in present if m not in compared]
    verdict = better_gap_verdict(
        gap(results, own), [gap(results, m) for m in compared], _learned(results, own)
    )
    nf = results["ft_length"] // L(results)
    why = [f"{own} did not learn the task at L"] if not _learned(results, own) else []
    why += [f"{', '.join(left_out)} did not learn the task at L: left out"] if left_out else []
    return [
        Claim(
            claim,
            f"its gap (excess loss at {nf}L − at L) < every other's − {GAP_MARGIN:g}",
            ", ".join(f"{m} {gap(results, m):+.3f}" for m in [own, *present]),
            verdict,
            "; ".join(why),
            id=cid,
        )
    ]


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
        m for m, r in results["models"].items() if r["family"] == "transformer" and r["from"] == m
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
        *models(results),
        *press_sinusoidal(results),
        *press_alibi(results),
        *extension(results),
        *lstm_beyond(results),
        *nope(results),
        *lstm_generalises(results),
    ]


def context_extension_verdict(ext: str | None, lstm: str | None) -> str:
    """Claim 9 from its two halves: NOT_SHOWN without a shown extension; FAILS when the
    extension fails and the LSTM half does not hold; HOLDS when both hold; CAVEAT otherwise."""
    if ext in (None, NOT_SHOWN):
        return NOT_SHOWN
    if ext == FAILS and lstm != HOLDS:
        return FAILS
    if ext == HOLDS and lstm == HOLDS:
        return HOLDS
    return CAVEAT


def context_extension(results) -> Claim:
    ext = next(iter(extension(results)), None)
    lstm = next(iter(lstm_beyond(results)), None)
    verdict = context_extension_verdict(
        ext.verdict if ext else None, lstm.verdict if lstm else None
    )
    return Claim(
        "an LSTM trained at L cannot use a longer context; a Transformer is extended by "
        "changing its positional encoding, the architecture unchanged",
        "context_length/extension and context_length/lstm_beyond hold",
        f"extension: {ext.verdict if ext else 'not measured'} ({ext.measured if ext else '—'}); "
        f"LSTM: {lstm.verdict if lstm else 'not measured'} ({lstm.measured if lstm else '—'})",
        verdict,
        "; ".join(x.detail for x in (ext, lstm) if x is not None and x.detail),
        id="context_length/context_extension",
    )


def chapter(results) -> list[Claim]:
    return [context_extension(results)]


def rules() -> list[str]:
    """How these verdicts are decided, for the report's "How verdicts are decided"."""
    return [
        "* Losses are the mean loss of the value tokens (keys are noise). On this task a "
        "longer sequence is easier for a model that reads it (more keys repeat), so the "
        "oracle's loss falls with N and every loss comparison across lengths takes it out: "
        f"'within {LOSS_TOLERANCE:.0%} of the loss at L' means excess(N) <= excess(L) + "
        f"{LOSS_TOLERANCE:g}·loss(L), excess = loss − oracle; 'blows up' means above that.",
        f"* A model learned the task at L when its loss at L closed >= {LEARNED_FRACTION:.0%} of "
        f"the gap from log V to the oracle; a model that did not is {NOT_SHOWN!r}.",
        f"* Well above chance: accuracy >= 1/V + {ABOVE_CHANCE:g}·(1 − 1/V); at chance: <= 1/V + "
        f"{AT_CHANCE_MARGIN:g}. Retrieval beyond L: the probe at ft_factor·L over k > L.",
        "* The extension holds when RoPE + interpolation or + a raised base, after the "
        "fine-tune, is within the loss tolerance of RoPE's loss at L and retrieves beyond L well "
        f"above chance, and plain RoPE given the same fine-tune ({CONTROL}) does not (if it "
        f"does too: {CAVEAT!r}).",
        f"* Generalises better: a generalisation gap (excess over the oracle at ft_factor·L "
        f"minus at L) smaller than every other's by {GAP_MARGIN:g} nats.",
    ]
