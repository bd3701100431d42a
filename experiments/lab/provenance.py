"""What made a result: the commit, machine, versions and load a run records, and which
config (and preset) made it. Every results.json carries it under "provenance"; the report
names each source by it and the committed results in results/ keep it (experiments/lab/publish.py).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess

from anatomy.probes.timing import n_cores
from experiments.lab.jsonio import jsonable

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# launch.py saves the command line of a run in its workdir under this name: {"command",
# "experiment", "preset", "config", "overrides"} (translate reads it to say how to train more)
COMMAND_FILE = "command.json"


def _git(*args: str) -> str | None:
    """`git args...` in this checkout; None outside a git checkout or without git."""
    try:
        out = subprocess.run(["git", *args], cwd=_REPO, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def load_average() -> list[float] | None:
    """The 1, 5 and 15-minute load averages, or None where the OS has none."""
    try:
        return [float(v) for v in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def device_kind() -> str | None:
    """The accelerator this process computes on and how many, e.g. 'cpu x8', 'NVIDIA H200 x1'."""
    try:
        import jax

        devices = jax.devices()
        return f"{devices[0].device_kind} x{len(devices)}"
    except Exception:  # what ran the numbers is recorded, never a reason to stop
        return None


# x86 instruction-set levels XLA:CPU compiles for, widest first (/proc/cpuinfo flag names)
_ISA_LEVELS = (("avx512f", "AVX512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sse4_2", "SSE4_2"))


def _cap(flags: str) -> str | None:
    """The ISA an `--xla_cpu_max_isa=` in XLA_FLAGS caps XLA:CPU at (upper case), or None."""
    for part in flags.split():
        if part.startswith("--xla_cpu_max_isa="):
            return part.split("=", 1)[1].upper()
    return None


def cpu() -> dict:
    """The CPU the numbers were computed on: {'model', 'isa', 'host_isa', 'xla_flags'}: isa is
    the instruction set XLA:CPU compiled for (the host's widest, host_isa, unless XLA_FLAGS
    caps it with --xla_cpu_max_isa at a narrower one). XLA:CPU compiles
    for the host's instruction set (its widest vector unit, unless XLA_FLAGS caps it with
    --xla_cpu_max_isa), and the compiled program's float rounding follows it: the same
    config and seed give the same digits on the same ISA, and different digits after a few
    steps on another (measured: a Transformer's loss at step 25 differs in the 8th digit
    between AVX-512 and --xla_cpu_max_isa=AVX2, and by 0.08 nats of validation loss at step
    300). Not in the config's fingerprint: an ISA is where a run ran, not what it is."""
    model, flags = None, set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model is None:
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:  # not Linux: the platform string still says the architecture
        pass
    host = next((name for flag, name in _ISA_LEVELS if flag in flags), None)
    if model is None:
        model = platform.processor() or None
    xla_flags = os.environ.get("XLA_FLAGS", "")
    cap, order = _cap(xla_flags), [name for _, name in _ISA_LEVELS]
    isa = host
    if cap in order and (host is None or order.index(cap) > order.index(host)):
        isa = cap
    return {"model": model, "isa": isa, "host_isa": host, "xla_flags": xla_flags}


def isa_text(prov: dict | None) -> str:
    """'AVX512' (the instruction set a result's digits were computed with, from its
    provenance), or 'an unrecorded instruction set' for a run that did not record it."""
    c = (prov or {}).get("cpu") or {}
    return c.get("isa") or "an unrecorded instruction set"


def provenance(extra: dict | None = None) -> dict:
    """What made a result, recorded at the time it is made (no hostname, no user name).

    Returns {commit, dirty, cpus, platform, device_kind, versions, loadavg} plus `extra`:
      commit       `git rev-parse HEAD` of this checkout (None outside a git checkout)
      dirty        True when tracked files differ from that commit (None outside a checkout)
      cpus         cores this process may run on
      platform     OS and machine architecture, e.g. 'Linux-6.1-x86_64'
      cpu          the CPU's model and instruction set XLA compiles for, and XLA_FLAGS (cpu():
                   the same seed gives the same digits on the same ISA)
      device_kind  jax.devices()[0].device_kind, and the device count: 'cpu x8'
      versions     {'python', 'jax', 'jaxlib', 'flax', 'optax', 'numpy'} (None if missing)
      loadavg      the 1, 5, 15-minute load averages now (None where the OS has none)
    Call it before and after a run to bracket the load (`provenance()["loadavg"]`).
    """
    import importlib

    head = _git("rev-parse", "HEAD")
    commit = head.strip() if head else None
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    versions = {"python": platform.python_version()}
    for name in ("jax", "jaxlib", "flax", "optax", "numpy"):
        try:
            versions[name] = getattr(importlib.import_module(name), "__version__", None)
        except ImportError:
            versions[name] = None
    out = {
        "commit": commit,
        "dirty": None if status is None else bool(status.strip()),
        "cpus": n_cores(),
        "platform": f"{platform.system()}-{platform.release()}-{platform.machine()}",
        "cpu": cpu(),
        "device_kind": device_kind(),
        "versions": versions,
        "loadavg": load_average(),
    }
    out.update(extra or {})
    return out


