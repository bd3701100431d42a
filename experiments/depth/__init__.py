"""depth: does a block stack? Decoder-only character LMs at L = 1 .. 16 layers, at a fixed token
budget per model (the chapter's section 1.8, property two; docs/chapter.md row 8).

Contenders (attention.py, recurrent.py): the Transformer block wired post-LN (without and with
warmup), pre-LN, DeepNorm, without its residual, without LayerNorm; the LSTM stack plain, with
residuals, with residuals and LayerNorm. Every one trains on the same characters (data.py:
toy_wmt's German-like side), with the same recipe and budget (config.train: Adam, clipping,
one peak learning rate, linear decay; no variant is tuned).

Measured per variant and depth (train.py):
  1. the gradient norm of every layer's weights at initialisation, over 2·seeds seeds, and the
     log-log slope of the last layer's (Xiong et al. 2020, Theorem 1: its W^{2,L}) against L;
  2. the validation loss after the budget, over `seeds` seeds, and which seeds failed (NaN, or
     no better than the unigram loss of the same validation characters);
  3. the time per step (reported, never judged: it moves with the machine's load) and the
     serial steps of the forward program read from the compiled HLO: L·N for the LSTM stack,
     none for the Transformer, whatever N.
claims.py judges them; plots.py draws loss against depth (seed band) and the per-layer
gradient norms at init.

What the default preset gives up to fit 15 minutes on 2 idle cores: width 32 and 300 steps of
512 characters (153,600 per model), so the models are small (tens to a few hundred thousand
parameters: report.md's cost table) and far from converged; one learning rate for all,
untuned, so a wiring that needs another (post-LN) is judged at this one; three trained seeds,
so a seed band is a rough spread; depth stops at 16. Most of the time is XLA compiling 40
programs (one per wiring and depth; the training loop itself runs inside each), not
training.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from anatomy import probes
from anatomy.errors import BadInputError
from anatomy.probes.claims import claims_markdown
from experiments import record
from experiments.depth import attention, claims, data, plots, recurrent, tables, train

XIONG = {"attention": attention.xiong, "recurrent": recurrent.xiong}  # per family
VARIANTS = {**attention.VARIANTS, **recurrent.VARIANTS}


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
    if config.seeds < 1 or config.train.steps < 1:
        raise BadInputError("seeds and train.steps must be >= 1")
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


def measure(config, variants, corpus) -> dict:
    """{'runs': {variant: {L: {...}}}, 'serial_steps': {family: {L: {...}}}}."""
    runs = {v.name: {} for v in variants}
    serial = {}
    for n_layers in config.depths:
        for group in groups(variants):
            t0 = time.time()
            got = train.train_group(group, XIONG[group[0].family], config, n_layers, corpus)
            timing = got.pop("_timing")
            print(
                f"depth: {'+'.join(v.name for v in group)} L={n_layers}: compile "
                f"{timing['compile_s']:.1f} s, {time.time() - t0:.1f} s in all",
                file=sys.stderr,
                flush=True,
            )
            for v in group:
                runs[v.name][n_layers] = dict(
                    got[v.name],
                    params=train.param_count(v, config, n_layers, corpus.vocab_size),
                    compile_s=timing["compile_s"],
                )
        for family in XIONG:
            present = [v for v in variants if v.family == family]
            if present:
                steps = train.serial_steps(present[0], config, n_layers, corpus)
                serial.setdefault(family, {})[n_layers] = dict(steps, variant=present[0].name)
    return {"runs": runs, "serial_steps": serial}


def summarise(config, variants, raw) -> dict:
    """Per variant: its rows by depth (seeds' losses, failures, init gradients, time), the
    fitted slope of the last layer's gradient at init against L, and the loss curve thinned."""
    out = {}
    every = max(1, config.train.steps // 20)
    for v in variants:
        by_depth = raw["runs"][v.name]
        depths = sorted(by_depth)
        rows = {}
        for n_layers in depths:
            r = by_depth[n_layers]
            grads = r["init_grads"]
            rows[n_layers] = {
                "valid_loss": r["valid_loss"],
                "final_train_loss": r["losses"][:, -1],
                "curve": {
                    "step": list(range(0, config.train.steps, every)),
                    "loss": r["losses"][:, ::every],
                },
                "init_grad_layers": grads["layers"],
                "init_grad_xiong": grads["xiong"],
                "init_grad_total": grads["total"],
                "params": r["params"],
                "compile_s": r["compile_s"],
                "seconds_per_step": r["seconds_per_step"],
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


TITLE = "Stackability: loss and gradients against depth, Transformer wirings and LSTM stacks"


def run(config, workdir):
    """Train every variant at every depth; write results.json, report.md and two PNGs."""
    variants = check(config)
    started = record.start("depth", config, workdir)
    corpus = data.load(config.data, config.train.length, config.seed)
    raw = measure(config, variants, corpus)
    results = {
        "config": config.to_dict(),
        "data": corpus.summary(),
        "variants": summarise(config, variants, raw),
        "serial_steps": raw["serial_steps"],
    }
    # plots and tables read what results.json will hold (string depth keys, null = NaN), as
    # the claims do: a committed result is redrawn by the same code
    plain = record.stored(results)
    results["plots"] = plots.plot(plain, workdir)
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
