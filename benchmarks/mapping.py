"""Our parameter pytrees mapped onto torch.nn modules and flax.linen variables.

Every benchmark pair runs on the SAME weights, so it times the same work; the
mappings mirror tests/test_recurrence_refs.py and tests/test_attention_torch.py.

Letters: D input size, H hidden size (recurrences); m model dim, h heads, d head dim,
f FFN inner dim (attention). torch stores a Linear weight as [out, in] (y = x Wᵀ + b);
ours and flax store [in, out].
"""

import flax.linen as nn
import numpy as np
import torch


def _t(a):
    return torch.tensor(np.asarray(a, np.float32))


# --- recurrences -------------------------------------------------------------------------


def torch_rnn_state(params):
    """Our LSTM/GRU params -> torch.nn.LSTM/GRU state dict (one layer, unidirectional).

    LSTM: torch has two biases that add up; ours is their sum, so bias_hh = 0.
    GRU: both biases keep their roles (b_hn sits inside r ⊙ (h W_hn + b_hn)).
    """
    s = {
        "weight_ih_l0": _t(params["w_x"]).T,
        "weight_hh_l0": _t(params["w_h"]).T,
    }  # [G*H, D], [G*H, H]
    if "b" in params:
        s["bias_ih_l0"], s["bias_hh_l0"] = _t(params["b"]), torch.zeros(params["b"].shape)
    else:
        s["bias_ih_l0"], s["bias_hh_l0"] = _t(params["b_x"]), _t(params["b_h"])
    return {k: v.contiguous() for k, v in s.items()}


def flax_lstm_params(params):
    """Our LSTM params -> nn.RNN(nn.OptimizedLSTMCell) params (gates i, f, g, o).

    flax: input kernels ii/if/ig/io [D, H] without bias; hidden kernels hi/hf/hg/ho [H, H]
    with the bias.
    """
    w_x = np.split(params["w_x"], 4, axis=1)  # 4 x [D, H]
    w_h = np.split(params["w_h"], 4, axis=1)  # 4 x [H, H]
    b = np.split(params["b"], 4)  # 4 x [H]
    cell = {}
    for g, wx, wh, bb in zip("ifgo", w_x, w_h, b):
        cell["i" + g] = {"kernel": wx}
        cell["h" + g] = {"kernel": wh, "bias": bb}
    return {"params": {"cell": cell}}


def flax_gru_params(params):
    """Our GRU params (reset after) -> nn.RNN(nn.GRUCell) params (gates r, z, n).

    flax has biases on ir/iz/in and hn only. r and z see b_x + b_h added inside the
    sigmoid, so their two biases fold into one: ir bias = b_xr + b_hr (likewise z).
    """
    w_x = np.split(params["w_x"], 3, axis=1)  # 3 x [D, H]
    w_h = np.split(params["w_h"], 3, axis=1)  # 3 x [H, H]
    b_x, b_h = np.split(params["b_x"], 3), np.split(params["b_h"], 3)  # 3 x [H] each
    cell = {
        "ir": {"kernel": w_x[0], "bias": b_x[0] + b_h[0]},
        "iz": {"kernel": w_x[1], "bias": b_x[1] + b_h[1]},
        "in": {"kernel": w_x[2], "bias": b_x[2]},
        "hr": {"kernel": w_h[0]},
        "hz": {"kernel": w_h[1]},
        "hn": {"kernel": w_h[2], "bias": b_h[2]},
    }
    return {"params": {"cell": cell}}


# --- attention ---------------------------------------------------------------------------


def torch_mha_state(p, prefix=""):
    """Our MHA {'w_q': [m,h,d], ...} -> torch.nn.MultiheadAttention state dict."""
    m = p["w_q"].shape[0]
    flat = lambda w: np.asarray(w).reshape(m, -1).T
    return {
        prefix + "in_proj_weight": _t(
            np.concatenate([flat(p["w_q"]), flat(p["w_k"]), flat(p["w_v"])])
        ),
        prefix + "in_proj_bias": _t(
            np.concatenate([np.ravel(p[n]) for n in ("b_q", "b_k", "b_v")])
        ),
        prefix + "out_proj.weight": _t(
            np.asarray(p["w_o"]).reshape(-1, m).T
        ),  # [h*d, m] -> [m, h*d]
        prefix + "out_proj.bias": _t(p["b_o"]),
    }


def torch_encoder_state(p):
    """Our encoder layer {'self_attn','ln1','ffn','ln2'} -> torch.nn.TransformerEncoderLayer."""
    s = torch_mha_state(p["self_attn"], "self_attn.")
    s.update(
        {
            "linear1.weight": _t(p["ffn"]["w1"]).T.contiguous(),
            "linear1.bias": _t(p["ffn"]["b1"]),
            "linear2.weight": _t(p["ffn"]["w2"]).T.contiguous(),
            "linear2.bias": _t(p["ffn"]["b2"]),
        }
    )
    for i, name in ((1, "ln1"), (2, "ln2")):
        s[f"norm{i}.weight"], s[f"norm{i}.bias"] = _t(p[name]["scale"]), _t(p[name]["bias"])
    return s


def flax_mha_params(p):
    """Our MHA params -> flax.linen.MultiHeadDotProductAttention params (same [m,h,d] layout)."""
    return {
        n: {"kernel": p["w_" + c], "bias": p["b_" + c]}
        for n, c in (("query", "q"), ("key", "k"), ("value", "v"), ("out", "o"))
    }


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
            "w1": {"kernel": p["ffn"]["w1"], "bias": p["ffn"]["b1"]},
            "w2": {"kernel": p["ffn"]["w2"], "bias": p["ffn"]["b2"]},
        }
    }
