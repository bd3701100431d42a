"""recall's claims, judged on what its results.json holds, with their thresholds.

table(results, pilot=...), the experiment's own claims:
    recall/needs_recall          the readers without recall (position only, bag of tokens)
                                 stay below the bar at every (N, K); the one with it reaches it
    recall/attention_every_n     attention solves MQAR at every tested N at width 64
    recall/grows/<family>        a fixed-state family's recall grows from its smallest to its
                                 largest state (one claim per family swept over >= 2 states)
    recall/grows_with_state      the same for the family named by GROWTH_FAMILY
    recall/falls_with_k          at fixed state (GROWTH_FAMILY's member nearest FALLS_BYTES),
                                 recall falls from the smallest K to the largest at the
                                 largest N
    recall/attention_flat_in_k   the twin: attention's does not
    recall/matrix_vs_diagonal    at equal state bytes and comparable parameters, a matrix
                                 state beats a diagonal decay (each matched pair; the
                                 ordering measured is what the row says)
    recall/hybrid                one attention layer closes most of the gap between a
                                 recurrence and attention
chapter(results):
    recall/fixed_state_today     the fixed-size state still bites: every part above but the
                                 matrix-vs-diagonal ordering holds (weakest)

Every contender trains on one mixture of lengths and is scored at every (N, K) of it.
"Accuracy" is the fraction of queries answered exactly (Zoology's), on the held-out set; a
contender's accuracy per seed is its mean over every (N, K) (Based's Figure 2 reads the
same mean over its test mixture) unless a claim names one N.

The learned-recall gate, stated before the run: a fixed-state claim reads only contenders that
learned recall, accuracy × K >= LEARNED at the smallest K of the smallest N (mean over
seeds). A model that never learned sits on the plateau, accuracy × K about 1 (it names one of
the K values in the context at random: the bag-of-tokens reader's score), where a
difference between models measures their optimisation, not their state. A claim whose
contender failed the gate is DID_NOT_LEARN, the number said in words.

Power: each judged claim computes its quantity on the committed design-seed pilot
(results/recall/pilot.json, `experiments.lab.committed.pilot`) as on the judged run, and prints
the pilot's effect and spread against the edge (anatomy.probes.claims.power_from).
"""

from __future__ import annotations

import numpy as np

from anatomy.probes.claims import (
    DID_NOT_LEARN,
    MISSING,
    UNDECIDED,
    Claim,
    Range,
    judge,
    judged,
    power_from,
    t_interval,
    weakest,
)
from experiments.lab.twins import composite, needs_ability
from experiments.tasks import contenders

# The ranges, stated before any run, and where each comes from:
SOLVED = 0.9  # "solves MQAR": accuracy >= this (one-sided). Zoology's solved points sit near
# 1.0 and its runs stop early at 0.99; 0.9 is far above every reader without recall
LEARNED = 1.5  # the learned-recall gate: accuracy × K at the smallest K of the smallest N
# (the plateau is accuracy × K ≈ 1: one of the K values at random)
MARGIN = 0.05  # "grows" / "falls" / "beats": a difference of at least this accuracy, stated
# before the run: about 10 standard errors of one model's accuracy on the held-out set
# (256 examples × K >= 4 queries per (N, K)), so the set's sampling never makes it
DIFF = (-1.0, 1.0)  # a difference of two accuracies lies here: its interval is clipped to it
MOST = 0.5  # "closes most of the gap": (hybrid − recurrent) / (attention − recurrent) >= this
# (most = more than half, by definition)
MATCH = 0.1  # "equal state bytes": within this relative difference
PARAMS_MATCH = 0.3  # "comparable parameters": within this relative difference

ATTENTION = "attention"  # the family whose state (its KV cache) grows with N
GROWING = (ATTENTION, "hybrid")  # families whose state grows with N: not fixed-state
MATRIX = ("mlstm", "gated_deltanet", "mamba2", "linear_attention")  # key-value matrix states,
# one decay (or delta rule) per head
DIAGONAL = ("rglru", "mamba", "mingru")  # a decay per state element (Mamba's S6: A diagonal)
GROWTH_FAMILY = "linear_attention"  # the fixed-state family whose sweep the headline claims
# read: Based's (Taylor feature map), the family Based's Figure 2 sweeps
FALLS_BYTES = 40_000  # falls_with_k reads GROWTH_FAMILY's member nearest these state bytes:
# the middle of the frontier, a state the largest K overflows
HYBRID = ("hybrid", "linear_attention")  # (hybrid family, the recurrence it mixes with attention)
PILOT = "results/recall/pilot.json"


