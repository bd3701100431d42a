"""depth: does a block stack? Decoder-only character LMs at a fixed token budget per model (the
chapter's section 1.8, property two; docs/chapter.md's Stackability row).

Contenders (attention.py, recurrent.py): the Transformer block wired post-LN (without and with
warmup), pre-LN, DeepNorm, without its residual, without LayerNorm; the LSTM stack plain, with
residuals, with residuals and LayerNorm. Every one trains on the same characters (data.py:
toy_wmt's German-like side), with the same recipe and budget (config.train: Adam, clipping,
linear decay) and the same tuning: the grid of peak rates config.lr_grid, tried on a design
seed and scored on the validation windows (the lr_grid preset, committed as
results/depth/lr_grid.json); the choice is written into the config (configs/depth.py CHOSEN).

A run trains config.cells ({variant: [L, ...]}), each on `seeds` seeds at its rate, scored on
config.split, and measures config.xiong's gradients at initialisation (train.py):
  1. the learning-rate grid, when config.rates is {} (the lr_grid and quick presets): every
     rate's validation loss on the design seeds, and the choice (the lowest);
  2. each seed's loss on its split after the budget, its training curve, every layer's
     gradient norm at its first step, its time per step (reported, never judged: it moves
     with the machine's load); the forward program's serial steps read from the compiled HLO
     (L·N for the LSTM stack, none for the Transformer, whatever N);
  3. config.xiong: ‖∂loss/∂W^{2,L}‖ at initialisation (Xiong et al. 2020, Theorem 1) on each
     seed's first batch, at each depth of config.xiong.depths; one program per (variant, L),
     vmapped over the seeds, no training.
claims.py judges them by the one verdict rule (anatomy.probes.claims), each claim sized from
the committed pilot (results/depth/pilot.json); plots.py draws what each part measured.

Why three judged presets: at 3,000 steps of 512 characters, the stack (four variants at
L = 1, 2, 4, 8) fills 30 minutes on 2 idle cores on its own; post-LN's warmup and DeepNorm's
stability (L = 6) and Xiong's exponents (L = 4 .. 64, no training) are their own runs
(configs/depth.py). Runs go two at a time (config.workers threads); the next program compiles
in a third thread meanwhile.
"""

from __future__ import annotations

import math
import os
import resource
import sys
import time

import numpy as np

from anatomy.errors import BadInputError
from anatomy.probes.claims import claims_markdown
from experiments.depth import attention, claims, data, plots, recurrent, tables, train
from experiments.lab import progress, record

XIONG = {"attention": attention.xiong, "recurrent": recurrent.xiong}  # per family
VARIANTS = {**attention.VARIANTS, **recurrent.VARIANTS}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPLITS = ("test", "valid")


def _cells(config) -> dict[str, list[int]]:
    return {name: list(depths) for name, depths in config.cells.items()}


def _seeds(first, n) -> list[int]:
    return list(range(first, first + n))


def check(config) -> dict[str, list[int]]:
    """The config's cells ({variant: [L]}), or BadInputError naming the field and what is
    wrong."""
    cells = _cells(config)
    unknown = [v for v in cells if v not in VARIANTS]
    unknown += [v for v in config.xiong.variants if v not in attention.VARIANTS]
    if unknown:
        raise BadInputError(
            f"variants: unknown {unknown}; choose from {', '.join(VARIANTS)} (cells) or "
            f"{', '.join(attention.VARIANTS)} (xiong.variants)"
        )
    for name, depths in [*cells.items(), ("xiong.depths", list(config.xiong.depths))]:
        if not depths or any(not isinstance(d, int) or d < 1 for d in depths):
            raise BadInputError(f"{name}: depths must be positive integers, got {depths!r}")
        if sorted(set(depths)) != depths:
            raise BadInputError(f"{name}: depths must be distinct and ascending, got {depths!r}")
    if not cells and not config.xiong.seeds:
        raise BadInputError("nothing to run: cells is empty and xiong.seeds is 0")
    if config.seeds < 0 or config.train.steps < 1 or config.xiong.seeds < 0:
        raise BadInputError("seeds and xiong.seeds must be >= 0 and train.steps >= 1")
    if config.split not in SPLITS:
        raise BadInputError(f"split must be one of {SPLITS}, got {config.split!r}")
    g = config.lr_grid
    grid_rates = list(g.learning_rates)
    if not grid_rates or any(r <= 0 for r in grid_rates) or g.seeds < 1:
        raise BadInputError(
            f"lr_grid: needs positive learning_rates (got {grid_rates}), seeds >= 1"
        )
    rates = {k: list(v) for k, v in config.rates.items()}
    if rates:
        bad = [v for v in cells if len(rates.get(v, [])) != len(cells[v])]
        if bad:
            raise BadInputError(f"rates: no rate per depth of {bad} (rates align with cells)")
    if cells and rates and not config.seeds:
        raise BadInputError(
            "rates are written and seeds is 0: nothing to train (rates = {} runs the grid alone)"
        )
    design = set(_seeds(g.first_seed, g.seeds))
    for what, first, n in (
        ("", config.first_seed, config.seeds),
        ("xiong.", config.xiong.first_seed, config.xiong.seeds),
    ):
        seeds = set(_seeds(first, n))
        if seeds & design:
            raise BadInputError(
                f"{what}first_seed {first}: seeds {sorted(seeds & design)} are the grid's design "
                "seeds; design and judged seeds must be disjoint"
            )
        if config.split == "test" and n and first + n > g.first_seed:
            raise BadInputError(
                f"{what}first_seed {first}: judged seeds (split 'test') must lie below the "
                f"design seeds (lr_grid.first_seed {g.first_seed} and up)"
            )
    return cells


