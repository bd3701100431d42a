"""anatomy's layers and translators as torch.nn and flax.linen users write them, on OUR weights.

Every `torch_*_state` / `flax_*` function maps our parameter tree onto a peer's layout. The
maps are linear (transposes, reshapes, concatenations, sums), so the same function maps our
GRADIENTS onto the peer's names, which is how the benchmarks' equal-work check compares them.
The tests hold our layers to the same peers in float64 (`dtype=torch.float64`), so each
mapping exists once, here.

    recurrences   torch_rnn_state (nn.LSTM, nn.GRU, nn.LSTMCell), flax_lstm_cell, flax_gru_cell
    attention     torch_mha_state, torch_encoder_state, torch_decoder_state, flax_mha_params,
                  FlaxEncoderLayer + flax_encoder_params
    translators   TorchTransformer + torch_transformer_state (torch.nn.Transformer),
                  FlaxTransformer + flax_transformer_params (flax has no Transformer),
                  TorchRNNsearch + torch_rnnsearch_state (packed nn.LSTM + nn.LSTMCell loop)

Letters: D input size, H hidden size (recurrences); m model dim, h heads, d head dim, f FFN
inner dim (attention); b batch, s source, t target positions, V vocabulary. torch stores a
Linear weight as [out, in] (y = x Wᵀ + b); ours and flax store [in, out].
"""

import warnings

import flax.linen as nn
import jax.numpy as jnp
import numpy as np
import torch

from anatomy.attention import sinusoidal

_NUMPY = {torch.float32: np.float32, torch.float64: np.float64}


def _t(a, dtype=torch.float32):
    """A fresh torch tensor of `dtype` holding a (NumPy, JAX or Python numbers)."""
    return torch.tensor(np.asarray(a, _NUMPY[dtype]))


# --- recurrences ---------------------------------------------------------------------------


def torch_rnn_state(p, prefix="", suffix="_l0", dtype=torch.float32, lstm_bias_hh=True):
    """Our LSTM/GRU layer -> torch tensors `{prefix}weight_ih{suffix}`, ... (weights [G*H, D]).

    suffix: '_l0' for nn.LSTM/nn.GRU, '_l0_reverse' for their backward direction, '' for
    nn.LSTMCell. LSTM: torch has two biases that add up; ours is their sum, so bias_hh = 0
    (left out with lstm_bias_hh=False, so a gradient check compares bias_ih only). GRU: both
    biases keep their roles (b_hn sits inside r ⊙ (h W_hn + b_hn)).
    """
    name = lambda kind: f"{prefix}{kind}{suffix}"
    s = {
        name("weight_ih"): _t(p["w_x"], dtype).T.contiguous(),
        name("weight_hh"): _t(p["w_h"], dtype).T.contiguous(),
    }
    if "b" in p:
        s[name("bias_ih")] = _t(p["b"], dtype)
        if lstm_bias_hh:
            s[name("bias_hh")] = torch.zeros(np.shape(p["b"]), dtype=dtype)
    else:
        s[name("bias_ih")], s[name("bias_hh")] = _t(p["b_x"], dtype), _t(p["b_h"], dtype)
    return s


def flax_lstm_cell(p):
    """Our LSTM -> nn.LSTMCell / nn.OptimizedLSTMCell params (gates i, f, g, o).

    flax: input kernels ii/if/ig/io [D, H] without bias; hidden kernels hi/hf/hg/ho [H, H]
    with the bias. flax's carry is (c, h); ours is LSTMState(h, c).
    """
    w_x = np.split(np.asarray(p["w_x"]), 4, axis=1)  # 4 x [D, H]
    w_h = np.split(np.asarray(p["w_h"]), 4, axis=1)  # 4 x [H, H]
    b = np.split(np.asarray(p["b"]), 4)  # 4 x [H]
    cell = {}
    for g, wx, wh, bb in zip("ifgo", w_x, w_h, b):
        cell["i" + g] = {"kernel": wx}
        cell["h" + g] = {"kernel": wh, "bias": bb}
    return cell


