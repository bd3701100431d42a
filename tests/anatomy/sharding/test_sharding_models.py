"""The translators' contract, its sharded half: for every registered model, sharded training
equals single-device training (the other half, decoding and overfitting: test_seq2seq.py).

On the suite's 8 fake CPU devices, every model trains on the mesh (data, model) = (4, 2), which
splits both axes; RNNsearch and the Transformer, the chapter's two, also on (8, 1) (all data)
and (1, 8) (all model; (2,4) splits the same axes as (4,2) in other proportions, so it is left
out): after two steps of SGD with momentum the losses, the gradients (the momentum trace after
step 1 is g) and the parameters match one device within float32 rounding (sums are reordered
across devices). Not Adam here: it divides by sqrt(v), so a gradient that is zero in exact
arithmetic (e.g. a key bias, which softmax ignores) turns its rounding noise into a full-size
step. anatomy.train.train with anatomy.train.sharded.train_kwargs (Adam, clipping, checkpoints,
resume) is checked against one device in tests/anatomy/test_distributed.py, on two processes.
"""

import jax
import numpy as np
import optax
import pytest
from helpers import SHARD_VOCAB, TINY, assert_trees_close, run_steps, sharding_batches

from anatomy import sharding as sh
from anatomy.seq2seq import build_model, registry
from anatomy.train.sharded import setup_train, state_shardings
from anatomy.train.state import create_state
from anatomy.train.step import compile_train_step, make_train_step

# helpers.TINY with dropout on (its masks must be drawn alike on every mesh) and, for the
# Transformer, 8 heads (so that 'model' = 8 splits them)
CONFIGS = {name: dict(cfg) for name, cfg in TINY.items()}
CONFIGS["rnnsearch"] = dict(cell="lstm", d_emb=16, d_enc=16, d_dec=16, d_attn=16, d_readout=16)
CONFIGS["transformer"] = dict(
    d_model=32, n_heads=8, d_ff=64, n_encoder_layers=1, n_decoder_layers=1, dropout_rate=0.1
)
CONFIGS["convs2s"] = dict(TINY["convs2s"], dropout_rate=0.1)
CONFIGS["rnnenc_mixer"] = dict(
    mixer="mlstm", d_model=16, n_heads=4, form="quadratic"
)  # 4 heads: split
MESHES = {name: [(4, 2)] for name in CONFIGS}
MESHES["rnnsearch"] = MESHES["transformer"] = [(8, 1), (4, 2), (1, 8)]
CASES = [(name, shape) for name in sorted(CONFIGS) for shape in MESHES[name]]


def test_every_registered_model_is_in_the_contract():
    assert set(CONFIGS) == set(registry.names())


@pytest.fixture(scope="module")
def references():
    """{name: (model, tx, batches, one device's (losses, step-1 gradients, params))}, made
    when a test first asks for that model."""
    return {}


def reference(references, name):
    if name not in references:
        references[name] = _one_device(name)
    return references[name]


def _one_device(name):
    model = build_model(name, CONFIGS[name], SHARD_VOCAB, SHARD_VOCAB)
    tx = optax.sgd(0.5, momentum=0.9)
    batches = sharding_batches()
    params = model.init(jax.random.key(0))
    step = compile_train_step(make_train_step(model, tx), donate=False)
    return model, tx, batches, run_steps(step, create_state(params, tx), batches)


@pytest.mark.parametrize("name,shape", CASES)
def test_sharded_training_equals_single_device(references, name, shape):
    model, tx, batches, (loss0, mu0, params0) = reference(references, name)
    mesh = sh.make_mesh(shape)
    state, step, _ = setup_train(model, tx, mesh, key=jax.random.key(0))
    loss1, mu1, params1 = run_steps(step, state, batches)
    np.testing.assert_allclose(loss1, loss0, rtol=1e-5)
    assert_trees_close(mu1, mu0, f"{name} {shape} gradient")
    assert_trees_close(params1, params0, f"{name} {shape} params")


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_tensor_parallel_layouts(name):
    """On (2, 4) heads / FFN / recurrent gates are split over 'model', embeddings replicated;
    ConvS2S declares no 'model' axis (its convolutions are data-parallel only)."""
    model = build_model(name, CONFIGS[name], SHARD_VOCAB, SHARD_VOCAB)
    _, p_sh = state_shardings(model, optax.sgd(0.5, momentum=0.9), sh.make_mesh((2, 4)))
    specs = jax.tree.map(lambda s: s.spec, p_sh)
    model_split = [
        p
        for p, s in jax.tree_util.tree_flatten_with_path(
            specs, is_leaf=lambda s: isinstance(s, jax.sharding.PartitionSpec)
        )[0]
        if "model" in s
    ]
    assert bool(model_split) == (name != "convs2s"), f"{name}: {model_split}"
    if name == "transformer":
        assert specs["encoder"][0]["self_attn"]["w_q"] == sh.logical_to_spec(
            ("embed", "heads", "head_dim"), (32, 8, 4), sh.make_mesh((2, 4)), sh.DEFAULT_RULES
        )
        assert "model" in specs["decoder"][0]["ffn"]["w1"]
    elif name == "rnnenc_mixer":
        assert "model" in specs["decoder"]["blocks"][0]["mixer"]["mix"]["w_q"]
    elif name != "convs2s":
        assert specs["decoder"]["w_h"] == jax.sharding.PartitionSpec(None, "model")
    assert specs["tgt_emb"] == jax.sharding.PartitionSpec()
