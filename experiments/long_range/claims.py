"""long_range's claims, judged on what its results.json holds, with the ranges they give.

Every accuracy is measured once per seed (results.json: models[m]["accuracy"][k][seed]) and
judged by the one rule (anatomy.probes.claims): its 95% t interval over the seeds inside the
claim's range holds, outside does not hold, straddling an edge (or fewer than 3 seeds) is
undecided. A claim that needs a model to have learned the task reads "did not learn" when that
model's accuracy at the nearest k does not hold the recall bar.

The recall bar: accuracy >= 1/V + ABOVE_CHANCE·(1 − 1/V) (0.5625 for V = 8): a model at chance
recalls nothing, and neither reader without recall (readers.py: by position, by unigram
counts) reaches it (long_range/task_needs_recall checks that on the run's own batches).
A model's reach on a seed is how many steps of the k grid it recalls to: 1 + the index of the
farthest k at which its accuracy holds the bar on that seed (0: none).

table(results), the experiment's own claims (results.json's "table", report.md's Claims):
    long_range/task_needs_recall      every reader without recall stays below the bar at every k
    long_range/accuracy/<model>       accuracy at the nearest and farthest k (reported)
    long_range/attention_recall       the Transformer recalls at the farthest k above the bar,
                                      and level with (or ahead of) every other model there
    long_range/gated_reach            the LSTM's reach minus the plain RNN's >= 1 grid step
    long_range/linear_recall/<model>  minGRU / Mamba's reach minus the LSTM's >= 0
    long_range/conv_field             the conv stack recalls inside its receptive field only
chapter(results), what the chapter's report quotes:
    long_range/recall          the long-range row's recall half (long_range/attention_recall)
    long_range/linear_recall   the linear-recurrence recall row (the weakest of
                               long_range/linear_recall/<model>)
"""

from __future__ import annotations

from anatomy.probes.claims import (
    DID_NOT_LEARN,
    HOLDS,
    MISSING,
    REPORTED,
    UNDECIDED,
    Claim,
    Range,
    judge,
    judged_parts,
    paired,
    t_interval,
    weakest,
)

# The ranges, stated before any run:
ACC = (0.0, 1.0)  # an accuracy interval is clipped at its bounds (and marked)
ABOVE_CHANCE = 0.5  # the recall bar: 1/V + this·(1 − 1/V), the way from chance to perfect
RECALL_MARGIN = 0.02  # "level with": accuracy minus the other model's >= −this
AT_CHANCE_MARGIN = 0.05  # "at chance": accuracy <= 1/V + this (the eval's noise is ~0.005)
LINEAR = ("mingru", "mamba")  # the linear recurrences (gates from x only), run in parallel
GATED_STEPS = 1  # "reaches further": at least this many steps of the k grid further


def recall_bar(chance: float) -> float:
    """The accuracy a model must hold to count as recalling: chance + ABOVE_CHANCE·(1 − chance)."""
    return chance + ABOVE_CHANCE * (1.0 - chance)


def bar_range(chance: float) -> Range:
    bar = recall_bar(chance)
    return Range.at_least(bar, f"≥ {bar:.4g} (the recall bar, one-sided)")


def accuracies(results, name: str, k: int) -> list:
    """A model's (or reader's) accuracy at distance k, one per seed ([] for one not run)."""
    ks = results["k_grid"]
    table = results["models"][name]["accuracy"] if name in results["models"] else None
    if table is None and name in results.get("readers", {}):
        table = results["readers"][name]
    return list(table[ks.index(k)]) if table is not None else []


def reach(accs_by_k: list, bar: float) -> int:
    """1 + the index of the farthest k whose accuracy holds the bar (0: none); None when
    an accuracy is missing."""
    if any(a is None for a in accs_by_k):
        return None
    return max((i + 1 for i, a in enumerate(accs_by_k) if a >= bar), default=0)


