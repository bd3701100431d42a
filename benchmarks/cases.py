"""The layer cases: for each layer, anatomy's version and its torch / flax.linen twins.

Each implementation (benchmarks/protocol.py) has two passes, zero-argument closures over
fixed inputs and weights mapped by benchmarks/peers.py:
    fwd    -> the layer's output (JAX results already block_until_ready; torch under no_grad)
    fwdbwd -> gradients (input gradient first) of <output, g> for a fixed random cotangent g,
              w.r.t. the input and every parameter (all of them, on every side)
so each call does the same work on every side. FLOPs are counted analytically (matmuls
only; a multiply-add is 2 FLOPs); forward+backward = 3 x forward (two matmuls per matmul
in the backward pass).

torch and the twins of benchmarks/peers.py (which import it) are imported by the functions
that build a torch twin, never at the top: `_jax_impl` is the JAX side of every benchmark,
crossover's contenders included, and runs on an install without torch.
"""

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from anatomy import attention as att
from anatomy.mixers import get_cell
from anatomy.mixers.cells import run_gru, run_lstm
from anatomy.scan import run
from benchmarks.inputs import f32, fill, shapes
from benchmarks.protocol import Case, layer_impl, one_thread


def _jax_impl(f, params, x, g, note=""):
    """f(params, x) -> out. Jitted forward, and jitted grads of <out, g> w.r.t. (x, params)."""
    params, x, g = jax.device_put((params, x, g))  # NumPy -> device once, not per call
    fwd_j = jax.jit(f)
    grad_j = jax.jit(jax.grad(lambda x_, p_: jnp.vdot(f(p_, x_), g), argnums=(0, 1)))

    @jax.jit
    def fused_j(p_, x_):  # output and input gradient of <f, g> in one program
        out, vjp = jax.vjp(lambda z: f(p_, z), x_)
        return out, vjp(g)[0]

    def quick():
        out, dx = fused_j(params, x)
        return {"out": out, "dx": dx}

    @functools.cache
    def compiled(mode):  # the exact programs fwd / fwdbwd run, compiled once for both below
        return (fwd_j.lower(params, x) if mode == "fwd" else grad_j.lower(x, params)).compile()

    def memory(mode):
        from benchmarks.memory import compiled_bytes

        return compiled_bytes(compiled(mode))

    def hlo(mode):  # its optimised HLO, for the probes that read a compiled program
        return compiled(mode).as_text()

    return layer_impl(
        lambda: jax.block_until_ready(fwd_j(params, x)),
        lambda: jax.block_until_ready(grad_j(x, params)),
        note,
        quick=quick,
        memory=memory,
        hlo=hlo,
    )


def _torch_impl(f, module_params, xs, g, note="", fwd_only=False):
    """f(*xs) -> out (torch). Forward under no_grad; grads of <out, g> w.r.t. (*xs, *params)."""
    import torch

    xs_req = [x.detach().clone().requires_grad_(True) for x in xs]
    params = [p for p in module_params if p.requires_grad]

    def fwd():
        with torch.no_grad():
            return f(*xs)

    def fwdbwd():
        return torch.autograd.grad(f(*xs_req), xs_req + params, g)

    return layer_impl(fwd, None if fwd_only else fwdbwd, note)


def _flops(fwd):
    """FLOPs per pass: forward+backward = 3 x forward (two matmuls per matmul backward)."""
    return {"fwd": fwd, "fwdbwd": 3.0 * fwd}


# --- recurrences -------------------------------------------------------------------------


