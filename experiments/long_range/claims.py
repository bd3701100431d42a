"""long_range's claims, judged on what its results.json holds, with their thresholds.

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    long_range/accuracy/<model>       accuracy at the nearest and farthest k (reported)
    long_range/attention_recall       the Transformer recalls at the farthest k, well above
                                      chance and level with every recurrent model
    long_range/gated_reach            the LSTM recalls further than the plain RNN
    long_range/linear_recall/<model>  minGRU / Mamba recall as far as the LSTM
    long_range/conv_field             the conv stack recalls inside its receptive field only
chapter(results), what the chapter's report quotes, made of those verdicts:
    long_range/recall          the long-range row's recall half (long_range/attention_recall)
    long_range/linear_recall   the linear-recurrence recall row (the weakest of
                               long_range/linear_recall/<model>)
"""

from __future__ import annotations

from anatomy.probes.claims import (
    FAILS,
    HOLDS,
    MISSING,
    NOT_SHOWN,
    REPORTED,
    Claim,
    finite,
    holds,
    weakest,
)

# "Well above chance": recall at least this fraction of the way from chance (1/V) to perfect,
# acc >= 1/V + ABOVE_CHANCE·(1 − 1/V) (0.5625 for V = 8). A model at chance recalls nothing, so
# matching another one at chance shows no long-range recall.
ABOVE_CHANCE = 0.5
RECALL_MARGIN = 0.02  # "level with": recall >= the other model's − this
AT_CHANCE_MARGIN = 0.05  # "at chance": accuracy <= 1/V + this (the eval's noise is ~0.005)
LINEAR = ("mingru", "mamba")  # the linear recurrences (gates from x only), run in parallel


def well_above_chance(accuracy, chance: float) -> bool:
    """accuracy >= chance + ABOVE_CHANCE·(1 − chance); False for NaN."""
    return finite(accuracy) and accuracy >= chance + ABOVE_CHANCE * (1.0 - chance)


def recall_ok(t_acc, recurrent_accs, chance) -> bool:
    """Attention's recall at the largest k: well above chance, and level with or above the best
    recurrent model's (matching recurrent models that sit at chance shows nothing)."""
    return (
        finite(t_acc)
        and bool(recurrent_accs)
        and well_above_chance(t_acc, chance)
        and t_acc >= max(recurrent_accs) - RECALL_MARGIN
    )


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
    return (HOLDS if finite(rnn) and lstm > rnn + RECALL_MARGIN else FAILS), k


def linear_recall_verdict(acc, lstm_acc, lstm_recalls) -> str:
    """A linear recurrence's recall against the LSTM's at the farthest k where the LSTM is
    well above chance: NOT_SHOWN if there is no such k, else HOLDS if acc >= lstm − margin."""
    if not lstm_recalls:
        return NOT_SHOWN
    return HOLDS if finite(acc, lstm_acc) and acc >= lstm_acc - RECALL_MARGIN else FAILS


def _accuracy(results):
    """acc(name, k): a model's accuracy at distance k (NaN for a model not run)."""
    ks, models = results["k_grid"], results["models"]

    def acc(name, k):
        a = models[name]["accuracy"][ks.index(k)] if name in models else None
        return float("nan") if a is None else a

    return acc


def accuracy(results) -> list[Claim]:
    acc, ks = _accuracy(results), results["k_grid"]
    near, far = min(ks), max(ks)
    return [
        Claim(
            f"{name}: accuracy k={near} -> k={far}",
            "decays (recurrent) / flat (attention)",
            f"{acc(name, near):.3f} -> {acc(name, far):.3f}",
            REPORTED,
            id=f"long_range/accuracy/{name}",
        )
        for name in results["models"]
    ]


def attention_recall(results) -> list[Claim]:
    """The Transformer at the farthest k against every recurrent model (none: no claim)."""
    models, chance, acc = results["models"], results["chance"], _accuracy(results)
    if "transformer" not in models:
        return []
    far = max(results["k_grid"])
    recurrent = [acc(n, far) for n in models if n != "transformer"]
    t_far = acc("transformer", far)
    floor = chance + ABOVE_CHANCE * (1 - chance)
    return [
        Claim(
            f"attention keeps long-range recall at k={far} (direct path)",
            f"transformer >= every recurrent model, and >= {floor:.3f} (well above chance)",
            f"{t_far:.3f} vs best recurrent {max(recurrent, default=chance):.3f}",
            holds(recall_ok(t_far, recurrent or [chance], chance)),
            id="long_range/attention_recall",
        )
    ]


def gated_reach(results) -> list[Claim]:
    """The LSTM against the plain RNN (both needed: else no claim)."""
    models, chance, acc = results["models"], results["chance"], _accuracy(results)
    if "rnn" not in models or "lstm" not in models:
        return []
    verdict, k = gated_reach_verdict(
        models["lstm"]["accuracy"], models["rnn"]["accuracy"], results["k_grid"], chance
    )
    floor = chance + ABOVE_CHANCE * (1 - chance)
    return [
        Claim(
            "gated recurrence reaches further than the vanilla RNN",
            f"at the farthest k where lstm >= {floor:.3f} (well above chance): "
            f"lstm > rnn + {RECALL_MARGIN}",
            f"k={k}: lstm {acc('lstm', k):.3f} vs rnn {acc('rnn', k):.3f}"
            if k is not None
            else f"lstm {', '.join(f'{a:.3f}' for a in models['lstm']['accuracy'])}",
            verdict,
            "" if k is not None else "the lstm is well above chance at no k: it did not learn",
            id="long_range/gated_reach",
        )
    ]


