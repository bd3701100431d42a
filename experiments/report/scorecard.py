"""The chapter's claims on one screen: the README's scorecard and docs/chapter.md's sections.

One Entry per claim of the chapter (the numbering of the chapter digest, docs/chapter.md), naming the claims that
measure it by id ("<experiment>/<name>", each judged by its experiment's claims.py on the
committed result experiments.lab.committed.VERDICTS_FROM names), the plots that show it
(their names under docs/img, drawn by the experiments' docs.py PLOTS) and the experiment to
run. Nothing here reads a number: the verdicts, the measured texts and the run times come from
the committed results when a page is rendered (experiments.lab.publish).
"""

from __future__ import annotations

import dataclasses
import re

from anatomy.probes.claims import (
    DID_NOT_LEARN,
    FAILS,
    HOLDS,
    MISSING,
    NEEDS_ACCELERATOR,
    UNDECIDED,
    VERDICTS,
    Claim,
    weakest,
)
from experiments.lab import committed, record


def slug(heading: str) -> str:
    """GitHub's anchor for a markdown heading ('Wall clock at N = 512' -> 'wall-clock-at-n--512'; an
    underscore stays, as in `recipe_sweep`)."""
    text = re.sub(r"[`*]|\[([^]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"\s", "-", re.sub(r"[^\w\s\-]", "", text))


@dataclasses.dataclass(frozen=True)
class Entry:
    heading: str  # its section's heading in docs/chapter.md
    claim: str  # the chapter's claim, short
    parts: tuple[tuple[str, str], ...]  # (label, claim id) that measure it
    images: tuple[str, ...]  # docs/img names that show it
    experiment: str  # what to run (python launch.py --experiment=...)
    corpus: str = ""  # what the measurement reads: a corpus (real or invented), a task, programs

    @property
    def anchor(self) -> str:
        """The section's anchor in docs/chapter.md."""
        return slug(self.heading)


ENTRIES = (
    Entry(
        "Gradients over distance",
        "Gradients vanish or explode over distance (Pascanu's γ·σ_max); gates ease it; "
        "attention reaches every position in one step",
        (("gradients", "gradient_decay/gradients"), ("long-range recall", "long_range/recall")),
        ("gradient_decay.png", "long_range.png"),
        "gradient_decay, long_range",
        "random sequences, a synthetic recall task",
    ),
    Entry(
        "The fixed-vector bottleneck",
        "Without attention an encoder-decoder collapses on long sentences; with it, it does not",
        (("bottleneck", "rnn_vs_attn/bottleneck"),),
        ("bleu_by_length.png", "attention_rnnsearch.png", "attention_transformer.png"),
        "rnn_vs_attn --preset=seeds",
        "toy_wmt (invented language)",
    ),
    Entry(
        "Serial steps",
        "An RNN's training takes N serial steps; attention's none, and it keeps the cores busy",
        (("serial steps", "parallelism/distance"), ("parallel", "parallelism/parallel_training")),
        ("parallelism.png",),
        "parallelism",
        "compiled programs; timed on random inputs",
    ),
    Entry(
        "Cost per layer",
        "Per layer: recurrence O(N·d²), self-attention O(N²·d), convolution O(k·N·d²), "
        "restricted attention O(r·N·d)",
        (
            ("recurrence vs attention", "complexity/per_layer"),
            ("restricted", "complexity/restricted"),
            ("convolution", "complexity/conv"),
        ),
        ("complexity.png",),
        "complexity",
        "compiled programs (FLOP counts)",
    ),
    Entry(
        "Attention memory",
        "Attention's memory: O(N²) with its weights, O(N) chunked (the Flash idea)",
        (("memory", "attention_memory/memory"),),
        ("attention_memory.png",),
        "attention_memory",
        "compiled programs (memory)",
    ),
    Entry(
        "Wall clock at N = 512",
        "At N = 512 attention trains 5-10x faster than an LSTM (a GPU figure)",
        (("this CPU", "parallelism/wall_clock"), ("a GPU, estimated", "scaling/speed_ratio")),
        ("parallelism.png", "scaling.png"),
        "parallelism, scaling",
        "timed on random inputs; a cost model",
    ),
    Entry(
        "Decoding a token",
        "Decoding a token costs O(d²) for an RNN, O(N·d) for a Transformer with a KV cache",
        (("per token", "decode_cost/per_token"),),
        ("decode_cost.png",),
        "decode_cost",
        "compiled programs (FLOP counts)",
    ),
    Entry(
        "Quality at a fraction of the cost",
        "The Transformer matched the best RNN translator at a fraction of its training cost",
        (
            ("same tokens", "rnn_vs_attn/quality_cost"),
            ("time to the same loss, this CPU", "scaling/time_to_loss"),
            ("a GPU, estimated", "scaling/time_to_loss_accelerator"),
        ),
        ("valid_loss_vs_time.png",),
        "rnn_vs_attn --preset=seeds, scaling",
        "toy_wmt (invented language)",
    ),
    Entry(
        "Stackability",
        "Attention blocks with residual + LayerNorm stack with a steady gain per layer; "
        "plain RNN stacks stop training",
        (("stackability", "depth/stackability"),),
        ("loss_vs_depth.png", "grad_norms_at_init.png"),
        "depth",
        "characters of toy_wmt (invented language)",
    ),
    Entry(
        "Context extension",
        "A Transformer's context is extended by changing its positional encoding; an LSTM's is not",
        (
            ("a change of encoding", "context_length/extension"),
            ("the LSTM", "context_length/lstm_beyond"),
        ),
        ("context_length_probe.png", "context_length_extension.png", "context_length_loss.png"),
        "context_length",
        "a synthetic key-value stream",
    ),
    Entry(
        "Scaling across machines",
        "Training scales across machines: a Transformer step communicates a fixed amount per "
        "layer, an RNN's waits on its past; near-linear scaling on many accelerators",
        (("structure", "scaling/structure"), ("near-linear, estimated", "scaling/near_linear")),
        ("scaling.png",),
        "scaling",
        "compiled programs; a cost model",
    ),
    Entry(
        "Recall against state size",
        "After the Transformer: a fixed state's recall grows with its bytes and falls as K "
        "grows; attention's KV cache, and a hybrid with one attention layer, keep it",
        (("MQAR", "recall/fixed_state_today"), ("matrix vs diagonal", "recall/matrix_vs_diagonal")),
        ("recall_frontier.png", "recall_lengths.png"),
        "recall",
        "MQAR (synthetic)",
    ),
    Entry(
        "Copying",
        "After the Transformer: at matched parameters a fixed state copies worse than attention",
        (("copy", "copy/fixed_state_copy"),),
        ("copy_length.png",),
        "copy",
        "random strings (synthetic)",
    ),
    Entry(
        "Training cost today",
        "After the Transformer: a chunked recurrence trains in parallel and overtakes attention "
        "as N grows",
        (("crossover", "crossover/third_wall"),),
        ("crossover.png",),
        "crossover",
        "timed on random inputs",
    ),
    Entry(
        "The bottleneck with a matrix state",
        "After the Transformer: does a matrix state without attention move RNNenc's collapse?",
        (("bigger state", "rnnenc_state/bigger_state"),),
        ("rnnenc_state.png",),
        "rnnenc_state",
        "toy_wmt (invented language)",
    ),
)


def judged(claim_id: str) -> Claim | None:
    """Claim `claim_id` as its experiment judges the committed result the verdicts read;
    None when that result is not committed."""
    name = claim_id.split("/")[0]
    result = committed.VERDICTS_FROM.get(name)
    if result is None or not committed.exists(result):
        return None
    return record.claims_of(name, committed.load(result)["result"]).get(claim_id)


def verdicts(entry: Entry) -> tuple[str, list[tuple[str, Claim | None]]]:
    """(the entry's verdict: the weakest of its parts, MISSING for a part not measured;
    [(label, its Claim or None)])."""
    parts = [(label, judged(cid)) for label, cid in entry.parts]
    return weakest(c.verdict if c else MISSING for _, c in parts), parts


def sources(entry: Entry) -> list[str]:
    """The committed results an entry's verdicts read: 'results/depth/default.json', ..."""
    names = dict.fromkeys(cid.split("/")[0] for _, cid in entry.parts)
    return [f"results/{committed.VERDICTS_FROM[n]}.json" for n in names]


def run_time(name: str) -> str:
    """'13.8 min (load 7.4)': the wall time of the committed run experiment `name`'s verdicts
    read, and the load it ran under; '—' when not committed."""
    result = committed.VERDICTS_FROM.get(name)
    if result is None or not committed.exists(result):
        return "—"
    res = committed.load(result)["result"]
    prov = res.get("provenance") or (res.get("setup") or {}).get("provenance") or {}
    if prov.get("wall_seconds") is None:
        return "—"
    load = (prov.get("loadavg") or [float("nan")])[0]
    return f"{prov['wall_seconds'] / 60:.1f} min (load {load:.1f})"


def _clause(text: str, n: int = 1, most: int = 160) -> str:
    """The first `n` '; '-separated clauses of `text`, cut at a word near `most` characters."""
    out = "; ".join(text.split("; ")[:n]).strip().rstrip(".")
    if len(out) > most:
        out = out[:most].rsplit(" ", 1)[0].rstrip(",;:") + " …"
    return out


# a verdict, longest first so that "does not hold here" is never read as "holds"
_VERDICT = "|".join(re.escape(v) for v in sorted(VERDICTS, key=len, reverse=True))


def _segments(text: str) -> list[tuple[str, str]]:
    """'a: x; b/c: y (z; w)' -> [('a', 'x'), ('b/c', 'y (z; w)')]: split at each '; ' that
    opens a new 'part id: ' (not at a '; ' inside a part's own text)."""
    out = []
    for seg in re.split(r"; (?=[A-Za-z0-9_/-]+: )", text or ""):
        head, sep, body = seg.partition(": ")
        if sep:
            out.append((head.strip(), body.strip()))
    return out


def _parts_of(c: Claim) -> list[tuple[str, str]] | None:
    """A composite claim's parts [(name, verdict)]; None for a single claim. Read from its
    measured text ('pre-LN stacks: holds; steady gain per layer: does not hold here'), or,
    where that holds the parts' measurements, from its detail ('copy/gap/mamba2: undecided
    (the interval straddles the edge 0.2)')."""
    pairs = [s.strip().rsplit(": ", 1) for s in c.measured.split(";")]
    if len(pairs) > 1 and all(len(p) == 2 and p[1] in VERDICTS for p in pairs):
        return [(name, v) for name, v in pairs]
    parts = []
    for head, body in _segments(c.detail):
        m = re.fullmatch(rf"({_VERDICT})(?: \((.*)\))?", body, re.S)
        if "/" not in head or m is None:
            return None
        parts.append((head.split("/", 1)[1], m.group(1)))
    return parts if len(parts) > 1 else None


def _words(name: str) -> str:
    """A part id as words: 'attention_within' -> 'attention within', 'gap/mamba2' -> 'gap
    mamba2'."""
    return name.replace("_", " ").replace("/", " ")


def measured_clause(c: Claim, most: int = 110) -> str:
    """What a claim measured, in one clause; for a composite, only the parts that give it its
    verdict ('steady gain per layer: does not hold here'), not the first of its parts, then
    what those parts measured (from its detail, 'crossover/headline: 342 [...]', or its
    measured text, 'gap/mamba2: 0.18 [...]') and why each reads as it does."""
    parts = _parts_of(c)
    if parts is None:
        return _clause(c.measured, most=most)
    names = [name for name, v in parts if v == c.verdict]
    said = f"{', '.join(_words(n) for n in names)}: {c.verdict}"
    values, whys = {}, {}
    for head, body in _segments(c.detail):
        if "/" not in head:
            continue
        name = _words(head.split("/", 1)[1])  # 'depth/steady_gain' names 'steady gain'
        m = re.fullmatch(rf"({_VERDICT})(?: \((.*)\))?", body, re.S)
        if m is None:
            values[name] = body  # the detail holds the part's measurement
        elif m.group(2):
            whys[name] = m.group(2)  # the detail holds the part's verdict and its reason
    for name, body in _segments(c.measured):
        if body not in VERDICTS:
            values.setdefault(_words(name), body)
    shown = []
    for name in map(_words, names):
        said_here = [_clause(values[name], most=most)] if name in values else []
        if name in whys:
            said_here.append(_clause(whys[name], 2, most=most + 70))
        if said_here:
            shown.append(f"{_words(name)} {': '.join(said_here)}")
    return said + (f" ({'; '.join(shown)})" if shown else "")


def reason(label: str, c: Claim | None) -> str:
    """One clause: why part `label` reads as it does, read from its Claim: what it measured
    (a claim that holds or does not), the failed precondition (did not learn), the edge and
    what would decide it (undecided), the estimate (needs an accelerator)."""
    if c is None:
        return f"{label}: not measured (no committed result)"
    if c.verdict == NEEDS_ACCELERATOR:
        return f"{label}: {_clause(c.measured)}, a cost model's figure for hardware not here"
    if c.verdict == DID_NOT_LEARN:
        return f"{label}: {_clause(c.detail)}"
    if _parts_of(c) is not None:  # a composite: the parts that decide it
        return f"{label}: {measured_clause(c, most=90)}"
    if c.verdict == UNDECIDED:
        return f"{label}: {_clause(c.measured, most=90)}; {_clause(c.detail, 2)}"
    if c.verdict == FAILS:
        why = _clause(c.detail, most=90)
        return f"{label}: {_clause(c.measured, most=110)} against {c.expected}" + (
            f" ({why})" if why else ""
        )
    return f"{label}: {_clause(c.measured, most=110)}"


def why(entry: Entry) -> str:
    """The scorecard's "why / what would decide it" cell: a clause for each part that gives
    the row its verdict, then each part that needs an accelerator (shown, never capping)."""
    verdict, parts = verdicts(entry)
    deciding = [(lab, c) for lab, c in parts if (c.verdict if c else MISSING) == verdict]
    beside = [(lab, c) for lab, c in parts if c is not None and c.verdict == NEEDS_ACCELERATOR]
    shown = deciding + [p for p in beside if p not in deciding]
    return "; ".join(reason(lab, c) for lab, c in shown)


def run_of(name: str) -> str:
    """The command behind an experiment's verdicts: 'rnn_vs_attn --preset=seeds'."""
    result = committed.VERDICTS_FROM.get(name, f"{name}/default")
    experiment, _, preset = result.partition("/")
    return experiment + ("" if preset in ("", "default") else f" --preset={preset}")


def what_a_cpu_shows(why=None) -> list[str]:
    """The lines above the scorecard: which rows hold on this 2-core CPU, which need an
    accelerator, which went the other way at this budget (and by how much: `why(entry)`, else
    the failing part's clause), which are undecided or did not learn; each read from the
    rows' verdicts now."""
    by = {}
    for i, e in enumerate(ENTRIES, 1):
        verdict, parts = verdicts(e)
        by.setdefault(verdict, []).append((i, e))
        if any(c is not None and c.verdict == NEEDS_ACCELERATOR for _, c in parts):
            by.setdefault(NEEDS_ACCELERATOR, []).append((i, e))

    def rows(verdict):
        return ", ".join(f"{e.heading.lower()} ({i})" for i, e in by.get(verdict, []))

    out = []
    if by.get(HOLDS):
        out.append(f"- **Holds on this 2-core CPU**: {rows(HOLDS)}.")
    if by.get(NEEDS_ACCELERATOR):
        out.append(
            f"- **Needs an accelerator** (a GPU or many-machine figure: the CPU's measurement "
            f"and a labelled cost-model estimate side by side, never a verdict): "
            f"{rows(NEEDS_ACCELERATOR)}."
        )
    if by.get(FAILS):
        fails = []
        for i, e in by[FAILS]:
            verdict, parts = verdicts(e)
            lab, c = next((lab, c) for lab, c in parts if c is not None and c.verdict == FAILS)
            said = why(e) if why else f"{lab}: {measured_clause(c)}"
            fails.append(f"{e.heading.lower()} ({i}: {said})")
        out.append(f"- **Went the other way at this budget**: {'; '.join(fails)}.")
    for verdict, words in ((UNDECIDED, "Undecided"), (DID_NOT_LEARN, "Did not learn")):
        if by.get(verdict):
            out.append(f"- **{words}** (the row says what would decide it): {rows(verdict)}.")
    return out
