"""The Transformer contenders: anatomy.lm's 'attention' family (anatomy.stack's causal stack
of attention mixers, sinusoidal positions), six wirings of its blocks.

Each block is self-attention then FFN, each sub-layer wired by the library's `norm` and
`residual` (anatomy/attention/layers.py):

    post          x <- LN(x + G(x))            Vaswani et al. 2017; no warmup
    post_warmup   the same, warmup_steps of linear warmup (Xiong et al. 2020: post-LN needs it)
    pre           x <- x + G(LN(x)), a final LN  Xiong et al. 2020 (GPT-2's wiring)
    deepnorm      x <- LN(α·x + G(x)), G's value, output and FFN weights initialised ·β,
                  α = (2L)^(1/4), β = (8L)^(-1/4) (Wang et al. 2022, decoder-only)
    no_residual   x <- G(LN(x)), a final LN     pre-LN without its skip connection
    no_layernorm  x <- x + G(x)                 residual, no LayerNorm anywhere

Xiong et al.'s Theorem 1 bounds the gradient of the last layer's second FFN weight W^{2,L}
at initialisation: O(d·sqrt(ln d)) for post-LN, independent of L; O(d·sqrt(ln d / L)) for
pre-LN. `xiong` picks that weight out of the model's per-layer groups.
"""

from __future__ import annotations

from experiments.depth.lm import Variant


def _variant(name, label, norm, residual=True, warmup=False, citation=""):
    opts = (("norm", norm), ("residual", residual))
    return Variant(name, "attention", label, opts, warmup=warmup, citation=citation)


VARIANTS = {
    v.name: v
    for v in (
        _variant("post", "post-LN", "post", citation="Vaswani et al. 2017"),
        _variant("post_warmup", "post-LN + warmup", "post", warmup=True, citation="Xiong 2020"),
        _variant("pre", "pre-LN", "pre", citation="Xiong et al. 2020"),
        _variant("deepnorm", "DeepNorm", "deepnorm", citation="Wang et al. 2022"),
        _variant("no_residual", "pre-LN, no residual", "pre", residual=False),
        _variant("no_layernorm", "no LayerNorm", "none"),
    )
}


def xiong(layers):
    """W^{2,L} [f, m]: the last block's second FFN weight, from model.layers(tree)."""
    return layers[-1]["ffn"]["w2"]
