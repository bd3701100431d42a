"""long_range: accuracy of recalling the token k steps back: RNN, LSTM, GRU, minGRU, Mamba-style
selective SSM, Transformer, a causal conv stack; every (model, k) trained once per seed.

Presets: default, 'quick' (tests). The wall time of a run is in its results.json
(provenance.wall_seconds).
"""

import ml_collections

PRESETS = ("", "quick")


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    # PRNG seeds: each fixes, per k, the initial weights, the training stream and the held-out
    # batch (the same for every model); every accuracy is measured once per seed and judged by
    # its 95% t interval over them (fewer than 3 seeds: not shown)
    c.seeds = (0, 1, 2)
    c.vocab = 8  # symbols; chance accuracy is 1/vocab
    c.k_grid = [1, 2, 4, 8, 16, 32]  # recall distances k: the target at position t is x_{t-k}
    c.extra_length = 24  # sequence length = max(k_grid) + extra_length (the same for every k)
    # architectures compared; mingru / mamba: linear recurrences (anatomy.mixers.get_cell)
    c.models = ("rnn", "lstm", "gru", "mingru", "mamba", "transformer", "conv")  # overridable
    c.conv_layers = 2  # conv: causal GLU blocks (ConvS2S's decoder layer without attention)
    c.conv_kernel = 3  # their kernel width K: receptive field 1 + conv_layers·(K-1) = 5
    c.param_budget = 12000  # every model's size is chosen to come closest to this count
    c.embed = 16  # embedding width of the recurrent models (the Transformer uses d_model)
    c.n_heads = 2  # Transformer heads
    c.n_layers = 2  # Transformer layers (pre-LN, causal, sinusoidal positions)
    c.steps = 500  # Adam steps per (model, k): equal for every model
    c.batch = 32  # sequences per step
    c.learning_rate = 3e-3  # Adam learning rate (clipped at global norm 1)
    c.eval_batch = 256  # held-out sequences for the accuracy
    # XLA:CPU at backend optimisation level 0 without its fusion emitters (anatomy/compiling.py's
    # FAST_COMPILE): each model's one program compiles several times faster and runs slower
    # (the quick preset, whose run is mostly compiling 7 programs)
    c.compile_fast = False
    if preset == "quick":
        c.k_grid = [1, 8]
        c.extra_length = 8
        c.param_budget = 3000
        c.embed = 8
        c.n_layers = 1
        c.steps = 40
        c.learning_rate = 1e-2  # at 3e-3, 40 steps leave the LSTM at chance even at k = 1
        c.batch = 16
        c.eval_batch = 64
        c.compile_fast = True
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose 'quick' or none")
    return c
