"""depth: does a block stack? Decoder-only character LMs at L = 1 .. 16 layers, at a fixed token
budget per model (the chapter's section 1.8, property two; docs/chapter.md row 8).

Contenders (attention.py, recurrent.py): the Transformer block wired post-LN (without and with
warmup), pre-LN, DeepNorm, without its residual, without LayerNorm; the LSTM stack plain, with
residuals, with residuals and LayerNorm. Every one trains on the same characters (data.py:
toy_wmt's German-like side), with the same recipe and budget (config.train: Adam, clipping,
linear decay) and the same tuning: a small grid of peak learning rates (config.lr_grid), each
tried on the design seeds and scored on the validation windows; each (variant, L) takes the
rate with the lowest mean validation loss. The judged seeds, another seed set, train at that
rate and are scored on the test windows, which no choice has read.

Measured per variant and depth (train.py):
  1. the learning-rate grid: every rate's validation loss on the design seeds, and the choice
     (this run's, or copied from the committed lr_grid result config.lr_grid.from_result
     names, which must have been made with this run's data, model, budget and grid);
  2. the gradient norm of every layer's weights at initialisation, over 2·seeds seeds, and the
     log-log slope of the last layer's (Xiong et al. 2020, Theorem 1: its W^{2,L}) against L;
  3. the test loss after the budget at the chosen rate, over `seeds` seeds;
  4. the time per step (reported, never judged: it moves with the machine's load) and the
     serial steps of the forward program read from the compiled HLO: L·N for the LSTM stack,
     none for the Transformer, whatever N; the run's CPU time beside its wall time (cost).
claims.py judges them by the one verdict rule (anatomy.probes.claims); plots.py draws loss
against depth (seed band) and the per-layer gradient norms at init.

What the default preset gives up to fit 15 minutes on 2 idle cores: width 32 and 300 steps of
512 characters (153,600 per model), so the models are small (tens to a few hundred thousand
parameters: report.md's cost table) and far from converged; a grid of three learning rates
on two design seeds, run once as its own preset (lr_grid, about twice the default's training)
and committed, so the default only reads its choice; three judged seeds, so every interval is
a t interval with 2 degrees of freedom (wide); depth stops at 16. About a third of the CPU
time is XLA compiling 40 programs (one per wiring and depth), which runs in a second thread
while the previous program trains.
"""

from __future__ import annotations

import json
import math
import os
import resource
import sys
import time

import numpy as np

from anatomy import probes
from anatomy.errors import BadInputError
from anatomy.probes.claims import claims_markdown
from experiments import outputs, progress, record
from experiments.depth import attention, claims, data, plots, recurrent, tables, train

XIONG = {"attention": attention.xiong, "recurrent": recurrent.xiong}  # per family
VARIANTS = {**attention.VARIANTS, **recurrent.VARIANTS}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def check(config) -> list:
    """The config's variants (lm.Variant), or BadInputError naming the field and the choices."""
    unknown = [v for v in config.variants if v not in VARIANTS]
    if unknown or not config.variants:
        raise BadInputError(
            f"variants: unknown {unknown or 'none given'}; choose from {', '.join(VARIANTS)}"
        )
    depths = list(config.depths)
    if not depths or any(not isinstance(d, int) or d < 1 for d in depths):
        raise BadInputError(f"depths must be positive integers, got {depths!r}")
    if sorted(set(depths)) != depths:
        raise BadInputError(f"depths must be distinct and ascending, got {depths!r}")
    if config.seeds < 0 or config.train.steps < 1:
        raise BadInputError("seeds must be >= 0 and train.steps >= 1")
    rates = list(config.lr_grid.learning_rates)
    if not rates or any(r <= 0 for r in rates) or config.lr_grid.seeds < 1:
        raise BadInputError(f"lr_grid: needs positive learning_rates (got {rates}) and seeds >= 1")
    if config.lr_grid.first_seed < 2 * config.seeds:
        raise BadInputError(
            f"lr_grid.first_seed {config.lr_grid.first_seed} overlaps the judged and init "
            f"seeds 0..{2 * config.seeds - 1}: design and judged seeds must be disjoint"
        )
    if config.seeds == 0 and config.lr_grid.from_result:
        raise BadInputError("seeds = 0 runs the grid alone: lr_grid.from_result must be ''")
    return [VARIANTS[v] for v in config.variants]


