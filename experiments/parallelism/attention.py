"""parallelism's attention layers: one multi-head self-attention layer (anatomy.attention,
d_model cfg.d, cfg.n_heads heads) over x [B, N, d], and the same layer computed chunked.

    out = softmax(Q Kᵀ/√d_h) V         every position at once: no loop over positions
    chunked_attention                  an online softmax over key blocks of block_k keys: a
                                       loop of ceil(N / block_k) steps forward, as many backward

Its compiled gradient has no loop, so XLA's cost analysis counts all of its FLOPs.
"""

import jax
import jax.numpy as jnp

from anatomy import probes
from anatomy.attention import init_mha, multi_head_attention
from anatomy.attention.chunked import chunked_attention
from anatomy.attention.multihead import project_kv, project_q


def init(key, cfg):
    return init_mha(key, cfg.d, cfg.n_heads)


def loss(params, x):
    return jnp.sum(multi_head_attention(params, x, x) ** 2)


def flops(exe, params, x):
    """FLOPs of one forward+backward pass: XLA's count of the compiled gradient (no loops)."""
    return probes.cost_of(exe)["flops"]


LAYERS = {"attention": (loss, init, flops)}


def chunked_steps(cfg):
    """Serial loop trips of jit(grad) of chunked self-attention per N, from the compiled HLO.

    chunked_attention scans key blocks of cfg.chunk_block_k keys, once forward and once in its
    recomputing backward: 2·ceil(N / block_k) serial steps, each a whole block of keys.
    """
    params = init(jax.random.PRNGKey(cfg.seed), cfg)

    def chunked_loss(p, x):
        k, v = project_kv(p, x)
        return jnp.sum(chunked_attention(project_q(p, x), k, v, block_k=cfg.chunk_block_k) ** 2)

    rows = []
    for n in cfg.n_grid:
        x = jax.ShapeDtypeStruct((cfg.batch, n, cfg.d), jnp.float32)
        steps = probes.compiled_sequential_steps(jax.grad(chunked_loss, argnums=(0, 1)), params, x)
        rows.append({"n": n, "steps_hlo": steps, "key_blocks": -(-n // cfg.chunk_block_k)})
    return rows