def rnn_case(cell, batch, n_time, d_in, d_hidden, rng):
    """LSTM or GRU layer over [B, T, D]: anatomy (hoist on/off) vs torch.nn vs flax.linen nn.RNN."""
    import torch

    from benchmarks import peers

    if cell not in ("lstm", "gru"):
        raise ValueError(f"rnn_case: cell must be 'lstm' or 'gru', got {cell!r}")
    gates = 4 if cell == "lstm" else 3
    bound = d_hidden**-0.5  # torch's U(-1/√H, 1/√H)
    p = fill(
        shapes(get_cell(cell).init, jax.random.key(0), d_in, d_hidden),
        lambda _, s: rng.uniform(-bound, bound, s),
    )
    x = f32(rng.normal(size=(batch, n_time, d_in)))
    g = f32(rng.normal(size=(batch, n_time, d_hidden)))
    impls = {}
    for hoist in (True, False):
        label = "anatomy" if hoist else "anatomy hoist=False"
        impls[label] = _jax_impl(
            lambda p_, x_, h=hoist: run(get_cell(cell), p_, x_, hoist=h)[1], p, x, g
        )
    # the custom-VJP path (one matmul per backward step); hoist=False + fused is the
    # translators' CPU default (anatomy/mixers/defaults.py)
    run_fused = run_lstm if cell == "lstm" else run_gru
    impls["anatomy fused VJP"] = _jax_impl(lambda p_, x_: run_fused(p_, x_)[1], p, x, g)
    impls["anatomy fused VJP hoist=False"] = _jax_impl(
        lambda p_, x_: run_fused(p_, x_, hoist=False)[1], p, x, g
    )

    t_mod = (torch.nn.LSTM if cell == "lstm" else torch.nn.GRU)(d_in, d_hidden, batch_first=True)
    t_mod.load_state_dict(peers.torch_rnn_state(p))
    impls["torch"] = _torch_impl(
        lambda x_: t_mod(x_)[0],
        list(t_mod.parameters()),
        [torch.from_numpy(np.array(x))],
        torch.from_numpy(np.array(g)),
    )
    impls["torch 1 thread"] = one_thread(impls["torch"])

    f_cell = nn.OptimizedLSTMCell(d_hidden) if cell == "lstm" else nn.GRUCell(d_hidden)
    f_mod = nn.RNN(f_cell)
    f_vars = {
        "params": {"cell": (peers.flax_lstm_cell if cell == "lstm" else peers.flax_gru_cell)(p)}
    }
    impls["flax"] = _jax_impl(
        lambda v_, x_: f_mod.apply(v_, x_), f_vars, x, g, note=f"nn.RNN({type(f_cell).__name__})"
    )
    flops = 2.0 * batch * n_time * (d_in + d_hidden) * gates * d_hidden
    shape = f"B={batch} T={n_time} D=H={d_hidden}"
    return Case(f"{cell.upper()} layer", shape, impls, _flops(flops))


# --- scaled dot-product attention --------------------------------------------------------


def sdpa_case(batch, n_heads, n, d_head, rng):
    """softmax(QKᵀ/√d)V, no mask: anatomy (dense and chunked) vs F.scaled_dot_product_attention
    vs flax.linen.

    Each side gets its native layout: ours and flax [b, n, h, d], torch [b, h, n, d].
    "anatomy chunked" is the online-softmax scan with its default block_k=128 (clipped to N
    when N < 128: one block).
    """
    import torch

    q, k, v = (f32(rng.normal(size=(batch, n, n_heads, d_head))) for _ in range(3))
    g = f32(rng.normal(size=(batch, n, n_heads, d_head)))
    impls = {
        "anatomy": _jax_impl(lambda kv, q_: att.scaled_dot_product(q_, *kv)[0], (k, v), q, g),
        "anatomy chunked": _jax_impl(
            lambda kv, q_: att.chunked_attention(q_, *kv),
            (k, v),
            q,
            g,
            note=f"chunked_attention, block_k={min(128, n)}",
        ),
        "flax": _jax_impl(
            lambda kv, q_: nn.dot_product_attention(q_, *kv),
            (k, v),
            q,
            g,
            note="nn.dot_product_attention",
        ),
    }
    bhnd = lambda a: torch.from_numpy(np.array(a)).transpose(1, 2).contiguous()
    sdpa = torch.nn.functional.scaled_dot_product_attention
    t_impl = _torch_impl(sdpa, [], [bhnd(q), bhnd(k), bhnd(v)], bhnd(g))
    swap = lambda a: np.swapaxes(a, 1, 2)  # ours [b,n,h,d] -> torch's [b,h,n,d], check only
    impls["torch"] = t_impl._replace(
        note="F.scaled_dot_product_attention", to_peer={"out": swap, "dx": swap}
    )
    impls["torch 1 thread"] = one_thread(impls["torch"])
    flops = 4.0 * batch * n_heads * n * n * d_head
    shape = f"b={batch} h={n_heads} N={n} d={d_head}"
    return Case("scaled dot-product", shape, impls, _flops(flops))


