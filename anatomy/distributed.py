"""Many processes, one program: JAX's own distributed runtime, nothing home-made in between.

    info = initialize()            # flags / env vars / cluster auto-detection, or one process
    mesh = sharding.make_mesh((-1, 1))          # over every device of every process
    batches = local_batches(batches, sharding.batch_sharding(mesh))   # this process's rows

Every process runs the same launch.py. Where the coordinator, process count and process id
come from, first match wins:
    1. the arguments (launch.py's --coordinator_address / --num_processes / --process_id),
    2. the environment: JAX_COORDINATOR_ADDRESS (host:port of process 0), JAX_NUM_PROCESSES,
       JAX_PROCESS_ID (and JAX_LOCAL_DEVICE_IDS, read by JAX itself),
    3. auto=True: jax.distributed.initialize()'s cluster detection (Cloud TPU pod slices,
       SLURM, Open MPI, Kubernetes),
    4. otherwise a single process (nothing is initialised).
On CPU the cross-process collectives are gloo (jax_cpu_collectives_implementation).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterator
from typing import NamedTuple

import jax
import numpy as np

from anatomy.errors import BadInputError

ENV_COORDINATOR = "JAX_COORDINATOR_ADDRESS"
ENV_NUM_PROCESSES = "JAX_NUM_PROCESSES"
ENV_PROCESS_ID = "JAX_PROCESS_ID"


class ProcessInfo(NamedTuple):
    """index: this process (0 = coordinator); count: processes; local_devices / devices: counts."""

    index: int
    count: int
    local_devices: int
    devices: int


def process_info() -> ProcessInfo:
    """Where this process stands (works with or without initialize)."""
    return ProcessInfo(
        jax.process_index(), jax.process_count(), jax.local_device_count(), jax.device_count()
    )


def _env_int(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise BadInputError(f"environment variable {name}={value!r} is not an integer") from None


def resolve_settings(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
) -> tuple[str | None, int | None, int | None]:
    """(coordinator_address, num_processes, process_id) from the arguments, else the environment.

    ValueError when only some are given, or when process_id is outside [0, num_processes).
    """
    address = coordinator_address or os.environ.get(ENV_COORDINATOR) or None
    count = num_processes if num_processes is not None else _env_int(ENV_NUM_PROCESSES)
    pid = process_id if process_id is not None else _env_int(ENV_PROCESS_ID)
    given = {"coordinator_address": address, "num_processes": count, "process_id": pid}
    if any(v is not None for v in given.values()) and any(v is None for v in given.values()):
        missing = [k for k, v in given.items() if v is None]
        raise BadInputError(
            f"multi-process setup is incomplete: {missing} missing (flags or "
            f"{ENV_COORDINATOR} / {ENV_NUM_PROCESSES} / {ENV_PROCESS_ID}); "
            f"got {given}"
        )
    if count is not None and (count < 1 or not 0 <= pid < count):
        raise BadInputError(
            f"need num_processes >= 1 and 0 <= process_id < num_processes, "
            f"got num_processes={count}, process_id={pid}"
        )
    return address, count, pid


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    local_device_ids=None,
    auto: bool = False,
    timeout_s: int = 300,
) -> ProcessInfo:
    """Join the job with jax.distributed.initialize (see the module docstring for the sources).

    Call it first, before anything touches a device. Idempotent: a second call returns the
    current ProcessInfo. With nothing configured and auto=False it is a no-op (one process).
    """
    if jax.distributed.is_initialized():
        return process_info()
    address, count, pid = resolve_settings(coordinator_address, num_processes, process_id)
    if address is not None:
        jax.distributed.initialize(
            address, count, pid, local_device_ids=local_device_ids, initialization_timeout=timeout_s
        )
    elif auto:
        jax.distributed.initialize(
            local_device_ids=local_device_ids, initialization_timeout=timeout_s
        )
    return process_info()


def is_coordinator() -> bool:
    """True on process 0 (the one that writes reports and plots)."""
    return jax.process_index() == 0


def local_rows(batch: dict, sharding, process: int | None = None) -> dict:
    """This process's rows of a full host batch (every leaf [B, ...]), by the batch sharding.

    Deterministic: the rows are fixed by the mesh, so a run on P processes sees exactly the
    batch a single process sees. It reads the whole batch: loaders that can read a row range
    (a Batcher, see local_batches) read only anatomy.sharding.row_slice(sharding, B) instead.
    """
    from anatomy.sharding.place import row_slice

    leaves = jax.tree.leaves(batch)
    if not leaves:
        return batch
    start, stop = row_slice(sharding, int(np.shape(leaves[0])[0]), process)
    return jax.tree.map(lambda x: np.asarray(x)[start:stop], batch)


def local_batches(batches, sharding) -> Callable[[int], Iterator[dict]]:
    """A `batches(start)` factory (anatomy.train.train's) yielding this process's rows only.

    `batches` is either a Batcher (anything whose .iterate takes row_slice=): each process
    then reads and pads only its own rows of every batch, by the batcher's index arithmetic;
    or a plain `batches(start)` factory of full batches (or an object whose .iterate(start)
    is one), which every process builds whole and slices (local_rows). The rows are the same
    either way.
    """
    from anatomy.sharding.place import row_slice

    iterate = getattr(batches, "iterate", None)
    if iterate is None or "row_slice" not in inspect.signature(iterate).parameters:
        full = batches if iterate is None else iterate
        return lambda start: (local_rows(batch, sharding) for batch in full(start))
    slices = {}  # global rows per batch -> (lo, hi); one value per bucket shape

    def mine(global_rows: int) -> tuple[int, int]:
        if global_rows not in slices:
            slices[global_rows] = row_slice(sharding, global_rows)
        return slices[global_rows]

    return lambda start: batches.iterate(start, row_slice=mine)


def to_host(tree):
    """A full numpy copy of every leaf on every process (all-gathers sharded arrays)."""
    from jax.experimental import multihost_utils

    def get(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
                x = jax.random.key_data(x)
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return np.asarray(jax.device_get(x))

    return jax.tree.map(get, tree)


def local_copy(tree):
    """Every leaf as a whole array on this process's first device (e.g. params for decoding).

    Sharded training leaves arrays that span processes; decoding and BLEU are per-host work
    on small models, so gather once and run the unsharded jitted decoder on the copy.
    """
    return jax.device_put(to_host(tree), jax.local_devices()[0])


def barrier(name: str) -> None:
    """Wait until every process reaches `name` (no-op with one process)."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)
