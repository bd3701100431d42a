"""Whole translators as their users would write them in torch.nn and flax.linen, on our weights.

    TorchTransformer   torch.nn.Transformer(norm_first=True) + embeddings + tied output
    FlaxTransformer    the same pre-LN model from flax.linen parts (flax has no Transformer)
    TorchRNNsearch     nn.LSTM(bidirectional, packed) + nn.LSTMCell + additive attention

Each `*_state` / `*_params` maps OUR parameter tree onto the twin's layout; the mappings are
linear (transposes, reshapes, concatenations), so the same function maps our GRADIENTS onto
the twin's, which is how the equal-work check compares them. Letters as in mapping.py; b
batch, s source, t target positions, V vocabulary.
"""

import warnings

import flax.linen as nn
import jax.numpy as jnp
import numpy as np
import torch

from anatomy.attention import sinusoidal
from benchmarks.mapping import _t, flax_mha_params, torch_encoder_state, torch_mha_state

# --- the pre-LN Transformer -----------------------------------------------------------------


def torch_decoder_state(p):
    """Our decoder layer -> torch.nn.TransformerDecoderLayer (norm1/2/3 = ln1/2/3)."""
    s = torch_encoder_state(p)  # self_attn, ln1, ffn, ln2 as in the encoder
    s.update(torch_mha_state(p["cross_attn"], "multihead_attn."))
    s["norm3.weight"], s["norm3.bias"] = _t(p["ln3"]["scale"]), _t(p["ln3"]["bias"])
    return s


def torch_transformer_state(p):
    """Our pre-LN Transformer (tied output) -> TorchTransformer's state dict."""
    s = {n: _t(p[n]) for n in ("src_emb", "tgt_emb", "out_bias")}
    for stack, one in (("encoder", torch_encoder_state), ("decoder", torch_decoder_state)):
        for i, layer in enumerate(p[stack]):
            s.update({f"core.{stack}.layers.{i}.{k}": v for k, v in one(layer).items()})
    for stack, ln in (("encoder", "enc_ln"), ("decoder", "dec_ln")):
        s[f"core.{stack}.norm.weight"], s[f"core.{stack}.norm.bias"] = (
            _t(p[ln]["scale"]),
            _t(p[ln]["bias"]),
        )
    return s


class TorchTransformer(torch.nn.Module):
    """√m·E[x] + PE -> torch.nn.Transformer (pre-LN, its final norms) -> y E_tgtᵀ + b."""

    def __init__(self, p, n_heads, d_ff):
        super().__init__()
        (v_src, m), v_tgt = p["src_emb"].shape, p["tgt_emb"].shape[0]
        self.m = m
        self.src_emb = torch.nn.Parameter(torch.empty(v_src, m))
        self.tgt_emb = torch.nn.Parameter(torch.empty(v_tgt, m))
        self.out_bias = torch.nn.Parameter(torch.empty(v_tgt))
        with warnings.catch_warnings():  # "enable_nested_tensor is True, but ... norm_first"
            warnings.simplefilter("ignore", UserWarning)
            self.core = torch.nn.Transformer(
                m,
                n_heads,
                len(p["encoder"]),
                len(p["decoder"]),
                d_ff,
                dropout=0.0,
                batch_first=True,
                norm_first=True,
                layer_norm_eps=1e-5,
            )
        self.load_state_dict(torch_transformer_state(p))  # strict: every parameter mapped

    def embed(self, table, ids):
        return table[ids] * self.m**0.5 + torch.from_numpy(
            np.array(sinusoidal(ids.shape[1], self.m))
        )

    def logits(self, y):
        return y @ self.tgt_emb.T + self.out_bias

    def forward(self, src, pad, tgt):
        """src [b, s] long, pad [b, s] bool (True = padding), tgt [b, t] long -> [b, t, V]."""
        t = tgt.shape[1]
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        y = self.core(
            self.embed(self.src_emb, src),
            self.embed(self.tgt_emb, tgt),
            tgt_mask=causal,
            src_key_padding_mask=pad,
            memory_key_padding_mask=pad,
        )
        return self.logits(y)


