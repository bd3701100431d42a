"""gradient_decay: ||∂L/∂x_t|| against the distance T − t, for RNNs, LSTM, GRU and attention.

Presets: default, 'quick' (tests). The wall time of a run is in its results.json
(provenance.wall_seconds).
"""

import ml_collections

PRESETS = ("", "quick")


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.seed = 0  # PRNG seed for parameters and inputs
    c.batch = 4  # sequences per measurement (norms are over batch and features)
    c.d_in = 8  # input features
    c.hidden = 32  # hidden size of the recurrent cells and model width of the attention stack
    c.length = 1000  # T: the loss sits at position T-1, distances 0 .. T-1
    c.sigmas = [0.5, 0.9, 1.0, 1.1, 1.5]  # largest singular values imposed on the RNN's W_hh
    c.linear_input_scale = 1e-200  # input std in the float64 linear-regime runs (no saturation)
    c.input_scale = (
        1.0  # input std in the saturating (ordinary, float32) runs and for LSTM/GRU/attention
    )
    c.open_gate_bias = (
        3.0  # added to the LSTM forget / GRU update gate bias in the 'open gate' runs
    )
    c.attn_layers = 2  # encoder layers in the self-attention stack (causal mask, post-LN)
    c.attn_heads = 4  # heads per attention layer
    c.clip_norm = 1.0  # global-norm clipping threshold for the exploding demonstration
    c.clip_sigma = 1.5  # σ_max of the RNN used for the clipping demonstration
    c.clip_lengths = [
        10,
        20,
        40,
        80,
        160,
        320,
    ]  # T grid for the parameter-gradient norm with and without clipping
    c.fit_min_distance = 1  # fit the per-step rate on distances >= this (distance 0 is one step)
    c.fit_max_distance = (
        200  # ... and <= this (far enough to show the rate, short of float underflow)
    )
    if preset == "quick":
        c.batch = 2
        c.hidden = 16
        c.length = 120
        c.sigmas = [0.5, 1.0, 1.5]
        c.clip_lengths = [10, 20, 40]
        c.fit_max_distance = 100
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose 'quick' or none")
    return c
