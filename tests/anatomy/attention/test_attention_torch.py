"""anatomy.attention against torch.nn (float64, eval mode) and flax.linen, on our weights mapped
by benchmarks/peers.py (the benchmarks' own mappings).

torch runs in float64 as the reference; ours runs in float32 (rel. error <= 1e-5, norm-wise).
torch's eval-mode "fast path" (nested tensors, zeros at padded positions) is avoided by
leaving autograd on, so padded query rows are compared too.
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from helpers import rel

import anatomy.attention as att
from anatomy import layers
from benchmarks import peers

TOL = 1e-5
M, H, F = 8, 2, 16


def randomize(tree, rng, scale=0.4):
    return jax.tree.map(lambda a: rng.normal(size=np.shape(a)) * scale, tree)


def f32(tree):
    return jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), tree)


def t64(x):
    return torch.tensor(np.asarray(x, np.float64))


def torch_layer(cls, pre_ln):
    """A float64 torch.nn.Transformer{Encoder,Decoder}Layer of our sizes, no dropout."""
    return cls(
        M,
        H,
        F,
        dropout=0.0,
        activation="relu",
        batch_first=True,
        norm_first=pre_ln,
        layer_norm_eps=1e-5,
        dtype=torch.float64,
    )


def test_mha_vs_torch(rng):
    B, Q, K = 3, 4, 5
    p = randomize(att.init_mha(jax.random.key(0), M, H), rng)
    xq, xkv = rng.normal(size=(B, Q, M)), rng.normal(size=(B, K, M))
    lengths = np.array([5, 2, 3])
    mha = torch.nn.MultiheadAttention(M, H, batch_first=True, dtype=torch.float64)
    mha.load_state_dict(peers.torch_mha_state(p, dtype=torch.float64))
    pad = torch.tensor(np.arange(K)[None] >= lengths[:, None])  # torch: True = ignore
    ref, ref_w = mha(
        t64(xq),
        t64(xkv),
        t64(xkv),
        key_padding_mask=pad,
        need_weights=True,
        average_attn_weights=False,
    )
    out, w = att.multi_head_attention(
        f32(p), f32(xq), f32(xkv), att.padding_mask(jnp.asarray(lengths), K), return_weights=True
    )
    assert rel(out, ref.detach().numpy()) <= TOL
    assert rel(w, ref_w.detach().numpy()) <= TOL


def test_mha_vs_flax_linen(rng):
    B, Q, K = 2, 3, 4
    p = f32(randomize(att.init_mha(jax.random.key(1), M, H), rng))
    xq, xkv = (
        jnp.asarray(rng.normal(size=(B, Q, M)), jnp.float32),
        jnp.asarray(rng.normal(size=(B, K, M)), jnp.float32),
    )
    mod = nn.MultiHeadDotProductAttention(num_heads=H, qkv_features=M, out_features=M)
    shapes = jax.tree.map(jnp.shape, mod.init(jax.random.key(0), xq, xkv)["params"])
    fp = peers.flax_mha_params(p)
    assert jax.tree.map(jnp.shape, fp) == shapes  # flax's own names and shapes, every leaf
    mask = att.padding_mask(jnp.array([4, 2]), K)
    ref = mod.apply({"params": fp}, xq, xkv, mask=mask)
    # both float32: the difference is float32 rounding only
    assert rel(att.multi_head_attention(p, xq, xkv, mask), ref) <= TOL


@pytest.mark.parametrize("pre_ln", [False, True])
def test_encoder_layer_vs_torch(rng, pre_ln):
    B, T = 3, 5
    p = randomize(att.init_encoder_layer(jax.random.key(2), M, H, F), rng)
    for name in ("ln1", "ln2"):
        p[name]["scale"] = 1.0 + p[name]["scale"]
    x, lengths = rng.normal(size=(B, T, M)), np.array([5, 3, 1])
    layer = torch_layer(torch.nn.TransformerEncoderLayer, pre_ln)
    layer.load_state_dict(peers.torch_encoder_state(p, dtype=torch.float64))
    layer.eval()
    pad = torch.tensor(np.arange(T)[None] >= lengths[:, None])
    ref = layer(t64(x), src_key_padding_mask=pad).detach().numpy()
    out = att.encoder_layer(
        f32(p),
        jnp.asarray(x, jnp.float32),
        att.padding_mask(jnp.asarray(lengths), T),
        norm="pre" if pre_ln else "post",
        eps=1e-5,
    )
    assert rel(out, ref) <= TOL


@pytest.mark.parametrize("pre_ln", [False, True])
def test_decoder_layer_vs_torch(rng, pre_ln):
    B, T, S = 2, 4, 5
    p = randomize(att.init_decoder_layer(jax.random.key(3), M, H, F), rng)
    for name in ("ln1", "ln2", "ln3"):
        p[name]["scale"] = 1.0 + p[name]["scale"]
    y, mem = rng.normal(size=(B, T, M)), rng.normal(size=(B, S, M))
    tlens, slens = np.array([4, 2]), np.array([3, 5])
    layer = torch_layer(torch.nn.TransformerDecoderLayer, pre_ln)
    layer.load_state_dict(peers.torch_decoder_state(p, dtype=torch.float64))
    layer.eval()
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # True = masked
    ref = layer(
        t64(y),
        t64(mem),
        tgt_mask=causal,
        tgt_key_padding_mask=torch.tensor(np.arange(T)[None] >= tlens[:, None]),
        memory_key_padding_mask=torch.tensor(np.arange(S)[None] >= slens[:, None]),
    )
    self_mask = att.combine_masks(att.causal_mask(T, T), att.padding_mask(jnp.asarray(tlens), T))
    out = att.decoder_layer(
        f32(p),
        jnp.asarray(y, jnp.float32),
        jnp.asarray(mem, jnp.float32),
        self_mask,
        att.padding_mask(jnp.asarray(slens), S),
        norm="pre" if pre_ln else "post",
    )
    assert rel(out, ref.detach().numpy()) <= TOL


def test_layer_norm_eps_maps_to_torch_and_flax(rng):
    x = rng.normal(size=(2, 3, M)) * 0.01  # small variance, so eps matters
    p = {"scale": 1.0 + 0.3 * rng.normal(size=M), "bias": 0.3 * rng.normal(size=M)}
    tln = torch.nn.LayerNorm(M, eps=1e-5, dtype=torch.float64)  # torch default eps
    tln.load_state_dict({"weight": t64(p["scale"]), "bias": t64(p["bias"])})
    ours = layers.layer_norm(f32(p), jnp.asarray(x, jnp.float32), eps=1e-5)
    assert rel(ours, tln(t64(x)).detach().numpy()) <= TOL
    fln = nn.LayerNorm()  # flax default epsilon=1e-6
    ref = fln.apply({"params": f32(p)}, jnp.asarray(x, jnp.float32))
    assert fln.epsilon == 1e-6
    assert rel(layers.layer_norm(f32(p), jnp.asarray(x, jnp.float32), eps=1e-6), ref) <= TOL
