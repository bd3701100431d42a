"""Translator-level benchmarks: what users run, a whole training step and greedy decoding.

Each implementation (benchmarks/protocol.py) has one pass and its check:
    step     the timed unit: ONE optimiser step (forward, loss, backward, Adam update) on a
             fixed padded batch, or a whole greedy decode of a batch (benchmarks/cases_decode.py)
    check()  what the equal-work check compares, from the INITIAL weights (called before any
             step): {'loss': float, 'grads': gradient dict} or {'tokens': int array}; a
             twin's to_peer maps anatomy's gradient tree onto its names (benchmarks/peers.py)
Training: label-smoothed (0.1) cross entropy averaged over real target tokens, Adam
(β = 0.9, 0.98, ε = 1e-9, constant learning rate, no clipping, no weight decay), no dropout
(the equal-work check needs determinism; the default rnn_vs_attn Transformer has none).
Decoding: greedy over the same source batch, a fixed number of tokens (eos is banned as
well as pad/bos/unk, so every row runs every step: the same work on every side).
"""

import functools

import flax
import jax
import jax.numpy as jnp
import numpy as np
import optax
import torch

from anatomy import train
from anatomy.seq2seq import build_model
from anatomy.train.losses import sequence_loss
from benchmarks import peers
from benchmarks.cases_decode import decode_case
from benchmarks.inputs import batch, jitter
from benchmarks.protocol import Case, Impl, one_thread

SMOOTH, LR, BETAS = 0.1, 1e-3, (0.9, 0.98)


# --- training steps ----------------------------------------------------------------------


def anatomy_step(model, params, b):
    """(our jitted, donating train step with make_optimizer, a fresh state () -> TrainState,
    the batch on the device); make_train_step traces at the step's first call."""
    cfg = train.default_train_config()
    cfg.update(learning_rate=LR, warmup_steps=0, decay="constant", clip_norm=0.0)
    cfg.update(b1=BETAS[0], b2=BETAS[1], weight_decay=0.0)
    tx = train.make_optimizer(cfg)
    step_fn = train.compile_train_step(train.make_train_step(model, tx, label_smoothing=SMOOTH))
    return step_fn, lambda: train.create_state(jax.device_put(params), tx), jax.device_put(b)


def _anatomy_train(model, params, b):
    """Our train step (anatomy_step); check: value_and_grad of the loss."""
    step_fn, fresh, b = anatomy_step(model, params, b)
    state, key = [fresh()], jax.random.key(0)

    def step():
        state[0], metrics = step_fn(state[0], b, key)
        jax.block_until_ready((state[0], metrics))

    loss = lambda p, b: sequence_loss(model.apply(p, b), b, SMOOTH)[0]
    grad_fn = jax.jit(jax.value_and_grad(loss))

    def check():
        value, g = grad_fn(jax.device_put(params), b)
        return {"loss": float(value), "grads": jax.device_get(g)}

    return Impl({"step": step}, check, "make_train_step + make_optimizer, donated")


def _torch_train(module, forward, b, peer_state):
    """zero_grad, forward, F.cross_entropy(label_smoothing, ignore pad), backward, Adam.step;
    peer_state maps our gradient tree onto module's parameter names."""
    opt = torch.optim.Adam(module.parameters(), lr=LR, betas=BETAS, eps=1e-9)
    target = torch.from_numpy(b["tgt_out"]).long().reshape(-1)

    def loss_of():
        logits = forward()
        return torch.nn.functional.cross_entropy(
            logits.reshape(target.shape[0], -1), target, ignore_index=0, label_smoothing=SMOOTH
        )

    def step():
        opt.zero_grad(set_to_none=True)
        loss_of().backward()
        opt.step()

    def check():
        names, ps = zip(*module.named_parameters())
        loss = loss_of()
        grads = torch.autograd.grad(loss, ps)
        return {"loss": loss.item(), "grads": {n: g.numpy() for n, g in zip(names, grads)}}

    return Impl({"step": step}, check, "torch.optim.Adam", to_peer={"grads": peer_state})