def flax_gru_cell(p):
    """Our GRU (reset after) -> nn.GRUCell params (gates r, z, n).

    flax has biases on ir/iz/in and hn only. r and z see b_x + b_h added inside the
    sigmoid, so their two biases fold into one: ir bias = b_xr + b_hr (likewise z).
    """
    w_x = np.split(np.asarray(p["w_x"]), 3, axis=1)  # 3 x [D, H]
    w_h = np.split(np.asarray(p["w_h"]), 3, axis=1)  # 3 x [H, H]
    b_x, b_h = np.split(np.asarray(p["b_x"]), 3), np.split(np.asarray(p["b_h"]), 3)  # 3 x [H]
    return {
        "ir": {"kernel": w_x[0], "bias": b_x[0] + b_h[0]},
        "iz": {"kernel": w_x[1], "bias": b_x[1] + b_h[1]},
        "in": {"kernel": w_x[2], "bias": b_x[2]},
        "hr": {"kernel": w_h[0]},
        "hz": {"kernel": w_h[1]},
        "hn": {"kernel": w_h[2], "bias": b_h[2]},
    }


# --- attention -----------------------------------------------------------------------------


def _norm(p_ln, dtype):
    """Our LayerNorm {'scale', 'bias'} -> torch's (weight, bias)."""
    return _t(p_ln["scale"], dtype), _t(p_ln["bias"], dtype)


def torch_mha_state(p, prefix="", dtype=torch.float32):
    """Our MHA {'w_q': [m, h, d], ...} -> torch.nn.MultiheadAttention tensors."""
    m = p["w_q"].shape[0]
    flat = lambda w: np.asarray(w).reshape(m, -1).T  # [m, h, d] -> [h*d, m]
    return {
        prefix + "in_proj_weight": _t(
            np.concatenate([flat(p["w_q"]), flat(p["w_k"]), flat(p["w_v"])]), dtype
        ),
        prefix + "in_proj_bias": _t(
            np.concatenate([np.ravel(p[n]) for n in ("b_q", "b_k", "b_v")]), dtype
        ),
        prefix + "out_proj.weight": _t(np.asarray(p["w_o"]).reshape(-1, m).T, dtype),  # [m, h*d]
        prefix + "out_proj.bias": _t(p["b_o"], dtype),
    }


def torch_encoder_state(p, dtype=torch.float32):
    """Our encoder layer {'self_attn','ln1','ffn','ln2'} -> torch.nn.TransformerEncoderLayer."""
    s = torch_mha_state(p["self_attn"], "self_attn.", dtype)
    f = p["ffn"]
    s["linear1.weight"], s["linear1.bias"] = _t(f["w1"], dtype).T.contiguous(), _t(f["b1"], dtype)
    s["linear2.weight"], s["linear2.bias"] = _t(f["w2"], dtype).T.contiguous(), _t(f["b2"], dtype)
    for i, name in ((1, "ln1"), (2, "ln2")):
        s[f"norm{i}.weight"], s[f"norm{i}.bias"] = _norm(p[name], dtype)
    return s


def torch_decoder_state(p, dtype=torch.float32):
    """Our decoder layer -> torch.nn.TransformerDecoderLayer (norm1/2/3 = ln1/2/3)."""
    s = torch_encoder_state(p, dtype)  # self_attn, ln1, ffn, ln2 as in the encoder
    s.update(torch_mha_state(p["cross_attn"], "multihead_attn.", dtype))
    s["norm3.weight"], s["norm3.bias"] = _norm(p["ln3"], dtype)
    return s


def flax_mha_params(p):
    """Our MHA params -> flax.linen.MultiHeadDotProductAttention params (same [m,h,d] layout).

    flax's tree: query/key/value {'kernel': [m, h, d], 'bias': [h, d]}, out {'kernel':
    [h, d, m], 'bias': [m]}: ours under other names."""
    return {
        n: {"kernel": p["w_" + c], "bias": p["b_" + c]}
        for n, c in (("query", "q"), ("key", "k"), ("value", "v"), ("out", "o"))
    }


def _flax_dense(p_ffn, i):
    return {"kernel": p_ffn[f"w{i}"], "bias": p_ffn[f"b{i}"]}


