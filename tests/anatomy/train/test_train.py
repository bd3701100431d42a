"""The training harness against obvious twins, with a tiny stand-in Translator.

The stand-in ('bigram') is an embedding + linear model implementing the Translator
interface, so these tests do not depend on anatomy.seq2seq.
"""

import math
import os
import re
import signal
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FAKE_DEVICES_ENV
from helpers import (
    BIGRAM_B,
    BIGRAM_L,
    BIGRAM_V,
    batch_at,
    batches,
    bigram_model,
    small_config,
)

from anatomy import train

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
V, B, L = BIGRAM_V, BIGRAM_B, BIGRAM_L


# ---------------------------------------------------------------------------- losses


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_loss_matches_numpy(rng, eps):
    logits = rng.normal(size=(3, 7, 11)).astype(np.float32) * 3
    targets = rng.integers(1, 11, (3, 7)).astype(np.int32)
    targets[0, 5:] = 0
    targets[2, 2:] = 0
    loss, m = train.sequence_loss(jnp.asarray(logits), {"tgt_out": jnp.asarray(targets)}, eps)
    # float64 reference: q = (1-eps) onehot + eps/V, loss = -sum q log softmax, mean over real tokens
    x = logits.astype(np.float64)
    logp = x - x.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    q = (1 - eps) * np.eye(11)[targets] + eps / 11
    per = -(q * logp).sum(-1)
    mask = targets != 0
    ref = per[mask].mean()
    nll = -np.take_along_axis(logp, targets[..., None], -1)[..., 0][mask].mean()
    acc = (x.argmax(-1) == targets)[mask].mean()
    np.testing.assert_allclose(float(loss), ref, rtol=1e-5)
    np.testing.assert_allclose(float(m["nll"]), nll, rtol=1e-5)
    np.testing.assert_allclose(float(m["accuracy"]), acc, rtol=1e-6)
    assert float(m["tokens"]) == mask.sum()


def _planted(rng, shape):
    """Random logits with ties, NaNs, infinities and signed zeros planted in some rows."""
    x = rng.normal(size=shape).astype(np.float32)
    x = x.reshape(-1, shape[-1])
    v = shape[-1]
    x[0, [2, v - 3]] = x[0].max() + 1.0  # a tie for the max: the first index wins
    x[1, [3, v - 2]] = np.nan  # NaNs: the first NaN wins
    x[2, 4] = np.inf
    x[3] = -np.inf  # a row of -inf: index 0
    x[4] = 0.0
    x[4, 0] = -0.0  # -0.0 == 0.0: index 0
    x[5, 1], x[5, v - 1] = np.inf, np.nan  # a NaN after an inf: the NaN wins
    x[6] = np.arange(v)[::-1] % 8  # equal block maxima: the first block wins
    return x.reshape(shape)


# v and the block width the losses take: 32, 32, 27 and 21 (the quick rnn_vs_attn
# vocabularies 243 and 357), 20, one block of 11; v = 37 (prime) and 7 (no width >= 8) fall
# back to jnp's own max and argmax.
VS = (1024, 96, 243, 357, 40, 11, 37, 7)


@pytest.mark.parametrize("v", VS)
def test_max_and_argmax_are_jnps(rng, v):
    x = jnp.asarray(_planted(rng, (2, 4, v)))
    top, index = jax.jit(train.losses.max_and_argmax)(x)
    np.testing.assert_array_equal(index, jnp.argmax(x, axis=-1))
    # jnp.max of a row holding a NaN depends on the kernel (XLA:CPU's skips NaNs at some v);
    # ours is NaN there, and log_softmax is NaN over such a row either way
    nan_row = jnp.isnan(x).any(-1, keepdims=True)
    np.testing.assert_array_equal(top, jnp.where(nan_row, jnp.nan, jnp.max(x, -1, keepdims=True)))
    ties = jnp.asarray(rng.integers(0, 3, (40, v)).astype(np.float32))  # ties in every block
    np.testing.assert_array_equal(train.losses.argmax(ties), jnp.argmax(ties, axis=-1))


