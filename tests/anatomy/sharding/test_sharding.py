"""Meshes, logical-axis rules and placement, on the suite's 8 fake CPU devices.

The layer-level checks run an encoder layer and an LSTM scan with tensor-parallel
parameters and data-parallel inputs, against the same functions on one device.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import PartitionSpec as P

from anatomy import sharding as sh
from anatomy.attention import encoder_layer, init_encoder_layer, padding_mask
from anatomy.axes import declare, is_axes
from anatomy.layers import FFN_AXES, OUT_AXES, init_dense, init_embedding
from anatomy.mixers import get_cell
from anatomy.scan import run
from anatomy.train.sharded import shard_eval_step


def test_resolve_shape_fills_minus_one():
    assert sh.resolve_shape((-1, 2), 8) == (4, 2)
    assert sh.resolve_shape((1, -1), 8) == (1, 8)
    assert sh.resolve_shape((2, 4), 8) == (2, 4)


@pytest.mark.parametrize(
    "shape, words",
    [
        ((4, 4), "needs 16"),
        ((-1, 3), "not divisible"),
        ((-1, -1), "at most one"),
        ((0, 8), "positive"),
        ((3, 2), "needs 6"),
    ],
)
def test_mesh_that_does_not_fit_is_a_clear_error(shape, words):
    with pytest.raises(ValueError, match=words):
        sh.make_mesh(shape, ("data", "model"))


def test_mesh_from_config_and_axis_errors():
    cfg = sh.default_config()
    cfg.mesh_shape = (-1, 2)
    mesh = sh.mesh_from_config(cfg)
    assert dict(mesh.shape) == {"data": 4, "model": 2} and mesh.size == jax.device_count()
    with pytest.raises(ValueError, match="differ in length"):
        sh.make_mesh((8,), ("data", "model"))
    with pytest.raises(ValueError, match="distinct"):
        sh.make_mesh((4, 2), ("data", "data"))
    with pytest.raises(ValueError, match="not in the mesh"):
        sh.logical_to_spec(("batch",), (8,), mesh, (("batch", "fsdp"),))


def _layers_tree(key, extra=None):
    k = jax.random.split(key, 5)
    tree = {
        "enc": init_encoder_layer(k[0], 16, 4, 32),
        "lstm": get_cell("lstm").init(k[1], 8, 16),
        "gru": get_cell("gru").init(k[2], 8, 16),
        "src_emb": init_embedding(k[3], 11, 16),
        "out": init_dense(k[4], 16, 11, axes=OUT_AXES),
    }
    return dict(tree, **(extra or {}))


def test_inits_declare_their_parameters_axes():
    ax = sh.logical_axes(_layers_tree, jax.random.key(0))
    assert jax.tree.structure(ax, is_leaf=is_axes) == jax.tree.structure(
        jax.eval_shape(_layers_tree, jax.random.key(0))
    )
    assert ax["enc"]["self_attn"]["w_q"] == ("embed", "heads", "head_dim")
    assert ax["enc"]["self_attn"]["w_o"] == ("heads", "head_dim", "embed")
    assert ax["enc"]["ffn"]["w1"] == ("embed", "mlp") and ax["enc"]["ffn"]["w2"] == ("mlp", "embed")
    assert ax["enc"]["ln1"]["scale"] == ("embed",)
    assert ax["lstm"]["w_x"] == (None, "hidden") and ax["lstm"]["w_h"] == (None, "hidden")
    assert ax["gru"]["b_h"] == ("hidden",)
    assert ax["src_emb"] == ("vocab", "embed") and ax["out"]["w"] == ("embed", "vocab")
    assert ax["out"]["b"] == ("vocab",)
    mesh = sh.make_mesh((2, 4))
    specs = sh.param_specs(jax.eval_shape(_layers_tree, jax.random.key(0)), mesh, axes=ax)
    assert specs["enc"]["self_attn"]["w_q"] == P(None, "model")
    assert specs["enc"]["ffn"]["b1"] == P("model")
    assert specs["lstm"]["w_h"] == P(None, "model")
    assert specs["src_emb"] == P()


def test_an_undeclared_or_misdeclared_parameter_is_an_error_naming_it():
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=r"\['mystery'\] \(shape \(3, 5\)\) has no declared"):
        sh.logical_axes(lambda k: _layers_tree(k, {"mystery": jnp.ones((3, 5))}), key)
    # arithmetic on a declared array makes a new, undeclared one
    with pytest.raises(ValueError, match=r"\['lstm'\]\['w_h'\] .*no declared"):
        sh.logical_axes(
            lambda k: {"lstm": dict(get_cell("lstm").init(k, 4, 4), w_h=jnp.ones((4, 16)) * 2)}, key
        )
    with pytest.raises(ValueError, match=r"\['w_x'\] has shape \(3,\) but 2 logical axes"):
        declare({"w_x": jnp.ones(3)}, {"w_x": (None, "hidden")})
    with pytest.raises(ValueError, match=r"\['w_y'\] has no logical axes"):
        declare({"w_x": jnp.ones(3), "w_y": jnp.ones(3)}, {"w_x": ("hidden",)})
    shapes = jax.eval_shape(_layers_tree, key)
    ax = sh.logical_axes(_layers_tree, key)
    ax["lstm"]["b"] = (None, "hidden")
    with pytest.raises(ValueError, match=r"\['lstm'\]\['b'\] has shape \(64,\) but"):
        sh.param_specs(shapes, sh.make_mesh((2, 4)), axes=ax)
    del ax["lstm"]
    with pytest.raises(ValueError, match="do not match the parameters' structure"):
        sh.param_specs(shapes, sh.make_mesh((2, 4)), axes=ax)


def test_logical_to_spec_divisibility_reuse_and_size_one_axes():
    mesh = sh.make_mesh((2, 4))
    rules = sh.DEFAULT_RULES + (("embed2", "model"),)
    assert sh.logical_to_spec(("embed", "heads", "head_dim"), (16, 6, 4), mesh, rules) == P()
    assert sh.logical_to_spec(("mlp", "embed2"), (8, 8), mesh, rules) == P("model")
    assert sh.logical_to_spec(("batch", "mlp"), (6, 8), mesh, rules) == P("data", "model")
    with pytest.raises(ValueError, match="does not divide"):
        sh.logical_to_spec(("batch",), (5,), mesh, rules, strict=True)
    assert sh.logical_to_spec(("mlp",), (8,), sh.make_mesh((8, 1)), rules) == P()
    with pytest.raises(ValueError, match="not a"):
        sh.logical_to_spec(("mlp",), (8,), mesh, (("mlp",),))


def test_optimizer_state_mirrors_params():
    mesh = sh.make_mesh((2, 4))
    params = {
        "ffn": {
            "w1": jnp.ones((4, 8)),
            "b1": jnp.ones(8),
            "w2": jnp.ones((8, 4)),
            "b2": jnp.ones(4),
        }
    }
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))
    state = {"params": params, "opt": tx.init(params), "step": jnp.zeros((), jnp.int32)}
    placed, s_sh = sh.place_state(state, params, mesh, axes={"ffn": dict(FFN_AXES)})
    specs = sh.tree_specs(placed)
    adam = specs["opt"][1][0]
    assert adam.mu["ffn"]["w1"] == P(None, "model") and adam.nu["ffn"]["w2"] == P("model")
    assert adam.count == P() and specs["step"] == P()
    assert specs["params"]["ffn"]["b1"] == P("model")
    np.testing.assert_array_equal(placed["params"]["ffn"]["w1"], params["ffn"]["w1"])


def test_batch_that_does_not_divide_over_data_is_an_error_before_compiling():
    mesh = sh.make_mesh((4, 2))
    b_sh = sh.batch_sharding(mesh)
    bad = {"src": np.ones((6, 5), np.int32)}
    calls = []
    step = shard_eval_step(
        lambda p, b: calls.append(1) or jnp.sum(b["src"]), mesh, sh.replicated(mesh), b_sh
    )
    with pytest.raises(ValueError, match="size 6 does not divide over mesh axis .'data',. of 4"):
        step({}, bad)
    assert not calls  # never traced
    good = sh.shard_batch({"src": np.arange(40, dtype=np.int32).reshape(8, 5)}, b_sh)
    assert good["src"].sharding.spec == P("data") and good["src"].shape == (8, 5)
    assert sh.row_slice(b_sh, 8) == (0, 8)  # one process holds every row
    with pytest.raises(ValueError, match="not in the mesh"):
        sh.batch_sharding(mesh, (("batch", "replica"),))


@pytest.fixture(scope="module")
def layer_inputs():
    r = np.random.default_rng(0)
    params = {
        "enc": init_encoder_layer(jax.random.key(0), 16, 4, 32),
        "lstm": get_cell("lstm").init(jax.random.key(1), 16, 8),
    }
    # off the init (zero biases, unit LN scales), so a misplaced bias or scale shows
    params = jax.tree.map(lambda p: p + jnp.asarray(0.1 * r.normal(size=p.shape), p.dtype), params)
    x = jnp.asarray(r.normal(size=(8, 5, 16)), jnp.float32)
    lengths = jnp.asarray(r.integers(1, 6, size=8), jnp.int32)
    reference = jax.jit(jax.value_and_grad(_layers_loss, has_aux=True))(params, x, lengths)
    return params, x, lengths, reference


def _layers_loss(params, x, lengths):
    y = encoder_layer(params["enc"], x, padding_mask(lengths, x.shape[1]))  # [b, t, m]
    _, hs = run(get_cell("lstm"), params["lstm"], y, lengths=lengths)  # [b, t, H]
    return jnp.mean(hs**2), hs


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(2, 4)])
def test_layers_sharded_equal_single_device(layer_inputs, shape):
    params, x, lengths, ((l0, h0), g0) = layer_inputs
    fn = jax.value_and_grad(_layers_loss, has_aux=True)
    mesh = sh.make_mesh(shape)
    axes = sh.logical_axes(
        lambda k: {
            "enc": init_encoder_layer(k, 16, 4, 32),
            "lstm": get_cell("lstm").init(k, 16, 8),
        },
        jax.random.key(0),
    )
    p_sh = sh.param_shardings(params, mesh, axes=axes)
    assert p_sh["lstm"]["w_h"].spec == P(None, "model")
    b_sh = sh.batch_sharding(mesh)
    with jax.set_mesh(mesh):
        (l1, h1), g1 = jax.jit(
            fn, in_shardings=(p_sh, b_sh, b_sh), out_shardings=((sh.replicated(mesh), b_sh), p_sh)
        )(sh.place(params, p_sh), x, lengths)
    assert g1["lstm"]["w_x"].sharding.spec == P(None, "model")
    np.testing.assert_allclose(l1, l0, rtol=1e-6)
    np.testing.assert_allclose(h1, h0, rtol=1e-5, atol=1e-6)
    for a, b in zip(jax.tree.leaves(g1), jax.tree.leaves(g0)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
