"""The contenders: which family builds a model, and how its positions are encoded.

A Spec names a contender; ``build`` turns it into an anatomy.lm.LanguageModel (one per
distinct config, so that jit compiles one train / eval step per model and length, shared by
contenders that differ only by name). The extension variants share the parameters of the
model they extend and differ only in rope_base / rope_scale (``extend``).
"""

from typing import NamedTuple

from anatomy import lm
from anatomy.errors import BadInputError
from experiments.context_length import attention, recurrent

FAMILIES = {"transformer": attention, "lstm": recurrent}


class Spec(NamedTuple):
    """name: how results.json calls it; family: 'transformer' | 'lstm'; positions: one of
    anatomy.attention.positions.POSITIONS (Transformers); rope_base, rope_scale: RoPE's knobs."""

    name: str
    family: str = "transformer"
    positions: str = "none"
    rope_base: float = 10000.0
    rope_scale: float = 1.0


def pretrained(name):
    """The Spec of a contender trained from scratch at length L: 'lstm' or an encoding name."""
    from anatomy.attention.positions import POSITIONS

    if name == "lstm":
        return Spec("lstm", "lstm")
    if name not in POSITIONS:
        choices = ", ".join(repr(p) for p in ("lstm", *POSITIONS))
        raise BadInputError(f"models must be among {choices}; got {name!r}")
    return Spec(name, "transformer", name)


def ntk_base(base, factor, d_head):
    """The NTK-aware raised RoPE base for extending the context `factor`-fold (bloc97 2023,
    'NTK-aware scaled RoPE'; written up in YaRN, Peng et al. 2023): base · factor^(d/(d-2)),
    so the slowest rotation (i = d/2 - 1) is slowed `factor`-fold, as position interpolation
    would, while the fastest (i = 0) is kept."""
    if int(d_head) < 4:
        raise BadInputError(f"ntk_base: the head width must be >= 4, got {d_head}")
    return float(base) * float(factor) ** (d_head / (d_head - 2))


def extend(spec, how, factor, d_head):
    """`spec` (a RoPE model) extended `factor`-fold: 'interpolation' (Chen et al. 2023:
    rope_scale = factor) or 'ntk' (rope_base = ntk_base); 'none': unchanged."""
    if spec.positions != "rope":
        raise BadInputError(f"extend: only a RoPE model can be extended, not {spec.name!r}")
    if how == "interpolation":
        return spec._replace(name="rope+pi", rope_scale=float(factor))
    if how == "ntk":
        return spec._replace(name="rope+ntk", rope_base=ntk_base(spec.rope_base, factor, d_head))
    if how == "none":
        return spec
    raise BadInputError(f"extend: how must be 'interpolation', 'ntk' or 'none'; got {how!r}")


def build(spec, cfg, vocab) -> lm.LanguageModel:
    """The LanguageModel of `spec` with cfg's sizes over `vocab` ids."""
    config = FAMILIES[spec.family].lm_config(spec, cfg)
    return lm.build_lm_once(config, vocab)
