"""Greedy decoding of a fixed number of tokens: a KV cache against recomputing the prefix.

    anatomy             model.step with its per-layer KV caches, one jitted fori_loop (the
                        step anatomy.decode.greedy runs): per step, one position's projections
                        and FFN plus attention over the cache
    anatomy recompute   the whole decoder over the prefix y_<=i at every step (encoder once),
                        one jitted program per prefix length: per step, i positions' work
    torch recompute     torch.nn.Transformer's decoder over the prefix (encoder once), the
                        way torch's own tutorials decode; eval + no_grad (torch.nn has no
                        cache); one thread (two_threads=True adds torch's 2-thread default)

eos is banned with pad/bos/unk, so every row decodes every step on every side; the
equal-work check is that all three emit the same tokens.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import torch

from anatomy.attention import causal_mask, decoder_layer, sinusoidal
from anatomy.decode import mask_never_generated
from anatomy.layers import layer_norm
from anatomy.seq2seq import build_model
from anatomy.seq2seq.base import BOS, EOS
from benchmarks import peers
from benchmarks.inputs import batch, jitter
from benchmarks.protocol import Case, Impl, one_thread


def _ban(logits):
    return mask_never_generated(logits).at[..., EOS].set(-jnp.inf)


def _kv_decode(model, n):
    @jax.jit
    def run(params, src, src_len):
        memory = model.encode(params, src, src_len)
        state = model.init_state(params, memory, n)
        b = src.shape[0]

        def body(i, c):
            state, tok, out = c
            logits, state = model.step(params, memory, state, tok)
            nxt = jnp.argmax(_ban(logits), axis=-1).astype(jnp.int32)
            return state, nxt, out.at[:, i].set(nxt)

        init = (state, jnp.full((b,), BOS, jnp.int32), jnp.zeros((b, n), jnp.int32))
        return jax.lax.fori_loop(0, n, body, init)[2]

    return run


def _recompute_step(params, memory, ys):
    """The pre-LN decoder over the whole prefix ys [b, i] -> ys with the next token appended."""
    t, m = ys.shape[1], params["tgt_emb"].shape[1]
    y = params["tgt_emb"][ys] * jnp.sqrt(jnp.float32(m)) + sinusoidal(t, m)
    cross = memory["mask"]  # [b, 1, 1, s]
    for p_layer, kv in zip(params["decoder"], memory["kv"]):
        y = decoder_layer(p_layer, y, None, causal_mask(t, t), cross, norm="pre", memory_kv=kv)
    y = layer_norm(params["dec_ln"], y[:, -1])
    logits = y @ params["tgt_emb"].T + params["out_bias"]
    nxt = jnp.argmax(_ban(logits), axis=-1).astype(jnp.int32)
    return jnp.concatenate([ys, nxt[:, None]], axis=1)


def decode_case(b, s, n, v_src, v_tgt, m, heads, f, layers, rng, shared, two_threads=False):
    """Greedy decoding of n tokens for a batch of b: KV cache vs recompute (ours, torch's).

    shared: a dict reused across calls with the same shapes (one model, one compiled
    recompute step per prefix length, one torch module), so lengths share their work.
    """
    if "model" not in shared:
        cfg = dict(d_model=m, n_heads=heads, d_ff=f, n_encoder_layers=layers, norm="pre")
        cfg.update(n_decoder_layers=layers, dropout_rate=0.0)
        shared["model"] = model = build_model("transformer", cfg, v_src, v_tgt)
        shared["params"] = jitter(jax.device_get(model.init(jax.random.key(5))), rng, 0.02)
        shared["batch"] = batch(rng, b, s, 2, v_src, v_tgt)
        shared["torch"] = peers.TorchTransformer(shared["params"]).eval()
        shared["encode"] = jax.jit(model.encode)
        shared["step"] = jax.jit(_recompute_step)
    model, params, bt, tm = (shared[k] for k in ("model", "params", "batch", "torch"))
    p_dev = jax.device_put(params)
    src, src_len = jax.device_put(bt["src"]), jax.device_put(bt["src_len"])
    kv = functools.partial(_kv_decode(model, n), p_dev, src, src_len)

    def recompute():
        memory = shared["encode"](p_dev, src, src_len)
        ys = jnp.full((b, 1), BOS, jnp.int32)
        for _ in range(n):
            ys = shared["step"](p_dev, memory, ys)
        return jax.block_until_ready(ys[:, 1:])

    t_src = torch.from_numpy(bt["src"]).long()
    pad = torch.from_numpy(np.arange(s)[None] >= bt["src_len"][:, None])
    banned = torch.from_numpy(np.isin(np.arange(v_tgt), [0, BOS, EOS, 3]))

    def torch_recompute():
        with torch.no_grad():
            memory = tm.core.encoder(tm.embed(tm.src_emb, t_src), src_key_padding_mask=pad)
            ys = torch.full((b, 1), BOS, dtype=torch.long)
            for i in range(n):
                causal = torch.triu(torch.ones(i + 1, i + 1, dtype=torch.bool), diagonal=1)
                y = tm.core.decoder(
                    tm.embed(tm.tgt_emb, ys), memory, tgt_mask=causal, memory_key_padding_mask=pad
                )
                logits = tm.logits(y[:, -1]).masked_fill(banned, float("-inf"))
                ys = torch.cat([ys, logits.argmax(-1, keepdim=True)], dim=1)
            return ys[:, 1:]

    kv_run = lambda: jax.block_until_ready(kv())
    impls = {
        "anatomy": Impl({"step": kv_run}, lambda: {"tokens": np.asarray(kv_run())}, "KV cache"),
        "anatomy recompute": Impl({"step": recompute}, lambda: {"tokens": np.asarray(recompute())}),
        "torch recompute": Impl(
            {"step": torch_recompute}, lambda: {"tokens": torch_recompute().numpy()}
        ),
    }
    # torch's 2-thread OpenMP team stalls at every one of the ~n² small kernels when other
    # processes hold the cores (many times the one-thread time), so the 2-thread variant is
    # timed only on request (two_threads=True)
    impls["torch recompute 1 thread"] = one_thread(impls["torch recompute"])
    if not two_threads:
        del impls["torch recompute"]
    shape = f"B={b} S={s} tokens={n} m={m} h={heads} f={f} {layers}+{layers} V={v_tgt}"
    return Case("greedy decoding", shape, impls, {}, b * n)