class FlaxTransformer(nn.Module):
    """The pre-LN Transformer from flax.linen parts: nn.Embed (tied output via attend),
    MultiHeadDotProductAttention, Dense, LayerNorm(epsilon=1e-5)."""

    v_src: int
    v_tgt: int
    m: int
    n_heads: int
    d_ff: int
    n_enc: int
    n_dec: int

    def _ffn(self, x, name):
        h = nn.relu(nn.Dense(self.d_ff, name=name + "_w1")(x))
        return nn.Dense(self.m, name=name + "_w2")(h)

    @nn.compact
    def __call__(self, src, src_len, tgt):
        ln = lambda name: nn.LayerNorm(epsilon=1e-5, name=name)
        mha = lambda name: nn.MultiHeadDotProductAttention(
            num_heads=self.n_heads, qkv_features=self.m, out_features=self.m, name=name
        )
        src_emb, tgt_emb = (
            nn.Embed(self.v_src, self.m, name="src_emb"),
            nn.Embed(self.v_tgt, self.m, name="tgt_emb"),
        )
        s, t = src.shape[1], tgt.shape[1]
        pad = (jnp.arange(s)[None, :] < src_len[:, None])[:, None, None, :]  # [b, 1, 1, s]
        causal = jnp.tril(jnp.ones((t, t), bool))[None, None]  # [1, 1, t, t]
        x = src_emb(src) * jnp.sqrt(jnp.float32(self.m)) + sinusoidal(s, self.m)
        for i in range(self.n_enc):
            z = ln(f"enc{i}_ln1")(x)
            x = x + mha(f"enc{i}_self")(z, z, mask=pad)
            x = x + self._ffn(ln(f"enc{i}_ln2")(x), f"enc{i}_ffn")
        x = ln("enc_ln")(x)
        y = tgt_emb(tgt) * jnp.sqrt(jnp.float32(self.m)) + sinusoidal(t, self.m)
        for i in range(self.n_dec):
            z = ln(f"dec{i}_ln1")(y)
            y = y + mha(f"dec{i}_self")(z, z, mask=causal)
            y = y + mha(f"dec{i}_cross")(ln(f"dec{i}_ln2")(y), x, mask=pad)
            y = y + self._ffn(ln(f"dec{i}_ln3")(y), f"dec{i}_ffn")
        y = ln("dec_ln")(y)
        return tgt_emb.attend(y) + self.param("out_bias", nn.initializers.zeros, (self.v_tgt,))


def flax_transformer_params(p):
    """Our pre-LN Transformer -> FlaxTransformer's {'params': ...}."""
    out = {
        "src_emb": {"embedding": p["src_emb"]},
        "tgt_emb": {"embedding": p["tgt_emb"]},
        "out_bias": p["out_bias"],
        "enc_ln": dict(p["enc_ln"]),
        "dec_ln": dict(p["dec_ln"]),
    }
    for stack, short, attns, lns in (
        ("encoder", "enc", (("self", "self_attn"),), ("ln1", "ln2")),
        ("decoder", "dec", (("self", "self_attn"), ("cross", "cross_attn")), ("ln1", "ln2", "ln3")),
    ):
        for i, layer in enumerate(p[stack]):
            for name, ours in attns:
                out[f"{short}{i}_{name}"] = flax_mha_params(layer[ours])
            for name in lns:
                out[f"{short}{i}_{name}"] = dict(layer[name])
            f = layer["ffn"]
            out[f"{short}{i}_ffn_w1"] = {"kernel": f["w1"], "bias": f["b1"]}
            out[f"{short}{i}_ffn_w2"] = {"kernel": f["w2"], "bias": f["b2"]}
    return {"params": out}


# --- RNNsearch ------------------------------------------------------------------------------


def _lstm(prefix, p, suffix=""):
    """Our LSTM {'w_x','w_h','b'} -> torch LSTM/LSTMCell tensors (bias_hh = 0: ours is the sum;
    left out of the mapping, so the gradient check compares bias_ih only)."""
    return {
        f"{prefix}weight_ih{suffix}": _t(p["w_x"]).T.contiguous(),
        f"{prefix}weight_hh{suffix}": _t(p["w_h"]).T.contiguous(),
        f"{prefix}bias_ih{suffix}": _t(p["b"]),
    }


