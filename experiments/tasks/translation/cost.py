"""What a run will cost, predicted before it starts (config.cost_estimate: the paper-scale
presets wmt14_enfr and wmt14_ende_base set it).

For every model of config.models, its train step (the model and per-model recipe training.py
trains, float32 master parameters, donated state) is compiled for one batch on this host's
CPU from shapes alone (lower + compile, never run: nothing the size of the model is
allocated) and priced by the cost model (anatomy.probes.roofline on the compiled HLO,
op_cost's per-op FLOPs and bytes, hardware.py's published rates and assumed latencies):

  parameters        of the model at the vocabulary sizes config.data asks for (vocab_size on
                    each side: the cap of a word vocabulary, the sentencepiece size)
  batch             the bucket of the longest training source (data.max_len, or N for a
                    '<model>-N'), token_budget // L rows: the same tokens as every batch, the
                    longest recurrence and attention span of most of the run (a '-N' model's
                    few pairs with longer targets go to longer buckets)
  memory / device   parameters + optimiser state + XLA's temporaries (memory_analysis of the
                    CPU compile: XLA:CPU's buffer assignment, not an accelerator compiler's)
  one GPU           roofline.predict on cost_estimate.gpu at train.compute_dtype's precision
  TPU slice         pure data parallelism over cost_estimate.tpu_chips chips of
                    cost_estimate.tpu, the global batch unchanged (as anatomy.sharding's data
                    axis splits it): the compute and memory terms of the one-chip step scaled
                    by the chip's share of the rows, its latency unscaled, plus the all-reduce
                    of the float32 gradient (the parameter bytes) priced by the cost model's
                    collective term (ring algorithm, the chip's link bandwidth). Scaling every
                    op by the share is optimistic for the work that does not shrink with the
                    batch (the optimiser update): a lower bound by that much.
  hours             num_steps x the predicted step, summed over the models (trained one after
                    the other); validation, decoding and compilation are not counted.

One compile per model. It lives here, next to the training whose steps it prices (it reads
training.py's recipes and model names), rather than in experiments/scaling/applied.py, which
prices that experiment's fixed programs at many sizes; both use the same probes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from anatomy import data
from anatomy.data.batching import round_batch
from anatomy.errors import BadInputError
from anatomy.probes import collectives, hardware, roofline
from anatomy.seq2seq import build_model, count_params
from anatomy.train import create_state, make_optimizer, make_train_step
from anatomy.train.step import compile_train_step
from experiments.tasks.translation import training

GB = 1e9


def batch_shape(config, limit: int = 0) -> tuple[int, int]:
    """(rows, length) of the training batch in the bucket of the longest training source:
    the smallest bucket boundary >= limit (a '<model>-N' model's N), else the last one."""
    bounds = data.bucket_boundaries(config.data.max_len, tuple(config.data.bucket_boundaries))
    length = next((b for b in bounds if b >= limit), bounds[-1]) if limit else bounds[-1]
    return max(1, config.data.token_budget // length), length


def planned_vocab(config) -> tuple[int, int]:
    """The vocabulary sizes the run will build (data.vocab_size on each side), known before the
    corpus is read; BadInputError when the config leaves them open (vocab_size 0)."""
    v = int(config.data.vocab_size)
    if v <= 0:
        raise BadInputError("cost_estimate needs data.vocab_size > 0 (the sizes it prices)")
    return v, v


def _abstract(tree, device):
    """ShapeDtypeStructs of `tree`'s leaves, placed on `device` (so the compile targets it)."""
    sh = jax.sharding.SingleDeviceSharding(device)
    return jax.tree_util.tree_map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sh), tree
    )


def _nbytes(tree) -> float:
    return float(sum(np.prod(x.shape) * x.dtype.itemsize for x in jax.tree_util.tree_leaves(tree)))


def compile_step(config, name: str, vocab, rows: int, length: int):
    """(compiled train step, abstract state) of model `name` ('<model>' or '<model>-N') at
    rnn_vs_attn's config, one [rows, length] batch, compiled for this host's CPU from shapes."""
    base, _ = training.model_spec(name)
    model = build_model(base, config.model[base], vocab[0], vocab[1])
    tc = training.train_config(config, base)
    tx = make_optimizer(tc)
    # float32 here: XLA:CPU computes in float32 whatever was asked; the precision is priced
    step = make_train_step(model, tx, label_smoothing=tc.label_smoothing)
    cpu = jax.devices("cpu")[0]
    key = jax.eval_shape(lambda: jax.random.key(0))
    state = jax.eval_shape(lambda k: create_state(model.init(k), tx), key)
    i32 = jax.ShapeDtypeStruct
    batch = {
        "src": i32((rows, length), jnp.int32),
        "src_len": i32((rows,), jnp.int32),
        "tgt_in": i32((rows, length), jnp.int32),
        "tgt_out": i32((rows, length), jnp.int32),
        "tgt_len": i32((rows,), jnp.int32),
    }
    args = [_abstract(x, cpu) for x in (state, batch, key)]
    return compile_train_step(step).lower(*args).compile(), state