class FlaxEncoderLayer(nn.Module):
    """Post-LN encoder layer from flax.linen parts: x <- LN(x + MHA(x)); x <- LN(x + FFN(x)).

    flax.linen has no Transformer layer of its own; this is the obvious composition
    (MultiHeadDotProductAttention, Dense, LayerNorm with torch's eps 1e-5).
    """

    n_heads: int
    d_ff: int

    @nn.compact
    def __call__(self, x):  # x [b, t, m]
        m = x.shape[-1]
        a = nn.MultiHeadDotProductAttention(
            num_heads=self.n_heads, qkv_features=m, out_features=m, name="self_attn"
        )(x, x)
        x = nn.LayerNorm(epsilon=1e-5, name="ln1")(x + a)
        y = nn.Dense(m, name="w2")(
            nn.relu(nn.Dense(self.d_ff, name="w1")(x))
        )  # [b, t, f] -> [b, t, m]
        return nn.LayerNorm(epsilon=1e-5, name="ln2")(x + y)


def flax_encoder_params(p):
    """Our encoder layer params -> FlaxEncoderLayer variables."""
    return {
        "params": {
            "self_attn": flax_mha_params(p["self_attn"]),
            "ln1": dict(p["ln1"]),
            "ln2": dict(p["ln2"]),
            "w1": _flax_dense(p["ffn"], 1),
            "w2": _flax_dense(p["ffn"], 2),
        }
    }


# --- the Transformer -----------------------------------------------------------------------


def torch_transformer_state(p, dtype=torch.float32):
    """Our Transformer (tied output; pre-LN with its final norms, or post-LN) -> the state
    dict of TorchTransformer."""
    s = {n: _t(p[n], dtype) for n in ("src_emb", "tgt_emb", "out_bias")}
    for stack, one in (("encoder", torch_encoder_state), ("decoder", torch_decoder_state)):
        for i, layer in enumerate(p[stack]):
            s.update({f"core.{stack}.layers.{i}.{k}": v for k, v in one(layer, dtype).items()})
    for stack, ln in (("encoder", "enc_ln"), ("decoder", "dec_ln")):
        if ln in p:  # pre-LN only
            s[f"core.{stack}.norm.weight"], s[f"core.{stack}.norm.bias"] = _norm(p[ln], dtype)
    return s


class TorchTransformer(torch.nn.Module):
    """√m·E[x] + PE -> torch.nn.Transformer -> y E_tgtᵀ + b (tied output), on our weights.

    Everything is read from our tree: the sizes, and pre-LN (torch's norm_first=True with its
    final norms) where it has 'enc_ln', post-LN (the paper: no final norms) where not.
    """

    def __init__(self, p, dtype=torch.float32):
        super().__init__()
        (v_src, m), v_tgt = p["src_emb"].shape, p["tgt_emb"].shape[0]
        first = p["encoder"][0]
        n_heads, d_ff = first["self_attn"]["w_q"].shape[1], first["ffn"]["w1"].shape[1]
        pre_ln = "enc_ln" in p
        self.m = m
        self.src_emb = torch.nn.Parameter(torch.empty(v_src, m, dtype=dtype))
        self.tgt_emb = torch.nn.Parameter(torch.empty(v_tgt, m, dtype=dtype))
        self.out_bias = torch.nn.Parameter(torch.empty(v_tgt, dtype=dtype))
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
                norm_first=pre_ln,
                layer_norm_eps=1e-5,
                dtype=dtype,
            )
        if not pre_ln:  # torch.nn.Transformer always adds final norms; post-LN has none
            self.core.encoder.norm = self.core.decoder.norm = None
        self.load_state_dict(torch_transformer_state(p, dtype))  # strict: every parameter mapped

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


def _attend(mha, mask, memory=None):
    """z -> mha(z, memory or z, mask): self-attention, or cross-attention to `memory`."""
    return lambda z: mha(z, z if memory is None else memory, mask=mask)