def torch_rnnsearch_state(p):
    """Our RNNsearch (LSTM, tanh readout of s_i) -> TorchRNNsearch's parameters (bias_hh left out)."""
    s = {n: _t(p[n]) for n in ("src_emb", "tgt_emb")}
    s.update(_lstm("encoder.", p["enc_fw"], "_l0"))
    s.update(_lstm("encoder.", p["enc_bw"], "_l0_reverse"))
    s.update(_lstm("decoder.", p["decoder"]))
    for name, ours in (("init", "init"), ("readout", "readout"), ("out", "out")):
        s[f"{name}.weight"], s[f"{name}.bias"] = _t(p[ours]["w"]).T.contiguous(), _t(p[ours]["b"])
    s["w_q"], s["w_k"], s["v"] = (_t(p["attn"][k]) for k in ("w_q", "w_k", "v"))
    return s


class TorchRNNsearch(torch.nn.Module):
    """Bahdanau et al.'s RNNsearch as a torch user writes it: packed bidirectional nn.LSTM, a
    Python loop of nn.LSTMCell steps with additive attention, tanh readout of s_i."""

    def __init__(self, p):
        super().__init__()
        (v_src, e), v_tgt = p["src_emb"].shape, p["tgt_emb"].shape[0]
        d_enc, d_dec = p["enc_fw"]["w_h"].shape[0], p["decoder"]["w_h"].shape[0]
        d_attn, d_read = p["attn"]["v"].shape[0], p["out"]["w"].shape[0]
        self.src_emb = torch.nn.Parameter(torch.empty(v_src, e))
        self.tgt_emb = torch.nn.Parameter(torch.empty(v_tgt, e))
        self.encoder = torch.nn.LSTM(e, d_enc, batch_first=True, bidirectional=True)
        self.init = torch.nn.Linear(d_enc, d_dec)
        self.w_q = torch.nn.Parameter(torch.empty(d_dec, d_attn))
        self.w_k = torch.nn.Parameter(torch.empty(2 * d_enc, d_attn))
        self.v = torch.nn.Parameter(torch.empty(d_attn))
        self.decoder = torch.nn.LSTMCell(e + 2 * d_enc, d_dec)
        self.readout = torch.nn.Linear(d_dec + 2 * d_enc + e, d_read)
        self.out = torch.nn.Linear(d_read, v_tgt)
        state = torch_rnnsearch_state(p)
        for name in ("encoder.bias_hh_l0", "encoder.bias_hh_l0_reverse", "decoder.bias_hh"):
            state[name] = torch.zeros(4 * (d_dec if name.startswith("dec") else d_enc))
        self.load_state_dict(state)

    def forward(self, src, src_len, tgt):
        """src [b, s] long, src_len [b] long, tgt [b, t] long -> logits [b, t, V]."""
        s = src.shape[1]
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            self.src_emb[src], src_len, batch_first=True, enforce_sorted=False
        )
        out, (h_n, _) = self.encoder(packed)
        ann, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=s)
        keys = ann @ self.w_k  # [b, s, A]
        pad = torch.arange(s)[None, :] >= src_len[:, None]  # [b, s] True = padding
        h = torch.tanh(self.init(h_n[1]))  # the backward direction's state at position 0
        c = torch.zeros_like(h)
        emb = self.tgt_emb[tgt]  # [b, t, E]
        states, contexts = [], []
        for i in range(tgt.shape[1]):
            scores = torch.tanh((h @ self.w_q)[:, None, :] + keys) @ self.v  # [b, s]
            alpha = torch.softmax(scores.masked_fill(pad, float("-inf")), dim=-1)
            ctx = torch.bmm(alpha[:, None, :], ann)[:, 0]  # [b, 2E]
            h, c = self.decoder(torch.cat([emb[:, i], ctx], dim=-1), (h, c))
            states.append(h)
            contexts.append(ctx)
        r, ctx = torch.stack(states, 1), torch.stack(contexts, 1)
        return self.out(torch.tanh(self.readout(torch.cat([r, ctx, emb], dim=-1))))