def reaches(results, name: str) -> list:
    """A model's reach on each seed (a list over the seeds)."""
    table = results["models"][name]["accuracy"]  # [k][seed]
    bar = recall_bar(results["chance"])
    return [reach([row[s] for row in table], bar) for s in range(len(table[0]))]


def _not_shown(cid, claim, expected, measured, why) -> Claim:
    """A claim whose model did not learn the task: DID_NOT_LEARN, `why` in words."""
    return Claim(claim, expected, measured, DID_NOT_LEARN, why, id=cid)


def learned(results, name: str) -> tuple[bool, str]:
    """(whether `name` holds the recall bar at the nearest k by the rule, the measured text):
    a model that did not learn the task cannot show how far it recalls."""
    near = min(results["k_grid"])
    acc = t_interval(accuracies(results, name, near), bounds=ACC)
    verdict, why = judge(acc, bar_range(results["chance"]))
    return verdict == HOLDS, f"{name} at k={near}: {acc}" + (f" ({why})" if why else "")


def task_needs_recall(results) -> list[Claim]:
    """Every reader without recall, at every k, below the recall bar (at most the bar)."""
    readers = results.get("readers") or {}
    cid, claim = (
        "long_range/task_needs_recall",
        "the task needs recall: readers without it stay below the bar",
    )
    bar = recall_bar(results["chance"])
    expected = f"every reader (by position, by unigram counts) ≤ {bar:.4g} at every k (one-sided)"
    if not readers:
        return [Claim(claim, expected, "—", MISSING, "the run scored no reader", id=cid)]
    below = Range.at_most(bar, f"< the recall bar {bar:.4g}")
    parts = {
        f"{name} k={k}": (t_interval(accuracies(results, name, k), bounds=ACC), below)
        for name in readers
        for k in results["k_grid"]
    }
    worst = {
        name: max(
            results["k_grid"],
            key=lambda k: t_interval(accuracies(results, name, k), bounds=ACC).point,
        )
        for name in readers
    }
    measured = ", ".join(
        f"{name} at most {t_interval(accuracies(results, name, k), bounds=ACC)} (k={k})"
        for name, k in worst.items()
    )
    return [judged_parts(cid, claim, expected, parts, measured)]


def accuracy(results) -> list[Claim]:
    ks = results["k_grid"]
    near, far = min(ks), max(ks)
    return [
        Claim(
            f"{name}: accuracy k={near} -> k={far}",
            "decays (recurrent) / flat (attention)",
            f"{t_interval(accuracies(results, name, near), bounds=ACC)} -> "
            f"{t_interval(accuracies(results, name, far), bounds=ACC)}",
            REPORTED,
            id=f"long_range/accuracy/{name}",
        )
        for name in results["models"]
    ]


def attention_parts(results) -> dict:
    """The Transformer at the farthest k: 'recalls' (its accuracy against the bar) and
    'level' (its accuracy minus the best other model's, per seed, >= −RECALL_MARGIN)."""
    far, chance = max(results["k_grid"]), results["chance"]
    t = accuracies(results, "transformer", far)
    others = [accuracies(results, n, far) for n in results["models"] if n != "transformer"]
    best = [max(col) for col in zip(*others)] if others else [None] * len(t)
    return {
        "recalls": (t_interval(t), bar_range(chance)),
        "level": (
            t_interval(paired(t, best, lambda a, b: a - b)),
            Range.at_least(-RECALL_MARGIN, f"≥ −{RECALL_MARGIN} (level with the best other model)"),
        ),
    }


def attention_recall(results) -> list[Claim]:
    """The Transformer at the farthest k against every other model (none: no claim)."""
    if "transformer" not in results["models"] or len(results["models"]) < 2:
        return []
    cid = "long_range/attention_recall"
    far, bar = max(results["k_grid"]), recall_bar(results["chance"])
    claim = f"attention keeps long-range recall at k={far} (direct path)"
    expected = f"transformer ≥ {bar:.4g} (the recall bar) and ≥ every other model − {RECALL_MARGIN}"
    parts = attention_parts(results)
    measured = f"transformer {parts['recalls'][0]}; minus the best other model {parts['level'][0]}"
    ok, near = learned(results, "transformer")
    if not ok:
        return [
            _not_shown(
                cid, claim, expected, measured, f"the transformer did not learn the task: {near}"
            )
        ]
    return [judged_parts(cid, claim, expected, parts, measured)]


