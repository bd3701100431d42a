"""The recurrent paths a translator can run (hoist x vjp) compute the same function.

anatomy/mixers/defaults.py picks, per backend, the fastest measured path; these tests hold every
path to the slow, obvious one (autodiff of the hoisted scan): scan.run(vjp='fused') against
scan.run(vjp='autodiff'), and whole translators (RNNenc, RNNsearch) built with each path:
the same loss, the same gradient for every parameter, the same greedy decoding.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rel

from anatomy.decode import greedy
from anatomy.errors import BadInputError
from anatomy.mixers import FUSED_CELLS, defaults, get_cell, resolve_path
from anatomy.mixers.cells import init_rnn
from anatomy.scan import run
from anatomy.seq2seq import build_model
from anatomy.train.losses import sequence_loss


def test_default_path_per_backend():
    for cell in FUSED_CELLS:
        assert defaults.default_path(cell, "cpu") == {"hoist": False, "vjp": "fused"}
    assert defaults.default_path("rnn", "cpu") == {"hoist": False, "vjp": "autodiff"}
    for backend in ("gpu", "tpu"):
        assert defaults.default_path("lstm", backend) == {"hoist": True, "vjp": "autodiff"}
    # explicit values win over the backend's defaults
    assert resolve_path("lstm", hoist=True, vjp="autodiff", backend="cpu") == (
        True,
        "autodiff",
    )
    assert resolve_path("lstm", hoist=None, vjp=None, backend="cpu") == (False, "fused")


def test_the_fused_rows_name_the_cells_with_a_fused_layer():
    """defaults.FUSED (the cells whose CPU row chooses the fused VJP) is the registry's."""
    assert defaults.FUSED == FUSED_CELLS


def test_a_nonsense_path_in_a_translator_config_is_a_bad_input_naming_it():
    with pytest.raises(BadInputError, match="rnnenc: vjp must be"):
        build_model("rnnenc", dict(vjp="magic"), 17, 17)
    with pytest.raises(BadInputError, match="rnnsearch: vjp='fused' exists for the cells"):
        build_model("rnnsearch", dict(cell="gru_paper", vjp="fused"), 17, 17)


@pytest.mark.slow
@pytest.mark.parametrize("cell", FUSED_CELLS)
def test_run_vjp_fused_equals_autodiff_and_rejects_what_it_cannot_do(cell):
    rng = np.random.default_rng(3)
    f = lambda *s: jnp.asarray(rng.normal(size=s), jnp.float32)
    p = get_cell(cell).init(jax.random.key(0), 5, 4)
    xs, g, lengths = f(3, 6, 5), f(3, 6, 4), jnp.asarray([6, 2, 4])

    def loss(params, x, vjp, hoist):
        final, ys = run(
            get_cell(cell), params, x, lengths=lengths, reverse=True, hoist=hoist, vjp=vjp
        )
        return jnp.vdot(ys, g) + sum(jnp.sum(leaf**2) for leaf in jax.tree.leaves(final))

    ref_v, ref_g = jax.value_and_grad(loss, (0, 1))(p, xs, "autodiff", True)
    for hoist in (True, False):
        v, gr = jax.value_and_grad(loss, (0, 1))(p, xs, "fused", hoist)
        assert abs(float(v) - float(ref_v)) < 1e-5 * abs(float(ref_v))
        for a, b in zip(jax.tree.leaves(gr), jax.tree.leaves(ref_g), strict=True):
            assert rel(a, b) < 1e-5
    with pytest.raises(ValueError, match="vjp must be"):
        run(get_cell(cell), p, xs, vjp="magic")
    with pytest.raises(ValueError, match="return_carries"):
        run(get_cell(cell), p, xs, vjp="fused", return_carries=True)
    rnn = init_rnn(jax.random.key(1), 5, 4)
    with pytest.raises(ValueError, match="vjp='fused' exists for the cells"):
        run(get_cell("rnn"), rnn, xs, vjp="fused")


def _batch(rng, b=4, s=7, t=6, v=17):
    src_len = np.array([7, 3, 5, 1])
    tgt_len = np.array([6, 2, 4, 3])
    src = np.where(np.arange(s) < src_len[:, None], rng.integers(4, v, (b, s)), 0)
    words = rng.integers(4, v, (b, t))
    tgt_in = np.where(np.arange(t) < tgt_len[:, None], words, 0)
    tgt_out = np.where(np.arange(t) < tgt_len[:, None], np.roll(words, -1, 1), 0)
    return {
        k: jnp.asarray(a, jnp.int32)
        for k, a in dict(src=src, src_len=src_len, tgt_in=tgt_in, tgt_out=tgt_out).items()
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rnnenc", "rnnsearch"])
def test_translators_give_the_same_loss_gradients_and_decoding_on_every_path(name):
    """The slow twin: hoisted autodiff; every other path within float rounding of it."""
    sizes = (
        dict(d_emb=8, d_hidden=12, reverse_source=True)
        if name == "rnnenc"
        else dict(d_emb=8, d_enc=6, d_dec=12, d_attn=10, d_readout=9)
    )
    batch = _batch(np.random.default_rng(5))

    def loss_and_grads(hoist, vjp):
        model = build_model(name, dict(sizes, hoist=hoist, vjp=vjp), 17, 17)
        params = model.init(jax.random.key(2))
        loss = lambda p: sequence_loss(model.apply(p, batch), batch, 0.1)[0]
        return model, params, jax.jit(jax.value_and_grad(loss))(params)

    def tokens(model, params):
        return np.asarray(greedy(model, params, batch["src"], batch["src_len"], max_len=8))

    ref_model, ref_params, (ref_loss, ref_grads) = loss_and_grads(True, "autodiff")
    ref_tokens = tokens(ref_model, ref_params)
    for hoist, vjp in ((False, "autodiff"), (True, "fused"), (False, "fused"), (None, None)):
        model, params, (value, grads) = loss_and_grads(hoist, vjp)
        assert abs(float(value) - float(ref_loss)) < 1e-5 * abs(float(ref_loss)), (hoist, vjp)
        for path, g in jax.tree_util.tree_leaves_with_path(grads):
            ref = ref_grads
            for k in path:
                ref = ref[k.key]
            assert rel(g, ref) < 1e-4, (hoist, vjp, jax.tree_util.keystr(path))
        np.testing.assert_array_equal(tokens(model, params), ref_tokens)
