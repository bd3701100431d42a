"""The Transformer contenders: anatomy.attention.decoder_only's causal stack, six wirings.

Each block is self-attention then FFN, each sub-layer wired by the library's `norm` and
`residual` (anatomy/attention/layers.py), sinusoidal positions added to the input:

    post          x <- LN(x + G(x))            Vaswani et al. 2017; no warmup
    post_warmup   the same, warmup_steps of linear warmup (Xiong et al. 2020: post-LN needs it)
    pre           x <- x + G(LN(x)), a final LN  Xiong et al. 2020 (GPT-2's wiring)
    deepnorm      x <- LN(α·x + G(x)), G's value, output and FFN weights initialised ·β,
                  α = (2L)^(1/4), β = (8L)^(-1/4) (Wang et al. 2022, decoder-only)
    no_residual   x <- G(LN(x)), a final LN     pre-LN without its skip connection
    no_layernorm  x <- x + G(x)                 residual, no LayerNorm anywhere

Xiong et al.'s Theorem 1 bounds the gradient of the last layer's second FFN weight W^{2,L}
at initialisation: O(d·sqrt(ln d)) for post-LN, independent of L; O(d·sqrt(ln d / L)) for
pre-LN. `xiong` returns that weight (params['layers'][-1]['ffn']['w2']).
"""

from __future__ import annotations

from anatomy.attention.decoder_only import decoder_only, init_decoder_only
from anatomy.layers import init_layer_norm, layer_norm
from experiments.depth.lm import Family, Variant

# Final LayerNorm after the last block: the wirings whose blocks do not end in one.
_FINAL_LN = ("pre",)


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


def init_stack(key, model_cfg, n_layers, variant):
    """{'blocks': init_decoder_only's tree} (+ 'final_ln' for the pre-LN wirings)."""
    norm = variant.option("norm")
    tree = {
        "blocks": init_decoder_only(
            key, n_layers, model_cfg.d_model, model_cfg.n_heads, model_cfg.d_ff, norm=norm
        )
    }
    if norm in _FINAL_LN:
        tree["final_ln"] = init_layer_norm(model_cfg.d_model)
    return tree


def apply_stack(tree, x, variant):
    """x [b, t, m] -> the causal stack (sinusoidal positions added first) -> [b, t, m]."""
    h = decoder_only(
        tree["blocks"], x, norm=variant.option("norm"), residual=variant.option("residual")
    )
    return layer_norm(tree["final_ln"], h) if "final_ln" in tree else h


def layers(tree):
    """One subtree per block, bottom first (a final LN counts with no block)."""
    return list(tree["blocks"]["layers"])


def xiong(tree):
    """W^{2,L}: the last block's second FFN weight [f, m]."""
    return tree["blocks"]["layers"][-1]["ffn"]["w2"]


FAMILY = Family(init=init_stack, apply=apply_stack, layers=layers, xiong=xiong)
