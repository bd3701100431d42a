"""Positional encodings, one family: how a Transformer learns where a token is.

POSITIONS names the choices a model config may take (``check_positions`` validates one):

  'sinusoidal'  added to the input (Vaswani et al. 2017, section 3.5), ``sinusoidal``:
                    PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))
                    PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))
  'learned'     added to the input: a trained table [P, m] (BERT, GPT-2; ConvS2S),
                ``init_learned_positions`` / ``learned_positions``; no row past P.
  'rope'        rotary (Su et al. 2021), ``rope``: queries and keys rotated by an angle
                proportional to their position, so q·k depends on positions only through
                m - n; ``scale`` is position interpolation (Chen et al. 2023), ``base`` the
                NTK-style knob (a larger base = slower rotations).
  'alibi'       a bias on the attention logits (Press et al. 2022), ``alibi_slopes`` /
                ``alibi_bias``: -slope_h · |q - k|, one geometric slope per head.
  'none'        NoPE: no positional signal at all (Kazemnejad et al. 2023). A causal mask
                alone still lets a decoder infer positions (it can count the keys it
                sees); an encoder without a causal mask is permutation-equivariant, so
                'none' is meant for causal stacks only.

A stack uses one encoding through an ``Encoding`` (``encoding(kind, ...)`` checks it), the one
place that says what each choice does where:
    added(t, table) / added_at(pos, capacity, table)   the rows added to the stack's input
                    (sinusoidal, learned; None otherwise), for a whole sequence or one
                    decoding step per row
    attention(n_heads, q_positions, k_positions)  -> (Rotary or None, bias or None), what
                    the self-attention takes (multihead.multi_head_attention's rotary= and
                    bias=), and step_attention(n_heads, pos, capacity) the same for one
                    KV-cache step (its query's position against the cache's slots)
Cross-attention takes neither: its queries and keys live in different sequences (target and
source), so "the distance between them" means nothing, and the source's keys already carry
their positions from the encoder.

Letters: b batch, t/q/k positions, h heads, d head width, m model width.
"""

import math
import numbers
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from anatomy.axes import declare
from anatomy.errors import BadInputError

POSITIONS = ("sinusoidal", "learned", "rope", "alibi", "none")


def check_positions(name, field="positions"):
    """``name`` if it is one of POSITIONS, else BadInputError naming ``field`` and the choices."""
    if not isinstance(name, str) or name not in POSITIONS:
        choices = ", ".join(repr(p) for p in POSITIONS)
        raise BadInputError(f"{field} must be one of {choices}; got {name!r}")
    return name


def sinusoidal(length, d_model, dtype=jnp.float32):
    """Positional encodings [length, d_model] (d_model may be odd: the last sin column stays).

    Computed in float64 NumPy (static shapes) and cast, so large positions keep their precision.
    """
    if length < 0 or d_model <= 0:
        raise ValueError(f"sinusoidal: need length >= 0 and d_model > 0, got {length}, {d_model}")
    pos = np.arange(length, dtype=np.float64)[:, None]  # [T, 1]
    two_i = np.arange(0, d_model, 2, dtype=np.float64)[None, :]  # [1, ceil(m/2)]
    angles = pos / np.power(10000.0, two_i / d_model)  # [T, ceil(m/2)]
    pe = np.zeros((length, d_model), np.float64)
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d_model // 2])
    return jnp.asarray(pe, dtype)


def lookup(table, pos):
    """Rows table[pos] [..., d_model] for (traced) int positions pos [...], never clamped.

    A position outside [0, T) of the table [T, d_model] gives a row of NaN instead of the
    nearest row (plain indexing under jit clamps silently), so it cannot go unnoticed.
    """
    pos = jnp.asarray(pos)
    rows = jnp.take(table, pos, axis=0, mode="fill", fill_value=jnp.nan)  # [..., d_model]
    return jnp.where((pos >= 0)[..., None], rows, jnp.nan)


