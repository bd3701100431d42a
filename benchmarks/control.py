"""The control for the loss's blocked row max and argmax (anatomy/train/losses.py): the
Transformer train steps with the loss as it was before them, timed interleaved with ours and
flax.linen's in one process.

    python -m benchmarks.control [--rounds 21] [--only post-LN] [--profile 5]

The previous loss (jax.nn.log_softmax for the shift, jnp.argmax for the accuracy, which
XLA:CPU runs as a scalar variadic reduction over all V) is the only difference between
`anatomy` and `anatomy, previous loss`: the same model, optimiser, weights and batch, and
the same floats (every leaf of the updated state and the metrics, checked here before
timing). Reported per case: median wall and process CPU time per step over the rounds,
and the median over rounds of each step's time over flax's in the same round.
"""

import argparse
import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
import torch

from anatomy.tokens import PAD
from anatomy.train import step as train_step_module
from benchmarks import profile, timing
from benchmarks.cases_translator import (
    PRESETS,
    anatomy_step,
    transformer_setup,
    transformer_train_case,
)


def previous_sequence_loss(logits, batch, label_smoothing=0.0):
    """anatomy.train.losses.sequence_loss before its blocked row max and argmax (the same
    function)."""
    targets = batch["tgt_out"]
    mask = targets != PAD
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    nll = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
    uniform = -jnp.mean(logp, axis=-1)
    maskf = mask.astype(jnp.float32)
    loss = ((1.0 - label_smoothing) * nll + label_smoothing * uniform) * maskf
    tokens = jnp.maximum(jnp.sum(mask), 1).astype(jnp.float32)
    correct = (jnp.argmax(logits, axis=-1) == targets) & mask
    mean_loss = jnp.sum(loss) / tokens
    return mean_loss, {
        "loss": mean_loss,
        "nll": jnp.sum(nll * maskf) / tokens,
        "accuracy": jnp.sum(correct) / tokens,
        "tokens": jnp.sum(mask).astype(jnp.float32),
    }


def _with_loss(loss, fn):
    """fn() with make_train_step's sequence_loss replaced by `loss` (jit traces inside)."""
    kept = train_step_module.sequence_loss
    train_step_module.sequence_loss = loss
    try:
        return fn()
    finally:
        train_step_module.sequence_loss = kept


SHAPES = {  # case name: (its preset entry, rng seed, pre-LN), as build_translator_cases
    "Transformer train step": ("transformer", 1, True),
    "Transformer train step (post-LN)": ("transformer_post", 2, False),
}


def steps(name):
    """({label: step}, identical): our step with the current and the previous loss, and
    flax's; identical: every leaf of the state and the metrics after one step agree."""
    key, seed, pre_ln = SHAPES[name]
    args = PRESETS["full"][key]
    model, params, b = transformer_setup(*args, np.random.default_rng(seed), pre_ln)
    out, after = {}, {}
    for label, loss in (("anatomy", None), ("anatomy, previous loss", previous_sequence_loss)):
        step_fn, fresh, bd = anatomy_step(model, params, b)
        first = functools.partial(_one_step, step_fn, fresh(), bd)
        after[label] = first() if loss is None else _with_loss(loss, first)
        out[label] = _looped(step_fn, fresh(), bd)
    leaves = [jax.tree.leaves(a) for a in after.values()]
    identical = all(np.array_equal(u, v, equal_nan=True) for u, v in zip(*leaves))
    flax = transformer_train_case(*args, np.random.default_rng(seed), pre_ln)
    out["flax"] = flax.impls["flax"].passes["step"]
    return out, identical


def _one_step(step_fn, state, b):
    """The state and metrics after one step, on the host."""
    return jax.device_get(step_fn(state, b, jax.random.key(0)))


def _timed(cpu, label, fn):
    """fn, appending each call's process CPU seconds to cpu[label]."""

    def call():
        c0 = time.process_time()
        fn()
        cpu[label].append(time.process_time() - c0)

    return call


def _looped(step_fn, state, b):
    """() -> one more step from the state the last call left (donated, as in the cases)."""
    held = [state]

    def step():
        held[0], metrics = step_fn(held[0], b, jax.random.key(0))
        jax.block_until_ready((held[0], metrics))

    return step


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--only", default="", help="cases whose name contains this text")
    ap.add_argument(
        "--profile",
        type=int,
        default=0,
        help="also profile N calls of each step (benchmarks/profile.py: XLA op time by kind)",
    )
    args = ap.parse_args(argv)
    torch.set_num_threads(timing.n_cores())
    print(f"{timing.machine_info()['cpu']}, load {timing.load_average()}", flush=True)
    for name in (n for n in SHAPES if args.only in n):
        fns, identical = steps(name)
        print(f"{name}: after one step every leaf of the state and metrics identical: {identical}")
        cpu = {label: [] for label in fns}
        res = timing.time_interleaved(
            {lb: _timed(cpu, lb, fn) for lb, fn in fns.items()}, rounds=args.rounds, target_s=0.0
        )
        wall_f, cpu_f = np.array(res["flax"]["samples_s"]), np.array(cpu["flax"][-args.rounds :])
        for label, r in res.items():
            w, c = np.array(r["samples_s"]) / wall_f, np.array(cpu[label][-args.rounds :]) / cpu_f
            print(
                f"  {label:24s} wall {r['median_s'] * 1e3:7.1f} ms (±{50 * r['spread']:.0f}%), "
                f"/ flax {np.median(w):.3f} (p25-p75 {np.percentile(w, 25):.3f}-"
                f"{np.percentile(w, 75):.3f}); CPU {np.median(cpu[label]) * 1e3:7.1f} ms, "
                f"/ flax {np.median(c):.3f} (p25-p75 {np.percentile(c, 25):.3f}-"
                f"{np.percentile(c, 75):.3f})"
            )
        print(f"  load {timing.load_average()}", flush=True)
        if args.profile:
            rows = [(lb, profile.profile_step(fn, args.profile), None) for lb, fn in fns.items()]
            print(profile.kinds_table(rows))
            for label, p, _ in rows:
                top = ", ".join(f"{n} {ms:.1f} ms" for n, ms, _ in p["top"][:6])
                print(f"  {label}: largest ops per step: {top}")


if __name__ == "__main__":
    main()
