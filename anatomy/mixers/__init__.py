"""Sequence mixers behind one interface, one file per mixer (anatomy.stack stacks them).

One file per mixer idea, each with its paper's equations and shapes, its init, its sequence
form (``form=``), its step, its zero state and its registration (``SPEC``, a MixerSpec):

linear_attention.py  linear attention (Katharopoulos et al. 2020; Based's Taylor map)
rglru.py             Griffin's RG-LRU (De et al. 2024)
mlstm.py             xLSTM's mLSTM (Beck et al. 2024), with its quadratic form
gated_deltanet.py    gated DeltaNet (Yang et al. 2024), chunked by the UT transform
mamba2.py            Mamba-2's SSD (Dao & Gu 2024)
mingru.py            minGRU (Feng et al. 2024), a cell too
mamba.py             a Mamba-style selective SSM (Gu & Dao 2023), a cell too
attention.py         causal softmax self-attention (its state: a KV cache)
cells.py             the RNN, LSTM and GRU cells (and gru_paper), their fused layers
quasi.py             the SRU and QRNN cells (cells only, no mixers)

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
