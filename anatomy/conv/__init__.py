"""Convolutions over time: the third way to mix positions, beside recurrence/ and attention/.

layers.py  conv1d (causal or 'same'), its one-step form over a K-1 input buffer, the gated
           linear unit and the GLU residual block of ConvS2S (Gehring et al. 2017); the
           depthwise short_conv (and its step) in front of a linear-recurrence mixer

A stack of L convolutions of width K sees 1 + L·(K-1) positions: no serial loop over N
(every position at once, like attention), but a receptive field that grows with depth.
"""

from anatomy.conv.layers import (
    SQRT_HALF,
    conv1d,
    conv1d_step,
    glu,
    glu_block,
    glu_conv,
    glu_conv_step,
    init_buffer,
    init_conv1d,
    init_glu_block,
    init_short_conv,
    residual,
    short_conv,
    short_conv_step,
)

__all__ = [
    "SQRT_HALF",
    "conv1d",
    "conv1d_step",
    "glu",
    "glu_block",
    "glu_conv",
    "glu_conv_step",
    "init_buffer",
    "init_conv1d",
    "init_glu_block",
    "init_short_conv",
    "residual",
    "short_conv",
    "short_conv_step",
]
