"""The whole training path against an independent torch twin, step by step.

Our Transformer translator + sequence_loss (label smoothing) + make_optimizer (global-norm
clipping, Adam with linear warmup) + the jitted train step, against torch.nn.Transformer on
our weights (benchmarks/peers.py, the benchmarks' own twin) + F.cross_entropy(label_smoothing)
+ clip_grad_norm_ + torch.optim.Adam + LambdaLR, from the same initial weights on the same
padded batches. torch runs in float64 (the reference), ours in float32. A defect anywhere on
the path (a mask, the loss normalisation, the schedule's step count, the clipping, Adam's
bias correction) shows up as a diverging loss curve or parameters.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from helpers import rel

from anatomy import train
from anatomy.seq2seq import build_model
from benchmarks import peers

VS, VT, M, H, F, LAYERS = 11, 13, 16, 2, 32, 2
STEPS, EPS_LS = 6, 0.1


def batches(rng, n):
    """n padded batches {src, src_len, tgt_in, tgt_out, tgt_len} of different shapes."""
    out = []
    for i in range(n):
        b, s, t = 3, 5 + 2 * (i % 2), 4 + i % 2  # two shapes: two compilations
        src_len, tgt_len = rng.integers(1, s + 1, b), rng.integers(1, t + 1, b)
        src_len[0], tgt_len[0] = s, t  # one full row: the padded shape is really used
        src = np.where(np.arange(s)[None] < src_len[:, None], rng.integers(3, VS, (b, s)), 0)
        tgt = rng.integers(3, VT, (b, t + 1))
        tgt[:, 0] = 1  # bos
        keep = np.arange(t + 1)[None] < (tgt_len + 1)[:, None]
        tgt = np.where(keep, tgt, 0)
        tgt_out = tgt[:, 1:].copy()
        tgt_out[np.arange(b), tgt_len - 1] = 2  # eos closes every target
        out.append(
            {
                "src": src.astype(np.int32),
                "src_len": src_len.astype(np.int32),
                "tgt_in": np.where(tgt_out != 0, tgt[:, :-1], 0).astype(np.int32),
                "tgt_out": tgt_out.astype(np.int32),
                "tgt_len": tgt_len.astype(np.int32),
            }
        )
    return out


def torch_state(params):
    """Our Transformer parameter tree -> the state dict of peers.TorchTransformer (float64)."""
    return peers.torch_transformer_state(params, dtype=torch.float64)


def torch_inputs(b):
    """A batch as TorchTransformer's (src, pad, tgt) tensors; pad True = ignore."""
    src, tgt = torch.tensor(b["src"]).long(), torch.tensor(b["tgt_in"]).long()
    pad = torch.tensor(np.arange(src.shape[1])[None] >= b["src_len"][:, None])
    return src, pad, tgt


@pytest.mark.parametrize("pre_ln", [False, True])
def test_transformer_training_matches_torch(rng, pre_ln):
    model = build_model(
        "transformer",
        {
            "d_model": M,
            "n_heads": H,
            "d_ff": F,
            "dropout_rate": 0.0,
            "n_encoder_layers": LAYERS,
            "n_decoder_layers": LAYERS,
            "norm": "pre" if pre_ln else "post",
        },
        VS,
        VT,
    )
    params = model.init(jax.random.key(0))

    # Untrained LayerNorms are the identity and the output bias zero: perturb them, so that
    # their mapping to torch is tested too.
    def perturb(path, a):
        names = [getattr(k, "key", None) for k in path]
        if (
            any(
                isinstance(n, str) and n.endswith("ln") or n in ("ln1", "ln2", "ln3") for n in names
            )
            or names[-1] == "out_bias"
        ):
            return a + jnp.asarray(rng.normal(size=a.shape) * 0.2, jnp.float32)
        return a

    params = jax.tree_util.tree_map_with_path(perturb, params)

    c = train.default_train_config()
    c.update(
        dict(
            learning_rate=3e-3,
            warmup_steps=2,
            num_steps=STEPS,
            decay="constant",
            clip_norm=0.5,
            label_smoothing=EPS_LS,
            b1=0.9,
            b2=0.98,
            weight_decay=0.0,
        )
    )
    tx = train.make_optimizer(c)
    step = train.compile_train_step(
        train.make_train_step(model, tx, label_smoothing=EPS_LS), donate=False
    )
    state = train.create_state(params, tx)

    ref = peers.TorchTransformer(jax.device_get(params), dtype=torch.float64)
    opt = torch.optim.Adam(ref.parameters(), lr=c.learning_rate, betas=(c.b1, c.b2), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(s / c.warmup_steps, 1.0))

    clipped = 0
    for i, b in enumerate(batches(rng, STEPS)):
        state, metrics = step(state, b, jax.random.key(i))
        logits = ref(*torch_inputs(b))
        target = torch.tensor(b["tgt_out"]).long()
        real = target != 0
        loss = torch.nn.functional.cross_entropy(logits[real], target[real], label_smoothing=EPS_LS)
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(ref.parameters(), c.clip_norm)
        clipped += float(norm) > c.clip_norm
        opt.step()
        sched.step()
        assert abs(float(metrics["loss"]) - loss.item()) <= 1e-5 * loss.item(), i
        assert abs(float(metrics["grad_norm"]) - float(norm)) <= 1e-4 * float(norm), i
    assert clipped > 0  # the clipping branch was exercised
    init, got, want = (
        torch_state(params),
        torch_state(jax.device_get(state.params)),
        ref.state_dict(),
    )
    assert got.keys() == want.keys()
    moved = {}
    for name in want:
        ours, start, theirs = (np.asarray(x[name].detach(), np.float64) for x in (got, init, want))
        if name.endswith("in_proj_bias"):
            # The key bias (middle third) adds one constant to every score of a query: softmax
            # ignores it, so its gradient is zero in exact arithmetic and Adam turns rounding
            # noise (1e-8 in float32, 1e-17 in float64) into full-size steps. Not compared.
            keep = np.r_[0:M, 2 * M : 3 * M]
            ours, start, theirs = ours[keep], start[keep], theirs[keep]
        assert np.any(theirs != start), name  # every compared tensor was trained
        moved[name] = rel(ours - start, theirs - start)
    # every parameter's update (new - initial) agrees with torch's to float32 rounding
    worst = max(moved, key=moved.get)
    assert moved[worst] <= 1e-4, (worst, moved[worst])