def estimate(config) -> dict:
    """The predicted cost of config's run (module doc): {'models': {name: row}, totals,
    assumptions}. Compiles one train step per model."""
    ce = config.cost_estimate
    precision = config.train.compute_dtype
    gpu, tpu, chips = hardware.get(ce.gpu), hardware.get(ce.tpu), int(ce.tpu_chips)
    if chips < 1:
        raise BadInputError(f"cost_estimate.tpu_chips must be >= 1, got {chips}")
    vocab = planned_vocab(config)
    steps = int(config.train.num_steps)
    rows_out = {}
    for name in config.models:
        _, limit = training.model_spec(name)
        rows, length = batch_shape(config, limit)
        exe, state = compile_step(config, name, vocab, rows, length)
        text = exe.as_text()
        one, chip = (
            roofline.predict_text(text, hw, precision=precision, with_collectives=False)
            for hw in (gpu, tpu)
        )
        share = round_batch(rows, chips) / chips / rows  # the rows one chip computes
        grad = _nbytes(state.params)
        wire = grad * collectives.wire_factor("all-reduce", chips)
        comm = roofline.predict(
            [], tpu, collectives=[{"runs": 1.0, "wire_bytes": wire}], precision=precision
        )["communication"]
        per_chip = (chip["compute"] + chip["memory"]) * share + chip["latency"] + comm
        ma = exe.memory_analysis()
        params_b, opt_b = _nbytes(state.params), _nbytes(state.opt_state)
        temp = float(ma.temp_size_in_bytes)
        rows_out[name] = {
            "params": count_params(state.params),
            "batch": [rows, length],
            "params_gb": params_b / GB,
            "optimizer_gb": opt_b / GB,
            "temp_gb": temp / GB,
            "memory_gb": (params_b + opt_b + temp) / GB,
            "memory_per_chip_gb": (params_b + opt_b + temp * share) / GB,
            "gpu_step_s": one["seconds"],
            "gpu_dominant": one["dominant"],
            "tpu_step_s": per_chip,
            "tpu_allreduce_s": comm,
            "gpu_hours": steps * one["seconds"] / 3600,
            "tpu_hours": steps * per_chip / 3600,
        }
    return {
        "models": rows_out,
        "num_steps": steps,
        "gpu": gpu.name,
        "tpu": tpu.name,
        "tpu_chips": chips,
        "precision": precision,
        "vocab": list(vocab),
        "gpu_hours": sum(r["gpu_hours"] for r in rows_out.values()),
        "tpu_hours": sum(r["tpu_hours"] for r in rows_out.values()),
        "source": "predicted by anatomy.probes.roofline from a CPU compile, never measured",
    }


def describe(est: dict) -> str:
    """The estimate as the lines run() prints before training starts."""
    gpu, tpu, n = est["gpu"], est["tpu"], est["tpu_chips"]
    lines = [
        f"Cost estimate ({est['source']}; {est['precision']} compute; vocabularies "
        f"{est['vocab'][0]:,} / {est['vocab'][1]:,}; each model's step in the bucket of its "
        "longest training source):"
    ]
    for name, r in est["models"].items():
        lines.append(
            f"  {name}: {r['params']:,} parameters, batch {r['batch'][0]} x "
            f"{r['batch'][1]} tokens; memory per device {r['memory_gb']:.3g} GB (parameters "
            f"{r['params_gb']:.3g} + optimiser {r['optimizer_gb']:.3g} + XLA temporaries "
            f"{r['temp_gb']:.3g}), per {tpu} chip {r['memory_per_chip_gb']:.3g} GB; step "
            f"{r['gpu_step_s']:.3g} s on one {gpu} ({r['gpu_dominant']}-bound), "
            f"{r['tpu_step_s']:.3g} s on {n} {tpu} chips (all-reduce {r['tpu_allreduce_s']:.3g}"
            f" s); x {est['num_steps']:,} steps = {r['gpu_hours']:.3g} h / {r['tpu_hours']:.3g} h"
        )
    lines.append(
        f"  total: {est['gpu_hours']:.3g} h on one {gpu}, {est['tpu_hours']:.3g} h on a {n}-chip "
        f"{tpu} slice (training only: validation, decoding and compiles not counted)"
    )
    return "\n".join(lines)
