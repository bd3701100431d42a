"""decode_cost: the cost of generating token N: RNN step, Transformer with KV cache, recomputing.

Presets: default, 'quick' (tests). The wall time of a run is in its results.json
(provenance.wall_seconds).
"""

import ml_collections

PRESETS = ("", "quick")


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.seed = 0  # PRNG seed for parameters and inputs
    c.batch = 1  # sequences decoded at once
    c.d = 64  # model width (LSTM hidden size = Transformer d_model)
    c.n_heads = 4  # attention heads
    c.conv_kernel = 3  # kernel width K of the conv rows (a buffer of K-1 inputs per layer)
    c.ffn_mult = 4  # Transformer FFN inner width = ffn_mult · d
    c.window_radius = 63  # sliding-window decoder: attends to the last r+1 tokens (r+1 cache slots)
    c.window_radius_grid = [15, 31, 63, 127, 255]  # radii for the window step's FLOPs against r
    c.n_grid = [128, 256, 512, 1024, 2048, 4096]  # position N of the generated token
    c.d_grid = [32, 64, 128, 256, 512]  # widths for the RNN step's FLOPs against d (O(d²))
    c.warmup = 2  # untimed calls before timing
    c.repeats = 20  # timed calls per point; the median is reported
    if preset == "quick":
        c.update(d=32, n_grid=[64, 128, 256], window_radius=15, window_radius_grid=[15, 31, 63])
        c.update(d_grid=[32, 64, 128], repeats=3, warmup=1)
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose 'quick' or none")
    return c
