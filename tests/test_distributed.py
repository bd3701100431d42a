"""Multi-process training on JAX's distributed runtime, checked against one process.

The main test starts 2 processes on 127.0.0.1 (2 CPU devices each, gloo collectives, the
coordinator given by the JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID
environment variables). They train a tiny Transformer for 3 steps on a (data 2, model 2) mesh,
each process feeding only its own rows of every batch, save and restore an orbax checkpoint
across processes, and must match a one-device run: the same losses and parameters.
This file is also the worker: `python tests/test_distributed.py OUTDIR`.
"""
import json
import os
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from anatomy import distributed
from anatomy import sharding as sh

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIG = dict(d_model=32, n_heads=4, d_ff=64, n_encoder_layers=1, n_decoder_layers=1,
              dropout_rate=0.1)
VOCAB, B, S, T, STEPS, PROCESSES = 20, 8, 6, 5, 3, 2


def make_batch(k):
    """Batch k: B random sentence pairs (never zeros), ragged lengths, same on every process."""
    r = np.random.default_rng(1000 + k)
    src_len, tgt_len = r.integers(2, S + 1, B).astype(np.int32), r.integers(2, T + 1, B).astype(np.int32)
    src = np.where(np.arange(S) < src_len[:, None], r.integers(4, VOCAB, (B, S)), 0)
    tgt_out = np.where(np.arange(T) < tgt_len[:, None], r.integers(4, VOCAB, (B, T)), 0)
    tgt_in = np.concatenate([np.ones((B, 1), np.int64), tgt_out[:, :-1]], axis=1)
    return {"src": src.astype(np.int32), "src_len": src_len, "tgt_in": tgt_in.astype(np.int32),
            "tgt_out": tgt_out.astype(np.int32), "tgt_len": tgt_len}


def setup():
    from anatomy.seq2seq import build_model
    return build_model("transformer", CONFIG, VOCAB, VOCAB), optax.sgd(0.5, momentum=0.9)


def flat(tree):
    return {jax.tree_util.keystr(p): np.asarray(x) for p, x in
            jax.tree_util.tree_flatten_with_path(tree)[0]}


def _all_finite_jitted(tree) -> bool:
    """anatomy.train.state.all_finite as ONE jitted computation.

    The eager per-leaf version can deadlock when leaves span processes (each eager op is a
    separate multi-process computation); until the train package adopts this, the worker
    patches it in so that the real Checkpointer is what gets tested.
    """
    leaves = [x for x in jax.tree.leaves(tree) if jnp.issubdtype(x.dtype, jnp.inexact)]
    return bool(jax.jit(lambda ls: jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in ls])))(
        leaves)) if leaves else True


def worker(outdir):
    """One process of the 2-process job (see the module docstring)."""
    from anatomy.train import checkpoint
    from anatomy.train.checkpoint import Checkpointer
    checkpoint.all_finite = _all_finite_jitted
    info = distributed.initialize()
    assert info.count == PROCESSES and info.devices == 2 * info.local_devices, info
    model, tx = setup()
    mesh = sh.make_mesh((2, 2))
    state, step, _ = sh.setup_train(model, tx, mesh, key=jax.random.key(0))
    b_sh = sh.batch_sharding(mesh)
    rows = distributed.local_batches(lambda start: map(make_batch, range(start, STEPS)), b_sh)
    losses = []
    for k, local in enumerate(rows(0)):
        assert local["src"].shape[0] == B // PROCESSES  # only this process's rows
        state, metrics = step(state, local, jax.random.key(100 + k))
        losses.append(float(metrics["loss"]))
    ckpt = Checkpointer(os.path.join(outdir, "ckpt"), max_to_keep=1)
    ckpt.save(state, {"losses": losses})
    restored, meta = ckpt.restore(state)
    ckpt.close()
    same_sharding = all(a.sharding == b.sharding for a, b in
                        zip(jax.tree.leaves(restored), jax.tree.leaves(state)))
    params, back = distributed.to_host(state.params), distributed.to_host(restored.params)
    restored_equal = all(np.array_equal(a, b) for a, b in
                         zip(jax.tree.leaves(params), jax.tree.leaves(back)))
    local = distributed.local_copy(state.params)  # whole arrays on this host, for decoding
    restored_equal &= all(x.is_fully_addressable and np.array_equal(x, y) for x, y in
                          zip(jax.tree.leaves(local), jax.tree.leaves(params)))
    distributed.barrier("done")
    if distributed.is_coordinator():
        np.savez(os.path.join(outdir, "params.npz"), **flat(params))
        with open(os.path.join(outdir, "result.json"), "w") as f:
            json.dump({"losses": losses, "meta_losses": meta["losses"], "info": list(info),
                       "restored_equal": restored_equal, "same_sharding": same_sharding,
                       "rows": sh.row_slice(b_sh, B)}, f)