# --- learned absolute positions ----------------------------------------------------------

LEARNED_AXES = {"table": (None, "embed")}  # [P, m]: positions never sharded, as ConvS2S's


def init_learned_positions(key, max_len, d_model, scale=0.02, dtype=jnp.float32):
    """{'table': [P, m] ~ N(0, scale²)}, one trained row per position 0 .. P-1.

    scale=0.02 as in BERT and GPT-2; a model adding it to √m-scaled embeddings may want more.
    """
    if int(max_len) < 1 or int(d_model) < 1:
        raise BadInputError(
            f"learned positions need max_len >= 1 and d_model >= 1, got {max_len}, {d_model}"
        )
    table = jax.random.normal(key, (int(max_len), int(d_model)), dtype) * scale  # [P, m]
    return declare({"table": table}, LEARNED_AXES)


def learned_positions(params, positions):
    """Rows table[positions] [..., m] for int positions [...] (e.g. [b, t], or [t]).

    A position outside [0, P) gives a row of NaN (``lookup``): there is no row to
    extrapolate to, and it must not pass unnoticed.
    """
    return lookup(params["table"], positions)


# --- RoPE ---------------------------------------------------------------------------------


def _check_positive(who, **values):
    for name, v in values.items():
        if isinstance(v, numbers.Real) and not v > 0:
            raise BadInputError(f"{who}: {name} must be positive, got {v}")


def rope_frequencies(d_head, base=10000.0, dtype=jnp.float32):
    """θ_i = base^(-2i/d) for i = 0 .. d/2 - 1, [d/2] (computed in float64 NumPy, then cast)."""
    if int(d_head) < 2 or int(d_head) % 2:
        raise BadInputError(f"rope: the head width must be even and >= 2, got {d_head}")
    _check_positive("rope", base=base)
    two_i = np.arange(0, int(d_head), 2, dtype=np.float64)  # [d/2]
    return jnp.asarray(np.power(float(base), -two_i / int(d_head)), dtype)


def rope(x, positions, base=10000.0, scale=1.0):
    """Rotary position embedding (Su et al. 2021) of queries or keys x [b, t, h, d].

    Pairing: split halves, as GPT-NeoX and LLaMA (not the paper's interleaved (2i, 2i+1)):
    coordinate i pairs with i + d/2, i.e. z_i = x_i + j·x_{i+d/2} is a complex number, and

        angle[b, t, i] = (p[b, t] / scale) · θ_i,          θ_i = base^(-2i/d)
        z_i  <-  z_i · e^(j·angle)
        out[..., i]       = x_i cos(angle) - x_{i+d/2} sin(angle)
        out[..., i + d/2] = x_i sin(angle) + x_{i+d/2} cos(angle)

    The same rotation for every head. Rotations preserve norms, and rotating q at position
    m and k at position n makes q·k a function of q, k and m - n only, so a model reads
    relative positions. The two pairings are the same encoding up to a fixed permutation of
    the head's coordinates (of w_q and w_k's columns); they differ only when loading weights.

    Args:
      x: [b, t, h, d], d even.
      positions: [b, t] or [t], int (or float: fractional positions are rotated exactly).
      base: the frequency base; raising it slows every rotation (the NTK-style knob for
        longer contexts).
      scale: position interpolation (Chen et al. 2023): position p is rotated as p / scale,
        so scale = L'/L squeezes positions 0 .. L' - 1 into the range trained at length L.
    Returns:
      [b, t, h, d], dtype of x. Angles are computed in x's dtype promoted to at least
      float32 (float64 for a float64 x).
    """
    x = jnp.asarray(x)
    if x.ndim != 4:
        raise BadInputError(f"rope: x must be [b, t, h, d], got shape {x.shape}")
    positions = jnp.asarray(positions)
    if positions.ndim not in (1, 2) or positions.shape[-1] != x.shape[1]:
        raise BadInputError(
            f"rope: positions must be [b, t] or [t] with t = {x.shape[1]}, got {positions.shape}"
        )
    _check_positive("rope", scale=scale)
    d = x.shape[-1]
    ftype = jnp.promote_types(x.dtype, jnp.float32)
    theta = rope_frequencies(d, base, ftype)  # [d/2]
    pos = positions.astype(ftype) / jnp.asarray(scale, ftype)  # [b, t] or [t]
    angle = pos[..., None] * theta  # [b, t, d/2] or [t, d/2]
    cos = jnp.cos(angle)[..., None, :]  # [b, t, 1, d/2]: the same for every head
    sin = jnp.sin(angle)[..., None, :]
    xf = x.astype(ftype)
    x1, x2 = xf[..., : d // 2], xf[..., d // 2 :]  # 2 x [b, t, h, d/2]
    out = jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)  # [b, t, h, d]
    return out.astype(x.dtype)