def _flax_train(module, variables, b):
    """A jitted (donating) optax.adam step on module.apply + optax's smoothed cross entropy;
    the batch is an argument, as in ours (closed over, it would be a constant XLA folds)."""
    tx = optax.adam(LR, *BETAS, eps=1e-9)
    b = jax.device_put(b)

    def loss(v, b):
        logits = module.apply(v, b["src"], b["src_len"], b["tgt_in"])
        labels = optax.smooth_labels(jax.nn.one_hot(b["tgt_out"], logits.shape[-1]), SMOOTH)
        mask = (b["tgt_out"] != 0).astype(jnp.float32)
        return jnp.sum(optax.softmax_cross_entropy(logits, labels) * mask) / jnp.sum(mask)

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def train_step(v, opt_state, b):
        value, g = jax.value_and_grad(loss)(v, b)
        updates, opt_state = tx.update(g, opt_state, v)
        return optax.apply_updates(v, updates), opt_state, value

    v0 = jax.device_put(variables)
    state = [jax.tree.map(jnp.array, v0), tx.init(v0)]
    grad_fn = jax.jit(jax.value_and_grad(loss))

    def step():
        state[0], state[1], value = train_step(*state, b)
        jax.block_until_ready((state, value))

    def check():
        value, g = grad_fn(v0, b)
        return {"loss": float(value), "grads": flax.core.unfreeze(jax.device_get(g))}

    return Impl(
        {"step": step}, check, "optax.adam", to_peer={"grads": peers.flax_transformer_params}
    )


def transformer_flops(b, s, t, m, f, v, n_enc, n_dec):
    """Forward matmul FLOPs (2 per multiply-add): projections, attention (full, not causal-
    halved: every side computes the whole t x t block), FFNs, the output projection."""
    enc = s * n_enc * (8 * m * m + 4 * m * f + 4 * s * m)
    dec = t * n_dec * (12 * m * m + 4 * t * m + 4 * s * m + 4 * m * f) + s * n_dec * 4 * m * m
    return float(b * (enc + dec + t * 2 * m * v))


def transformer_setup(b, s, t, v_src, v_tgt, m, heads, f, layers, rng, pre_ln=True):
    """(our Transformer, its weights: init jittered, NumPy; a padded batch) for a case."""
    cfg = dict(
        d_model=m, n_heads=heads, d_ff=f, n_encoder_layers=layers, norm="pre" if pre_ln else "post"
    )
    cfg.update(n_decoder_layers=layers, dropout_rate=0.0)
    model = build_model("transformer", cfg, v_src, v_tgt)
    params = jitter(jax.device_get(jax.jit(model.init)(jax.random.key(3))), rng)
    return model, params, batch(rng, b, s, t, v_src, v_tgt)


def transformer_train_case(b, s, t, v_src, v_tgt, m, heads, f, layers, rng, pre_ln=True, tol=None):
    """A Transformer train step (pre-LN, or the paper's post-LN): anatomy vs
    torch.nn.Transformer + Adam vs flax.linen; tol: the case's own equal-work tolerance."""
    model, params, bt = transformer_setup(b, s, t, v_src, v_tgt, m, heads, f, layers, rng, pre_ln)
    tm = peers.TorchTransformer(params)
    src, tgt = (torch.from_numpy(bt[k]).long() for k in ("src", "tgt_in"))
    pad = torch.from_numpy(np.arange(s)[None] >= bt["src_len"][:, None])
    fm = peers.FlaxTransformer(v_src, v_tgt, m, heads, f, layers, layers, pre_ln)
    impls = {
        "anatomy": _anatomy_train(model, params, bt),
        "torch": _torch_train(tm, lambda: tm(src, pad, tgt), bt, peers.torch_transformer_state),
        "flax": _flax_train(fm, peers.flax_transformer_params(params), bt),
    }
    impls["torch 1 thread"] = one_thread(impls["torch"])
    shape = f"B={b} S=T={s} m={m} h={heads} f={f} {layers}+{layers} V={v_src}/{v_tgt}"
    flops = 3 * transformer_flops(b, s, t, m, f, v_tgt, layers, layers)
    tokens = int((bt["tgt_out"] != 0).sum())
    name = "Transformer train step" + ("" if pre_ln else " (post-LN)")
    return Case(name, shape, impls, {"step": flops}, tokens, tol)


def rnnsearch_flops(b, s, t, e, h_enc, d, a, r, v):
    """Forward matmul FLOPs of RNNsearch (LSTM): encoder both ways, keys, per target step the
    query projection, scores (v·tanh), context, the LSTM cell, readout and output."""
    enc = s * (2 * 2 * (e + h_enc) * 4 * h_enc + 2 * 2 * h_enc * a) + 2 * h_enc * d
    step = 2 * d * a + 2 * s * a + 2 * s * 2 * h_enc + 2 * (e + 2 * h_enc + d) * 4 * d
    step += 2 * (d + 2 * h_enc + e) * r + 2 * r * v
    return float(b * (enc + t * step))


