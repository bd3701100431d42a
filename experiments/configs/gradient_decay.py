"""gradient_decay: ||∂L/∂x_t|| against the distance T − t, for RNNs, LSTM, GRU and attention,
measured once per seed (each seed draws its own weights, inputs and readout).

Presets: default, 'quick' (tests: the same seeds, a shorter sequence, fewer σ and lengths),
'pilot' (the default on the design seeds 1000-1002, disjoint from the judged seeds: it gives
each judged quantity's effect and spread, results/gradient_decay/pilot.json, which sizes the
judged run; the gates' effect is about 10 standard deviations from its edge, so 3 seeds
decide it).
The wall time of a run is in its results.json (provenance.wall_seconds).
"""

import ml_collections

PRESETS = ("", "quick", "pilot")


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    # PRNG seeds: each draws its own W_hh, W_x, inputs, readout, LSTM/GRU and attention weights;
    # every judged quantity (a fitted rate, a growth factor) is measured once per seed and judged
    # by its 95% t interval over them (fewer than 3 seeds: not shown)
    c.seeds = (0, 1, 2)
    c.batch = 4  # sequences per measurement (norms are over batch and features)
    c.d_in = 8  # input features
    c.hidden = 32  # hidden size of the recurrent cells and model width of the attention stack
    c.length = 1000  # T: the loss sits at position T-1, distances 0 .. T-1
    c.sigmas = [0.5, 0.9, 1.0, 1.1, 1.5]  # largest singular values imposed on the RNN's W_hh
    c.linear_input_scale = 1e-200  # input std in the float64 linear-regime runs (no saturation)
    # input std in the saturating (ordinary, float32) runs and for LSTM/GRU/attention
    c.input_scale = 1.0
    c.open_gate_bias = 3.0  # added to the LSTM forget / GRU update gate bias in 'open gate' runs
    c.attn_layers = 2  # encoder layers in the self-attention stack (causal mask, post-LN)
    c.attn_heads = 4  # heads per attention layer
    c.clip_norm = 1.0  # global-norm clipping threshold for the exploding demonstration
    c.clip_sigma = 1.5  # σ_max of the RNN used for the clipping demonstration
    c.clip_lengths = [10, 20, 40, 80, 160, 320]  # T grid: parameter-gradient norm, raw and clipped
    c.fit_min_distance = 1  # fit the per-step rate on distances >= this (distance 0 is one step)
    # ... and <= this (far enough to show the rate, short of float underflow)
    c.fit_max_distance = 200
    # results.json keeps every curve_stride-th distance of each seed's curve (what the plot
    # draws); the fits use every distance
    c.curve_stride = 5
    # XLA:CPU at backend optimisation level 0 without its fusion emitters (anatomy/compiling.py's
    # FAST_COMPILE): the programs compile several times faster and run slower (the quick
    # preset, whose run is mostly compiling)
    c.compile_fast = False
    if preset == "quick":
        c.batch = 2
        c.hidden = 16
        c.length = 120
        c.sigmas = [0.5, 1.0, 1.5]
        c.clip_lengths = [10, 20, 40]
        c.fit_max_distance = 100
        c.curve_stride = 2
        c.compile_fast = True
    elif preset == "pilot":
        c.seeds = (1000, 1001, 1002)
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose 'quick', 'pilot' or none")
    return c
