"""The attention contender: a Transformer encoder stack (the structure read for 8 devices) and
one multi-head self-attention layer (the `parallelism` experiment's, timed here against the
cost model).

    stack  L post-LN encoder layers (anatomy.attention.layers) of width d, h heads and an FFN
           of width 2d, loss = mean((y_L − target)²); per layer 4d² (Q, K, V, O) + 2·d·2d
           (FFN) = 8d² weights, the LSTM stack's 8d² at the same width (biases and LayerNorms:
           11d against the LSTM's 4d)
    layer  one self-attention layer, loss = Σ out² (parallelism's)
Under tensor parallelism anatomy's rules split heads and the FFN's inner width over 'model'
(Megatron-LM's column / row split: Q, K, V and W1 by columns, O and W2 by rows), so each
layer's forward ends its attention and its FFN with a sum over devices, once per step.
"""

import jax
import jax.numpy as jnp

from anatomy.attention import init_mha, multi_head_attention
from anatomy.attention.layers import encoder_layer, init_encoder_layer

NAME = "Transformer"
FFN_RATIO = 2  # FFN width / d: 8d² weights per layer, as an LSTM layer of width d


def stack(d: int, n_layers: int, n_heads: int):
    """(init(key) -> params, loss(params, batch) -> scalar) of an L-layer encoder stack,
    batch = {'x': [b, n, d], 'y': [b, n, d]}."""

    def init(key):
        keys = jax.random.split(key, n_layers)
        return [init_encoder_layer(k, d, n_heads, FFN_RATIO * d) for k in keys]

    def loss(params, batch):
        x = batch["x"]  # [b, n, d]
        for p in params:
            x = encoder_layer(p, x)
        return jnp.mean((x - batch["y"]) ** 2)

    return init, loss


def layer(d: int, n_heads: int):
    """(init(key) -> params, loss(params, x) -> scalar): parallelism's self-attention layer."""

    def init(key):
        return init_mha(key, d, n_heads)

    def loss(params, x):
        return jnp.sum(multi_head_attention(params, x, x) ** 2)

    return init, loss
