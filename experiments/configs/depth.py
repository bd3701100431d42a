"""depth: do blocks stack? Decoder-only character LMs at L = 1 .. 8 layers (Transformer wirings
and LSTM stacks), each trained on the same token budget; post-LN with and without warmup and
DeepNorm at RAdam's six layers; Xiong et al.'s gradients at initialisation at L = 4 .. 64
(experiments/depth/).

Every (variant, L) tries the same grid of peak learning rates (GRID_RATES) on a design seed,
scored on the validation windows; the lowest validation loss chooses its rate. The choice is
committed (results/depth/lr_grid.json, the lr_grid preset) and written below (CHOSEN), so no
config reads results/ when built; tests/experiments/depth/test_depth.py ties CHOSEN to the committed grid. The
judged seeds (0 ..) then train at the chosen rate and are scored on the test windows; the
pilot's design seeds (PILOT_SEED ..) train at the same rates and are scored on the validation
windows: the effect and spread every judged claim is sized from (results/depth/pilot.json).

Presets (each judged run within 30 minutes on 2 idle cores: the experiment is split in three):
  default    stackability: pre-LN, pre-LN without its residual, the plain LSTM stack and the
             LSTM with residuals + LayerNorm at L = 1, 2, 4, 8, 3,000 steps each, at the
             chosen rates, on the judged seeds (the chapter's claim depth/stackability)
  stability  post-LN without and with warmup and DeepNorm at L = 6 (RAdam's README: a
             6-layer post-LN Transformer with Adam and no warmup fails where warmup rescues
             it), every one at WARM_RATE (the largest rate post-LN + warmup trains well at),
             on the judged seeds
  xiong      the last block's W^{2,L} gradient at initialisation, post-LN, pre-LN, DeepNorm at
             L = 4 .. 64 on the judged seeds (Xiong et al. 2020, Theorem 1); no training
  lr_grid    the grid alone for the default's and stability's cells, on the design seed,
             scored on validation; no claim. Saved as results/depth/lr_grid.json
  pilot      the default's and stability's cells at the chosen rates and the xiong part, on
             the pilot's design seeds, scored on validation; no claim: the sizing of every
             judged claim (its report). Saved as results/depth/pilot.json
  quick      the smoke test: every part at tiny sizes, the grid run inline
The wall and CPU time of a run are in its results.json (provenance.wall_seconds, cost).
"""

import ml_collections

PRESETS = ("", "quick", "stability", "xiong", "lr_grid", "pilot")

STACK = ("pre", "no_residual", "lstm", "lstm_residual_ln")  # the chapter's claim reads these
STACK_DEPTHS = (1, 2, 4, 8)  # a doubling grid: the claims are per doubling
STABILITY = ("post", "post_warmup", "deepnorm")  # one rate for all three: WARM_RATE
STABILITY_DEPTHS = (6,)  # RAdam's README (Liu et al. 2020): a 6-layer post-LN Transformer
XIONG_VARIANTS = ("post", "pre", "deepnorm")
XIONG_DEPTHS = (4, 8, 16, 32, 64)  # Theorem 1 is asymptotic in L: no L = 1, 2
GRID_RATES = (3e-3, 1e-2, 3e-2)  # every (variant, L) tries these peak rates, then the
# next rate of the 1-3-10 ladder past an edge its best sits at (lr_grid.extend)
GRID_SEED = 1000  # the grid's design seed
PILOT_SEED = 2000  # the pilot's design seeds are PILOT_SEED .. (disjoint from the grid's)

# results/depth/lr_grid.json's choice, {variant: {L: peak rate}} (tests/experiments/depth/test_depth.py checks it)
CHOSEN = {
    "pre": {1: 3e-2, 2: 1e-2, 4: 1e-2, 8: 1e-2},
    "no_residual": {1: 1e-2, 2: 3e-3, 4: 3e-2, 8: 3e-3},  # L = 4, 8: no rate learned (moot)
    "lstm": {1: 3e-2, 2: 3e-2, 4: 3e-2, 8: 1e-2},
    "lstm_residual_ln": {1: 3e-2, 2: 1e-2, 4: 1e-2, 8: 1e-2},
    "post": {6: 3e-3},
    "post_warmup": {6: 3e-3},
    "deepnorm": {6: 1e-2},
}
# the one peak rate of the stability cells, {L: rate}: the largest rate of the grid at which
# post-LN + warmup's validation loss is within WARM_TOL nats of its best (warmup's use is to
# allow a larger rate: Xiong et al. 2020; Liu et al. 2020), from the same committed grid.
# Post-LN without warmup and DeepNorm train at it too (RAdam's README compares them at one
# rate); tests/experiments/depth/test_depth.py checks it against the grid
WARM_TOL = 0.05
WARM_RATE = {6: 1e-2}


def _cells(variants, depths) -> dict:
    return {v: list(depths) for v in variants}


