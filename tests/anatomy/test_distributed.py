"""Multi-process training on JAX's distributed runtime, checked against one process.

The main test starts 2 processes on 127.0.0.1 (2 CPU devices each, gloo collectives, the
coordinator given by the JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID
environment variables). They run anatomy.train.train with anatomy.train.sharded.train_kwargs on a
(data 2, model 2) mesh, each process feeding only its own rows of every batch: 2 steps,
an orbax checkpoint written across processes, then a resumed run to step 3. The losses and
parameters must match one process training 3 steps on one device. The batches come from a
Batcher whose examples log every read: each process must have read exactly its own rows of
every batch, in order, and never another process's.
This file is also the worker: `python tests/anatomy/test_distributed.py OUTDIR`.
"""

import json
import os
import pathlib
import subprocess
import sys

import jax
import numpy as np
import pytest

from anatomy import distributed
from anatomy import sharding as sh
from anatomy.train.sharded import train_kwargs

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG = dict(cell="lstm", d_emb=16, d_enc=16, d_dec=16, d_attn=16, d_readout=16, dropout_rate=0.1)
VOCAB, B, S, T, STEPS, PROCESSES = 20, 8, 6, 5, 3, 2


class ReadLog(list):
    """Encoded pairs that record the index of every example read (pairs[i])."""

    def __init__(self, items):
        super().__init__(items)
        self.reads = []

    def __getitem__(self, i):
        if isinstance(i, (int, np.integer)):
            self.reads.append(int(i))
        return super().__getitem__(i)


def make_batcher():
    """A Batcher over 40 random pairs (never zeros): one bucket of length 8, B rows a batch."""
    from anatomy.data import Batcher

    r = np.random.default_rng(7)
    pairs = ReadLog(
        [
            (
                r.integers(4, VOCAB, r.integers(2, S + 1)).astype(np.int32),
                r.integers(4, VOCAB, r.integers(2, T)).astype(np.int32),
            )
            for _ in range(40)
        ]
    )
    batcher = Batcher(pairs, token_budget=8 * B, max_len=8, seed=3)
    assert batcher.shapes == [(B, 8)]
    pairs.reads.clear()  # construction reads every length; batches read rows
    return batcher


def rows_of_batch(batcher, k):
    """The example indices of batch k, in row order (the batcher's plan, nothing read)."""
    epoch, i = divmod(k, batcher.steps_per_epoch)
    return [int(x) for x in batcher._plan(epoch)[i][1]]


def setup(num_steps):
    from anatomy.seq2seq import build_model
    from anatomy.train import default_train_config

    config = default_train_config()
    config.update(
        num_steps=num_steps,
        warmup_steps=1,
        decay="constant",
        log_every=1,
        checkpoint_every=2,  # constant: the schedule must not depend on num_steps
        progress=False,
    )
    return build_model("rnnsearch", CONFIG, VOCAB, VOCAB), config


def flat(tree):
    return {
        jax.tree_util.keystr(p): np.asarray(x)
        for p, x in jax.tree_util.tree_flatten_with_path(tree)[0]
    }


def losses_by_step(workdir):
    """{step: loss} from metrics.jsonl (one line per step; process 0 writes it)."""
    from anatomy.train import read_metrics

    return {int(r["step"]): r["loss"] for r in read_metrics(str(workdir))}


def worker(outdir):
    """One process of the 2-process job (see the module docstring)."""
    from anatomy.train import train

    info = distributed.initialize()
    assert info.count == PROCESSES and info.devices == 2 * info.local_devices, info
    model, config = setup(num_steps=2)
    mesh_config = sh.default_config()
    mesh_config.mesh_shape = (2, 2)
    kwargs = train_kwargs(model, config, mesh_config)
    b_sh = sh.batch_sharding(sh.mesh_from_config(mesh_config))
    batcher = make_batcher()
    local_feed = distributed.local_batches(batcher, b_sh)  # reads only this process's rows
    shapes = []

    def rows(start):
        for batch in local_feed(start):
            shapes.append(batch["src"].shape[0])
            yield batch

    workdir = os.path.join(outdir, "run")
    first = train(model, rows, config, workdir, **kwargs).summary
    config.num_steps = STEPS
    result = train(model, rows, config, workdir, **kwargs)  # resumes from the checkpoint
    state = result.state
    params = distributed.to_host(state.params)
    local = distributed.local_copy(state.params)  # whole arrays on this host, for decoding
    copies_equal = all(
        x.is_fully_addressable and np.array_equal(x, y)
        for x, y in zip(jax.tree.leaves(local), jax.tree.leaves(params))
    )
    sharded = [str(x.sharding.spec) for x in jax.tree.leaves(state.params)]
    with open(os.path.join(outdir, f"reads{info.index}.json"), "w") as f:
        json.dump({"rows": sh.row_slice(b_sh, B), "reads": batcher.pairs.reads}, f)
    distributed.barrier("done")
    if distributed.is_coordinator():
        np.savez(os.path.join(outdir, "params.npz"), **flat(params))
        with open(os.path.join(outdir, "result.json"), "w") as f:
            json.dump(
                {
                    "info": list(info),
                    "rows": sh.row_slice(b_sh, B),
                    "shapes": shapes,
                    "first_steps": first["steps"],
                    "resumed_from": result.summary["resumed_from"],
                    "steps": result.summary["steps"],
                    "copies_equal": copies_equal,
                    "specs": sharded,
                },
                f,
            )