def _contenders(results):
    return results.get("frontier", {}).get("contenders", {})


def _pilot_default():
    from experiments.lab import committed

    return committed.pilot("recall")


_COMMITTED = object()  # table(results): read the committed pilot


def per_seed(entry, n_index=None):
    """[seed] accuracy: the mean over every (N, K), or over the K of the N at n_index."""
    acc = np.asarray(entry["accuracy"], float)  # [N][K][seed]
    part = acc.reshape(-1, acc.shape[-1]) if n_index is None else acc[n_index]
    return list(part.mean(axis=0))


def recalled(results, name):
    """accuracy × K at the smallest K of the smallest N, mean over seeds."""
    acc = np.asarray(_contenders(results)[name]["accuracy"], float)  # [N][K][seed]
    ks = results["frontier"]["pair_counts"]
    n_i = int(np.argmin(results["frontier"]["seq_lens"]))
    k_i = int(np.argmin(ks[n_i]))
    return float(acc[n_i, k_i].mean() * ks[n_i][k_i])


def gate(results, names):
    """(ok, why) of the learned-recall gate over contenders `names`: every one learned."""
    ks = results["frontier"]["pair_counts"]
    n = min(results["frontier"]["seq_lens"])
    k = min(ks[int(np.argmin(results["frontier"]["seq_lens"]))])
    failed = [(m, recalled(results, m)) for m in names if recalled(results, m) < LEARNED]
    if not failed:
        return True, ""
    said = "; ".join(
        f"{m} did not learn recall: accuracy × K = {v:.2f} at N = {n}, K = {k} (below {LEARNED:g};"
        f" about 1 is the plateau, one of the K values at random)"
        for m, v in failed
    )
    return False, said


def fixed_state_sweeps(results):
    """{family: [contender names, smallest state first]} for every fixed-state family with
    at least two distinct state sizes in the frontier."""
    c = _contenders(results)
    out = {}
    for name, e in c.items():
        if e["family"] not in GROWING:
            out.setdefault(e["family"], []).append(name)
    out = {f: sorted(n, key=lambda m: _bytes(c[m])) for f, n in out.items()}
    return {f: names for f, names in out.items() if len({_bytes(c[m]) for m in names}) >= 2}


def _bytes(entry, n_index=-1):
    """State bytes of a contender at the N of n_index (a fixed state's are the same at all)."""
    b = entry["state_bytes"]
    return b[n_index] if isinstance(b, list) else b


def _power(pilot, values_of, rng, results, source):
    """The Power of a claim whose per-seed values `values_of(pilot results)` gives, or None."""
    if pilot is None:
        return None
    try:
        values = values_of(pilot)
    except (KeyError, IndexError, ValueError, ZeroDivisionError):
        return None
    if values is None or len(values) < 2:
        return None
    n = len(results["config"]["seeds"]) if "config" in results else len(values)
    return power_from(values, rng, seeds=n, source=source, pilot=PILOT)


def needs_recall(results) -> Claim:
    cid, claim = "recall/needs_recall", "MQAR needs recall: no reader without it reaches the bar"
    r = results.get("readers")
    if not r:
        return Claim(claim, "—", "—", MISSING, id=cid)
    expected = (
        f"position-only and bag-of-tokens readers < {SOLVED:g} at every (N, K); the lookup "
        f"reader ≥ {SOLVED:g}"
    )
    without = float(max(np.max(r["position"]), np.max(r["bag"])))
    return needs_ability(cid, claim, expected, without, float(np.min(r["lookup"])), SOLVED,
                         ("without recall", "lookup"))  # fmt: skip


def _attention(results):
    names = [m for m, e in _contenders(results).items() if e["family"] == ATTENTION]
    return names[0] if names else None