def _reach_text(results, name) -> str:
    return f"{name} reach {t_interval(reaches(results, name))}"


def gated_reach(results) -> list[Claim]:
    """The LSTM's reach minus the plain RNN's, per seed, >= GATED_STEPS grid steps (both
    needed: else no claim; the LSTM must have learned: else did not learn)."""
    if "rnn" not in results["models"] or "lstm" not in results["models"]:
        return []
    cid, claim = "long_range/gated_reach", "gated recurrence reaches further than the vanilla RNN"
    rng = Range.at_least(
        GATED_STEPS, f"lstm's reach − rnn's ≥ {GATED_STEPS} step of the k grid (one-sided)"
    )
    diff = t_interval(paired(reaches(results, "lstm"), reaches(results, "rnn"), lambda a, b: a - b))
    measured = f"{diff} steps ({_reach_text(results, 'lstm')}, {_reach_text(results, 'rnn')})"
    ok, near = learned(results, "lstm")
    if not ok:
        return [
            _not_shown(cid, claim, str(rng), measured, f"the lstm did not learn the task: {near}")
        ]
    return [judged_parts(cid, claim, str(rng), {"reach": (diff, rng)}, measured)]


def linear_recall(results) -> list[Claim]:
    """minGRU / Mamba (gates from x only, computed in parallel over time): reach minus the
    LSTM's, per seed, >= 0 (the LSTM must have learned: else did not learn)."""
    models = results["models"]
    if "lstm" not in models:
        return []
    ok, near = learned(results, "lstm")
    rng = Range.at_least(0, "reach − the lstm's ≥ 0 (one-sided)")
    out = []
    for name in LINEAR:
        if name not in models:
            continue
        cid = f"long_range/linear_recall/{name}"
        claim = f"{name}, a linear recurrence run in parallel, recalls as far as the LSTM"
        diff = t_interval(
            paired(reaches(results, name), reaches(results, "lstm"), lambda a, b: a - b)
        )
        measured = f"{diff} steps ({_reach_text(results, name)}, {_reach_text(results, 'lstm')})"
        if not ok:
            out.append(
                _not_shown(
                    cid, claim, str(rng), measured, f"the lstm did not learn the task: {near}"
                )
            )
        else:
            out.append(judged_parts(cid, claim, str(rng), {"reach": (diff, rng)}, measured))
    return out


def conv_field(results) -> list[Claim]:
    """The causal conv stack: the recall bar inside its field F = 1 + L·(K-1) (the gate:
    else did not learn), at chance (<= 1/V + AT_CHANCE_MARGIN) at every k beyond it."""
    if "conv" not in results["models"]:
        return []
    cfg, chance, ks = results["config"], results["chance"], results["k_grid"]
    f = 1 + cfg["conv_layers"] * (cfg["conv_kernel"] - 1)
    cid = "long_range/conv_field"
    claim = (
        f"causal convolution ({cfg['conv_layers']} layers, K={cfg['conv_kernel']}) recalls "
        f"only within its receptive field F = {f}"
    )
    flat = Range.at_most(
        chance + AT_CHANCE_MARGIN, f"≤ {chance + AT_CHANCE_MARGIN:.3f} (at chance)"
    )
    expected = f"k < {f}: {bar_range(chance)}; k ≥ {f}: {flat}"
    measured = ", ".join(
        f"k={k}: {t_interval(accuracies(results, 'conv', k), bounds=ACC)}" for k in ks
    )
    inside = [k for k in ks if k < f]
    beyond = [k for k in ks if k >= f]
    if not inside or not beyond:
        why = "k_grid does not straddle the receptive field: a grid across it would decide it"
        return [Claim(claim, expected, measured, UNDECIDED, why, id=cid)]
    inside_parts = {
        f"k={k}": (t_interval(accuracies(results, "conv", k), bounds=ACC), bar_range(chance))
        for k in inside
    }
    if any(judge(*p)[0] != HOLDS for p in inside_parts.values()):
        return [
            _not_shown(
                cid,
                claim,
                expected,
                measured,
                "the conv stack did not learn recall inside its field",
            )
        ]
    parts = {
        f"k={k}": (t_interval(accuracies(results, "conv", k), bounds=ACC), flat) for k in beyond
    }
    return [judged_parts(cid, claim, expected, parts, measured)]


