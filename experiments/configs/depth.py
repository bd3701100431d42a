"""depth: do blocks stack? Decoder-only LMs at L = 1 .. 16 layers, Transformer wirings and LSTM
stacks, each trained on the same token budget (experiments/depth/).

Every (variant, L) gets the same small grid of peak learning rates (lr_grid), each tried on the
design seeds and scored on the validation windows; the lowest mean validation loss chooses it.
The judged seeds (another seed set) then train at the chosen rate and are scored on the test
windows (sentences neither the training nor the validation stream has): choosing and judging
never read the same held-out numbers.

Presets:
  default   all nine variants at L = 1, 2, 4, 8, 16, three judged seeds, the learning rates
            chosen by the committed lr_grid result (lr_grid.from_result); sized for 15 minutes
            on 2 idle cores (experiments/depth/__init__.py says what that costs and gives up)
  lr_grid   the grid alone: every variant and depth at every learning rate on the design seeds,
            scored on validation; no judged seed, no claim. Saved as results/depth/lr_grid.json
            (`python -m experiments.publish save depth/lr_grid --workdir=...`), which the
            default reads. Its fields that shape a run must equal the default's (checked)
  quick     the smoke test: L = 1, 2 on a few steps, the grid run inline, and only the four
            variants the chapter's claim depth/stackability reads (pre-LN, pre-LN without its
            residual, the plain and the residual + LayerNorm LSTM); the other wirings build
            and train through the same code in the tests
The wall and CPU time of a run are in its results.json (provenance.wall_seconds, cost).
"""

import ml_collections

PRESETS = ("", "quick", "lr_grid")


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.seed = 0  # base PRNG seed: run s draws its parameters and its batches from (seed, s)
    c.variants = [  # contenders to train (experiments/depth/attention.py, recurrent.py)
        "post",  # Transformer, post-LN (Vaswani et al. 2017), no warmup
        "post_warmup",  # the same with train.warmup_steps of linear warmup
        "pre",  # pre-LN (Xiong et al. 2020), with a final LayerNorm
        "deepnorm",  # DeepNorm (Wang et al. 2022): post-LN, residual ·α, init ·β
        "no_residual",  # pre-LN without the skip connection
        "no_layernorm",  # residual, no LayerNorm anywhere
        "lstm",  # plain LSTM stack (torch's multi-layer nn.LSTM)
        "lstm_residual",  # + residual from layer 2 on (GNMT, Wu et al. 2016)
        "lstm_residual_ln",  # + LayerNorm on every layer's output
    ]
    c.depths = [1, 2, 4, 8, 16]  # L: blocks (Transformer) or layers (LSTM) per model
    c.compile_fast = False  # XLA:CPU at backend optimisation level 0 without its fusion
    # emitters (experiments/depth/train.py's FAST_COMPILE): small programs compile faster and
    # run slower (the quick preset, which compiles 8 programs to run a few steps of each)
    c.seeds = 3  # judged seeds 0 .. seeds-1 per (variant, L), at the chosen learning rate,
    # scored on the test windows; the gradients at init use twice as many (seeds .. 2·seeds-1:
    # one step of the same compiled program). 0: the grid alone (no claim judged)

    c.lr_grid = ml_collections.ConfigDict()
    c.lr_grid.learning_rates = (1e-3, 3e-3, 1e-2)  # peak rates every (variant, L) tries
    c.lr_grid.seeds = 2  # design seeds per rate, numbered from first_seed
    c.lr_grid.first_seed = 1000  # design seeds are first_seed .. first_seed + seeds - 1:
    # disjoint from the judged seeds
    c.lr_grid.from_result = "results/depth/lr_grid.json"  # a committed lr_grid run whose
    # choice this run uses (a path, relative to the repository root); '' = run the grid here

    c.data = ml_collections.ConfigDict()
    c.data.train_sentences = 3000  # toy_wmt target-side sentences for training (~270 chars each)
    c.data.valid_sentences = 300  # ... for validation: the grid's scores (disjoint sources)
    c.data.test_sentences = 300  # ... for the test windows: the judged scores (disjoint too)
    c.data.lexicon_scale = 0.5  # toy_wmt's lexicon size (0.5: ~1,500 target word forms)
    c.data.eval_windows = 128  # windows of `length` characters scored per split (fixed, in
    # order): valid for the grid, test for the judged seeds

    c.model = ml_collections.ConfigDict()
    c.model.d_model = 32  # width of the residual stream / the LSTM's hidden state
    c.model.n_heads = 4  # attention heads per block
    c.model.d_ff = 128  # FFN inner width of a block

    c.train = ml_collections.ConfigDict()
    c.train.length = 64  # N: characters per training / evaluation window
    c.train.batch = 8  # windows per step (512 characters)
    c.train.steps = 300  # optimiser steps per model: the token budget is steps·batch·length
    c.train.warmup_steps = 30  # linear warmup of the '+ warmup' variants (others start at peak)
    c.train.clip_norm = 1.0  # global-norm gradient clipping
    c.train.b1 = 0.9  # Adam β1
    c.train.b2 = 0.98  # Adam β2
    if preset == "lr_grid":
        c.seeds = 0
        c.lr_grid.from_result = ""
    elif preset == "quick":
        c.variants = ["pre", "no_residual", "lstm", "lstm_residual_ln"]
        c.depths = [1, 2]
        c.compile_fast = True
        c.lr_grid.learning_rates = (3e-3, 1e-2)
        c.lr_grid.seeds = 1
        c.lr_grid.from_result = ""
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