def attention_every_n(results, pilot=None) -> Claim:
    cid = "recall/attention_every_n"
    claim = "attention solves MQAR at every tested N at width 64"
    rng = Range.at_least(SOLVED, f"≥ {SOLVED:g} at every N (one-sided)")
    name = _attention(results)
    if name is None:
        return Claim(claim, str(rng), "—", MISSING, id=cid)
    entry, ns = _contenders(results)[name], results["frontier"]["seq_lens"]
    parts = [(n, t_interval(per_seed(entry, i), bounds=(0, 1))) for i, n in enumerate(ns)]
    verdicts = [(n, *judge(i, rng)) for n, i in parts]
    worst_n, worst = min(parts, key=lambda p: p[1].point)
    verdict = weakest(v for _, v, _ in verdicts)
    reasons = [f"N={n}: {why}" for n, v, why in verdicts if v == verdict and why]
    measured = "; ".join(f"N={n}: {i}" for n, i in parts)

    def worst_in(p):  # the pilot's N nearest the edge
        e = _contenders(p)[_attention(p)]
        vals = [per_seed(e, i) for i in range(len(p["frontier"]["seq_lens"]))]
        return min(vals, key=np.mean)

    power = _power(
        pilot,
        worst_in,
        rng,
        results,
        "the issue's bar (41): Zoology's attention solves MQAR to N = 512 at width 64",
    )
    return Claim(
        claim,
        str(rng),
        measured,
        verdict,
        "; ".join([f"worst N={worst_n}", *reasons]),
        id=cid,
        power=power.text() if power else "",
    )


def _difference(results, a, b, n_index=None):
    """[seed] accuracy of contender a minus contender b."""
    c = _contenders(results)
    return [x - y for x, y in zip(per_seed(c[a], n_index), per_seed(c[b], n_index))]


def learned_members(results, family):
    """The family's sweep, smallest state first, split into (learned recall, did not)."""
    sweep = fixed_state_sweeps(results).get(family, [])
    ok = [m for m in sweep if recalled(results, m) >= LEARNED]
    return ok, [m for m in sweep if m not in ok]


def grows(results, family, pilot=None) -> Claim:
    """From the smallest state that learned recall to the largest that did (the gate stated
    before the run): fewer than two that learned is DID_NOT_LEARN."""
    sweeps = fixed_state_sweeps(results)
    cid, claim = f"recall/grows/{family}", f"{family}: recall grows with its state"
    rng = Range.at_least(MARGIN, f"largest − smallest state ≥ {MARGIN:g} (one-sided)")
    if family not in sweeps:
        return Claim(claim, str(rng), "—", MISSING, "no sweep of its state", id=cid)
    c = _contenders(results)
    ok, out = learned_members(results, family)
    left = f"left out (the gate): {', '.join(out)}" if out else ""
    if len(ok) < 2:
        sweep = sweeps[family]
        return judged(
            cid, claim, t_interval(_difference(results, sweep[-1], sweep[0]), bounds=DIFF), rng,
            f"{sweep[-1]} − {sweep[0]}",
            precondition=(False, f"fewer than two of {family}'s states learned recall; "
                          + gate(results, out)[1]),
        )  # fmt: skip
    small, large = ok[0], ok[-1]

    def values(p):
        s = learned_members(p, family)[0]
        return _difference(p, s[-1], s[0]) if len(s) >= 2 else None

    return judged(
        cid,
        claim,
        t_interval(_difference(results, large, small), bounds=DIFF),
        rng,
        "; ".join(
            x
            for x in (
                f"{large} ({_bytes(c[large]):,} B) − {small} ({_bytes(c[small]):,} B), mean "
                "over every (N, K)",
                left,
            )
            if x
        ),
        power=_power(pilot, values, rng, results, "stated before the run: 0.05 accuracy, about "
                     "10 standard errors of the held-out set"),
    )  # fmt: skip


def grows_with_state(results, pilot=None) -> Claim:
    c = grows(results, GROWTH_FAMILY, pilot)
    return Claim(
        "a fixed-state model's recall grows with its state",
        c.expected,
        c.measured,
        c.verdict,
        f"{GROWTH_FAMILY}; {c.detail}".rstrip("; "),
        id="recall/grows_with_state",
        power=c.power,
    )


def _k_drop(results, name, n_index=-1):
    """[seed] accuracy at the largest K minus at the smallest K, at the N of n_index."""
    acc = _contenders(results)[name]["accuracy"][n_index]  # [K][seed]
    return [hi - lo for hi, lo in zip(acc[-1], acc[0])]


def falls_contender(results):
    """GROWTH_FAMILY's member nearest FALLS_BYTES, or None."""
    sweep = fixed_state_sweeps(results).get(GROWTH_FAMILY)
    if not sweep:
        return None
    c = _contenders(results)
    return min(sweep, key=lambda m: abs(_bytes(c[m]) - FALLS_BYTES))


