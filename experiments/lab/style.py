"""One look per model and variant across every figure: colour, marker, line style.

Families keep a colour family, so a reader tells recurrence from attention at a glance:

    recurrent (RNN, LSTM, GRU, the RNN translators)    blues and purples
    attention (Transformer, positional encodings,
               the Transformer wirings of depth)       oranges and reds
    convolutional (ConvS2S, the GLU stacks)            greens
    linear recurrences and their mixers                teals

`line(name)` gives the keyword arguments of `ax.plot` for a model or variant; a name made of a
known one and a suffix ('rnnsearch-30', 'rope+pi+ft', 'lstm_residual') keeps the family's
colour and says the variant by its line style or its own entry. `chance(ax, y)` and
`reference_slope(ax, ...)` draw the lines a claim is judged against, the same way in every
figure.
"""

from __future__ import annotations

import math
import os

# name -> (colour, marker). Recurrent: blues and purples.
PALETTE = {
    "rnn": ("#9ecae1", "v"),
    "lstm": ("#2171b5", "s"),
    "recurrent": ("#2171b5", "s"),
    "gru": ("#6baed6", "D"),
    "lstm_residual": ("#4292c6", "s"),
    "lstm_residual_ln": ("#08306b", "s"),
    "rnnenc": ("#08519c", "s"),
    "rnnsearch": ("#6a51a3", "o"),
    "luong": ("#9e9ac8", "^"),
    # attention: oranges and reds
    "transformer": ("#d94801", "^"),
    "attention": ("#d94801", "^"),
    "chunked": ("#fd8d3c", "^"),
    "attention_core": ("#d94801", "^"),
    "attention_layer": ("#fd8d3c", "v"),
    "windowed_core": ("#a63603", "D"),
    "windowed_layer": ("#e6550d", "d"),
    "full": ("#d94801", "^"),
    "pre": ("#d94801", "^"),
    "post": ("#fd8d3c", "v"),
    "post_warmup": ("#f16913", "<"),
    "deepnorm": ("#a63603", ">"),
    "no_residual": ("#fdae6b", "x"),
    "no_layernorm": ("#7f2704", "+"),
    "sinusoidal": ("#fd8d3c", "o"),
    "learned": ("#fdae6b", "s"),
    "rope": ("#e6550d", "^"),
    "alibi": ("#a63603", "D"),
    "none": ("#7f2704", "x"),
    "kv_cache": ("#d94801", "^"),
    "recompute": ("#fdae6b", "v"),
    "window": ("#a63603", "D"),
    "kv_fixed": ("#e6550d", "<"),
    # convolutional: greens
    "conv": ("#238b45", "P"),
    "convs2s": ("#238b45", "P"),
    "conv_buffer": ("#238b45", "P"),
    "conv_recompute": ("#74c476", "X"),
    # linear recurrences and their mixers: teals
    "mingru": ("#66c2a4", "h"),
    "mingru_scan": ("#66c2a4", "h"),
    "mingru_assoc": ("#1b9e77", "H"),
    "mamba": ("#1b9e77", "*"),
    "mamba_scan": ("#1b9e77", "*"),
    "mamba_assoc": ("#00441b", "*"),
    "sru": ("#99d8c9", "1"),
    "qrnn": ("#41ae76", "2"),
    "mamba2": ("#00441b", "*"),
    "linear_attention": ("#35978f", "p"),
    "rglru": ("#80cdc1", "h"),
    "mlstm": ("#01665e", "d"),
    "gated_deltanet": ("#003c30", "8"),
    "hybrid": ("#8c510a", "X"),
}
# variants drawn beside their model and beside each other (context_length's RoPE extensions):
# their own colour and marker, kept by a further variant of them ('rope+pi+ft'); the line style
# still says the variant (_VARIANT_LINE)
VARIANTS = {
    "rope+pi": ("#cb181d", "<"),
    "rope+ntk": ("#fb6a4a", ">"),
}
FALLBACK = ("#737373", "o")  # a name with no entry: grey, so it stands out as unstyled
CHANCE = {"color": "#525252", "linestyle": ":", "linewidth": 1.0}
REFERENCE = {"color": "#969696", "linestyle": "--", "linewidth": 0.9}

# suffixes that name a variant of a model: its line style
_VARIANT_LINE = (
    ("+ft", "-."),
    ("+pi", "--"),
    ("+ntk", ":"),
    ("_assoc", "--"),
    ("_scan", ":"),
    ("-", "--"),
)


def base_name(name: str) -> str:
    """The palette entry a name belongs to: itself, or the part before a variant suffix."""
    if name in PALETTE:
        return name
    for sep in ("+", "-", "/", " "):
        head = name.split(sep, 1)[0]
        if head in PALETTE:
            return head
    return name


def line(name: str) -> dict:
    """ax.plot keyword arguments for `name`: its colour and marker, and a dashed or dotted
    line for a variant ('rnnsearch-30', 'rope+pi', 'rope+ntk+ft')."""
    color, marker = PALETTE.get(base_name(name), FALLBACK)
    for variant, look in VARIANTS.items():
        if name == variant or name.startswith(variant + "+"):
            color, marker = look
    style = "-"
    if name not in PALETTE:
        style = next((ls for suffix, ls in _VARIANT_LINE if suffix in name), "-")
    return {"color": color, "marker": marker, "linestyle": style}


def chance(ax, y: float, label: str = "chance") -> None:
    """A horizontal line at the chance level a claim is judged against."""
    ax.axhline(y, label=f"{label} ({y:.3g})", **CHANCE)


def reference_slope(ax, xs, anchor_y: float, exponent: float, label: str) -> None:
    """A reference power law y = anchor_y·(x / xs[0])^exponent over xs, dashed (a claim that
    is a slope on log-log axes is drawn beside the slope it claims)."""
    xs = list(xs)
    ys = [anchor_y * math.pow(x / xs[0], exponent) for x in xs]
    ax.plot(xs, ys, label=label, **REFERENCE)


def corpus_label(data: dict) -> str:
    """The corpus a figure is of, for its title (a reader must not take the invented
    language's numbers for real text's): 'toy_wmt (invented language)', 'gettext en→fr
    (real text)', a tfds dataset or a TSV file by name. `data`: the run's data config."""
    name = data.get("name") or ""
    if name == "toy_wmt":
        return "toy_wmt (invented language)"
    if name == "gettext":
        return f"gettext en→{(data.get('gettext') or {}).get('lang', '?')} (real text)"
    if name == "tfds":
        return f"{data.get('tfds_name', 'tfds')} (real text)"
    if name == "tsv":
        return f"{os.path.basename(data.get('train_path') or 'a TSV file')} (your corpus)"
    return name or "corpus not recorded"