@pytest.mark.parametrize("v", VS)
def test_log_softmax_is_jax_nn(rng, v):
    """The same operations as jax.nn.log_softmax, so the same floats, and the same gradient."""
    x = rng.normal(size=(3, 5, v)).astype(np.float32) * 4
    x[0, 1, v // 2], x[1, 2, 0], x[2, 3] = np.nan, np.inf, -np.inf  # NaN rows, either way
    x = jnp.asarray(x)
    g = jnp.asarray(rng.normal(size=(3, 5, v)).astype(np.float32))
    ours = jax.jit(jax.value_and_grad(lambda x: jnp.vdot(train.losses.log_softmax(x), g)))(x)
    theirs = jax.jit(jax.value_and_grad(lambda x: jnp.vdot(jax.nn.log_softmax(x), g)))(x)
    np.testing.assert_array_equal(jax.jit(train.losses.log_softmax)(x), jax.nn.log_softmax(x))
    np.testing.assert_array_equal(ours[1], theirs[1])


def _variadic_widths(hlo):
    """The widths of every (value, index) reduction in compiled HLO text: the length of the
    axis its first operand is reduced over (XLA:CPU's scalar argmax loop)."""
    shapes = dict(re.findall(r"%(\S+) = (\S+\[[\d,]*\])\S* ", hlo))
    widths = []
    for operand, dims in re.findall(r"= \([^)]*\) reduce\(%(\S+?),.*?dimensions=\{(\d+)\}", hlo):
        sizes = re.search(r"\[([\d,]*)\]", shapes[operand]).group(1).split(",")
        widths.append(int(sizes[int(dims)]))
    return widths


def test_train_loss_has_no_scalar_argmax_over_the_vocabulary(rng, monkeypatch):
    """The compiled loss and gradient of logits = y E^T + b over v = 1,024: the control (the
    same loss with jnp.argmax) runs XLA:CPU's variadic reduction over all of v; ours over
    at most 32 block maxima and 32 entries of one block."""
    y = jnp.asarray(rng.normal(size=(2, 3, 8)).astype(np.float32))
    e = jnp.asarray(rng.normal(size=(1024, 8)).astype(np.float32))
    b = jnp.asarray(rng.normal(size=1024).astype(np.float32))
    batch = {"tgt_out": jnp.asarray(rng.integers(0, 1024, (2, 3)), jnp.int32)}
    loss = lambda y, e, b: train.sequence_loss(y @ e.T + b, batch, 0.1)
    hlo = lambda: jax.jit(jax.value_and_grad(loss, (0, 1, 2), has_aux=True)).lower(y, e, b)
    ours = _variadic_widths(hlo().compile().as_text())
    assert ours and max(ours) <= 32
    monkeypatch.setattr(train.losses, "argmax", lambda x: jnp.argmax(x, axis=-1))
    assert 1024 in _variadic_widths(hlo().compile().as_text())


# ---------------------------------------------------------------------------- schedule


def schedule_reference(
    step: int,
    learning_rate: float,
    warmup_steps: int,
    num_steps: int,
    decay: str = "rsqrt",
    end_fraction: float = 0.0,
) -> float:
    """make_schedule in plain Python: the obvious twin."""
    w, n = warmup_steps, num_steps
    if step < w:
        return learning_rate * step / w
    if decay == "rsqrt":
        return learning_rate * math.sqrt(max(w, 1) / max(step, max(w, 1)))
    frac = min((step - w) / max(n - w, 1), 1.0)
    if decay == "cosine":
        return learning_rate * (
            end_fraction + (1 - end_fraction) * 0.5 * (1 + math.cos(math.pi * frac))
        )
    if decay == "linear":
        return learning_rate * (1 - (1 - end_fraction) * frac)
    return learning_rate


@pytest.mark.parametrize("decay", ["rsqrt", "cosine", "linear", "constant"])
def test_schedule_values(decay):
    lr, w, n, f = 2e-3, 10, 100, 0.1
    sched = train.make_schedule(lr, w, n, decay, f)
    for s in [0, 1, 5, 9, 10, 11, 37, 55, 99, 100]:
        np.testing.assert_allclose(
            float(sched(s)),
            schedule_reference(s, lr, w, n, decay, f),
            rtol=1e-5,
            atol=1e-12,
            err_msg=f"{decay} at step {s}",
        )
    assert float(sched(5)) == pytest.approx(lr / 2)  # half-way up the warmup
    assert float(sched(w)) == pytest.approx(lr)  # the peak
    end = {"rsqrt": lr * np.sqrt(w / n), "cosine": lr * f, "linear": lr * f, "constant": lr}[decay]
    assert float(sched(n)) == pytest.approx(end, rel=1e-5)


def test_schedule_rejects_unknown_decay():
    with pytest.raises(ValueError, match="decay"):
        train.make_schedule(1e-3, 10, 100, "exponential")


# ---------------------------------------------------------------------------- step


def test_train_step_is_pure_and_learns():
    model, c = bigram_model(), small_config()
    tx = train.make_optimizer(c)
    step = train.compile_train_step(
        train.make_train_step(model, tx, label_smoothing=0.1), donate=False
    )
    s0 = train.create_state(model.init(jax.random.key(0)), tx)
    rng = jax.random.key(3)
    a, ma = step(s0, batch_at(0), rng)
    b, mb = step(s0, batch_at(0), rng)
    assert int(a.step) == 1 and float(ma["loss"]) == float(mb["loss"])
    jax.tree.map(np.testing.assert_array_equal, a.params, b.params)
    # and learns: 30 steps later a held-out batch scores a lower loss (the bigram model can only
    # learn which tokens occur, so the fall is small, but a step that does not learn fails)
    held = batch_at(99)
    s = s0
    _, before = step(s0, held, rng)
    for k in range(30):
        s, _ = step(s, batch_at(k), jax.random.fold_in(rng, k))
    _, after = step(s, held, rng)
    assert float(after["loss"]) < float(before["loss"]) - 0.05, (before["loss"], after["loss"])
    bf16 = train.compile_train_step(train.make_train_step(model, tx, compute_dtype="bfloat16"))
    c16, m16 = bf16(s0, batch_at(0), rng)
    assert c16.params["emb"].dtype == jnp.float32 and np.isfinite(float(m16["loss"]))
    with pytest.raises(ValueError, match="compute_dtype"):
        train.make_train_step(model, tx, compute_dtype="float8")


def test_train_writes_metrics_and_resumes(tmp_path):
    model = bigram_model()
    res = train.train(model, batches, small_config(num_steps=30, decay="constant"), str(tmp_path))
    recs = train.read_metrics(str(tmp_path))
    assert [r["step"] for r in recs] == list(range(5, 31, 5))
    for key in ("loss", "accuracy", "tokens_per_second", "wall_time", "learning_rate"):
        assert all(np.isfinite(r[key]) for r in recs), key
    assert recs[-1]["loss"] < recs[0]["loss"]
    assert any(f.startswith("events") for f in os.listdir(tmp_path / "tensorboard"))
    assert res.summary["steps"] == 30 and res.summary["resumed_from"] is None
    # the same workdir with a larger step count continues from step 30 (a constant learning
    # rate: with the default linear decay num_steps is part of the run's fingerprint)
    res2 = train.train(model, batches, small_config(num_steps=40, decay="constant"), str(tmp_path))
    assert res2.summary["resumed_from"] == 30 and int(res2.state.step) == 40
    assert [r["step"] for r in train.read_metrics(str(tmp_path))][-1] == 40


@pytest.mark.slow
def test_logged_learning_rate_is_the_one_that_trains(tmp_path):
    """metrics.jsonl's learning_rate at step s: the optax schedule of make_optimizer at s
    (config_schedule), equal to the plain-Python twin; warmup then linear decay."""
    c = small_config(num_steps=12, warmup_steps=4, decay="linear", end_fraction=0.2, log_every=2)
    train.train(bigram_model(), batches, c, str(tmp_path))
    recs = train.read_metrics(str(tmp_path))
    steps = [r["step"] for r in recs]
    assert steps == list(range(2, 13, 2))
    logged = [r["learning_rate"] for r in recs]
    assert logged == [float(train.config_schedule(c)(s)) for s in steps]
    ref = [schedule_reference(s, 1e-2, 4, 12, "linear", 0.2) for s in steps]
    np.testing.assert_allclose(logged, ref, rtol=1e-6)
    assert len(set(logged)) == len(logged)  # warmup and decay both visible: no constant stand-in


# ---------------------------------------------------------------------------- fingerprints


@pytest.mark.slow
def test_resume_with_another_config_stops_naming_the_fields(tmp_path):
    from anatomy.fingerprint import FingerprintMismatchError, run_fingerprint

    model, workdir = bigram_model(), str(tmp_path)
    first = small_config(num_steps=10, decay="linear")
    train.train(
        model, batches, first, workdir, fingerprint=run_fingerprint(first, model, data={"n": 1})
    )
    ckpt_dir = os.path.join(workdir, "checkpoints")
    changes = [  # (train config, extra data part, the fields the one-line error must name)
        (small_config(num_steps=20, decay="linear"), 1, ["train.num_steps: 10 -> 20"]),
        (
            small_config(num_steps=10, decay="linear", learning_rate=2e-2, seed=3),
            1,
            ["train.learning_rate: 0.01 -> 0.02", "train.seed: 0 -> 3"],
        ),
        (small_config(num_steps=10, decay="linear"), 2, ["data.n: 1 -> 2"]),
        (  # a time budget lays the schedule out over it: not free once set
            small_config(num_steps=10, decay="linear", max_train_seconds=100.0),
            1,
            ["train.max_train_seconds: '(absent)' -> 100.0"],
        ),
    ]
    for config, n, fields in changes:
        with pytest.raises(FingerprintMismatchError) as err:
            train.train(
                model,
                batches,
                config,
                workdir,
                fingerprint=run_fingerprint(config, model, data={"n": n}),
            )
        msg = str(err.value)
        assert "\n" not in msg and "another --workdir" in msg, msg
        for field in fields:
            assert field in msg, (field, msg)
        assert msg.count(" -> ") == len(fields), msg  # nothing else is named
        assert train.Checkpointer(ckpt_dir).steps() == [10]  # nothing was touched
    # fields that decide only what is logged, saved or shown may change: the run resumes
    free = small_config(
        num_steps=10,
        decay="linear",
        log_every=2,
        checkpoint_every=3,
        keep_checkpoints=1,
        progress=True,
    )
    res = train.train(
        model, batches, free, workdir, fingerprint=run_fingerprint(free, model, data={"n": 1})
    )
    assert res.summary["resumed_from"] == 10


def test_checkpoint_without_fingerprint_is_refused(tmp_path):
    from anatomy.fingerprint import FingerprintMismatchError

    model, config = bigram_model(), small_config(num_steps=10)
    state = train.create_state(model.init(jax.random.key(0)), train.make_optimizer(config))
    train.Checkpointer(os.path.join(tmp_path, "checkpoints")).save(
        state._replace(step=jnp.int32(5)),
        {"seed": 0, "data_position": 5, "train_seconds": 0.0, "tokens": 0.0, "last_metrics": {}},
    )
    with pytest.raises(FingerprintMismatchError, match="no fingerprint"):
        train.train(model, batches, config, str(tmp_path))


TIMING = ("wall_time", "tokens_per_second", "valid_seconds")


@pytest.mark.slow
def test_validation_is_recorded_and_leaves_training_unchanged(tmp_path):
    """eval_every adds finite valid_* scalars to the log records at its steps and the end; the
    parameters and every training number are exactly those of a run without validation."""
    model = bigram_model()
    held_out = [batch_at(10_000 + j) for j in range(3)]  # batches training never sees
    evaluate = train.make_validate(train.compile_eval_step(train.make_eval_step(model)), held_out)
    on = train.train(
        model,
        batches,
        small_config(num_steps=22, eval_every=10),
        str(tmp_path / "on"),
        evaluate=evaluate,
    )
    off = train.train(model, batches, small_config(num_steps=22), str(tmp_path / "off"))
    jax.tree.map(np.testing.assert_array_equal, on.state.params, off.state.params)
    recs_on, recs_off = (
        train.read_metrics(str(tmp_path / "on")),
        train.read_metrics(str(tmp_path / "off")),
    )
    valid = [r for r in recs_on if "valid_loss" in r]
    assert [r["step"] for r in valid] == [10, 20, 22]
    for r in valid:
        assert (
            np.isfinite(r["valid_loss"]) and r["valid_loss"] > 0 and 0 <= r["valid_accuracy"] <= 1
        )
        assert r["valid_tokens"] == sum(float((b["tgt_out"] != 0).sum()) for b in held_out)
    strip = lambda r: {k: v for k, v in r.items() if k not in TIMING and not k.startswith("valid_")}
    assert [strip(r) for r in recs_on] == [strip(r) for r in recs_off]
    # the same numbers as the obvious twin: one unjitted eval_step per batch, token-weighted
    step = train.make_eval_step(model)
    got = [step(on.state.params, b) for b in held_out]
    n = np.array([float(m["tokens"]) for m in got])
    want = float(np.sum(n * [float(m["nll"]) for m in got]) / n.sum())
    np.testing.assert_allclose(evaluate(on.state)["valid_loss"], want, rtol=1e-5)
    np.testing.assert_allclose(valid[-1]["valid_loss"], want, rtol=1e-5)
    with pytest.raises(ValueError, match="multiple of train.log_every"):
        train.train(
            model,
            batches,
            small_config(num_steps=22, eval_every=7),
            str(tmp_path / "bad"),
            evaluate=evaluate,
        )


# ---------------------------------------------------------------------------- NaN guard, corrupt


@pytest.fixture(scope="module")
def nan_run(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("nan"))
    with pytest.raises(train.NonFiniteLossError) as err:
        train.train(bigram_model(), lambda s: batches(s, nan_step=24), small_config(), workdir)
    return workdir, str(err.value)


@pytest.mark.slow
def test_nan_stops_run_and_names_step_and_checkpoint(nan_run):
    workdir, msg = nan_run
    ckpt = train.Checkpointer(os.path.join(workdir, "checkpoints"))
    assert "step 25" in msg and ckpt.path(20) in msg, msg  # batch 24 is the 25th step
    assert ckpt.steps() == [10, 20]  # nothing written at 25 or later
    like = train.create_state(
        bigram_model().init(jax.random.key(0)), train.make_optimizer(small_config())
    )
    for s in ckpt.steps():
        state, _ = ckpt.restore(like, s)
        assert train.all_finite(state)


def test_checkpointer_refuses_non_finite_params(tmp_path):
    tx = train.make_optimizer(small_config())
    params = bigram_model().init(jax.random.key(0))
    state = train.create_state(params, tx)._replace(step=jnp.int32(7))
    bad = state._replace(params=jax.tree.map(lambda x: x.at[0].set(jnp.inf), params))
    ckpt = train.Checkpointer(str(tmp_path / "ck"))
    with pytest.raises(train.NonFiniteStateError, match="NaN/Inf"):
        ckpt.save(bad, {})
    assert ckpt.steps() == []
    ckpt.save(state, {"x": 1})
    assert ckpt.steps() == [7]


def test_corrupt_checkpoint_is_named_and_others_survive(nan_run, tmp_path):
    import shutil

    workdir = str(tmp_path / "w")
    shutil.copytree(nan_run[0], workdir)
    ckpt_dir = os.path.join(workdir, "checkpoints")
    bad = os.path.join(ckpt_dir, "20")
    for root, _, files in os.walk(os.path.join(bad, "state")):
        for f in files:
            with open(os.path.join(root, f), "wb") as fh:
                fh.write(b"garbage")
    with pytest.raises(train.CorruptCheckpointError, match=bad):
        train.train(bigram_model(), batches, small_config(), workdir)
    ckpt = train.Checkpointer(ckpt_dir)
    assert ckpt.steps() == [10, 20] and os.path.isdir(bad)
    like = train.create_state(
        bigram_model().init(jax.random.key(0)), train.make_optimizer(small_config())
    )
    assert int(ckpt.restore(like, 10)[0].step) == 10


# ---------------------------------------------------------------------------- SIGKILL + resume

KILL_STEPS = 60


def _child(workdir, delay):
    """Entry point of the subprocess in test_resume_after_sigkill_matches_uninterrupted."""
    c = small_config(num_steps=KILL_STEPS, progress=True)
    train.train(bigram_model(), lambda s: batches(s, delay=delay), c, workdir)


@pytest.mark.slow
def test_resume_after_sigkill_matches_uninterrupted(tmp_path):
    killed = str(tmp_path / "killed")
    code = (
        "import sys; sys.path[:0] = [{here!r}, {tests!r}]; import test_train; "
        "test_train._child({wd!r}, {delay})"
    )
    # on the 8 fake devices of this process's reference run: a data-parallel checkpoint, resumed
    env = dict(FAKE_DEVICES_ENV, PYTHONPATH=ROOT)
    cmd = lambda delay: [
        sys.executable,
        "-c",
        code.format(
            here=os.path.dirname(os.path.abspath(__file__)),
            tests=os.path.join(ROOT, "tests"),
            wd=killed,
            delay=delay,
        ),
    ]
    proc = subprocess.Popen(cmd(0.05), cwd=ROOT, env=env, stderr=subprocess.PIPE)
    first = os.path.join(killed, "checkpoints", "10")
    deadline = time.time() + 120
    while not os.path.isdir(first) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]
    ckpt = train.Checkpointer(os.path.join(killed, "checkpoints"))
    assert KILL_STEPS not in ckpt.steps()  # it really was interrupted
    out = subprocess.run(cmd(0.0), cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "resumed from" in out.stderr
    ref = train.train(
        bigram_model(), batches, small_config(num_steps=KILL_STEPS), str(tmp_path / "ref")
    )
    like = train.create_state(
        bigram_model().init(jax.random.key(0)), train.make_optimizer(small_config())
    )
    resumed, _ = train.Checkpointer(os.path.join(killed, "checkpoints")).restore(like)
    assert int(resumed.step) == KILL_STEPS
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=0, atol=1e-6),
        resumed.params,
        ref.state.params,
    )
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=0, atol=1e-6),
        resumed.opt_state,
        ref.state.opt_state,
    )
