"""torch twins of two mixers, written from the papers' equations, on OUR parameter trees.

    torch_mamba2(p, x, chunk)   Mamba-2 (Dao & Gu 2024): the SSD block with its chunked
                                algorithm as the paper describes it (the diagonal blocks as
                                masked attention with the decay matrix L = exp(segsum(Δ A)),
                                the off-diagonal blocks through the states at chunk ends, a
                                loop over chunks carrying the state)
    torch_gated_deltanet(p, x)  Gated DeltaNet (Yang et al. 2024): the recurrence step by step,
                                S_t = α_t S_{t-1} (I - β_t k_t k_tᵀ) + β_t v_t k_tᵀ

``torch_params(p)`` turns our tree (NumPy or JAX leaves) into float32 leaf tensors that
require grad (their order: ``torch_leaves``), so a case's backward pass reaches every
parameter as ours does. The papers' own libraries are not installed here (the fast paths of
flash-linear-attention and mamba_ssm are Triton / CUDA kernels), so these are the peers this
machine has.
"""

import numpy as np
import torch
import torch.nn.functional as F


def torch_params(p):
    """Our parameter tree -> the same tree of float32 tensors with requires_grad."""
    if isinstance(p, dict):
        return {k: torch_params(v) for k, v in p.items()}
    return torch.tensor(np.asarray(p, np.float32), requires_grad=True)


def torch_leaves(tp):
    """Every tensor of a torch_params tree, depth first in key order."""
    if isinstance(tp, dict):
        return [t for k in tp for t in torch_leaves(tp[k])]
    return [tp]


def _rms(x, scale, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * scale


def _segsum(x):
    """[..., C] -> [..., C, C]: Σ_{r=s+1..t} x_r for s <= t, -inf above (a masked cumsum)."""
    c = x.shape[-1]
    later = torch.tril(torch.ones(c, c, dtype=torch.bool), -1)
    sums = torch.cumsum(x[..., :, None].expand(*x.shape, c).masked_fill(~later, 0.0), dim=-2)
    return sums.masked_fill(~torch.tril(torch.ones(c, c, dtype=torch.bool)), -torch.inf)


def torch_mamba2(p, x, chunk=64):
    """Mamba-2's block on x [b, t, m] (anatomy.mixers.mamba2's parameters, no conv)."""
    inner, n_heads = p["out"]["w"].shape[0], p["a_log"].shape[0]
    n = (p["in"]["w"].shape[1] - 2 * inner - n_heads) // 2
    b, t, _ = x.shape
    z, xs, bb, cc, dt = torch.split(
        x @ p["in"]["w"] + p["in"]["b"], [inner, inner, n, n, n_heads], dim=-1
    )
    xs, bb, cc = F.silu(xs), F.silu(bb), F.silu(cc)
    delta = F.softplus(dt + p["b_dt"])  # [b, t, h]
    log_a = -torch.exp(p["a_log"]) * delta
    xh = xs.view(b, t, n_heads, -1)  # [b, t, h, p]
    c = min(chunk, t)
    pad = -t % c
    chunks = lambda y: F.pad(y, (0, 0) * (y.dim() - 2) + (0, pad)).view(b, -1, c, *y.shape[2:])
    xc, ac = chunks(xh * delta[..., None]), chunks(log_a)  # Δ x [b, n, C, h, p], log a
    bc, ccs = chunks(bb), chunks(cc)  # [b, n, C, n_state]
    ac = ac.permute(0, 1, 3, 2)  # [b, n, h, C]
    decay = torch.exp(_segsum(ac))  # L [b, n, h, C, C]
    y = torch.einsum("bnts,bnhts,bnshp->bnthp", ccs @ bc.transpose(-1, -2), decay, xc)
    cum = torch.cumsum(ac, -1)  # log of a_1 ⋯ a_t inside the chunk
    to_end = torch.exp(cum[..., -1:] - cum)  # [b, n, h, C]
    state, y_off = torch.zeros(b, n_heads, n, xh.shape[-1]), []
    for i in range(xc.shape[1]):  # the state at each chunk's start, carried across chunks
        y_off.append(torch.einsum("btk,bhkp,bht->bthp", ccs[:, i], state, torch.exp(cum[:, i])))
        state = state * torch.exp(cum[:, i, :, -1])[..., None, None] + torch.einsum(
            "bsk,bhs,bshp->bhkp", bc[:, i], to_end[:, i], xc[:, i]
        )
    y = y + torch.stack(y_off, 1)
    y = y.reshape(b, -1, n_heads, xh.shape[-1])[:, :t] + p["d"][:, None] * xh
    y = _rms(y.reshape(b, t, inner) * F.silu(z), p["norm"]["scale"])
    return y @ p["out"]["w"] + p["out"]["b"]


def torch_gated_deltanet(p, x):
    """Gated DeltaNet on x [b, t, m] (anatomy.mixers.gated_deltanet's parameters, no conv),
    the paper's recurrence one step at a time (S [b, h, v, k])."""
    heads = lambda w: torch.einsum("btm,mhk->bthk", x, w)
    l2 = lambda y: y * torch.rsqrt(y.pow(2).sum(-1, keepdim=True) + 1e-6)
    q = l2(heads(p["w_q"])) / p["w_q"].shape[-1] ** 0.5
    k, v = l2(heads(p["w_k"])), heads(p["w_v"])
    beta = torch.sigmoid(x @ p["beta"]["w"] + p["beta"]["b"])  # [b, t, h]
    alpha = torch.exp(-torch.exp(p["a_log"]) * F.softplus(x @ p["alpha"]["w"] + p["alpha"]["b"]))
    b, t, h, dk = k.shape
    s = torch.zeros(b, h, v.shape[-1], dk)
    outs = []
    for i in range(t):
        k_t, be = k[:, i], beta[:, i, :, None, None]
        s = alpha[:, i, :, None, None] * (s - be * (s @ k_t[..., :, None]) * k_t[..., None, :])
        s = s + be * v[:, i, ..., :, None] * k_t[..., None, :]
        outs.append(torch.einsum("bhvk,bhk->bhv", s, q[:, i]))
    o = _rms(torch.stack(outs, 1), p["norm"]["scale"]) * F.silu(heads(p["w_g"]))
    return torch.einsum("bthv,hvm->btm", o, p["w_out"])


PEERS = {"mamba2": torch_mamba2, "gated_deltanet": torch_gated_deltanet}