def groups(variants) -> list[list]:
    """Variants bucketed by compiled program, in config order."""
    out = {}
    for v in variants:
        out.setdefault(v.program, []).append(v)
    return list(out.values())


def _fit(depths, values) -> dict | None:
    """fit_power_law of the mean over seeds against L (None with < 2 depths or a bad value)."""
    means = [float(np.mean(v)) for v in values]
    if len(depths) < 2 or not all(np.isfinite(means)) or min(means) <= 0:
        return None
    return probes.fit_power_law(depths, means)


# ------------------------------------------------------------------ the learning-rate grid

# the config fields a committed grid must share with the run that reads its choice
SHARED = (
    "seed",
    "compile_fast",
    "data",
    "model",
    "train",
    "lr_grid.learning_rates",
    "lr_grid.seeds",
    "lr_grid.first_seed",
)


def _field(config_dict: dict, path: str):
    node = config_dict
    for part in path.split("."):
        node = node[part]
    return json.loads(json.dumps(outputs.jsonable(node)))


def choose(rates, losses) -> float:
    """The rate with the lowest mean loss over the design seeds (losses: [rate][seed], None or
    NaN for a diverged run, which never wins); the first on a tie; the first when none
    learned."""
    means = [
        np.mean([np.inf if x is None or not math.isfinite(x) else x for x in row]) for row in losses
    ]
    return float(rates[int(np.argmin(means))])


def load_grid(config) -> dict:
    """The committed grid config.lr_grid.from_result names, restricted to this run's variants
    and depths, with where it came from; BadInputError naming what does not match."""
    path = config.lr_grid.from_result
    full = path if os.path.isabs(path) else os.path.join(ROOT, path)
    if not os.path.exists(full):
        raise BadInputError(
            f"lr_grid.from_result: no {path}; run the grid first (python launch.py "
            "--experiment=depth --config=experiments/configs/depth.py:lr_grid) and save it "
            "(python -m experiments.publish save depth/lr_grid --workdir=...), or set "
            "--config.lr_grid.from_result='' to run it here"
        )
    with open(full) as f:
        doc = json.load(f)
    result = doc.get("result", doc)  # a committed result, or a run's results.json
    grid, made = result["lr_grid"], result["config"]
    want = config.to_dict()
    differ = [k for k in SHARED if _field(made, k) != _field(want, k)]
    missing = [v for v in config.variants if v not in grid["valid_loss"]]
    missing += [
        f"L={d}" for d in config.depths if str(d) not in grid["valid_loss"][config.variants[0]]
    ]
    if differ or missing:
        raise BadInputError(
            f"lr_grid.from_result {path}: made with other {', '.join(differ) or 'fields'}"
            f"{' and without ' + ', '.join(missing) if missing else ''}; rerun the lr_grid "
            "preset with this config, or set --config.lr_grid.from_result=''"
        )
    keep = lambda by: {v: {str(d): by[v][str(d)] for d in config.depths} for v in config.variants}
    prov = result.get("provenance") or {}
    return dict(
        grid,
        valid_loss=keep(grid["valid_loss"]),
        chosen=keep(grid["chosen"]),
        source=path,
        command=doc.get("command", ""),
        made_by={k: prov.get(k) for k in ("commit", "loadavg", "loadavg_after", "wall_seconds")}
        | {"cpu_seconds": (result.get("cost") or {}).get("cpu_seconds")},
    )


# ------------------------------------------------------------------ the runs


def _grid_runs(config, variants) -> dict:
    g = config.lr_grid
    seeds = range(g.first_seed, g.first_seed + g.seeds)
    runs = [
        train.Run(s, float(lr), config.train.steps, "valid")
        for lr in g.learning_rates
        for s in seeds
    ]
    return {v.name: runs for v in variants}


