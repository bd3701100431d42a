"""Training steps as compiled programs: the stacks' step, and compiling any step for a mesh
from shapes alone (nothing is allocated or run on the mesh: only compiled and read).

    step = stack_step(loss, tx)                       # pure (state, batch, rng) -> (state, metrics)
    exe = compile_for_mesh(init, step, tx, batch_shapes, mesh)   # jax.stages.Compiled
    exe.as_text()                                     # the SPMD-partitioned HLO, per device

The shardings are anatomy's (anatomy.train.sharded.state_shardings: the parameters' logical
axes as their inits declare them, mapped by anatomy.sharding.DEFAULT_RULES; optimiser state
mirrors the parameters; batch rows over 'data'); the jit is anatomy's (compile_train_step,
with donation), so the program read is the one training would run.
"""

import types

import jax
import optax

from anatomy.sharding import DEFAULT_RULES, batch_sharding, replicated
from anatomy.train.sharded import state_shardings
from anatomy.train.state import TrainState, create_state
from anatomy.train.step import compile_train_step


def stack_step(loss, tx: optax.GradientTransformation):
    """A pure train step for loss(params, batch) -> scalar: value_and_grad, tx.update, apply."""

    def train_step(state: TrainState, batch, rng):
        del rng  # no dropout in the stacks
        value, grads = jax.value_and_grad(loss)(state.params, batch)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        return TrainState(params, opt_state, state.step + 1), {"loss": value}

    return train_step


def _abstract(shapes, shardings):
    return jax.tree.map(
        lambda s, sh: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh), shapes, shardings
    )


def compile_for_mesh(init, train_step, tx, batch_shapes: dict, mesh, rules=DEFAULT_RULES):
    """jax.stages.Compiled of train_step(state, batch, rng) for `mesh`, from shapes only.

    init(key) -> params (its layers declare logical axes); batch_shapes: {name:
    jax.ShapeDtypeStruct} of the GLOBAL batch (rows divisible by the data axis).
    """
    s_sh, _ = state_shardings(types.SimpleNamespace(init=init), tx, mesh, rules)
    shapes = jax.eval_shape(lambda k: create_state(init(k), tx), jax.random.key(0))
    b_sh = batch_sharding(mesh, rules)
    rep = replicated(mesh)
    jitted = compile_train_step(
        train_step, donate=True, in_shardings=(s_sh, b_sh, rep), out_shardings=(s_sh, rep)
    )
    batch = {
        k: jax.ShapeDtypeStruct(v.shape, v.dtype, sharding=b_sh) for k, v in batch_shapes.items()
    }
    key = jax.eval_shape(lambda: jax.random.key(0))
    rng = jax.ShapeDtypeStruct(key.shape, key.dtype, sharding=rep)
    with jax.set_mesh(mesh):
        return jitted.lower(_abstract(shapes, s_sh), batch, rng).compile()
