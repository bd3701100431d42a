"""The XLA compiler options programs are compiled with, defined once: a compiled program's
numbers can depend on them, so every experiment names them the same way.

    compiler_options(opt_level=None, fast=False)  a hashable tuple of (option, value) items
                                                  (compiled programs are cached by it)
    jit_options(options)                          what jax.jit(compiler_options=...) and
                                                  Lowered.compile(...) take: a dict, or None
                                                  for XLA's defaults
"""

# XLA:CPU's backend at optimisation level 0 and its older elemental emitters instead of the
# fusion emitters. Together they compile small programs about twice as fast and run them
# several times slower (measured on experiments/depth's quick preset); at larger sizes the
# fusion emitters compile faster, so only a run that is mostly compiling asks for this.
FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}


def compiler_options(opt_level=None, *, fast=False) -> tuple:
    """FAST_COMPILE when `fast`, else XLA's backend optimisation level `opt_level` (None:
    XLA's default, no option), as a hashable tuple of (option, value) items."""
    if fast:
        return tuple(FAST_COMPILE.items())
    return () if opt_level is None else (("xla_backend_optimization_level", int(opt_level)),)


def jit_options(options) -> dict | None:
    """compiler_options' items as jax.jit and Lowered.compile take them (None: none)."""
    return dict(options) or None