# --- ALiBi --------------------------------------------------------------------------------


def _geometric_slopes(n):
    """2^(-8i/n) for i = 1 .. n (the paper's sequence for a power of two n)."""
    return [2.0 ** (-8.0 * i / n) for i in range(1, n + 1)]


def alibi_slopes(n_heads, dtype=jnp.float32):
    """ALiBi's per-head slopes [h] (Press et al. 2022, section 3).

    For a power of two n: 2^(-8/n), 2^(-16/n), ..., 2^(-8) (8 heads: 1/2, 1/4, ..., 1/256).
    Otherwise the paper's rule (its released get_slopes): the n' = 2^floor(log2 n) slopes
    for n' heads, followed by every other slope of the 2n'-head sequence (its 1st, 3rd, ...)
    until there are n; 6 heads: 1/4, 1/16, 1/64, 1/256, then 1/2, 1/8.
    """
    if not isinstance(n_heads, numbers.Integral) or n_heads < 1:
        raise BadInputError(f"alibi: n_heads must be a positive integer, got {n_heads!r}")
    n_heads = int(n_heads)
    lower = 2 ** int(math.floor(math.log2(n_heads)))
    slopes = _geometric_slopes(lower)
    if lower < n_heads:
        slopes += _geometric_slopes(2 * lower)[0::2][: n_heads - lower]
    return jnp.asarray(np.asarray(slopes, np.float64), dtype)


def alibi_bias(slopes, q_positions, k_positions):
    """ALiBi's additive logit bias, -slope_h · |q - k|, [h, q, k] or [b, h, q, k].

        bias[b, h, q, k] = -slopes[h] · |qpos[b, q] - kpos[b, k]|

    For causal attention (k <= q) this is the paper's -slope · (q - k): zero on the query's
    own position, more negative the further back a key lies. For a key in the future
    (k > q) the penalty is the same by distance, -slope · (k - q) (the symmetric form used
    for encoders); a causal mask removes those keys anyway. Add it to the logits
    q·k/√d before the softmax; positions are absolute, so a cache step passes its query's
    position and the cached keys' positions.

    Args:
      slopes: [h] (``alibi_slopes``).
      q_positions: [q] or [b, q], int or float. k_positions: [k] or [b, k].
    Returns:
      [h, q, k] when both positions are 1-D, else [b, h, q, k]; float, dtype of slopes.
    """
    slopes = jnp.asarray(slopes)
    q_pos, k_pos = jnp.asarray(q_positions), jnp.asarray(k_positions)
    if slopes.ndim != 1:
        raise BadInputError(f"alibi_bias: slopes must be [h], got shape {slopes.shape}")
    if q_pos.ndim not in (1, 2) or k_pos.ndim not in (1, 2):
        raise BadInputError(
            f"alibi_bias: positions must be [q] / [b, q] and [k] / [b, k], got "
            f"{q_pos.shape} and {k_pos.shape}"
        )
    dist = q_pos[..., :, None].astype(slopes.dtype) - k_pos[..., None, :].astype(slopes.dtype)
    dist = jnp.abs(dist)[..., None, :, :]  # [b?, 1, q, k]
    return -slopes[:, None, None] * dist  # [b?, h, q, k]