def _run_grid(program, group, config, corpus) -> dict:
    """{variant: [[validation loss per design seed] per rate]} on one compiled program."""
    got = train.run_group(program, group, config, corpus, _grid_runs(config, group))
    n = config.lr_grid.seeds
    return {
        name: [[r["loss"] for r in rows[i : i + n]] for i in range(0, len(rows), n)]
        for name, rows in got.items()
    }


def _judged_runs(config, variants, chosen, n_layers) -> dict:
    """seeds runs at the chosen rate, then as many one-step runs (their gradients at init)."""
    out = {}
    for v in variants:
        lr = chosen[v.name][str(n_layers)]
        out[v.name] = [
            train.Run(s, lr, config.train.steps if s < config.seeds else 1, "test")
            for s in range(2 * config.seeds)
        ]
    return out


def measure(config, variants, corpus, grid=None) -> dict:
    """{'grid': {variant: {L: [[loss per design seed] per rate]}} (when `grid` is None: run
    here), 'chosen': {variant: {L: rate}}, 'runs': {variant: {L: [judged run rows]}},
    'serial_steps': {family: {L: {...}}}, 'compile_s': {variant: {L: s}}}."""
    jobs = [(n, group) for n in config.depths for group in groups(variants)]
    compiler = train.Compiler()
    key = lambda job: (job[0], job[1][0].program)
    submit = lambda job: compiler.submit(
        key(job), job[1][0], XIONG[job[1][0].family], config, job[0], corpus
    )
    losses = {v.name: {} for v in variants} if grid is None else grid["valid_loss"]
    chosen = {v.name: {} for v in variants} if grid is None else grid["chosen"]
    runs = {v.name: {} for v in variants}
    compile_s = {v.name: {} for v in variants}
    serial = {}
    talk = progress.Progress("depth", total=len(jobs))
    try:
        submit(jobs[0])
        for k, (n_layers, group) in enumerate(jobs):
            talk.step(f"{'+'.join(v.name for v in group)} L={n_layers}")
            t0 = time.time()
            program = compiler.get(key(jobs[k]))
            if k + 1 < len(jobs):
                submit(jobs[k + 1])  # compiles while this one trains
            waited = time.time() - t0
            if grid is None:
                for name, per_rate in _run_grid(program, group, config, corpus).items():
                    losses[name][str(n_layers)] = per_rate
                    chosen[name][str(n_layers)] = choose(config.lr_grid.learning_rates, per_rate)
            if config.seeds:
                got = train.run_group(
                    program, group, config, corpus, _judged_runs(config, group, chosen, n_layers)
                )
                for v in group:
                    runs[v.name][n_layers] = got[v.name]
            for v in group:
                compile_s[v.name][n_layers] = program.compile_s
            print(
                f"depth: {'+'.join(v.name for v in group)} L={n_layers}: compile "
                f"{program.compile_s:.1f} s (waited {waited:.1f} s), "
                f"{time.time() - t0:.1f} s in all",
                file=sys.stderr,
                flush=True,
            )
        if config.seeds:
            for n_layers in config.depths:
                for family in XIONG:
                    present = [v for v in variants if v.family == family]
                    if present:
                        steps = train.serial_steps(present[0], config, n_layers, corpus)
                        serial.setdefault(family, {})[n_layers] = dict(
                            steps, variant=present[0].name
                        )
    finally:
        compiler.close()
    return {
        "grid": losses,
        "chosen": chosen,
        "runs": runs,
        "serial_steps": serial,
        "compile_s": compile_s,
    }


