"""Elastic resume: a checkpoint written on one mesh restores on another and training continues
as if it had never stopped.

On the suite's 8 fake CPU devices: anatomy.train.train with anatomy.train.sharded.train_kwargs trains 2
steps on a (data 4, model 2) mesh and checkpoints; copies of that workdir resume to step 4 on
(8, 1) and on one device. Orbax restores every array straight into the new mesh's shardings.
Losses and parameters must equal an uninterrupted 4-step run on (4, 2) within float32 rounding
(sums over devices are reordered; rnnsearch has no zero-gradient bias for Adam to amplify, see
tests/anatomy/sharding/test_sharding_models.py).
"""

import shutil

import jax
import numpy as np
import pytest

from anatomy import sharding as sh
from anatomy import train
from anatomy.seq2seq import build_model
from anatomy.train.sharded import state_shardings, train_kwargs

CONFIG = dict(cell="lstm", d_emb=16, d_enc=16, d_dec=16, d_attn=16, d_readout=16, dropout_rate=0.1)
VOCAB, B, S, TGT, FIRST, STEPS = 20, 8, 6, 5, 2, 4


def batches(start):
    """Batch k: B random pairs (never zeros), ragged lengths; a pure function of k."""
    k = start
    while True:
        r = np.random.default_rng(500 + k)
        src_len, tgt_len = r.integers(2, S + 1, B), r.integers(2, TGT + 1, B)
        src = np.where(np.arange(S) < src_len[:, None], r.integers(4, VOCAB, (B, S)), 0)
        tgt_out = np.where(np.arange(TGT) < tgt_len[:, None], r.integers(4, VOCAB, (B, TGT)), 0)
        tgt_in = np.concatenate([np.ones((B, 1), np.int64), tgt_out[:, :-1]], axis=1)
        yield {
            "src": src.astype(np.int32),
            "src_len": src_len.astype(np.int32),
            "tgt_in": tgt_in.astype(np.int32),
            "tgt_out": tgt_out.astype(np.int32),
            "tgt_len": tgt_len.astype(np.int32),
        }
        k += 1


def setup(num_steps):
    config = train.default_train_config()
    config.update(
        num_steps=num_steps,
        warmup_steps=1,
        decay="constant",
        log_every=1,
        checkpoint_every=FIRST,
        progress=False,
    )  # constant: num_steps may grow
    return build_model("rnnsearch", CONFIG, VOCAB, VOCAB), config


def kwargs_for(model, config, shape):
    if shape is None:
        return {}  # one device, the unsharded step
    mesh_config = sh.default_config()
    mesh_config.mesh_shape = shape
    return train_kwargs(model, config, mesh_config)


def losses(workdir):
    return {int(r["step"]): r["loss"] for r in train.read_metrics(str(workdir))}


def flat(tree):
    return {
        jax.tree_util.keystr(p): np.asarray(x)
        for p, x in jax.tree_util.tree_flatten_with_path(jax.device_get(tree))[0]
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The uninterrupted (4, 2) run and the (4, 2) workdir stopped at step FIRST."""
    model, config = setup(STEPS)
    ref_dir = tmp_path_factory.mktemp("uninterrupted")
    ref = train.train(model, batches, config, str(ref_dir), **kwargs_for(model, config, (4, 2)))
    model, first = setup(FIRST)
    stopped = tmp_path_factory.mktemp("stopped")
    train.train(model, batches, first, str(stopped), **kwargs_for(model, first, (4, 2)))
    return (losses(ref_dir), flat(ref.state.params)), stopped


@pytest.mark.parametrize("shape", [(8, 1), None], ids=["mesh8x1", "one_device"])
def test_resume_on_another_mesh_continues_the_run(runs, shape, tmp_path):
    (want_losses, want_params), stopped = runs
    workdir = tmp_path / "w"
    shutil.copytree(stopped, workdir)
    model, config = setup(STEPS)
    res = train.train(model, batches, config, str(workdir), **kwargs_for(model, config, shape))
    assert res.summary["resumed_from"] == FIRST and int(res.state.step) == STEPS
    if shape is not None:  # the state lives on the new mesh
        mesh_axes = {
            tuple(x.sharding.mesh.shape.values()) for x in jax.tree.leaves(res.state.params)
        }
        assert mesh_axes == {shape}
    got = losses(workdir)
    assert sorted(got) == list(range(1, STEPS + 1))
    np.testing.assert_allclose(
        [got[k] for k in range(1, STEPS + 1)],
        [want_losses[k] for k in range(1, STEPS + 1)],
        rtol=1e-5,
    )
    params = flat(res.state.params)
    assert sorted(params) == sorted(want_params)
    for name, want in want_params.items():
        scale = max(float(np.max(np.abs(want))), 1e-3)
        np.testing.assert_allclose(params[name], want, rtol=2e-5, atol=2e-5 * scale, err_msg=name)


def test_orbax_restores_into_the_target_shardings(runs):
    """Checkpointer.restore(shardings=...) puts each array where asked, bit for bit."""
    _, stopped = runs
    model, config = setup(STEPS)
    tx = train.make_optimizer(config)
    like = train.create_state(model.init(jax.random.key(0)), tx)
    ckpt = train.Checkpointer(str(stopped / "checkpoints"))
    saved, _ = ckpt.restore(like)  # onto like's device
    for shape in ((8, 1), (2, 4), (1, 1)):
        mesh = sh.make_mesh(shape, devices=jax.devices()[: shape[0] * shape[1]])
        s_sh, _ = state_shardings(model, tx, mesh)
        state, _ = ckpt.restore(like, shardings=s_sh)
        for x, s, y in zip(jax.tree.leaves(state), jax.tree.leaves(s_sh), jax.tree.leaves(saved)):
            assert x.sharding == s
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    ckpt.close()
