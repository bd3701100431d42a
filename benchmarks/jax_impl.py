"""A JAX implementation of a layer case, with no torch anywhere on its import path (the
experiments that time only JAX programs, e.g. crossover, run where torch is not installed).

jax_impl(f, params, x, g): f(params, x) -> out; the passes 'fwd' (jitted forward) and
'fwdbwd' (jitted gradients of <out, g> w.r.t. the input and every parameter), and for each
pass of the very program timed: memory (XLA's temp + output bytes) and hlo (its optimised
HLO, which the probes read: serial steps, FLOPs with loop trips counted).
"""

import functools

import jax
import jax.numpy as jnp

from benchmarks.protocol import layer_impl


def jax_impl(f, params, x, g, note=""):
    """f(params, x) -> out. Jitted forward, and jitted grads of <out, g> w.r.t. (x, params)."""
    params, x, g = jax.device_put((params, x, g))  # NumPy -> device once, not per call
    fwd_j = jax.jit(f)
    grad_j = jax.jit(jax.grad(lambda x_, p_: jnp.vdot(f(p_, x_), g), argnums=(0, 1)))

    @jax.jit
    def fused_j(p_, x_):  # output and input gradient of <f, g> in one program
        out, vjp = jax.vjp(lambda z: f(p_, z), x_)
        return out, vjp(g)[0]

    def quick():
        out, dx = fused_j(params, x)
        return {"out": out, "dx": dx}

    @functools.cache
    def compiled(mode):  # the exact programs fwd / fwdbwd run, compiled once for both below
        return (fwd_j.lower(params, x) if mode == "fwd" else grad_j.lower(x, params)).compile()

    def memory(mode):
        from benchmarks.memory import compiled_bytes

        return compiled_bytes(compiled(mode))

    def hlo(mode):  # its optimised HLO, for the probes that read a compiled program
        return compiled(mode).as_text()

    return layer_impl(
        lambda: jax.block_until_ready(fwd_j(params, x)),
        lambda: jax.block_until_ready(grad_j(x, params)),
        note,
        quick=quick,
        memory=memory,
        hlo=hlo,
    )