def falls_with_k(results, pilot=None) -> Claim:
    cid, claim = "recall/falls_with_k", "at fixed state, recall falls as K grows"
    rng = Range.at_most(-MARGIN, f"largest K − smallest K ≤ −{MARGIN:g} (one-sided)")
    name = falls_contender(results)
    if name is None:
        return Claim(claim, str(rng), "—", MISSING, id=cid)
    n, ks = results["frontier"]["seq_lens"][-1], results["frontier"]["pair_counts"][-1]
    return judged(
        cid,
        claim,
        t_interval(_k_drop(results, name), bounds=DIFF),
        rng,
        f"{name} ({_bytes(_contenders(results)[name]):,} B), N={n}, K={ks[0]}→{ks[-1]}",
        precondition=gate(results, [name]),
        power=_power(pilot, lambda p: _k_drop(p, falls_contender(p)), rng, results,
                     "stated before the run: 0.05 accuracy"),
    )  # fmt: skip


def attention_flat_in_k(results, pilot=None) -> Claim:
    cid, claim = "recall/attention_flat_in_k", "attention's recall does not fall as K grows"
    rng = Range.at_least(-MARGIN, f"largest K − smallest K ≥ −{MARGIN:g} (one-sided)")
    name = _attention(results)
    if name is None:
        return Claim(claim, str(rng), "—", MISSING, id=cid)
    n, ks = results["frontier"]["seq_lens"][-1], results["frontier"]["pair_counts"][-1]
    return judged(
        cid,
        claim,
        t_interval(_k_drop(results, name), bounds=DIFF),
        rng,
        f"{name}, N={n}, K={ks[0]}→{ks[-1]}",
        power=_power(pilot, lambda p: _k_drop(p, _attention(p)), rng, results,
                     "stated before the run: 0.05 accuracy (the twin of falls_with_k)"),
    )  # fmt: skip


def matched_pairs(results):
    """[(matrix contender, diagonal contender)] of the frontier with equal state bytes (within
    MATCH) and comparable parameters (within PARAMS_MATCH)."""
    c = _contenders(results)
    pairs = []
    for m, em in c.items():
        for d, ed in c.items():
            if em["family"] in MATRIX and ed["family"] in DIAGONAL:
                same = abs(_bytes(em) - _bytes(ed)) <= MATCH * _bytes(ed)
                like = abs(em["params"] - ed["params"]) <= PARAMS_MATCH * ed["params"]
                if same and like:
                    pairs.append((m, d))
    return pairs


def matrix_vs_diagonal(results, pilot=None) -> Claim:
    cid = "recall/matrix_vs_diagonal"
    claim = ("at equal state bytes and comparable parameters, a matrix state (key-value "
             "outer products) beats a diagonal decay")  # fmt: skip
    rng = Range.at_least(MARGIN, f"matrix − diagonal ≥ {MARGIN:g} (one-sided)")
    pairs = matched_pairs(results)
    if not pairs:
        return Claim(claim, str(rng), "—", MISSING, "no pair of equal state bytes", id=cid)
    c = _contenders(results)
    parts = [(m, d, t_interval(_difference(results, m, d), bounds=DIFF)) for m, d in pairs]
    ok, why = gate(results, sorted({x for m, d in pairs for x in (m, d)}))
    verdicts = [judge(i, rng) for _, _, i in parts]
    verdict = DID_NOT_LEARN if not ok else weakest(v for v, _ in verdicts)
    order = "; ".join(
        f"{m} ({_bytes(c[m]):,} B, {c[m]['params']:,} params) "
        f"{'>' if i.point > 0 else '<'} {d} ({_bytes(c[d]):,} B, {c[d]['params']:,} params) "
        f"by {abs(i.point):.3f} ({i})"
        for m, d, i in parts
    )
    reasons = [w for v, w in verdicts if v == verdict and w]
    first = pairs[0]
    power = _power(pilot, lambda p: _difference(p, *first), rng, results,
                   "stated before the run: 0.05 accuracy")  # fmt: skip
    return Claim(
        claim,
        str(rng),
        order,
        verdict,
        "; ".join([why] if not ok else [*reasons, "the ordering measured"]),
        id=cid,
        power=power.text() if power else "",
    )


def counterpart(hybrid_name):
    """The recurrent contender a hybrid is compared with: its mixer with the same knobs
    ('hybrid:mixer=mlstm:d_key=16' -> 'mlstm:d_key=16')."""
    _, knobs = contenders.parse(hybrid_name)
    mixer = knobs.pop("mixer")
    knobs.pop("pattern", None)
    return ":".join([mixer, *[f"{k}={v}" for k, v in knobs.items()]])