@pytest.fixture(scope="module")
def single_process(tmp_path_factory):
    from anatomy.train import train

    model, config = setup(num_steps=STEPS)
    workdir = tmp_path_factory.mktemp("one")
    state = train(model, make_batcher().iterate, config, str(workdir)).state
    return losses_by_step(workdir), flat(jax.device_get(state.params))


def test_two_processes_equal_one(tmp_path, single_process):
    import portpicker

    port = portpicker.pick_unused_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_"))}
    env.update(
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
        JAX_PLATFORMS="cpu",
        PYTHONPATH=str(ROOT),
        JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
        JAX_NUM_PROCESSES=str(PROCESSES),
    )
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, str(tmp_path)],
            cwd=ROOT,
            env=dict(env, JAX_PROCESS_ID=str(i)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(PROCESSES)
    ]
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
    assert result["rows"] == [0, B // PROCESSES]  # process 0 fed rows 0..3 only
    assert set(result["shapes"]) == {B // PROCESSES}
    assert (result["first_steps"], result["resumed_from"], result["steps"]) == (2, 2, STEPS)
    assert result["copies_equal"] and "P(None, 'model')" in result["specs"]
    # each process read exactly its rows of batches 0, 1 (first run) and 2 (resumed), in order
    batcher = make_batcher()
    seen = []
    for p in range(PROCESSES):
        got = json.loads((tmp_path / f"reads{p}.json").read_text())
        lo, hi = got["rows"]
        assert (lo, hi) == (p * B // PROCESSES, (p + 1) * B // PROCESSES)
        assert got["reads"] == [i for k in range(STEPS) for i in rows_of_batch(batcher, k)[lo:hi]]
        seen.append(got["reads"])
    assert sorted(seen[0] + seen[1]) == sorted(
        i for k in range(STEPS) for i in rows_of_batch(batcher, k)
    )
    losses, params = single_process
    got_losses = losses_by_step(tmp_path / "run")
    assert sorted(got_losses) == sorted(losses) == list(range(1, STEPS + 1))
    np.testing.assert_allclose(
        [got_losses[k] for k in sorted(losses)], [losses[k] for k in sorted(losses)], rtol=1e-5
    )
    got = np.load(tmp_path / "params.npz")
    assert sorted(got.files) == sorted(params)
    for name, want in params.items():
        scale = max(float(np.max(np.abs(want))), 1e-3)
        np.testing.assert_allclose(got[name], want, rtol=2e-5, atol=2e-5 * scale, err_msg=name)


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
    batch = make_batcher().batch_at(0)
    local = next(distributed.local_batches(lambda s: iter([batch]), b_sh)(0))
    np.testing.assert_array_equal(local["src"], batch["src"])
    placed = sh.shard_batch(batch, b_sh)
    copy = distributed.local_copy(placed)
    assert copy["src"].sharding.device_set == {jax.local_devices()[0]}
    np.testing.assert_array_equal(distributed.to_host(placed)["tgt_in"], batch["tgt_in"])
    # as process 1 of a job whose data axis spans processes, rows would be a contiguous block
    assert sh.row_slice(b_sh, 8, process=0) == (0, 8)


def test_a_process_reads_only_its_rows():
    """batch_at(k, row_slice) reads rows lo..hi-1 of batch k only, and equals batch k's slice."""
    batcher = make_batcher()
    log = batcher.pairs.reads
    for k in range(7):  # crosses an epoch (5 batches each)
        for lo, hi in ((0, B // 2), (B // 2, B), (3, 4)):
            log.clear()
            part = batcher.batch_at(k, row_slice=lambda rows, lo=lo, hi=hi: (lo, hi))
            assert log == rows_of_batch(batcher, k)[lo:hi]  # no other example was touched
            full = batcher.batch_at(k)
            for key, value in full.items():
                np.testing.assert_array_equal(part[key], value[lo:hi], err_msg=key)
    # through local_batches on one process: the whole batch, read once
    b_sh = sh.batch_sharding(sh.make_mesh((4, 2)))
    log.clear()
    got = next(distributed.local_batches(batcher, b_sh)(2))
    assert log == rows_of_batch(batcher, 2)
    np.testing.assert_array_equal(got["src"], batcher.batch_at(2)["src"])
    # a length curriculum passes the row slice on, in its phases and after them
    from anatomy.data.curriculum import Curriculum

    curriculum = Curriculum(batcher, ((3, 6),), token_budget=8 * B)
    for k in range(6):
        log.clear()
        part = curriculum.batch_at(k, row_slice=lambda rows: (2, 6))
        if k >= 3:
            assert log == rows_of_batch(batcher, k - 3)[2:6]
        for key, value in curriculum.batch_at(k).items():
            np.testing.assert_array_equal(part[key], value[2:6], err_msg=key)

    # a loader whose iterate cannot take a row slice (e.g. a wrapper) is sliced after reading
    class Whole:
        def iterate(self, start):
            return batcher.iterate(start)

    got = next(distributed.local_batches(Whole(), b_sh)(2))
    np.testing.assert_array_equal(got["tgt_out"], batcher.batch_at(2)["tgt_out"])


if __name__ == "__main__":
    worker(sys.argv[1])