def summarise(config, variants, raw, vocab_size) -> dict:
    """Per variant: its rows by depth (the chosen rate, the judged seeds' test losses, the init
    gradients, time), the fitted slope of the last layer's gradient at init against L, and the
    loss curve thinned."""
    out = {}
    every = max(1, config.train.steps // 20)
    for v in variants:
        by_depth = raw["runs"][v.name]
        depths = sorted(by_depth)
        rows = {}
        for n_layers in depths:
            runs = by_depth[n_layers]
            trained, init_only = runs[: config.seeds], runs[config.seeds :]
            one = float(np.median([r["seconds"] for r in init_only]))  # a step and the scoring
            losses = np.array([r["losses"] for r in trained], np.float64)
            rows[n_layers] = {
                "learning_rate": raw["chosen"][v.name][str(n_layers)],
                "test_loss": [r["loss"] for r in trained],
                "final_train_loss": losses[:, -1],
                "curve": {
                    "step": list(range(0, config.train.steps, every)),
                    "loss": losses[:, ::every],
                },
                "init_grad_layers": np.array([r["init"]["layers"] for r in runs]),
                "init_grad_xiong": [float(r["init"]["xiong"]) for r in runs],
                "init_grad_total": [float(r["init"]["total"]) for r in runs],
                "params": train.param_count(v, config, n_layers, vocab_size),
                "compile_s": raw["compile_s"][v.name][n_layers],
                "seconds_per_step": float(
                    np.median([max(r["seconds"] - one, 0.0) for r in trained])
                    / max(config.train.steps - 1, 1)
                ),
            }
        out[v.name] = {
            "family": v.family,
            "label": v.label,
            "citation": v.citation,
            "warmup_steps": config.train.warmup_steps if v.warmup else 0,
            "depths": rows,
            "xiong_fit": _fit(depths, [rows[d]["init_grad_xiong"] for d in depths]),
        }
    return out


def _cpu_seconds() -> float:
    """CPU time of this process so far, every thread, user and system."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


TITLE = "Stackability: loss and gradients against depth, Transformer wirings and LSTM stacks"
GRID_TITLE = "Stackability: the learning-rate grid (design seeds, validation loss)"


def run(config, workdir):
    """The grid (here or from its committed result), then every variant at every depth on the
    judged seeds; write results.json, report.md and two PNGs (seeds = 0: the grid alone, no
    claim, no plot)."""
    variants = check(config)
    started = record.start("depth", config, workdir)
    cpu0 = _cpu_seconds()
    grid = load_grid(config) if config.lr_grid.from_result else None
    corpus = data.load(config.data, config.train.length, config.seed)
    raw = measure(config, variants, corpus, grid)
    g = config.lr_grid
    lr_grid = grid or {
        "learning_rates": list(g.learning_rates),
        "seeds": list(range(g.first_seed, g.first_seed + g.seeds)),
        "split": "valid",
        "valid_loss": raw["grid"],
        "chosen": raw["chosen"],
        "labels": {v.name: v.label for v in variants},
        "source": "this run",
    }
    results = {"config": config.to_dict(), "data": corpus.summary(), "lr_grid": lr_grid}
    if config.seeds:
        results["variants"] = summarise(config, variants, raw, corpus.vocab_size)
        results["serial_steps"] = raw["serial_steps"]
    results["cost"] = {
        "cpu_seconds": _cpu_seconds() - cpu0,  # every thread: compiling and training
        "wall_seconds": time.time() - started.t0,  # the same span (provenance: the whole run)
        "compile_seconds": sum(  # once per program (variants that share one count it once)
            {
                (VARIANTS[n].program, d): s
                for n, by in raw["compile_s"].items()
                for d, s in by.items()
            }.values()
        ),
    }
    # plots and tables read what results.json will hold (string depth keys, null = NaN), as
    # the claims do: a committed result is redrawn by the same code
    plain = record.stored(results)
    if not config.seeds:
        return started.finish(results, None, GRID_TITLE, tables.grid_sections(plain))
    results["plots"] = plots.draw(plain, workdir)
    chapter = claims_markdown(claims.chapter(plain))
    return started.finish(
        results,
        claims.table,
        TITLE,
        [
            ("The chapter's claim", chapter),
            ("How verdicts are decided", "\n".join(claims.rules())),
            *tables.sections(plain),
        ],
    )
