"""The structure of the training steps on a mesh of fake CPU devices: compiled, never run.

For each program spec {family, mode, n, layers}:
    family  lstm | lstm_autodiff | transformer (the stacks; lstm_autodiff: the LSTM stack with
            jax.lax.scan's own transpose instead of anatomy's fused VJP) | rnnenc | rnnsearch |
            translator_transformer (rnn_vs_attn's translators; n = sentence length)
    mode    dp (mesh data × model = devices × 1) | tp (1 × devices) | single (one device)
the train step is compiled for its mesh (programs.compile_for_mesh) and read from its
optimised HLO (per device): every collective (probes.collectives), the while loops' trip
counts and the serial steps (probes.cost), FLOPs / bytes / ops with loop trips restored
(probes.op_cost; XLA's own loop-once counts beside them), and the cost model's prediction on
each named accelerator (probes.roofline, bfloat16 and float32), and the critical path
(probes.depth). Wall time on fake devices is never measured.

XLA_FLAGS=--xla_force_host_platform_device_count must be set before JAX initialises, so the
programs are compiled in a subprocess (`python -m experiments.scaling.structure IN OUT`) that
sets it: the experiment's own process keeps its devices (one CPU device) for its timings, and
compiles its own programs while the subprocess compiles these (two cores, both busy).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

FAMILIES = ("lstm", "lstm_autodiff", "transformer", "rnnenc", "rnnsearch", "translator_transformer")
MODES = {"dp": "data parallel", "tp": "tensor parallel", "single": "one device"}
TRANSLATORS = {
    "rnnenc": "rnnenc",
    "rnnsearch": "rnnsearch",
    "translator_transformer": "transformer",
}


def validate(cfg) -> None:
    """BadInputError naming the field and its choices for a config the programs cannot have."""
    from anatomy.errors import BadInputError

    def check(field, values, choices):
        bad = [v for v in values if v not in choices]
        if bad:
            raise BadInputError(f"scaling: {field} {bad} unknown; choose from {list(choices)}")

    check("modes", cfg.modes, MODES)
    check("full_grid_modes", cfg.full_grid_modes, MODES)
    check("stack_families", cfg.stack_families, [f for f in FAMILIES if f not in TRANSLATORS])
    check("translators.families", cfg.translators.families, TRANSLATORS)
    if cfg.devices < 2 or cfg.batch % cfg.devices or cfg.translators.rows % cfg.devices:
        raise BadInputError(
            f"scaling: devices={cfg.devices} must be >= 2 and divide batch={cfg.batch} and "
            f"translators.rows={cfg.translators.rows} (data parallel rows)"
        )
    if cfg.n_heads % cfg.devices or cfg.d % cfg.n_heads:
        raise BadInputError(
            f"scaling: n_heads={cfg.n_heads} must be a multiple of devices={cfg.devices} "
            f"(tensor parallel over heads) and divide d={cfg.d}"
        )


def specs(cfg) -> list[dict]:
    """Every program the config asks for: each stack family × mode over the N grid at
    cfg.layers_fixed and over the L grid at cfg.n_fixed (modes not in cfg.full_grid_modes:
    at (n_fixed, layers_fixed) only); lstm_autodiff under dp only; the translators under
    every mode at cfg.translators.length. BadInputError for an impossible config (validate)."""
    validate(cfg)
    out = []
    points = [(n, cfg.layers_fixed) for n in cfg.n_grid]
    points += [(cfg.n_fixed, L) for L in cfg.layers_grid if (cfg.n_fixed, L) not in points]
    for family in cfg.stack_families:
        modes = ("dp",) if family == "lstm_autodiff" else tuple(cfg.modes)
        for mode in modes:
            pts = points if mode in cfg.full_grid_modes else [(cfg.n_fixed, cfg.layers_fixed)]
            out += [{"family": family, "mode": mode, "n": n, "layers": L} for n, L in pts]
    for family in cfg.translators.families:
        for mode in cfg.modes:
            out.append({"family": family, "mode": mode, "n": cfg.translators.length, "layers": 0})
    return out


def _program(cfg, spec):
    """(init, train_step, tx, batch_shapes, n_params_fn) of one spec."""
    import jax
    import jax.numpy as jnp
    import optax

    from experiments.configs import rnn_vs_attn as rva_config
    from experiments.scaling import attention, programs, recurrent, translators

    family, n, L = spec["family"], spec["n"], spec["layers"]
    if family in TRANSLATORS:
        rva = rva_config.get_config(cfg.translators.preset or None)
        model, tx, step = translators.build(rva, TRANSLATORS[family], tuple(cfg.translators.vocab))
        rows = translators.batch(cfg.translators.rows, n, tuple(cfg.translators.vocab), 0)
        shapes = {k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in rows.items()}
        return model.init, step, tx, shapes
    tx = optax.adam(cfg.learning_rate)
    if family == "transformer":
        init, loss = attention.stack(cfg.d, L, cfg.n_heads)
    else:
        vjp = "autodiff" if family == "lstm_autodiff" else "fused"
        init, loss = recurrent.stack(cfg.d, L, vjp=vjp)
    x = jax.ShapeDtypeStruct((cfg.batch, n, cfg.d), jnp.float32)
    return init, programs.stack_step(loss, tx), tx, {"x": x, "y": x}


def _mesh(mode, devices):
    import jax

    from anatomy import sharding

    if mode == "single":
        return sharding.make_mesh((1, 1), devices=jax.devices()[:1])
    return sharding.make_mesh(
        (devices, 1) if mode == "dp" else (1, devices), devices=jax.devices()[:devices]
    )


def _grouped(cs: list[dict]) -> list[dict]:
    """Collectives grouped by (kind, bytes, group size, loop depth): count (ops in the program
    text) and executions per step."""
    groups: dict[tuple, dict] = {}
    for c in cs:
        key = (c["kind"], c["bytes"], c["group_size"], c["loop_depth"])
        g = groups.setdefault(
            key,
            {
                "kind": c["kind"],
                "bytes": c["bytes"],
                "dtype": c["dtype"],
                "group_size": c["group_size"],
                "loop_depth": c["loop_depth"],
                "count": 0,
                "executions": 0.0,
            },
        )
        g["count"] += 1
        g["executions"] += c["runs"]
    return sorted(groups.values(), key=lambda g: (g["loop_depth"], g["kind"], -g["bytes"]))


def read(cfg, spec) -> dict:
    """Compile one spec for its mesh and read its structure (module doc); a dict of numbers."""
    import jax

    from anatomy import probes
    from anatomy.probes import collectives, hardware, hlo, op_cost, roofline
    from anatomy.probes.depth import hlo_critical_path
    from experiments.scaling import programs

    init, step, tx, shapes = _program(cfg, spec)
    exe = programs.compile_for_mesh(init, step, tx, shapes, _mesh(spec["mode"], cfg.devices))
    text = exe.as_text()
    m = hlo.Module(text)
    cs = collectives.collectives(m, text)
    ops = op_cost.op_costs(m)
    prof = op_cost.profile(m)
    params = jax.eval_shape(init, jax.random.key(0))
    predictions = {}
    for name, hw in hardware.ACCELERATORS.items():
        for precision in ("bfloat16", "float32"):
            predictions[f"{name}|{precision}"] = roofline.predict(
                ops,
                hw,
                collectives=cs,
                loop_iterations=prof["loop_iterations"],
                precision=precision,
            )
    return {
        **spec,
        "params": int(sum(x.size for x in jax.tree.leaves(params))),
        "param_bytes": float(sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(params))),
        "trip_counts": [w["trip_count"] for w in probes.while_loops(text)],
        "serial_steps": probes.hlo_sequential_steps(text),
        "critical_path": hlo_critical_path(text),
        "profile": prof,
        "xla_loops_once": probes.cost_of(exe),
        "collectives": collectives.summarize(cs),
        "collective_groups": _grouped(cs),
        "predictions": predictions,
    }


def _read_specs(config_dict: dict, todo: list[dict]) -> list[dict]:
    import ml_collections

    cfg = ml_collections.ConfigDict(config_dict)
    return [read(cfg, s) for s in todo]


def start(cfg, todo: list[dict]) -> dict:
    """Start compiling and reading every spec in a subprocess with cfg.devices fake CPU devices
    (XLA_FLAGS set before its JAX starts); returns a handle for `collect`. The caller may work
    meanwhile (compile its own programs), but should not time anything until collect returns."""
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f]
    env["XLA_FLAGS"] = " ".join(flags + [f"--xla_force_host_platform_device_count={cfg.devices}"])
    env["JAX_PLATFORMS"] = "cpu"
    return spawn("experiments.scaling.structure", {"config": cfg.to_dict(), "specs": todo}, env)


def spawn(module: str, job: dict, env: dict, python: str = "") -> dict:
    """Start `python -m module IN OUT` (python: '' = this interpreter) with `job` as IN's JSON,
    this checkout first on its path; returns a handle for `collect`."""
    tmp = tempfile.TemporaryDirectory()
    src, dst = os.path.join(tmp.name, "in.json"), os.path.join(tmp.name, "out.json")
    with open(src, "w") as f:
        json.dump(job, f)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(env, PYTHONPATH=os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p]))
    proc = subprocess.Popen(
        [python or sys.executable, "-m", module, src, dst],
        env=env,
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    return {"proc": proc, "tmp": tmp, "out": dst, "module": module}


def collect(handle: dict):
    """Wait for a `spawn`ed subprocess; what it wrote to OUT (RuntimeError with its stderr's
    tail if it failed)."""
    try:
        _, err = handle["proc"].communicate()
        if handle["proc"].returncode != 0:
            raise RuntimeError(f"{handle['module']} subprocess failed:\n{err[-4000:]}")
        with open(handle["out"]) as f:
            return json.load(f)
    finally:
        handle["tmp"].cleanup()


def read_all(cfg, todo: list[dict]) -> list[dict]:
    """read() of every spec on cfg.devices fake CPU devices (collect(start(...)))."""
    return collect(start(cfg, todo))


def main(argv):
    src, dst = argv[1], argv[2]
    with open(src) as f:
        job = json.load(f)
    from experiments.lab.jsonio import jsonable

    out = _read_specs(job["config"], job["specs"])
    with open(dst, "w") as f:
        json.dump(jsonable(out), f)


if __name__ == "__main__":
    main(sys.argv)