def _lstm_reach(results) -> list[int]:
    """The k at which the LSTM recalls well above chance."""
    acc = _accuracy(results)
    return [k for k in results["k_grid"] if well_above_chance(acc("lstm", k), results["chance"])]


def linear_recall(results) -> list[Claim]:
    """minGRU / Mamba (gates from x only, computed in parallel over time) against the LSTM,
    at the farthest k the LSTM still recalls well above chance (none: not shown)."""
    models, acc = results["models"], _accuracy(results)
    if "lstm" not in models:
        return []
    reach = _lstm_reach(results)
    k = max(reach, default=max(results["k_grid"]))
    return [
        Claim(
            f"{name}, a linear recurrence run in parallel, recalls as far as the LSTM (k={k})",
            f">= lstm − {RECALL_MARGIN}, at the farthest k the lstm recalls",
            f"{acc(name, k):.3f} vs lstm {acc('lstm', k):.3f}",
            linear_recall_verdict(acc(name, k), acc("lstm", k), reach),
            "" if reach else "the lstm is not well above chance at any k: nothing to match",
            id=f"long_range/linear_recall/{name}",
        )
        for name in LINEAR
        if name in models
    ]


def conv_field(results) -> list[Claim]:
    """The causal conv stack: recall well above chance inside its field F = 1 + L·(K-1), at
    chance beyond it."""
    if "conv" not in results["models"]:
        return []
    cfg, chance, acc, ks = (
        results["config"],
        results["chance"],
        _accuracy(results),
        results["k_grid"],
    )
    f = 1 + cfg["conv_layers"] * (cfg["conv_kernel"] - 1)
    inside = [k for k in ks if k < f]
    beyond = [k for k in ks if k >= f]
    learned = all(well_above_chance(acc("conv", k), chance) for k in inside)
    flat = all(acc("conv", k) <= chance + AT_CHANCE_MARGIN for k in beyond)
    if not inside or not beyond:
        verdict, why = NOT_SHOWN, "k_grid does not straddle the receptive field"
    elif not learned:
        verdict, why = NOT_SHOWN, "the conv stack did not learn recall inside its field"
    else:
        verdict, why = holds(flat), ""
    return [
        Claim(
            f"causal convolution ({cfg['conv_layers']} layers, K={cfg['conv_kernel']}) recalls "
            f"only within its receptive field F = {f}",
            f"k < {f} well above chance, k >= {f} at chance (<= {chance + AT_CHANCE_MARGIN:.3f})",
            ", ".join(f"k={k}: {acc('conv', k):.3f}" for k in ks),
            verdict,
            why,
            id="long_range/conv_field",
        )
    ]


def table(results) -> list[Claim]:
    return [
        *accuracy(results),
        *attention_recall(results),
        *gated_reach(results),
        *linear_recall(results),
        *conv_field(results),
    ]


def recall(results) -> Claim:
    """The recall half of the report's long-range row: every model's recall at the farthest
    k, judged by long_range/attention_recall (no Transformer: not recalled)."""
    acc, far, chance = _accuracy(results), max(results["k_grid"]), results["chance"]
    claim = next(iter(attention_recall(results)), None)
    recalled = claim is not None and claim.verdict == HOLDS
    accs = ", ".join(f"{n} {acc(n, far):.2f}" for n in results["models"])
    return Claim(
        f"attention recalls x(t−{far}) as well as every recurrent model, well above chance",
        "transformer level with the best recurrent model, well above chance",
        f"recall of x(t−{far}): {accs} (chance {chance:.2f})",
        claim.verdict if claim is not None else FAILS,
        "recall "
        + ("agrees" if recalled else "does not put attention ahead, well above chance")
        + f" at k={far}",
        id="long_range/recall",
    )


def linear_recall_row(results) -> Claim:
    """The linear-recurrence recall row: every minGRU / Mamba claim must hold."""
    expected = "minGRU / Mamba level with the LSTM where it recalls"
    parts, acc = linear_recall(results), _accuracy(results)
    if not parts:
        return Claim(
            "a linear recurrence recalls as far as the LSTM",
            expected,
            "—",
            MISSING,
            "needs lstm and mingru / mamba in long_range's models",
            id="long_range/linear_recall",
        )
    reach = _lstm_reach(results)
    k = max(reach, default=max(results["k_grid"]))
    names = ["lstm"] + [n for n in LINEAR if n in results["models"]]
    return Claim(
        "a linear recurrence recalls as far as the LSTM",
        expected,
        f"recall of x(t−{k}): " + ", ".join(f"{m} {acc(m, k):.2f}" for m in names),
        weakest(c.verdict for c in parts),
        f"at the farthest k where the lstm is well above chance (k={k})"
        if reach
        else f"the lstm is well above chance (1/V = {results['chance']:.2f}) at no k: "
        "nothing to match",
        id="long_range/linear_recall",
    )


def chapter(results) -> list[Claim]:
    return [recall(results), linear_recall_row(results)]


def rules() -> list[str]:
    """How these verdicts are decided, for the report's "How verdicts are decided"."""
    return [
        f"* Recall at the largest k: attention ≥ best recurrent − {RECALL_MARGIN} and at least "
        f"{ABOVE_CHANCE:.0%} of the way from chance (1/V) to perfect recall.",
        f"* Linear recurrences' recall: ≥ the LSTM's − {RECALL_MARGIN} at the farthest k where "
        f"the LSTM is well above chance ({NOT_SHOWN} if it is at none).",
        "* Gated recurrence reaches further: at the farthest k where the LSTM is well above "
        f"chance, LSTM > RNN + {RECALL_MARGIN} holds, else it does not hold ({NOT_SHOWN} when "
        "the LSTM is well above chance at no k).",
    ]
