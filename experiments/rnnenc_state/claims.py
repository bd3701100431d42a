"""rnnenc_state's claims, judged on what its results.json holds, with their thresholds.

table(results):
    rnnenc_state/learned/<variant>    the variant learned short sentences (BLEU on the
                                      shortest bucket >= rnn_vs_attn's floor): a model that
                                      never learned shows no collapse and moves none
    rnnenc_state/moves/<variant>      its BLEU on the longest bucket is >= BLEU_GAP above
                                      RNNenc's (the baseline's mean; its seeds are in detail)
    rnnenc_state/behind/<variant>     RNNsearch's BLEU on the longest bucket is >= BLEU_GAP
                                      above the variant's: the bottleneck is still there
chapter(results):
    rnnenc_state/bigger_state         the answer: a matrix state without attention moves the
                                      collapse (learned and moves of the first variant, the
                                      judged one); whether attention is still ahead is in its
                                      detail (behind), whatever it is

The thresholds are rnn_vs_attn's (the bottleneck's own), written once in
experiments/lab/thresholds.py.
"""

from __future__ import annotations

from anatomy.probes.claims import (
    DID_NOT_LEARN,
    HOLDS,
    MISSING,
    Claim,
    Range,
    judged,
    t_interval,
)
from experiments.lab.thresholds import BLEU_GAP, ENC_SHORT_FLOOR

ATTENTION = "rnnsearch"  # the attention translator the variants are measured against
BASELINE = "rnnenc"  # the fixed-vector translator whose collapse they should move


def _ends(results):
    return results["buckets"][0], results["buckets"][-1]


def learned(results, label) -> Claim:
    short, _ = _ends(results)
    v = results["variants"][label]
    return judged(
        f"rnnenc_state/learned/{label}",
        f"{label} learned short sentences",
        t_interval(v["bleu_by_length"][short], bounds=(0.0, 100.0)),
        Range.at_least(ENC_SHORT_FLOOR, f"BLEU {short} ≥ {ENC_SHORT_FLOOR:g}"),
    )


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else float("nan")


def moves(results, label) -> Claim:
    cid = f"rnnenc_state/moves/{label}"
    claim = f"{label}'s state moves RNNenc's collapse on the longest sentences"
    _, long = _ends(results)
    rng = Range.at_least(BLEU_GAP, f"BLEU {long} ≥ {BLEU_GAP:g} above RNNenc's")
    base = results["baselines"].get(BASELINE)
    if base is None:
        return Claim(claim, str(rng), "—", MISSING, "no RNNenc baseline", id=cid)
    ref = _mean(base["bleu_by_length"][long])
    diffs = [x - ref for x in results["variants"][label]["bleu_by_length"][long]]
    return judged(cid, claim, t_interval(diffs), rng,
                  f"RNNenc {ref:.1f} ({base['n_seeds']} seed(s), its mean)")  # fmt: skip


def behind(results, label) -> Claim:
    cid = f"rnnenc_state/behind/{label}"
    claim = f"attention ({ATTENTION}) still beats {label} on the longest sentences"
    _, long = _ends(results)
    rng = Range.at_least(BLEU_GAP, f"{ATTENTION} ≥ {BLEU_GAP:g} BLEU above on {long}")
    base = results["baselines"].get(ATTENTION)
    if base is None:
        return Claim(claim, str(rng), "—", MISSING, f"no {ATTENTION} baseline", id=cid)
    ref = _mean(base["bleu_by_length"][long])
    diffs = [ref - x for x in results["variants"][label]["bleu_by_length"][long]]
    return judged(cid, claim, t_interval(diffs), rng,
                  f"{ATTENTION} {ref:.1f} ({base['n_seeds']} seed(s), its mean)")  # fmt: skip


def table(results) -> list[Claim]:
    out = []
    for label in results["variants"]:
        out += [learned(results, label), moves(results, label), behind(results, label)]
    return out


def chapter(results) -> list[Claim]:
    label = next(iter(results["variants"]))
    first, move, back = learned(results, label), moves(results, label), behind(results, label)
    claim = "a matrix state without attention moves RNNenc's collapse on long sentences"
    if first.verdict != HOLDS:
        verdict, why = (
            DID_NOT_LEARN,
            f"{label} did not learn short sentences: {first.measured} ({first.verdict})",
        )
    else:
        verdict, why = move.verdict, move.detail
    _, long = _ends(results)
    own = t_interval(results["variants"][label]["bleu_by_length"][long], bounds=(0.0, 100.0))
    refs = [f"{n} {_mean(b['bleu_by_length'][long]):.1f}" for n, b in results["baselines"].items()]
    measured = "; ".join([f"{label} BLEU {long} {own}", *refs])
    return [
        Claim(
            claim,
            move.expected,
            measured,
            verdict,
            f"{label}{' against' if first.verdict == HOLDS else ':'} {why}; "
            f"attention still ahead: {back.verdict} ({back.measured})",
            id="rnnenc_state/bigger_state",
        )
    ]


def rules() -> list[str]:
    """How these verdicts are decided, for the report's "How verdicts are decided"."""
    return [
        f"* rnnenc_state: a variant must first learn short sentences (BLEU ≥ {ENC_SHORT_FLOOR:g} "
        f"on the shortest bucket); it moves the collapse when its BLEU on the longest bucket is "
        f"≥ {BLEU_GAP:g} above RNNenc's (rnn_vs_attn's thresholds), an interval over its seeds "
        "against the baseline's mean.",
    ]
