"""Sequence mixers behind one interface, one file per mixer (anatomy.stack stacks them).

One file per mixer idea (linear_attention.py, rglru.py, mlstm.py, gated_deltanet.py,
mamba2.py, mingru.py, mamba.py, attention.py, cells.py for the RNN, LSTM and GRU, quasi.py for
the SRU and QRNN cells, ...), each with its paper's equations and shapes, its init, its
sequence form (``form=``), its step, its zero state and its registration (``SPEC``, a
MixerSpec); registry.py's docstring lists every mixer with its paper and its state.

and beside them:

spec.py      MixerSpec and CellSpec, and the idioms the files register with
shared.py    what several mixers share: per-head projections, the dt-bias init, padding
defaults.py  the default form of each mixer and path of each cell per backend, each row with
             its reason and source
registry.py  collects the registrations (one line each): get_mixer, default_config,
             build_mixer -> Mixer (init / apply with form= / init_state / step / state_bytes),
             the short conv; the cells among them (and gru_paper, sru, qrnn) as CellSpecs for
             the scan runner and the translators (get_cell, CELLS), each cell's path
             (resolve_path)

The engines that run them over time (the cell runner, the linear scan's forms) are
anatomy.scan; this package sits above scan, attention and conv, since it names both
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