HARD_MASKED = -1e9  # Hard-ALiBi's logit bias outside a head's window (weight exp(-1e9) = 0)


def hard_alibi_bias(n_heads, n_hard, q_positions, k_positions, dtype=jnp.float32):
    """Hard-ALiBi's additive logit bias (Jelassi et al. 2024, "Repeat After Me", section 3;
    their released hard_alibi_model.py), [h, q, k] or [b, h, q, k]:

        head h < n_hard:  0 where 0 <= qpos - kpos <= h (the h + 1 latest keys, its own
                          included), HARD_MASKED elsewhere: a hard window of h + 1 tokens
        head h >= n_hard: 0 everywhere (no positions: NoPE)

    The windowed heads see a fixed number of recent tokens at any length (the local n-gram a
    copier matches on), the others attend by content alone, so nothing in the model depends
    on where in a long string a query sits. Positions are absolute, so a cache step passes
    its query's position and the cached keys' positions (arange(L)).

    Args:
      n_heads: heads h; n_hard: how many of them (the first) get a window, 0 .. n_heads.
      q_positions: [q] or [b, q], int. k_positions: [k] or [b, k].
    Returns:
      [h, q, k] when both positions are 1-D, else [b, h, q, k]; dtype.
    """
    for name, v in (("n_heads", n_heads), ("n_hard", n_hard)):
        if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 0:
            raise BadInputError(f"hard_alibi_bias: {name} must be an integer >= 0, got {v!r}")
    if not 0 <= int(n_hard) <= int(n_heads) or int(n_heads) < 1:
        raise BadInputError(
            f"hard_alibi_bias: need 1 <= n_heads and 0 <= n_hard <= n_heads, got {n_heads}, "
            f"{n_hard}"
        )
    q_pos, k_pos = jnp.asarray(q_positions), jnp.asarray(k_positions)
    if q_pos.ndim not in (1, 2) or k_pos.ndim not in (1, 2):
        raise BadInputError(
            f"hard_alibi_bias: positions must be [q] / [b, q] and [k] / [b, k], got "
            f"{q_pos.shape} and {k_pos.shape}"
        )
    dist = (q_pos[..., :, None] - k_pos[..., None, :])[..., None, :, :]  # [b?, 1, q, k]
    heads = jnp.arange(int(n_heads))[:, None, None]  # [h, 1, 1]
    inside = (dist >= 0) & (dist <= heads)  # [b?, h, q, k]
    masked = (heads < int(n_hard)) & ~inside
    return jnp.where(masked, jnp.asarray(HARD_MASKED, dtype), jnp.asarray(0.0, dtype))


# --- one encoding for a stack ---------------------------------------------------------------


class Rotary(NamedTuple):
    """RoPE for one attention call: where its queries and keys sit, and rope's two knobs.

    q_positions: [q] or [b, q]; k_positions: [k] or [b, k], or None when the keys are given
    already rotated (a KV cache holds each key rotated at its own position).
    """

    q_positions: Any
    k_positions: Any
    base: float = 10000.0
    scale: float = 1.0

    def queries(self, q):
        """q [b, q, h, d] rotated at q_positions."""
        return rope(q, self.q_positions, self.base, self.scale)

    def keys(self, k):
        """k [b, k, h, d] rotated at k_positions."""
        return rope(k, self.k_positions, self.base, self.scale)


# The sinusoidal table's root mean square (sin² and cos² average 1/2): a learned table starts
# at the same scale, so that switching encodings leaves the input's scale unchanged.
LEARNED_INIT_SCALE = math.sqrt(0.5)