class FlaxTransformer(nn.Module):
    """The Transformer from flax.linen parts: nn.Embed (tied output via attend),
    MultiHeadDotProductAttention, Dense, LayerNorm(epsilon=1e-5); pre-LN with final norms
    (pre_ln=True) or the paper's post-LN, x <- LN(x + F(x)), without them."""

    v_src: int
    v_tgt: int
    m: int
    n_heads: int
    d_ff: int
    n_enc: int
    n_dec: int
    pre_ln: bool = True

    def _ffn_of(self, name):
        """z -> Dense(ReLU(Dense(z))), the FFN named `name`."""
        w1, w2 = nn.Dense(self.d_ff, name=name + "_w1"), nn.Dense(self.m, name=name + "_w2")
        return lambda z: w2(nn.relu(w1(z)))

    def _sub(self, x, fn, name):
        """One residual sub-layer around fn with LayerNorm `name`, pre- or post-LN."""
        ln = nn.LayerNorm(epsilon=1e-5, name=name)
        return x + fn(ln(x)) if self.pre_ln else ln(x + fn(x))

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
            x = self._sub(x, _attend(mha(f"enc{i}_self"), pad), f"enc{i}_ln1")
            x = self._sub(x, self._ffn_of(f"enc{i}_ffn"), f"enc{i}_ln2")
        if self.pre_ln:
            x = ln("enc_ln")(x)
        y = tgt_emb(tgt) * jnp.sqrt(jnp.float32(self.m)) + sinusoidal(t, self.m)
        for i in range(self.n_dec):
            y = self._sub(y, _attend(mha(f"dec{i}_self"), causal), f"dec{i}_ln1")
            y = self._sub(y, _attend(mha(f"dec{i}_cross"), pad, x), f"dec{i}_ln2")
            y = self._sub(y, self._ffn_of(f"dec{i}_ffn"), f"dec{i}_ln3")
        if self.pre_ln:
            y = ln("dec_ln")(y)
        return tgt_emb.attend(y) + self.param("out_bias", nn.initializers.zeros, (self.v_tgt,))


def flax_transformer_params(p):
    """Our Transformer (tied output; pre-LN with its final norms, or post-LN) ->
    FlaxTransformer's {'params': ...}."""
    out = {
        "src_emb": {"embedding": p["src_emb"]},
        "tgt_emb": {"embedding": p["tgt_emb"]},
        "out_bias": p["out_bias"],
    }
    for ln in ("enc_ln", "dec_ln"):
        if ln in p:  # pre-LN only
            out[ln] = dict(p[ln])
    for stack, short, attns, lns in (
        ("encoder", "enc", (("self", "self_attn"),), ("ln1", "ln2")),
        ("decoder", "dec", (("self", "self_attn"), ("cross", "cross_attn")), ("ln1", "ln2", "ln3")),
    ):
        for i, layer in enumerate(p[stack]):
            for name, ours in attns:
                out[f"{short}{i}_{name}"] = flax_mha_params(layer[ours])
            for name in lns:
                out[f"{short}{i}_{name}"] = dict(layer[name])
            out[f"{short}{i}_ffn_w1"] = _flax_dense(layer["ffn"], 1)
            out[f"{short}{i}_ffn_w2"] = _flax_dense(layer["ffn"], 2)
    return {"params": out}


# --- RNNsearch -----------------------------------------------------------------------------


def torch_rnnsearch_state(p):
    """Our RNNsearch (LSTM, tanh readout of s_i) -> TorchRNNsearch's parameters (bias_hh left
    out: ours is the sum of torch's two, so the gradient check compares bias_ih only)."""
    s = {n: _t(p[n]) for n in ("src_emb", "tgt_emb")}
    s.update(torch_rnn_state(p["enc_fw"], "encoder.", "_l0", lstm_bias_hh=False))
    s.update(torch_rnn_state(p["enc_bw"], "encoder.", "_l0_reverse", lstm_bias_hh=False))
    s.update(torch_rnn_state(p["decoder"], "decoder.", "", lstm_bias_hh=False))
    for name in ("init", "readout", "out"):
        s[f"{name}.weight"], s[f"{name}.bias"] = _t(p[name]["w"]).T.contiguous(), _t(p[name]["b"])
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
