"""Compile a JAX program for a named GPU without a GPU (deviceless ahead-of-time compilation),
so that the cost model counts what XLA:GPU would run (its kernels, its bytes), not what XLA:CPU
runs on this machine.

    ok, why = available()                       # the CUDA plugin importable and usable here?
    text = compile_text(jax.jit(f), *abstract_args, target="H100 SXM")   # optimised HLO text

How: jax.experimental.topologies.get_topology_desc(platform='cuda', target_config=...) makes
compile-only devices from a GPU description (XLA's GpuTargetConfigProto: SM count, shared
memory, compute capability, ...), and jit(...).lower(args on those devices).compile() runs
XLA:GPU's whole pipeline (fusion, cuBLAS / Triton GEMM choices, scheduling, PTX) with no
device present. It needs the CUDA PJRT plugin (pip: jax-cuda12-plugin[with-cuda] and
jax-cuda12-pjrt at JAX's version), which anatomy does not install: installed beside the CPU
jaxlib it changes JAX's backend discovery, so it belongs in a separate virtualenv, e.g.

    python -m venv --system-site-packages VENV
    VENV/bin/pip install "jax-cuda12-plugin[with-cuda]==<jax version>" "jax-cuda12-pjrt==<...>"

and a caller runs the compilation in that interpreter (experiments/scaling/gpu_programs.py
does, in a subprocess). The plugin's CUDA version check calls cuInit, which fails without a
driver; JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 (set by `prepare_environment`) skips it, and the
compilation needs none of it (jax-ml/jax#23971 and #28376 are the open reports of the
deviceless path; with jax 0.10.2 it works as above).

What the program cannot tell: whether the runtime wraps kernels in CUDA graphs (command
buffers are formed at run time from the thunks), the launch latency, the rates achieved.
Those stay assumptions of the cost model (hardware.py), varied in its sensitivity.
"""

from __future__ import annotations

import os

from anatomy.errors import BadInputError

# GpuTargetConfigProto text of each named GPU: the fields XLA:GPU's compiler reads (the device
# description), the figures of XLA's own spec files xla/backends/gpu/target_config/specs/
# {h100_sxm,a100_sxm_80}.txtpb (NVIDIA's published SM counts, clocks, shared memory, L2 and
# bandwidth). Keys are anatomy.probes.hardware.ACCELERATORS names.
_DEVICE_INFO = {
    "H100 SXM": dict(
        shared_memory_per_core=233472,
        core_count=132,
        fpus_per_core=128,
        memory_bandwidth=3352320000000,
        l2_cache_size=52428800,
        clock_rate_ghz=1.98,
        device_memory_size=84942979072,
        shared_memory_per_block_optin=232448,
        major=9,
        description="NVIDIA H100 80GB HBM3",
    ),
    "A100 80GB": dict(
        shared_memory_per_core=167936,
        core_count=108,
        fpus_per_core=64,
        memory_bandwidth=2039040000000,
        l2_cache_size=41943040,
        clock_rate_ghz=1.41,
        device_memory_size=85100068864,
        shared_memory_per_block_optin=166912,
        major=8,
        description="NVIDIA A100-SXM4-80GB",
    ),
}
TARGETS = tuple(_DEVICE_INFO)
PLUGIN = "jax_plugins.xla_cuda12"  # the module the CUDA PJRT plugin installs


def target_config(target: str) -> str:
    """The GpuTargetConfigProto text of a named GPU (TARGETS); BadInputError naming them."""
    if target not in _DEVICE_INFO:
        raise BadInputError(f"no GPU target {target!r}; choose one of {list(TARGETS)}")
    i = _DEVICE_INFO[target]
    return f"""gpu_device_info {{
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_core: {i["shared_memory_per_core"]}
  threads_per_core_limit: 2048
  core_count: {i["core_count"]}
  fpus_per_core: {i["fpus_per_core"]}
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: {i["memory_bandwidth"]}
  l2_cache_size: {i["l2_cache_size"]}
  clock_rate_ghz: {i["clock_rate_ghz"]}
  device_memory_size: {i["device_memory_size"]}
  shared_memory_per_block_optin: {i["shared_memory_per_block_optin"]}
  cuda_compute_capability {{
    major: {i["major"]}
  }}
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
}}
platform_name: "CUDA"
dnn_version_info {{
  major: 9
  minor: 7
}}
runtime_version {{
  major: 12
  minor: 8
  patch: 0
}}
device_description_str: "{i["description"]}"
"""


def prepare_environment(env: dict | None = None) -> dict:
    """os.environ (or `env`) with what deviceless compilation needs set: the plugin's cuInit
    version check skipped (there is no driver to answer it). Set before JAX starts."""
    env = os.environ if env is None else env
    env["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
    return env


def plugin_installed() -> bool:
    """Whether this Python can import the CUDA PJRT plugin (without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec(PLUGIN) is not None
    except ModuleNotFoundError:  # not even its parent package, jax_plugins
        return False


def available() -> tuple[bool, str]:
    """(True, '') when this interpreter can compile for a GPU target; else (False, why: the
    plugin is not importable, or it cannot make a CUDA topology here)."""
    if not plugin_installed():
        return False, (
            f"{PLUGIN} is not importable in this Python: install jax-cuda12-plugin[with-cuda] "
            "and jax-cuda12-pjrt at JAX's version in a separate virtualenv "
            "(anatomy.probes.gpu_target's docstring) and compile there"
        )
    try:
        devices(TARGETS[0])
    except Exception as e:  # the plugin's own error, whatever it is, is the reason
        return False, (
            f"the CUDA plugin cannot make a {TARGETS[0]} topology here (was "
            f"JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 set before JAX started?): {e}"
        )
    return True, ""


def devices(target: str) -> list:
    """Compile-only devices of one named GPU (one device, topology 1x1x1)."""
    from jax.experimental import topologies

    return topologies.get_topology_desc(
        platform="cuda", target_config=target_config(target), topology="1x1x1"
    ).devices


def sharding(target: str):
    """A replicated NamedSharding over one compile-only device of `target`: give it to every
    abstract argument (jax.ShapeDtypeStruct(..., sharding=...)) so jit compiles for it."""
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(devices(target)[:1]), ("device",))
    return NamedSharding(mesh, PartitionSpec())


def on_target(tree, target_sharding):
    """Every array (or ShapeDtypeStruct) leaf of `tree` as a ShapeDtypeStruct on the target's
    compile-only device (key arrays keep their key dtype)."""
    import jax

    return jax.tree.map(
        lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=target_sharding), tree
    )


def compile_text(jitted, *args, target: str = "H100 SXM") -> str:
    """The optimised HLO text of jitted(*args) compiled by XLA:GPU for `target`; args are
    arrays or ShapeDtypeStructs (moved onto the target's compile-only device here)."""
    ok, why = available()
    if not ok:
        raise BadInputError(f"cannot compile for {target}: {why}")
    s = sharding(target)
    return jitted.lower(*on_target(args, s)).compile().as_text()
