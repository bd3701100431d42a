"""Sequence mixers behind one interface (anatomy.stack builds the stacks of them).

registry.py   the mixers by name (linear_attention, rglru, mlstm, gated_deltanet, mamba2,
              mingru, mamba, attention, rnn, lstm, gru): get_mixer, default_config,
              build_mixer -> Mixer (init / apply with form= / init_state / step /
              state_bytes), the short conv; the cells among them (and gru_paper, sru, qrnn)
              as CellSpecs for the scan runner and the translators (get_cell, CELLS), and
              each cell's path (resolve_path)
attention.py  causal softmax self-attention as a mixer (its state: a KV cache)

The recurrences themselves live in anatomy.recurrence (each over linear_scan.py's one entry
point); this package sits above recurrence, attention and conv, since it names both
families. It imports nothing of training, translators or sharding (tests/test_layering.py).
"""

from anatomy.mixers.registry import (
    CELLS,
    FUSED_CELLS,
    KNOBS,
    LINEAR,
    LINEAR_CELLS,
    MIXERS,
    NAMES,
    RECURRENT,
    CellSpec,
    Mixer,
    MixerSpec,
    build_mixer,
    check_knobs,
    default_config,
    get_cell,
    get_mixer,
    resolve_path,
)

__all__ = [
    "CELLS",
    "FUSED_CELLS",
    "KNOBS",
    "LINEAR",
    "LINEAR_CELLS",
    "MIXERS",
    "NAMES",
    "RECURRENT",
    "CellSpec",
    "Mixer",
    "MixerSpec",
    "build_mixer",
    "check_knobs",
    "default_config",
    "get_cell",
    "get_mixer",
    "resolve_path",
]