@pytest.fixture(scope="module")
def single_process():
    from anatomy.train.state import create_state
    from anatomy.train.step import compile_train_step, make_train_step
    model, tx = setup()
    state = create_state(model.init(jax.random.key(0)), tx)
    step = compile_train_step(make_train_step(model, tx))
    losses = []
    for k in range(STEPS):
        state, metrics = step(state, make_batch(k), jax.random.key(100 + k))
        losses.append(float(metrics["loss"]))
    return losses, flat(jax.device_get(state.params))


def test_two_processes_equal_one(tmp_path, single_process):
    import portpicker
    port = portpicker.pick_unused_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_"))}
    env.update(XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu",
               PYTHONPATH=str(ROOT), JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
               JAX_NUM_PROCESSES=str(PROCESSES))
    procs = [subprocess.Popen([sys.executable, __file__, str(tmp_path)], cwd=ROOT,
                              env=dict(env, JAX_PROCESS_ID=str(i)), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for i in range(PROCESSES)]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=300)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for i, p in enumerate(procs):
        assert p.returncode == 0, f"process {i} failed:\n{logs[i][-4000:]}"
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["info"] == [0, PROCESSES, 2, 4]
    assert result["rows"] == [0, B // PROCESSES]     # process 0 fed rows 0..3 only
    assert result["restored_equal"] and result["same_sharding"]
    assert result["meta_losses"] == result["losses"]
    losses, params = single_process
    np.testing.assert_allclose(result["losses"], losses, rtol=1e-5)
    got = np.load(tmp_path / "params.npz")
    assert sorted(got.files) == sorted(params)
    for name, want in params.items():
        np.testing.assert_allclose(got[name], want, rtol=2e-5, atol=2e-6, err_msg=name)


def test_settings_from_arguments_and_environment(monkeypatch):
    for var in ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID"):
        monkeypatch.delenv(var, raising=False)
    assert distributed.resolve_settings() == (None, None, None)
    assert distributed.resolve_settings("h:1", 4, 3) == ("h:1", 4, 3)
    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "10.0.0.1:1234")
    monkeypatch.setenv("JAX_NUM_PROCESSES", "2")
    monkeypatch.setenv("JAX_PROCESS_ID", "1")
    assert distributed.resolve_settings() == ("10.0.0.1:1234", 2, 1)
    assert distributed.resolve_settings(process_id=0) == ("10.0.0.1:1234", 2, 0)
    with pytest.raises(ValueError, match="process_id < num_processes"):
        distributed.resolve_settings(process_id=2)
    monkeypatch.setenv("JAX_NUM_PROCESSES", "two")
    with pytest.raises(ValueError, match="not an integer"):
        distributed.resolve_settings()
    monkeypatch.delenv("JAX_NUM_PROCESSES")
    with pytest.raises(ValueError, match=r"incomplete: \['num_processes'\]"):
        distributed.resolve_settings()


def test_single_process_is_a_no_op_and_sees_every_row(monkeypatch):
    for var in ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID"):
        monkeypatch.delenv(var, raising=False)
    info = distributed.initialize()
    assert info == (0, 1, jax.local_device_count(), jax.device_count())
    assert distributed.is_coordinator()
    b_sh = sh.batch_sharding(sh.make_mesh((4, 2)))
    batch = make_batch(0)
    local = next(distributed.local_batches(lambda s: iter([batch]), b_sh)(0))
    np.testing.assert_array_equal(local["src"], batch["src"])
    placed = sh.shard_batch(batch, b_sh)
    copy = distributed.local_copy(placed)
    assert copy["src"].sharding.device_set == {jax.local_devices()[0]}
    np.testing.assert_array_equal(distributed.to_host(placed)["tgt_in"], batch["tgt_in"])
    # as process 1 of a job whose data axis spans processes, rows would be a contiguous block
    assert sh.row_slice(b_sh, 8, process=0) == (0, 8)


if __name__ == "__main__":
    worker(sys.argv[1])
