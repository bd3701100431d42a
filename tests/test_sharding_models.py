"""Sharded training equals single-device training, for the RNN and the Transformer translators.

On the suite's 8 fake CPU devices, meshes (data, model) = (8,1), (4,2), (1,8) (all data, both,
all model; (2,4) splits the same axes as (4,2) in other proportions, so it is left out): after
two steps of SGD with momentum the losses, the gradients (the momentum trace after step 1 is g)
and the parameters match one device within float32 rounding (sums are reordered across
devices). Not Adam here: it divides by sqrt(v), so a gradient that is zero in exact arithmetic
(e.g. a key bias, which softmax ignores) turns its rounding noise into a full-size step.
anatomy.train.train with anatomy.train.sharded.train_kwargs (Adam, clipping, checkpoints, resume) is
checked against one device in tests/test_distributed.py, on two processes.
"""

import jax
import numpy as np
import optax
import pytest

from anatomy import sharding as sh
from anatomy.seq2seq import build_model
from anatomy.train.sharded import setup_train, state_shardings
from anatomy.train.state import create_state
from anatomy.train.step import compile_train_step, make_train_step

MESHES = [(8, 1), (4, 2), (1, 8)]
CONFIGS = {
    "rnnsearch": dict(cell="lstm", d_emb=16, d_enc=16, d_dec=16, d_attn=16, d_readout=16),
    "transformer": dict(
        d_model=32, n_heads=8, d_ff=64, n_encoder_layers=1, n_decoder_layers=1, dropout_rate=0.1
    ),
}
VOCAB, B, S, T, STEPS = 24, 8, 7, 6, 2


def make_batches(seed=0):
    """STEPS random batches (never zeros), B x S sources and B x T targets, ragged lengths."""
    r = np.random.default_rng(seed)
    out = []
    for _ in range(STEPS):
        src_len = r.integers(2, S + 1, size=B).astype(np.int32)
        tgt_len = r.integers(2, T + 1, size=B).astype(np.int32)
        src = np.where(np.arange(S) < src_len[:, None], r.integers(4, VOCAB, (B, S)), 0)
        tgt = r.integers(4, VOCAB, (B, T))
        tgt_out = np.where(np.arange(T) < tgt_len[:, None], tgt, 0)
        tgt_in = np.concatenate([np.ones((B, 1), int), tgt_out[:, :-1]], axis=1)
        out.append(
            {
                "src": src.astype(np.int32),
                "src_len": src_len,
                "tgt_in": tgt_in.astype(np.int32),
                "tgt_out": tgt_out.astype(np.int32),
                "tgt_len": tgt_len,
            }
        )
    return out


def run_steps(step, state, batches):
    """(losses, gradients of step 1 (the momentum trace), final params) as numpy."""
    losses, mu1 = [], None
    for k, batch in enumerate(batches):
        state, metrics = step(state, batch, jax.random.key(100 + k))
        losses.append(float(metrics["loss"]))
        if k == 0:
            mu1 = _copy(state.opt_state[0].trace)  # a copy: the next step donates these buffers
    return np.array(losses), mu1, _copy(state.params)


def _copy(tree):
    return jax.tree.map(lambda x: np.array(x, copy=True), tree)


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def reference(request):
    name = request.param
    model = build_model(name, CONFIGS[name], VOCAB, VOCAB)
    tx = optax.sgd(0.5, momentum=0.9)
    batches = make_batches()
    params = model.init(jax.random.key(0))
    step = compile_train_step(make_train_step(model, tx), donate=False)
    return name, model, tx, batches, run_steps(step, create_state(params, tx), batches)


def _close(a, b, what):
    for (path, x), y in zip(jax.tree_util.tree_flatten_with_path(a)[0], jax.tree.leaves(b)):
        scale = max(float(np.max(np.abs(y))), 1e-3)
        np.testing.assert_allclose(
            x, y, rtol=2e-5, atol=2e-5 * scale, err_msg=f"{what} {jax.tree_util.keystr(path)}"
        )


@pytest.mark.parametrize("shape", MESHES)
def test_sharded_training_equals_single_device(reference, shape):
    name, model, tx, batches, (loss0, mu0, params0) = reference
    mesh = sh.make_mesh(shape)
    state, step, _ = setup_train(model, tx, mesh, key=jax.random.key(0))
    loss1, mu1, params1 = run_steps(step, state, batches)
    np.testing.assert_allclose(loss1, loss0, rtol=1e-5)
    _close(mu1, mu0, f"{name} {shape} gradient")
    _close(params1, params0, f"{name} {shape} params")


def test_tensor_parallel_layouts(reference):
    """On (2, 4) heads / FFN / recurrent gates are split over 'model', embeddings replicated."""
    name, model, tx, _, _ = reference
    _, p_sh = state_shardings(model, tx, sh.make_mesh((2, 4)))
    specs = jax.tree.map(lambda s: s.spec, p_sh)
    model_split = [
        p
        for p, s in jax.tree_util.tree_flatten_with_path(
            specs, is_leaf=lambda s: isinstance(s, jax.sharding.PartitionSpec)
        )[0]
        if "model" in s
    ]
    assert model_split, f"{name}: nothing is tensor-parallel"
    if name == "transformer":
        assert specs["encoder"][0]["self_attn"]["w_q"] == sh.logical_to_spec(
            ("embed", "heads", "head_dim"), (32, 8, 4), sh.make_mesh((2, 4)), sh.DEFAULT_RULES
        )
        assert "model" in specs["decoder"][0]["ffn"]["w1"]
    else:
        assert specs["decoder"]["w_h"] == jax.sharding.PartitionSpec(None, "model")
    assert specs["tgt_emb"] == jax.sharding.PartitionSpec()