def groups(variants) -> list[list]:
    """Variants bucketed by compiled program, in config order."""
    out = {}
    for v in variants:
        out.setdefault(v.program, []).append(v)
    return list(out.values())


def jobs_of(cells) -> list[tuple[int, list]]:
    """[(L, variants sharing one program)] in order of L, then of config.cells."""
    depths = sorted({d for ds in cells.values() for d in ds})
    return [
        (n, group)
        for n in depths
        for group in groups([VARIANTS[v] for v, ds in cells.items() if n in ds])
    ]


def written(config) -> dict:
    """{variant: {'L': rate}} of config.rates (the chosen rates written into the config)."""
    return {
        v: {str(d): float(r) for d, r in zip(config.cells[v], config.rates[v])}
        for v in config.cells
    }


def rate_of(config, chosen, name, n_layers) -> float:
    """The peak rate `name` trains at at n_layers: the written one (config.rates), or the
    grid's choice of this run."""
    del config
    return chosen[name][str(n_layers)]


def choose(rates, losses) -> float:
    """The rate with the lowest mean loss over the design seeds (losses: [rate][seed], None or
    NaN for a diverged run, which never wins); the first on a tie; the first when none
    learned."""
    means = [
        np.mean([np.inf if x is None or not np.isfinite(x) else x for x in row]) for row in losses
    ]
    return float(rates[int(np.argmin(means))])


# ------------------------------------------------------------------ the runs


def ladder(rate: float, up: bool) -> float:
    """The next rate of the 1-3-10 ladder above (up) or below `rate` (1e-2 -> 3e-2 or 3e-3)."""
    decade = math.floor(math.log10(rate) + 1e-9)
    mantissa = round(rate / 10**decade)
    if up:
        return float(f"{3 if mantissa == 1 else 1}e{decade if mantissa == 1 else decade + 1}")
    return float(f"{1 if mantissa == 3 else 3}e{decade if mantissa == 3 else decade - 1}")


def _learned(losses, floor) -> bool:
    return any(x is not None and np.isfinite(x) and x < floor for x in losses)


def run_grid(program, group, config, corpus) -> dict:
    """{variant: (rates tried ascending, [[validation loss per design seed] per rate])}: the
    grid config.lr_grid.learning_rates on the design seeds, then, for a variant whose best
    rate sits at an edge of what it tried (and learned there), the next rate of the ladder past
    that edge, up to lr_grid.extend times: the same base grid and the same rule for every
    variant, so no choice is at an edge it could have moved past."""
    g = config.lr_grid
    seeds = _seeds(g.first_seed, g.seeds)

    def runs(rates):
        return [train.Run(s, float(lr), config.train.steps, "valid") for lr in rates for s in seeds]

    def split(rows):
        n = len(seeds)
        return [[r["loss"] for r in rows[i : i + n]] for i in range(0, len(rows), n)]

    base = sorted(float(r) for r in g.learning_rates)
    got = train.run_group(program, group, config, corpus, {v.name: runs(base) for v in group})
    out = {v.name: (list(base), split(got[v.name])) for v in group}
    floor = corpus.unigram["valid"] - claims.FAIL_MARGIN
    for _ in range(g.extend):
        todo = {}
        for name, (rates, per_rate) in out.items():
            best = choose(rates, per_rate)
            if not _learned(per_rate[rates.index(best)], floor) or len(rates) < 2:
                continue
            if best == rates[0]:
                todo[name] = ladder(rates[0], up=False)
            elif best == rates[-1]:
                todo[name] = ladder(rates[-1], up=True)
        if not todo:
            break
        more = train.run_group(
            program, group, config, corpus, {n: runs([lr]) for n, lr in todo.items()}
        )
        for name, lr in todo.items():
            rates, per_rate = out[name]
            per_rate = [*per_rate, *split(more[name])]
            order = np.argsort([*rates, lr], kind="stable")
            out[name] = ([[*rates, lr][i] for i in order], [per_rate[i] for i in order])
    return out