def table(results) -> list[Claim]:
    return [
        *task_needs_recall(results),
        *accuracy(results),
        *attention_recall(results),
        *gated_reach(results),
        *linear_recall(results),
        *conv_field(results),
    ]


def recall(results) -> Claim:
    """The recall half of the report's long-range row: every model's recall at the farthest
    k, judged by long_range/attention_recall (no Transformer: not measured)."""
    far, chance = max(results["k_grid"]), results["chance"]
    claim = next(iter(attention_recall(results)), None)
    accs = ", ".join(
        f"{n} {t_interval(accuracies(results, n, far), bounds=ACC).point:.2f}"
        for n in results["models"]
    )
    recalled = claim is not None and claim.verdict == HOLDS
    return Claim(
        f"attention recalls x(t−{far}) as well as every recurrent model, well above chance",
        "transformer level with the best other model, above the recall bar",
        f"recall of x(t−{far}), means over seeds: {accs} (chance {chance:.2f})",
        claim.verdict if claim is not None else MISSING,
        ("recall agrees" if recalled else "recall does not put attention ahead, above the bar")
        + f" at k={far}"
        + (f": {claim.detail}" if claim is not None and claim.detail else "")
        + ("" if claim is not None else ": needs the transformer and another model"),
        id="long_range/recall",
    )


def linear_recall_row(results) -> Claim:
    """The linear-recurrence recall row: every minGRU / Mamba claim must hold."""
    claim, expected = (
        "a linear recurrence recalls as far as the LSTM",
        "minGRU / Mamba reach as far as the LSTM",
    )
    parts = linear_recall(results)
    if not parts:
        return Claim(
            claim,
            expected,
            "—",
            MISSING,
            "needs lstm and mingru / mamba in long_range's models",
            id="long_range/linear_recall",
        )
    names = ["lstm"] + [n for n in LINEAR if n in results["models"]]
    verdict = weakest(c.verdict for c in parts)
    return Claim(
        claim,
        expected,
        "reach in steps of the k grid "
        + str(results["k_grid"])
        + ": "
        + ", ".join(f"{m} {t_interval(reaches(results, m))}" for m in names),
        verdict,
        "; ".join(f"{c.id}: {c.detail}" for c in parts if c.verdict == verdict and c.detail),
        id="long_range/linear_recall",
    )


def chapter(results) -> list[Claim]:
    return [recall(results), linear_recall_row(results)]


def rules() -> list[str]:
    """Each claim's range, for the report's "How verdicts are decided" (the rule itself:
    anatomy.probes.claims.rule_text)."""
    return [
        f"* Recall (accuracy over seeds): the recall bar is 1/V + {ABOVE_CHANCE:g}·(1 − 1/V), "
        "above every reader without recall (by position, by unigram counts); at the largest k "
        f"the Transformer holds the bar and is ≥ the best other model − {RECALL_MARGIN}; "
        "did not learn when it does not hold the bar at the nearest k.",
        "* Reach (a model's farthest k at the bar, in steps of the k grid, per seed): the LSTM's "
        f"minus the RNN's ≥ {GATED_STEPS}; minGRU's and Mamba's minus the LSTM's ≥ 0; did not learn "
        "when the LSTM does not hold the bar at the nearest k.",
    ]