def rnnsearch_train_case(b, s, t, v_src, v_tgt, e, h_enc, d, rng):
    """An RNNsearch (LSTM) train step: anatomy vs a torch twin (packed nn.LSTM, nn.LSTMCell loop)."""
    cfg = dict(cell="lstm", d_emb=e, d_enc=h_enc, d_dec=d, d_attn=d, d_readout=d)
    model = build_model("rnnsearch", dict(cfg, dropout_rate=0.0), v_src, v_tgt)
    params = jitter(jax.device_get(model.init(jax.random.key(4))), rng)
    bt = batch(rng, b, s, t, v_src, v_tgt)
    tm = peers.TorchRNNsearch(params)
    src, tgt = (torch.from_numpy(bt[k]).long() for k in ("src", "tgt_in"))
    src_len = torch.from_numpy(bt["src_len"]).long()
    impls = {
        "anatomy": _anatomy_train(model, params, bt),
        "torch": _torch_train(tm, lambda: tm(src, src_len, tgt), bt, peers.torch_rnnsearch_state),
    }
    impls["torch 1 thread"] = one_thread(impls["torch"])
    shape = f"B={b} S=T={s} E={e} enc={h_enc}x2 dec=attn=readout={d} V={v_src}/{v_tgt}"
    flops = 3 * rnnsearch_flops(b, s, t, e, h_enc, d, d, d, v_tgt)
    tokens = int((bt["tgt_out"] != 0).sum())
    return Case("RNNsearch train step", shape, impls, {"step": flops}, tokens)


# --- presets -----------------------------------------------------------------------------

PRESETS = {
    # transformer (B, S, T, V_src, V_tgt, m, heads, f, layers): rnn_vs_attn's default model
    # (pre-LN) on ~1,000-token batches; transformer_post: the same arguments, a post-LN model
    # (d 256, 3 + 3 layers, V 8,000, 32 x 64 tokens: the shape where the loss's argmax over V
    # had put our step behind flax.linen's, anatomy/train/losses.py); rnnsearch (B, S, T, V_src, V_tgt, E, enc, dec): its default; decode
    # (B, S, [tokens]) with the transformer's model
    "full": {
        "transformer": (32, 32, 32, 256, 384, 128, 8, 512, 2),
        "transformer_post": (32, 64, 64, 8000, 8000, 256, 4, 1024, 3),
        # its equal-work tolerance: at this shape our float32 gradients and torch's differ
        # from a float64 evaluation (the torch twin in float64) by a few 1e-4 in norm, and
        # flax's from ours by as much: float32 rounding, not different work (BENCHMARKS.md)
        "transformer_post_tol": 1e-3,
        "rnnsearch": (32, 32, 32, 256, 384, 128, 128, 256),
        "decode": (32, 32, (16, 64)),
    },
    "quick": {
        "transformer": (8, 16, 16, 64, 96, 64, 4, 128, 2),
        "transformer_post": (8, 16, 16, 500, 500, 64, 4, 256, 3),
        "rnnsearch": (8, 16, 16, 64, 96, 32, 32, 64),
        "decode": (8, 16, (8,)),
    },
    "tiny": {
        "transformer": (2, 5, 4, 11, 13, 8, 2, 16, 2),
        "transformer_post": (2, 5, 4, 17, 19, 8, 2, 16, 2),
        "rnnsearch": (2, 5, 4, 11, 13, 6, 5, 7),
        "decode": (2, 5, (3,)),
    },
}


def build_translator_cases(preset="full", seed=0):
    """The translator-level cases of a preset ('full', 'quick' or 'tiny'), fixed seed."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
    cfg, rng = PRESETS[preset], np.random.default_rng(seed + 1)
    tr = cfg["transformer"]
    cases = [
        transformer_train_case(*tr, rng),
        # its own stream, so the other cases draw the batches and noise they drew before
        transformer_train_case(
            *cfg["transformer_post"],
            np.random.default_rng(seed + 2),
            pre_ln=False,
            tol=cfg.get("transformer_post_tol"),
        ),
        rnnsearch_train_case(*cfg["rnnsearch"], rng),
    ]
    b, s, lengths = cfg["decode"]
    shared = {}
    v_src, v_tgt, m, heads, f, layers = tr[3:]
    cases += [decode_case(b, s, n, v_src, v_tgt, m, heads, f, layers, rng, shared) for n in lengths]
    return cases