def _rates(cells) -> dict:
    """Each cell's written rate: the grid's choice, but the stability cells' WARM_RATE."""
    return {
        v: [WARM_RATE[d] if v in STABILITY else CHOSEN[v][d] for d in ds] for v, ds in cells.items()
    }


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.seed = 0  # base PRNG seed: run s draws its parameters and its batches from (seed, s)
    # what is trained: {variant: [L, ...]} (experiments/depth/attention.py, recurrent.py)
    c.cells = _cells(STACK, STACK_DEPTHS)
    # the peak rate of each cell, aligned with cells ({variant: [rate per L]}): CHOSEN; {} =
    # run the grid here (the lr_grid and quick presets)
    c.rates = _rates(c.cells)
    c.compile_fast = False  # XLA:CPU at backend optimisation level 0 without its fusion
    # emitters (anatomy/compiling.py's FAST_COMPILE): small programs compile faster and
    # run slower (the quick preset)
    c.workers = 2  # runs executed at once (threads; XLA runs each on one core)
    c.seeds = 5  # judged seeds per cell, numbered from first_seed; 0: the grid alone
    c.first_seed = 0
    c.split = "test"  # the windows the seeds are scored on: 'test' (judged), 'valid' (pilot)

    c.lr_grid = ml_collections.ConfigDict()
    c.lr_grid.learning_rates = GRID_RATES  # peak rates every cell tries (when rates is {})
    c.lr_grid.extend = 2  # a cell whose best rate is at an edge tries the next rate of the
    # 1-3-10 ladder past it, up to this many times (experiments/depth/__init__.py run_grid)
    c.lr_grid.seeds = 1  # design seeds per rate, numbered from first_seed
    c.lr_grid.first_seed = GRID_SEED

    c.xiong = ml_collections.ConfigDict()
    c.xiong.variants = []  # Xiong's gradient at init of these variants at these depths
    c.xiong.depths = list(XIONG_DEPTHS)
    c.xiong.seeds = 0  # seeds, numbered from first_seed; 0: not measured

    c.xiong.first_seed = 0

    c.data = ml_collections.ConfigDict()
    c.data.train_sentences = 3000  # toy_wmt target-side sentences for training (~270 chars each)
    c.data.valid_sentences = 300  # ... for validation: the grid's and pilot's scores
    c.data.test_sentences = 300  # ... for the test windows: the judged scores (disjoint too)
    c.data.lexicon_scale = 0.5  # toy_wmt's lexicon size (0.5: ~1,500 target word forms)
    c.data.eval_windows = 128  # windows of `length` characters scored per split

    c.model = ml_collections.ConfigDict()
    c.model.d_model = 32  # width of the residual stream / the LSTM's hidden state
    c.model.n_heads = 4  # attention heads per block
    c.model.d_ff = 128  # FFN inner width of a block

    c.train = ml_collections.ConfigDict()
    c.train.length = 64  # N: characters per training / evaluation window
    c.train.batch = 8  # windows per step (512 characters)
    c.train.steps = 3000  # optimiser steps per model: the token budget is steps·batch·length
    c.train.warmup_steps = 300  # linear warmup of the '+ warmup' variants (others start at peak)
    c.train.clip_norm = 1.0  # global-norm gradient clipping
    c.train.b1 = 0.9  # Adam β1
    c.train.b2 = 0.98  # Adam β2

    stability = _cells(STABILITY, STABILITY_DEPTHS)
    if preset == "stability":
        c.cells = stability
        c.rates = _rates(stability)
    elif preset == "xiong":
        c.cells, c.rates, c.seeds = {}, {}, 0
        c.xiong.variants = list(XIONG_VARIANTS)
        c.xiong.seeds = 16
    elif preset == "lr_grid":
        c.cells = {**c.cells, **stability}
        c.rates, c.seeds = {}, 0
    elif preset == "pilot":
        c.cells = {**c.cells, **stability}
        c.rates = _rates(c.cells)
        c.seeds, c.first_seed, c.split = 4, PILOT_SEED, "valid"
        c.xiong.variants = list(XIONG_VARIANTS)
        c.xiong.seeds, c.xiong.first_seed = 8, PILOT_SEED
    elif preset == "quick":
        c.cells = {"pre": [1, 2], "no_residual": [1, 2], "lstm": [1, 2]}
        c.cells.update({"lstm_residual_ln": [1, 2], "post_warmup": [2], "post": [2]})
        c.rates = {}
        c.compile_fast = True
        c.seeds = 3
        c.lr_grid.learning_rates = (3e-3, 1e-2)
        c.lr_grid.extend = 1
        c.xiong.variants = ["post", "pre"]
        c.xiong.depths = [1, 2]
        c.xiong.seeds = 3
        c.data.train_sentences = 200
        c.data.valid_sentences = 40
        c.data.test_sentences = 40
        c.data.eval_windows = 8
        c.model.d_model = 16
        c.model.n_heads = 2
        c.model.d_ff = 32
        c.train.length = 16
        c.train.batch = 4
        c.train.steps = 6
        c.train.warmup_steps = 3
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose one of {PRESETS[1:]} or none")
    return c
