"""complexity: per-layer FLOPs from XLA's cost analysis over grids of N and d, fitted exponents.

Presets: default (its time is mostly compile time), 'quick' (tests). The wall time of a run
is in its results.json (provenance.wall_seconds).
"""

import ml_collections

PRESETS = ("", "quick")


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.seed = 0  # PRNG seed for parameters and inputs (FLOPs do not depend on values)
    c.batch = 1  # batch size of every measured program (FLOPs are linear in it)
    c.cell = "lstm"  # recurrent layer: a name from anatomy.mixers.get_cell
    c.n_heads = 1  # heads of the attention layers (softmax costs O(N²·h), kept small vs O(N²·d))
    c.n_grid = [128, 256, 512, 1024, 2048]  # sequence lengths N, at d = d_fixed
    c.d_fixed = 64  # model width used along the N grid
    c.d_grid = [32, 64, 128, 256, 512]  # model widths d, at N = n_fixed
    c.n_fixed = 256  # sequence length used along the d grid
    c.kernel_grid = [3, 5, 9, 17]  # convolution widths k, at (n_fixed, d_fixed)
    c.kernel_fixed = 3  # convolution width along the N and d grids
    c.radius_grid = [
        2,
        4,
        8,
        16,
        32,
    ]  # windowed-attention radii r (2r+1 keys), at (n_fixed, d_fixed)
    c.radius_fixed = 4  # radius along the N and d grids
    # linear recurrences measured by jax.lax.scan and by jax.lax.associative_scan (work vs N)
    c.linear_recurrences = ("mingru", "mamba")
    if preset == "quick":
        c.n_grid = [64, 128, 256]
        c.d_fixed = 32
        c.d_grid = [64, 128, 256]
        c.n_fixed = 128
        c.kernel_grid = [3, 5, 9]
        c.radius_grid = [2, 4, 8]
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose 'quick' or none")
    return c
