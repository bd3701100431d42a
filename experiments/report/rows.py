"""report's rows: the chapter's closing table (docs/chapter.md), one Row per property.

A row names the chapter's two claims (RNN/LSTM, Transformer) and the ids of the claims that
measure it, "<experiment>/<name>", which each experiment judges in its own claims.py (its
`chapter` claims). The row shows their measured texts and its verdict is the weakest of
theirs (anatomy.probes.claims.weakest: a claim made of parts is its weakest part). No row
reads a number or a threshold: a new row is a claim in its experiment's claims.py and a line
here.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Row:
    property: str  # the chapter's row
    rnn: str  # the chapter's claim for RNN/LSTM
    transformer: str  # ... and for the Transformer
    claims: tuple[str, ...]  # ids of the claims that measure it ("<experiment>/<name>")
    plots: tuple[str, ...]  # file-name prefixes of the plots that support it
    unmeasured: str = ""  # a row without claims: why nothing measures it

    @property
    def sources(self) -> tuple[str, ...]:
        """The experiments whose results the row reads, in order."""
        return tuple(dict.fromkeys(c.split("/")[0] for c in self.claims))


ROWS = (
    Row(
        "distance between any two positions",
        "O(N) steps",
        "O(1)",
        ("parallelism/distance",),
        ("parallelism",),
    ),
    Row(
        "per-layer time complexity",
        "O(N·d²)",
        "O(N²·d)",
        ("complexity/per_layer",),
        ("complexity",),
    ),
    Row(
        "per-layer time complexity, restricted self-attention (window r)",
        "O(N·d²)",
        "O(r·N·d)",
        ("complexity/restricted",),
        ("complexity",),
    ),
    Row(
        "attention memory at long N",
        "—",
        "O(N²) weights; O(N) chunked (online softmax)",
        ("attention_memory/memory",),
        ("attention_memory",),
    ),
    Row(
        "parallel training",
        "no (sequential dependence)",
        "yes",
        ("parallelism/parallel_training",),
        ("parallelism",),
    ),
    Row(
        "long-range dependency",
        "decays",
        "direct",
        ("gradient_decay/decay", "long_range/recall"),
        ("gradient_decay", "long_range"),
    ),
    Row(
        "information bottleneck",
        "fixed hidden state",
        "none",
        ("rnn_vs_attn/bottleneck",),
        ("bleu_by_length", "attention_"),
    ),
    Row(
        "incremental decode latency",
        "O(d²)",
        "O(N·d) with KV cache",
        ("decode_cost/per_token",),
        ("decode_cost",),
    ),
    Row(
        "wall-clock training at N=512",
        "1x",
        "5-10x faster (GPU)",
        ("parallelism/wall_clock",),
        ("parallelism",),
    ),
    Row(
        "quality at a fraction of the training cost",
        "behind",
        "ahead, cheaper",
        ("rnn_vs_attn/quality_cost",),
        ("loss_vs_time", "bleu_by_length"),
    ),
    Row(
        "per-layer time complexity, convolution (kernel k)",
        "O(N·d²)",
        "O(k·N·d²)",
        ("complexity/conv",),
        ("complexity",),
    ),
    Row(
        "distance between any two positions, convolution (kernel k, L layers)",
        "O(N) steps",
        "no serial steps; O(N/k) layers (O(log_k N) dilated)",
        ("parallelism/conv_distance",),
        ("parallelism",),
    ),
    Row(
        "incremental decode latency, convolution (input buffer)",
        "O(d²)",
        "O(k·d²), flat in N",
        ("decode_cost/conv",),
        ("decode_cost",),
    ),
    Row(
        "parallel training of a linear recurrence (SRU/QRNN, minGRU, Mamba)",
        "N serial steps with jax.lax.scan",
        "— (the same recurrence by associative scan: no loop, O(log N) depth)",
        ("parallelism/linear_parallel",),
        ("parallelism",),
    ),
    Row(
        "work of a linear recurrence by associative scan (minGRU, Mamba)",
        "O(N·d²) with jax.lax.scan",
        "— (the same recurrence by associative scan: O(N·d²) work up to a log factor)",
        ("complexity/linear_work",),
        ("complexity",),
    ),
    Row(
        "long-range recall of a linear recurrence (minGRU, Mamba)",
        "gated RNNs (LSTM) reach some distance",
        "— (a linear recurrence matches the LSTM: Feng et al. 2024, Gu & Dao 2023)",
        ("long_range/linear_recall",),
        ("long_range",),
    ),
    Row(
        "communication of a training step across devices (tensor parallel)",
        "collectives inside the time loop: N·L per step",
        "a fixed number per layer, independent of N (Megatron-LM)",
        ("scaling/structure",),
        ("scaling",),
    ),
    Row(
        "wall-clock training at N=512, estimated for a GPU (cost model over XLA:GPU's program)",
        "1x",
        "5-10x faster",
        ("scaling/speed_ratio",),
        ("scaling",),
    ),
    Row(
        "time to the RNNs' quality (this CPU, rnn_vs_attn's runs)",
        "1x",
        "1/4-1/10 of the time",
        ("scaling/time_to_loss",),
        ("scaling",),
    ),
    Row(
        "stackability",
        "adding layers makes training fail",
        "residual + LayerNorm stack deeply",
        ("depth/stackability",),
        ("loss_vs_depth", "grad_norms_at_init"),
    ),
    Row(
        "context extension",
        "an LSTM trained at L cannot use a longer context",
        "a change of positional encoding (RoPE interpolation or base, ALiBi), the architecture unchanged",
        ("context_length/context_extension",),
        ("context_length",),
    ),
    Row(
        "recall against state size (MQAR), the RNNs of today",
        "a fixed state: recall grows with its bytes and falls as K grows",
        "the KV cache grows with N: MQAR solved at every N; one attention layer in a hybrid "
        "keeps most of it",
        ("recall/fixed_state_today",),
        ("recall_frontier", "recall_lengths"),
    ),
    Row(
        "copying a string, at matched parameters",
        "a fixed state falls behind (Jelassi et al.: at most b / log2 A symbols)",
        "copies, and past the training lengths with NoPE or Hard-ALiBi heads",
        ("copy/fixed_state_copy",),
        ("copy_length",),
    ),
    Row(
        "the bottleneck with a matrix state (RNNenc, no attention)",
        "a fixed vector h_S collapses on long sentences",
        "— (a bigger fixed state: does it move the collapse?)",
        ("rnnenc_state/bigger_state",),
        ("rnnenc_state",),
    ),
    Row(
        "training cost today: chunked recurrences against attention",
        "N serial steps (LSTM); a chunked scan N / 64, and it overtakes attention as N grows",
        "no serial loop, O(N²) time and memory",
        ("crossover/third_wall",),
        ("crossover",),
    ),
)


def required() -> dict[str, list[str]]:
    """{experiment: the ids of its claims the rows cite}, in row order."""
    out: dict[str, list[str]] = {}
    for row in ROWS:
        for cid in row.claims:
            out.setdefault(cid.split("/")[0], []).append(cid)
    return out


REQUIRED = required()  # the claim ids the report needs from each experiment