def _serial(config, cells, corpus) -> dict:
    """{family: {L: serial steps of the forward program}}, one variant per family and L."""
    serial = {}
    for n_layers in sorted({d for ds in cells.values() for d in ds}):
        for family in XIONG:
            present = [
                VARIANTS[v]
                for v, ds in cells.items()
                if VARIANTS[v].family == family and n_layers in ds
            ]
            if present:
                steps = train.serial_steps(present[0], config, n_layers, corpus)
                serial.setdefault(family, {})[n_layers] = dict(steps, variant=present[0].name)
    return serial


def _judged_runs(config, chosen, seeds):
    def runs_of(n_layers, group):
        return {
            v.name: [
                train.Run(
                    s, rate_of(config, chosen, v.name, n_layers), config.train.steps, config.split
                )
                for s in seeds
            ]
            for v in group
        }

    return runs_of


def measure(config, cells, corpus) -> dict:
    """{'grid': {variant: {L: [[loss per design seed] per rate]}}, 'tried': {variant: {L:
    [rates]}} (run here when config.rates is {}), 'chosen': {variant: {L: rate}}, 'runs':
    {variant: {L: [run rows]}}, 'serial_steps': {family: {L: {...}}}, 'compile_s': {variant:
    {L: s}}}.

    With the rates written (config.rates), every run of every job goes to one pool of
    config.workers threads, the programs compiling one after another in another thread; with
    the grid run here, job by job (a job's grid decides its runs' rates)."""
    jobs = jobs_of(cells)
    grid_here = not config.rates
    losses = {v: {} for v in cells}
    tried = {v: {} for v in cells}
    chosen = {v: {} for v in cells} if grid_here else written(config)
    runs = {v: {} for v in cells}
    compile_s = {v: {} for v in cells}
    seeds = _seeds(config.first_seed, config.seeds)
    talk = progress.Progress("depth", total=len(jobs))
    runs_of = _judged_runs(config, chosen, seeds)

    def compiled(n_layers, group, program):
        talk.step(f"{'+'.join(v.name for v in group)} L={n_layers} compiled")
        for v in group:
            compile_s[v.name][n_layers] = program.compile_s
        print(
            f"depth: {'+'.join(v.name for v in group)} L={n_layers}: compile "
            f"{program.compile_s:.1f} s",
            file=sys.stderr,
            flush=True,
        )

    if not grid_here:
        got = train.run_jobs(
            jobs, lambda v: XIONG[v.family], config, corpus, runs_of, on_compiled=compiled
        )
        for (n_layers, name), rows in got.items():
            runs[name][n_layers] = rows
    else:
        compiler = train.Compiler()
        key = lambda job: (job[0], job[1][0].program)
        submit = lambda job: compiler.submit(
            key(job), job[1][0], XIONG[job[1][0].family], config, job[0], corpus
        )
        try:
            submit(jobs[0])
            for k, (n_layers, group) in enumerate(jobs):
                program = compiler.get(key(jobs[k]))
                if k + 1 < len(jobs):
                    submit(jobs[k + 1])  # compiles while this one trains
                compiled(n_layers, group, program)
                for name, (rates, per_rate) in run_grid(program, group, config, corpus).items():
                    tried[name][str(n_layers)] = rates
                    losses[name][str(n_layers)] = per_rate
                    chosen[name][str(n_layers)] = choose(rates, per_rate)
                if seeds:
                    got = train.run_group(program, group, config, corpus, runs_of(n_layers, group))
                    for v in group:
                        runs[v.name][n_layers] = got[v.name]
        finally:
            compiler.close()
    return {
        "grid": losses,
        "tried": tried,
        "chosen": chosen,
        "runs": runs,
        "serial_steps": _serial(config, cells, corpus) if seeds else {},
        "compile_s": compile_s,
    }