# --- multi-head attention and the encoder layer -------------------------------------------


def _draw_layer(rng):
    """Weights N(0, 1/fan_in), biases N(0, 0.1²), LayerNorm scales 1 + N(0, 0.1²)."""

    def draw(name, shape):
        if name.startswith("w"):
            fan_in = shape[0] if name != "w_o" else shape[0] * shape[1]  # w_o [h, d, m]
            return rng.normal(size=shape) / np.sqrt(fan_in)
        return (1.0 if name == "scale" else 0.0) + 0.1 * rng.normal(size=shape)

    return draw


def _torch_fastpath(enabled):
    import torch

    torch.backends.mha.set_fastpath_enabled(enabled)


def _torch_module_impls(module, x, g):
    """torch standard path (fast path off) and, forward only, torch's eval fast path."""
    import torch

    module.eval()
    xt, gt = torch.from_numpy(np.array(x)), torch.from_numpy(np.array(g))
    is_mha = isinstance(module, torch.nn.MultiheadAttention)
    call = (lambda x_: module(x_, x_, x_, need_weights=False)[0]) if is_mha else module

    def std(x_):
        _torch_fastpath(False)
        return call(x_)

    def fast(x_):
        _torch_fastpath(True)
        return call(x_)

    standard = _torch_impl(std, list(module.parameters()), [xt], gt, note="fast path off")
    fastpath = _torch_impl(
        fast, list(module.parameters()), [xt], gt, note="eval + no_grad fast path", fwd_only=True
    )
    return standard, fastpath


def mha_case(batch, n, d_model, n_heads, rng):
    """Self-attention MHA (projections + attention + output): anatomy vs torch vs flax.linen."""
    import torch

    from benchmarks import peers

    p = fill(shapes(att.init_mha, jax.random.key(1), d_model, n_heads), _draw_layer(rng))
    x, g = (f32(rng.normal(size=(batch, n, d_model))) for _ in range(2))
    impls = {
        "anatomy": _jax_impl(lambda p_, x_: att.multi_head_attention(p_, x_, x_), p, x, g),
        "anatomy chunked": _jax_impl(
            lambda p_, x_: att.multi_head_attention(p_, x_, x_, impl="chunked"),
            p,
            x,
            g,
            note='impl="chunked"',
        ),
    }
    t_mod = torch.nn.MultiheadAttention(d_model, n_heads, batch_first=True)
    t_mod.load_state_dict(peers.torch_mha_state(p))
    impls["torch"], impls["torch fast path"] = _torch_module_impls(t_mod, x, g)
    impls["torch 1 thread"] = one_thread(impls["torch"])
    f_mod = nn.MultiHeadDotProductAttention(
        num_heads=n_heads, qkv_features=d_model, out_features=d_model
    )
    impls["flax"] = _jax_impl(
        lambda v_, x_: f_mod.apply(v_, x_, x_), {"params": peers.flax_mha_params(p)}, x, g
    )
    flops = 8.0 * batch * n * d_model * d_model + 4.0 * batch * n * n * d_model
    shape = f"B={batch} N={n} m={d_model} heads={n_heads}"
    return Case("multi-head attention", shape, impls, _flops(flops))