class Encoding(NamedTuple):
    """A stack's positional encoding (static, hashable): one of POSITIONS and RoPE's knobs.

    Build it with ``encoding`` (which checks it). Learned tables are parameters and live in
    the model's tree (``init_table``); every method takes the table where it needs one.
    """

    kind: str = "sinusoidal"
    rope_base: float = 10000.0
    rope_scale: float = 1.0

    def init_table(self, key, max_positions, d_model):
        """{'table': [P, m]} for 'learned' (N(0, LEARNED_INIT_SCALE²)), else None."""
        if self.kind != "learned":
            return None
        return init_learned_positions(key, max_positions, d_model, scale=LEARNED_INIT_SCALE)

    def added(self, t, d_model, table=None):
        """Rows added to the inputs at positions 0 .. t-1: [t, m], or None (rope, alibi, none).

        'learned' needs t <= P: BadInputError otherwise (there is no row to extrapolate to).
        """
        if self.kind == "sinusoidal":
            return sinusoidal(t, d_model)
        if self.kind == "learned":
            _check_table(table, t, "a sequence")
            return table["table"][:t]
        return None

    def added_at(self, pos, capacity, d_model, table=None):
        """Rows added at traced positions pos [b] of a decoder of ``capacity`` slots: [b, m],
        NaN at a position >= capacity (an overflowed cache: its logits become NaN), or None
        (rope, alibi, none). 'learned' needs capacity <= P (BadInputError)."""
        if self.kind == "sinusoidal":
            return lookup(sinusoidal(capacity, d_model), pos)
        if self.kind == "learned":
            _check_table(table, capacity, "a decoding budget")
            return lookup(table["table"][:capacity], pos)
        return None

    def attention(self, n_heads, q_positions, k_positions):
        """(rotary, bias) for a self-attention with queries at q_positions ([q] or [b, q]) and
        keys at k_positions ([k] or [b, k]):
            'rope'   Rotary(q_positions, k_positions, rope_base, rope_scale), no bias
            'alibi'  no rotation, alibi_bias(alibi_slopes(n_heads), ...) [h | b, h, q, k]
            else     (None, None)
        k_positions may be None for 'rope' (the keys come rotated, from a cache)."""
        if self.kind == "rope":
            return Rotary(q_positions, k_positions, self.rope_base, self.rope_scale), None
        if self.kind == "alibi":
            return None, alibi_bias(alibi_slopes(n_heads), q_positions, k_positions)
        return None, None

    def step_attention(self, n_heads, pos, capacity):
        """(rotary, bias) for one KV-cache step of queries at positions pos [b] over a cache
        whose slot i holds the key of position i (kv_cache's; capacity L slots):
            'rope'   the step's query and key rotated at pos (Rotary([b, 1], [b, 1]))
            'alibi'  alibi_bias(slopes, pos [b, 1], arange(L)) [b, h, 1, L]
        Row t of ``attention`` over positions 0 .. L-1, so a step equals the full pass."""
        pos = jnp.asarray(pos)[:, None]  # [b, 1]
        if self.kind == "rope":
            return Rotary(pos, pos, self.rope_base, self.rope_scale), None
        if self.kind == "alibi":
            return None, alibi_bias(alibi_slopes(n_heads), pos, jnp.arange(capacity))
        return None, None


def _check_table(table, n, what):
    if table is None:
        raise BadInputError("learned positions: the model has no position table")
    rows = table["table"].shape[0]
    if n > rows:
        raise BadInputError(
            f"learned positions: {what} of {n} positions exceeds max_positions={rows} "
            "(no trained row past it)"
        )


def encoding(kind="sinusoidal", rope_base=10000.0, rope_scale=1.0, *, field="positions"):
    """A checked Encoding: kind one of POSITIONS (BadInputError naming ``field`` and the
    choices), rope_base and rope_scale positive."""
    check_positions(kind, field)
    for name, v in (("rope_base", rope_base), ("rope_scale", rope_scale)):
        if not isinstance(v, numbers.Real) or isinstance(v, bool) or not v > 0:
            raise BadInputError(f"{name} must be a positive number, got {v!r}")
    return Encoding(kind, float(rope_base), float(rope_scale))