def _closed(results, h, r, a):
    """[seed] (hybrid − recurrent) / (attention − recurrent), or None where a seed's gap is
    below MARGIN (nothing to close)."""
    c = _contenders(results)
    out = []
    for hs, rs, as_ in zip(per_seed(c[h]), per_seed(c[r]), per_seed(c[a])):
        if as_ - rs < MARGIN:
            return None
        out.append((hs - rs) / (as_ - rs))
    return out


def _hybrid_names(results):
    c = _contenders(results)
    hs = [m for m, e in c.items() if e["family"] == HYBRID[0]]
    a = _attention(results)
    if not hs or a is None:
        return None
    return hs[0], counterpart(hs[0]), a


def hybrid(results, pilot=None) -> Claim:
    cid = "recall/hybrid"
    claim = "a hybrid with one attention layer closes most of the gap to attention"
    rng = Range.at_least(MOST, f"(hybrid − recurrent) / (attention − recurrent) ≥ {MOST:g}")
    names = _hybrid_names(results)
    if names is None:
        return Claim(claim, str(rng), "—", MISSING, "needs a hybrid and attention", id=cid)
    h, r, a = names
    if r not in _contenders(results):
        return Claim(claim, str(rng), "—", MISSING, f"no {r} beside {h}", id=cid)
    closed = _closed(results, h, r, a)
    ok, why = gate(results, [r])
    if closed is None and ok:
        gaps = _difference(results, a, r)
        return Claim(claim, str(rng), f"attention − {r}: {t_interval(gaps, bounds=DIFF)}", UNDECIDED,
                     f"no gap between {r} and attention to close (a seed's gap < {MARGIN:g})",
                     id=cid)  # fmt: skip
    interval = t_interval(closed if closed is not None else [np.nan])
    return judged(
        cid, claim, interval, rng,
        f"{h} against {r} and {a}, per seed, mean over every (N, K)",
        precondition=(ok, why),
        power=_power(pilot, lambda p: _closed(p, *_hybrid_names(p)), rng, results,
                     "'most' is more than half, by definition"),
    )  # fmt: skip


def table(results, pilot=_COMMITTED) -> list[Claim]:
    """Every claim of the run; pilot: the design-seed pilot's results each claim's power is
    read from (default: the committed results/recall/pilot.json; None: no power)."""
    if pilot is _COMMITTED:
        pilot = _pilot_default()
    families = sorted(fixed_state_sweeps(results))
    return [
        needs_recall(results),
        attention_every_n(results, pilot),
        *[grows(results, f, pilot) for f in families],
        grows_with_state(results, pilot),
        falls_with_k(results, pilot),
        attention_flat_in_k(results, pilot),
        matrix_vs_diagonal(results, pilot),
        hybrid(results, pilot),
    ]


PARTS = (
    "recall/needs_recall",
    "recall/attention_every_n",
    "recall/grows_with_state",
    "recall/falls_with_k",
    "recall/hybrid",
)


def chapter(results, pilot=_COMMITTED) -> list[Claim]:
    by = {c.id: c for c in table(results, pilot)}
    claim = ("the fixed-size state still bites: recall grows with state and falls with K; "
             "attention and a hybrid with one attention layer keep it")  # fmt: skip
    return [composite("recall/fixed_state_today", claim, [by[p] for p in PARTS])]


def rules() -> list[str]:
    """How these verdicts are decided, for the report's "How verdicts are decided"."""
    return [
        f"* recall: a model solves MQAR when its accuracy on the queried positions is ≥ "
        f"{SOLVED:g} (one-sided, over seeds); the readers without recall (position only, bag "
        f"of tokens) must stay below it and the lookup reader reach it (exact).",
        f"* recall: a fixed-state claim reads only models that learned recall (accuracy × K ≥ "
        f"{LEARNED:g} at the smallest K of the smallest N); 'grows with state' and 'falls "
        f"with K' are differences of ≥ {MARGIN:g} accuracy per seed; 'equal state bytes' is within "
        f"{MATCH:.0%}, 'comparable parameters' within "
        f"{PARAMS_MATCH:.0%}; 'closes most of the gap' is "
        f"(hybrid − recurrent) / (attention − recurrent) ≥ {MOST:g}, a t interval over "
        "per-seed values.",
    ]
