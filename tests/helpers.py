"""Helpers several test files share (test files import from here, never from each other)."""

import jax
import optax

import anatomy.data as data


def tsv_config(train_path, **fields):
    """data.default_config() for a user corpus read from the TSV file train_path, with fields."""
    config = data.default_config()
    config.update(dict(name="tsv", train_path=train_path, **fields))
    return config


def adam_fit(loss_fn, params, steps, lr):
    """Adam on loss_fn(params) -> scalar, all steps in one jit (one compilation).

    Returns (params after `steps` steps, their loss).
    """
    tx = optax.adam(lr)

    def run(params):
        def body(_, carry):
            params, opt = carry
            updates, opt = tx.update(jax.grad(loss_fn)(params), opt, params)
            return optax.apply_updates(params, updates), opt

        params, _ = jax.lax.fori_loop(0, steps, body, (params, tx.init(params)))
        return params, loss_fn(params)

    # Tiny models: XLA's backend optimisations cost more compile time than they save.
    compiled = jax.jit(run).lower(params).compile({"xla_backend_optimization_level": 0})
    return compiled(params)
