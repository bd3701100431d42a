"""RNNenc with a mixer's state: what is its own (the registry's contract covers decoding and
padding): a mixer stack hands its state on exactly, the decoder gets nothing but that state,
and the state's bytes do not grow with the source."""

import jax
import numpy as np
import pytest

from anatomy import mixers as mx
from anatomy import stack as stack_mod
from anatomy.errors import BadInputError
from anatomy.seq2seq import build_model, rnnenc_mixer


@pytest.mark.slow
def test_a_stack_continued_from_its_states_equals_one_pass(rng):
    """[a; b] in one pass equals a (stopped at each row's length) then b from a's states:
    rows of a shorter than its width are padded with noise the state must not read."""
    layers = (mx.build_mixer("gated_deltanet", 8, n_heads=2, conv=3, form="sequential"),) * 2
    blocks = stack_mod.pre_ln_stack(layers, d_ff=12)
    params = stack_mod.init_stack(jax.random.key(0), blocks)
    lengths = np.array([5, 3])
    a = rng.normal(size=(2, 5, 8)).astype(np.float32)
    b = rng.normal(size=(2, 4, 8)).astype(np.float32)
    stack = jax.jit(lambda *a, **k: stack_mod.apply_stack(params, blocks, *a, **k),
                    static_argnames="return_states")  # fmt: skip
    _, states = stack(a, lengths=lengths, return_states=True)
    cont = stack(b, states=states)
    for row, n in enumerate(lengths):
        whole = np.concatenate([a[row : row + 1, :n], b[row : row + 1]], axis=1)
        ref = stack(whole)[:, n:]
        np.testing.assert_allclose(cont[row : row + 1], ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(BadInputError, match="states"):
        stack_mod.apply_stack(params, blocks, b, states=states[:1])


def test_the_decoder_sees_the_source_only_through_the_state_and_its_bytes_are_fixed():
    cfg = dict(mixer="mlstm", d_model=16, n_heads=2, form="sequential")
    model = build_model("rnnenc_mixer", cfg, 30, 30)
    params = model.init(jax.random.key(0))
    for s in (4, 40):  # the memory has the same shape whatever the source length
        src = np.full((1, s), 5, np.int32)
        memory = jax.eval_shape(model.encode, params, src, np.array([s]))
        nbytes = sum(x.size * x.dtype.itemsize for x in jax.tree_util.tree_leaves(memory))
        assert nbytes == rnnenc_mixer.state_bytes(model.config)
    with pytest.raises(BadInputError, match="attention has no fixed state"):
        build_model("rnnenc_mixer", dict(cfg, mixer="attention"), 30, 30)
    with pytest.raises(BadInputError, match="unknown knobs \\['d_state'\\]"):
        build_model("rnnenc_mixer", dict(cfg, d_state=4), 30, 30)