def config_fingerprint(config) -> str:
    """A short hash of a config's values (config.to_dict() as results.json stores it: JSON,
    keys sorted, non-finite floats null): equal for equal configs, and for a config and the
    copy of it a results.json recorded."""
    import hashlib

    from anatomy.fingerprint import _plain

    text = json.dumps(jsonable(_plain(config)), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def preset_of(name: str, config) -> str:
    """The preset of experiments/configs/<name>.py that `config` equals: 'default' (no
    preset), a preset's name ('quick', ...), or 'custom' (overridden, or no such config)."""
    import importlib

    try:
        module = importlib.import_module(f"experiments.configs.{name}")
    except ImportError:
        return "custom"
    want = config_fingerprint(config)
    for preset in getattr(module, "PRESETS", ("", "quick")):
        try:
            if config_fingerprint(module.get_config(preset or None)) == want:
                return preset or "default"
        except (ValueError, KeyError):  # a preset list that names one get_config refuses
            continue
    return "custom"


def run_provenance(name: str, config, started: dict, t0: float) -> dict:
    """What made a result, for results.json's "provenance": `started` (provenance() taken when
    the run began: commit, machine, versions, its loadavg the load before) plus the
    experiment's name, its preset (preset_of), config_fingerprint, loadavg_after and
    wall_seconds (since t0, a time.time())."""
    import time

    return dict(
        started,
        experiment=name,
        preset=preset_of(name, config),
        config_fingerprint=config_fingerprint(config),
        loadavg_after=load_average(),
        wall_seconds=time.time() - t0,
    )


def cpu_text(c: dict | None) -> str:
    """', AMD EPYC (AVX512)': the CPU a run recorded, '' when it recorded none."""
    if not c:
        return ""
    caps = f", XLA_FLAGS {c['xla_flags']}" if c.get("xla_flags") else ""
    return f", {c.get('model') or 'CPU model not recorded'} ({c.get('isa') or 'ISA ?'}{caps})"


def provenance_line(p: dict | None) -> str:
    """One sentence of what a run recorded: commit, preset, cores, CPU, device, versions, load,
    time."""
    if not p:
        return "The run recorded no provenance."
    commit = (p.get("commit") or "no git checkout")[:12]
    dirty = " with uncommitted changes" if p.get("dirty") else ""
    versions = p.get("versions") or {}
    load = [x for x in (p.get("loadavg"), p.get("loadavg_after")) if x]
    parts = [
        f"commit {commit}{dirty}",
        f"preset {p['preset']}" if p.get("preset") else None,
        f"{p.get('cpus', '?')} cores, {p.get('device_kind') or 'device not recorded'}, "
        f"{p.get('platform', '?')}" + cpu_text(p.get("cpu")),
        ", ".join(f"{k} {v}" for k, v in versions.items() if k in ("jax", "flax", "optax") and v),
        "1-minute load average "
        + " before, ".join(f"{x[0]:.2f}" for x in load)
        + (" after" if len(load) == 2 else "")
        if load
        else None,
        f"{p['wall_seconds']:.0f} s" if isinstance(p.get("wall_seconds"), (int, float)) else None,
    ]
    return "Run: " + "; ".join(x for x in parts if x) + "."


def of_result(result: dict) -> dict:
    """The provenance a result's run recorded: results.json's own, or rnn_vs_attn's
    (under "setup"); {} where it recorded none."""
    return result.get("provenance") or (result.get("setup") or {}).get("provenance") or {}


def run_time(result: dict) -> str:
    """How long the run of a result took, in one phrase: '13.9 min (load 0.7)' from its wall
    clock and the 1-minute load when it started; for a run that recorded no wall clock (the
    older recipe_sweep grids), its table's training seconds summed, a lower bound ('≥ 98.1
    min of training; no wall clock recorded'); '—' where it recorded neither."""
    prov = of_result(result)
    if isinstance(prov.get("wall_seconds"), (int, float)):
        load = (prov.get("loadavg") or [float("nan")])[0]
        return f"{prov['wall_seconds'] / 60:.1f} min (load {load:.1f})"
    header, rows = result.get("header") or [], result.get("rows") or []
    if "train s" in header and rows:
        i = header.index("train s")
        seconds = sum(r[i] for r in rows if isinstance(r[i], (int, float)))
        return f"≥ {seconds / 60:.1f} min of training; no wall clock recorded"
    return "—"
