"""depth: do blocks stack? Decoder-only LMs at L = 1 .. 16 layers, Transformer wirings and LSTM
stacks, each trained on the same token budget (experiments/depth/).

Presets: default (all nine variants at L = 1, 2, 4, 8, 16, three seeds; sized for 15 minutes
on 2 idle cores, longer on a loaded machine: see experiments/depth/__init__.py for what that
costs and what it gave up) and 'quick' (the smoke test: L = 1, 2 on a few steps, and only the four variants the chapter's
claim depth/stackability reads: pre-LN, pre-LN without its residual, the plain and the
residual + LayerNorm LSTM; the other wirings build and train through the same code, and the
tests run post-LN with and without warmup through it). The wall time of a run is in its
results.json (provenance.wall_seconds).
"""

import ml_collections

PRESETS = ("", "quick")


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
    c.seeds = 3  # trained seeds per (variant, L); the gradients at init use twice as many
    # (the trained seeds and as many more, one step of the same compiled program)

    c.data = ml_collections.ConfigDict()
    c.data.train_sentences = 3000  # toy_wmt target-side sentences for training (~270 chars each)
    c.data.valid_sentences = 300  # ... for validation (disjoint sources, same length mix)
    c.data.lexicon_scale = 0.5  # toy_wmt's lexicon size (0.5: ~1,500 target word forms)
    c.data.valid_windows = 128  # validation windows of `length` characters (fixed, in order)

    c.model = ml_collections.ConfigDict()
    c.model.d_model = 32  # width of the residual stream / the LSTM's hidden state
    c.model.n_heads = 4  # attention heads per block
    c.model.d_ff = 128  # FFN inner width of a block

    c.train = ml_collections.ConfigDict()
    c.train.length = 64  # N: characters per training / validation window
    c.train.batch = 8  # windows per step (512 characters)
    c.train.steps = 300  # optimiser steps per model: the token budget is steps·batch·length
    c.train.learning_rate = 3e-3  # peak learning rate, the same for every variant (no tuning)
    c.train.warmup_steps = 30  # linear warmup of the '+ warmup' variants (others start at peak)
    c.train.clip_norm = 1.0  # global-norm gradient clipping
    c.train.b1 = 0.9  # Adam β1
    c.train.b2 = 0.98  # Adam β2
    if preset == "quick":
        c.variants = ["pre", "no_residual", "lstm", "lstm_residual_ln"]
        c.depths = [1, 2]
        c.compile_fast = True
        c.data.train_sentences = 200
        c.data.valid_sentences = 40
        c.data.valid_windows = 8
        c.model.d_model = 16
        c.model.n_heads = 2
        c.model.d_ff = 32
        c.train.length = 16
        c.train.batch = 4
        c.train.steps = 6
        c.train.warmup_steps = 3
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose 'quick' or none")
    return c