def encoder_case(batch, n, d_model, n_heads, d_ff, rng):
    """Post-LN encoder layer, no dropout: anatomy vs torch.nn.TransformerEncoderLayer vs flax.linen."""
    import torch

    from benchmarks import peers

    p = fill(
        shapes(att.init_encoder_layer, jax.random.key(2), d_model, n_heads, d_ff), _draw_layer(rng)
    )
    x, g = (f32(rng.normal(size=(batch, n, d_model))) for _ in range(2))
    impls = {"anatomy": _jax_impl(lambda p_, x_: att.encoder_layer(p_, x_, eps=1e-5), p, x, g)}
    t_mod = torch.nn.TransformerEncoderLayer(
        d_model,
        n_heads,
        d_ff,
        dropout=0.0,
        activation="relu",
        batch_first=True,
        norm_first=False,
        layer_norm_eps=1e-5,
    )
    t_mod.load_state_dict(peers.torch_encoder_state(p))
    impls["torch"], impls["torch fast path"] = _torch_module_impls(t_mod, x, g)
    impls["torch 1 thread"] = one_thread(impls["torch"])
    f_mod = peers.FlaxEncoderLayer(n_heads=n_heads, d_ff=d_ff)
    impls["flax"] = _jax_impl(
        lambda v_, x_: f_mod.apply(v_, x_),
        peers.flax_encoder_params(p),
        x,
        g,
        note="MultiHeadDotProductAttention+Dense+LayerNorm",
    )
    flops = (
        8.0 * batch * n * d_model * d_model
        + 4.0 * batch * n * n * d_model
        + 4.0 * batch * n * d_model * d_ff
    )
    shape = f"B={batch} N={n} m={d_model} heads={n_heads} f={d_ff}"
    return Case("encoder layer (post-LN)", shape, impls, _flops(flops))


# --- presets -----------------------------------------------------------------------------

PRESETS = {
    # name: recurrent (B, [T], D=H), sdpa (b, h, [N], d), mha/encoder (B, N, m, heads, f),
    # optional mha [(B, N)] (m, heads from "layer"; default: the layer's (B, N) alone)
    "full": {
        "rnn": (32, (64, 256, 500), 256),
        "sdpa": (8, 8, (128, 512), 64),
        "sdpa_long": (1, 8, (2048,), 64),  # batch 1: the [b, h, N, N] weights are 128 MB
        "layer": (16, 128, 256, 4, 1024),
        "mha": ((16, 128), (4, 512), (1, 2048)),  # 2,048 tokens per batch at every N
    },
    "quick": {"rnn": (16, (32,), 128), "sdpa": (4, 4, (128,), 64), "layer": (8, 64, 128, 4, 512)},
    "tiny": {"rnn": (2, (5,), 8), "sdpa": (2, 2, (6,), 4), "layer": (2, 5, 8, 2, 16)},
}


def build_cases(preset="full", seed=0):
    """All cases of a preset ('full', 'quick' or 'tiny'), fixed seed."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
    cfg, rng = PRESETS[preset], np.random.default_rng(seed)
    b_rnn, times, d_rnn = cfg["rnn"]
    cases = [rnn_case(c, b_rnn, t, d_rnn, d_rnn, rng) for c in ("lstm", "gru") for t in times]
    b, h, lengths, d = cfg["sdpa"]
    cases += [sdpa_case(b, h, n, d, rng) for n in lengths]
    if "sdpa_long" in cfg:
        b, h, lengths, d = cfg["sdpa_long"]
        cases += [sdpa_case(b, h, n, d, rng) for n in lengths]
    bl, nl, m, heads, f = cfg["layer"]
    cases += [mha_case(bm, nm, m, heads, rng) for bm, nm in cfg.get("mha", ((bl, nl),))]
    cases.append(encoder_case(bl, nl, m, heads, f, rng))
    return cases