def summarise(config, cells, raw, vocab_size) -> dict:
    """Per variant: its rows by depth (the rate it trained at, each seed's loss on the split,
    the gradients at its first step, its training curve thinned, time)."""
    out = {}
    every = max(1, config.train.steps // 50)
    for name in cells:
        v = VARIANTS[name]
        rows = {}
        for n_layers, runs in sorted(raw["runs"][name].items()):
            curves = np.array([r["losses"] for r in runs], np.float64)
            rows[n_layers] = {
                "learning_rate": rate_of(config, raw["chosen"], name, n_layers),
                "loss": [r["loss"] for r in runs],
                "final_train_loss": curves[:, -1],
                "curve": {
                    "step": list(range(0, config.train.steps, every)),
                    "loss": curves[:, ::every],
                },
                "init_grad_layers": np.array([r["init"]["layers"] for r in runs]),
                "init_grad_xiong": [float(r["init"]["xiong"]) for r in runs],
                "init_grad_total": [float(r["init"]["total"]) for r in runs],
                "params": train.param_count(v, config, n_layers, vocab_size),
                "compile_s": raw["compile_s"][name][n_layers],
                "seconds_per_step": float(
                    np.median([r["seconds"] for r in runs]) / config.train.steps
                ),
            }
        out[name] = {
            "family": v.family,
            "label": v.label,
            "citation": v.citation,
            "warmup_steps": config.train.warmup_steps if v.warmup else 0,
            "depths": rows,
        }
    return out


def measure_xiong(config, corpus) -> dict:
    """{'xiong': {variant: {L: [‖∂loss/∂W^{2,L}‖ per seed]}}, 'xiong_detail': {...}}: the
    gradient at initialisation of config.xiong's variants, depths and seeds."""
    x = config.xiong
    seeds = _seeds(x.first_seed, x.seeds)
    norms, layers, total, compile_s = {}, {}, {}, {}
    talk = progress.Progress("depth xiong", total=len(x.variants) * len(x.depths))
    for name in x.variants:
        v = VARIANTS[name]
        for n_layers in x.depths:
            talk.step(f"{name} L={n_layers}")
            got, seconds = train.xiong_norms(v, XIONG[v.family], config, n_layers, corpus, seeds)
            norms.setdefault(name, {})[n_layers] = got["xiong"]
            layers.setdefault(name, {})[n_layers] = got["layers"]
            total.setdefault(name, {})[n_layers] = got["total"]
            compile_s.setdefault(name, {})[n_layers] = seconds
    return {
        "xiong": norms,
        "xiong_detail": {
            "seeds": seeds,
            "layers": layers,
            "total": total,
            "compile_s": compile_s,
            "labels": {n: VARIANTS[n].label for n in x.variants},
        },
    }


def _cpu_seconds() -> float:
    """CPU time of this process so far, every thread, user and system."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


TITLE = "Stackability: loss and gradients against depth, Transformer wirings and LSTM stacks"
GRID_TITLE = "Stackability: the learning-rate grid (design seed, validation loss)"
PILOT_TITLE = "Stackability: the design-seed pilot every judged claim is sized from"


def run(config, workdir):
    """The cells at their rates (or the grid alone, seeds = 0) and Xiong's gradients at init;
    write results.json, report.md and the plots of the parts run (the grid and the pilot:
    tables alone, no claim)."""
    cells = check(config)
    started = record.start("depth", config, workdir)
    cpu0 = _cpu_seconds()
    corpus = data.load(config.data, config.train.length, config.seed)
    results = {"config": config.to_dict(), "data": corpus.summary(), "split": config.split}
    compile_total = 0.0
    if cells:
        raw = measure(config, cells, corpus)
        g = config.lr_grid
        results["lr_grid"] = {
            "learning_rates": list(g.learning_rates),
            "seeds": _seeds(g.first_seed, g.seeds),
            "split": "valid",
            "extend": g.extend,
            "tried": raw["tried"],
            "valid_loss": raw["grid"],
            "chosen": raw["chosen"],
            "labels": {v: VARIANTS[v].label for v in cells},
            "source": "this run" if not config.rates else "config (configs/depth.py CHOSEN)",
        }
        if config.seeds:
            results["seeds"] = _seeds(config.first_seed, config.seeds)
            results["variants"] = summarise(config, cells, raw, corpus.vocab_size)
            results["serial_steps"] = raw["serial_steps"]
        compile_total += sum(  # once per program (variants that share one count it once)
            {
                (VARIANTS[n].program, d): s
                for n, by in raw["compile_s"].items()
                for d, s in by.items()
            }.values()
        )
    if config.xiong.seeds:
        got = measure_xiong(config, corpus)
        results.update(got)
        compile_total += sum(
            s for by in got["xiong_detail"]["compile_s"].values() for s in by.values()
        )
    results["cost"] = {
        "cpu_seconds": _cpu_seconds() - cpu0,  # every thread: compiling and training
        "wall_seconds": time.time() - started.t0,  # the same span (provenance: the whole run)
        "compile_seconds": compile_total,
    }
    # plots and tables read what results.json will hold (string depth keys, null = NaN), as
    # the claims do: a committed result is redrawn by the same code
    plain = record.stored(results)
    if not config.seeds and not config.xiong.seeds:
        return started.finish(results, None, GRID_TITLE, tables.grid_sections(plain))
    if config.split == "valid":  # the pilot: design seeds, no verdict
        return started.finish(results, None, PILOT_TITLE, tables.pilot_sections(plain))
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
