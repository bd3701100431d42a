"""long_range: can the model recall the token it saw k steps ago?

Task (delayed recall): random symbols x_1..x_L from a vocabulary of V; at every position
t > k the target is x_{t-k}, scored by accuracy over those positions (chance = 1/V). The
sequence length is the same for every k, so only the distance changes. Each (model, k)
pair is trained from scratch for the same number of Adam steps, with every model sized to
the same parameter budget:

    rnn / lstm / gru   embedding -> anatomy.recurrence.run -> linear readout
    mingru / mamba     the same, the cell a linear recurrence (gates from x only) that
                       run computes with jax.lax.associative_scan
    conv               embedding -> causal GLU conv blocks (experiments/long_range_conv.py):
                       no recurrence, a receptive field of 1 + L·(K-1) positions
    transformer        embedding·√m -> the causal pre-LN decoder-only stack with sinusoidal
                       positions (anatomy.attention.decoder_only) -> linear readout
"""

import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

from anatomy import probes
from anatomy.attention.decoder_only import decoder_only, init_decoder_only
from anatomy.recurrence import get_cell
from anatomy.recurrence import run as run_cell
from experiments import common, long_range_conv, thresholds


def count_params(tree):
    return int(sum(np.prod(x.shape) for x in jax.tree_util.tree_leaves(tree)))


def init_model(key, name, cfg, width):
    """Parameters of `name` at hidden size / d_model `width`."""
    if name == "conv":
        return long_range_conv.init(key, cfg, width)
    k1, k2, k3 = jax.random.split(key, 3)
    v = cfg.vocab
    if name == "transformer":
        stack = init_decoder_only(k2, cfg.n_layers, width, cfg.n_heads, 4 * width)
        return {
            "embed": jax.random.normal(k1, (v, width)) / np.sqrt(width),
            "layers": stack["layers"],  # the stack reads params["layers"]
            "out": jax.random.normal(k3, (width, v)) / np.sqrt(width),
            "b_out": jnp.zeros(v),
        }
    return {
        "embed": jax.random.normal(k1, (v, cfg.embed)),
        "cell": get_cell(name).init(k2, cfg.embed, width),
        "out": jax.random.normal(k3, (width, v)) / np.sqrt(width),
        "b_out": jnp.zeros(v),
    }


def apply_model(name, params, tokens):
    """tokens [B, L] int -> logits [B, L, V] (causal: position t sees tokens <= t)."""
    if name == "conv":
        return long_range_conv.apply(params, tokens)
    x = params["embed"][tokens]  # [B, L, E]
    if name == "transformer":
        x = decoder_only(params, x * np.sqrt(x.shape[-1]), norm="pre")
    else:
        x = run_cell(name, params["cell"], x)[1]  # [B, L, H]
    return x @ params["out"] + params["b_out"]


def pick_width(name, cfg):
    """The width whose parameter count comes closest to cfg.param_budget."""
    step = 2 * cfg.n_heads if name == "transformer" else 1
    best = None
    for width in range(step, 512, step):
        shapes = jax.eval_shape(lambda w=width: init_model(jax.random.PRNGKey(0), name, cfg, w))
        gap = abs(count_params(shapes) - cfg.param_budget)
        if best is None or gap < best[1]:
            best = (width, gap)
        elif gap > best[1]:
            break  # counts grow with width: past the best
    return best[0]


def make_batch(rng, cfg, batch, k):
    """tokens [B, L], targets [B, L] (x_{t-k}), weights [B, L] (1 where t >= k)."""
    length = max(cfg.k_grid) + cfg.extra_length
    tokens = rng.integers(0, cfg.vocab, size=(batch, length))
    targets = np.roll(tokens, k, axis=1)
    weights = (np.arange(length) >= k)[None, :].repeat(batch, 0).astype(np.float32)
    return tokens.astype(np.int32), targets.astype(np.int32), weights


@functools.cache
def _steps(name, lr):
    """Jitted train and eval steps of one architecture (k is data, so one compile serves all k)."""
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(lr))

    def loss_fn(params, tokens, targets, weights):
        logits = apply_model(name, params, tokens)
        ce = optax.softmax_cross_entropy_with_integer_labels(logits, targets)
        return jnp.sum(ce * weights) / jnp.sum(weights)

    @jax.jit
    def train_step(params, state, tokens, targets, weights):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets, weights)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    @jax.jit
    def accuracy(params, tokens, targets, weights):
        hit = jnp.argmax(apply_model(name, params, tokens), -1) == targets
        return jnp.sum(hit * weights) / jnp.sum(weights)

    return opt, train_step, accuracy


def train_and_eval(name, width, k, cfg):
    opt, train_step, accuracy = _steps(name, cfg.learning_rate)
    params = init_model(jax.random.PRNGKey(cfg.seed + k), name, cfg, width)
    state = opt.init(params)
    rng = np.random.default_rng(cfg.seed + 1000 * k)
    loss = float("nan")
    for _ in range(cfg.steps):
        params, state, loss = train_step(params, state, *make_batch(rng, cfg, cfg.batch, k))
    test = make_batch(np.random.default_rng(cfg.seed + 7 + 1000 * k), cfg, cfg.eval_batch, k)
    return float(accuracy(params, *test)), float(loss)


def _linear_claims(config, results, acc_at, chance):
    """minGRU / Mamba (gates from x only, computed in parallel over time) against the LSTM,
    at the farthest k the LSTM still recalls well above chance (none: not shown)."""
    if "lstm" not in results:
        return []
    reach = [k for k in config.k_grid if thresholds.well_above_chance(acc_at("lstm", k), chance)]
    rows = []
    for name in ("mingru", "mamba"):
        if name not in results:
            continue
        k = max(reach, default=max(config.k_grid))
        got, ref = acc_at(name, k), acc_at("lstm", k)
        rows.append(
            probes.Claim(
                f"{name}, a linear recurrence run in parallel, recalls as far as the LSTM (k={k})",
                f">= lstm − {thresholds.RECALL_MARGIN}, at the farthest k the lstm recalls",
                f"{got:.3f} vs lstm {ref:.3f}",
                thresholds.linear_recall_verdict(got, ref, reach),
                "" if reach else "the lstm is not well above chance at any k: nothing to match",
            )
        )
    return rows


def plot(cfg, results, workdir):
    fig, ax = common.new_figure(figsize=(7, 4.5))
    for name, r in results.items():
        ax.plot(cfg.k_grid, r["accuracy"], "o-", label=f"{name} ({r['params']} params)")
    ax.axhline(1.0 / cfg.vocab, color="gray", ls=":", label="chance")
    ax.set_xscale("log", base=2)
    ax.set(
        xlabel="recall distance k",
        ylabel="accuracy",
        ylim=(0, 1.05),
        title=f"recall x_(t-k): {cfg.steps} Adam steps per point, equal parameter budget",
    )
    ax.legend(fontsize=8)
    return common.save_plot(fig, workdir, "long_range.png")


def run(config, workdir):
    """Train every (model, k), write results.json, long_range.png and report.md."""
    started, t0 = common.provenance(), time.time()  # commit, machine, versions, load before
    results = {}
    for name in config.models:
        width = pick_width(name, config)
        n_params = count_params(init_model(jax.random.PRNGKey(0), name, config, width))
        accs, losses = [], []
        for k in config.k_grid:
            acc, loss = train_and_eval(name, width, k, config)
            accs.append(acc)
            losses.append(loss)
        results[name] = {"width": width, "params": n_params, "accuracy": accs, "final_loss": losses}
    png = plot(config, results, workdir)
    k_far = max(config.k_grid)
    chance = 1.0 / config.vocab

    def acc_at(name, k):
        return (
            results[name]["accuracy"][config.k_grid.index(k)] if name in results else float("nan")
        )

    rows = []
    for name in config.models:
        a_near, a_far = acc_at(name, min(config.k_grid)), acc_at(name, k_far)
        rows.append(
            probes.Claim(
                f"{name}: accuracy k={min(config.k_grid)} -> k={k_far}",
                "decays (recurrent) / flat (attention)",
                f"{a_near:.3f} -> {a_far:.3f}",
                probes.REPORTED,
            )
        )
    if "transformer" in results:
        recurrent = [acc_at(n, k_far) for n in results if n != "transformer"]
        best_rec = max(recurrent, default=chance)
        t_far = acc_at("transformer", k_far)
        floor = chance + thresholds.ABOVE_CHANCE * (1 - chance)
        rows.append(
            probes.Claim(
                f"attention keeps long-range recall at k={k_far} (direct path)",
                f"transformer >= every recurrent model, and >= {floor:.3f} (well above chance)",
                f"{t_far:.3f} vs best recurrent {best_rec:.3f}",
                probes.holds(thresholds.recall_ok(t_far, recurrent or [chance], chance)),
            )
        )
    if "rnn" in results and "lstm" in results:
        verdict, k = thresholds.gated_reach_verdict(
            results["lstm"]["accuracy"], results["rnn"]["accuracy"], config.k_grid, chance
        )
        floor = chance + thresholds.ABOVE_CHANCE * (1 - chance)
        rows.append(
            probes.Claim(
                "gated recurrence reaches further than the vanilla RNN",
                f"at the farthest k where lstm >= {floor:.3f} (well above chance): "
                f"lstm > rnn + {thresholds.RECALL_MARGIN}",
                f"k={k}: lstm {acc_at('lstm', k):.3f} vs rnn {acc_at('rnn', k):.3f}"
                if k is not None
                else f"lstm {', '.join(f'{a:.3f}' for a in results['lstm']['accuracy'])}",
                verdict,
                "" if k is not None else "the lstm is well above chance at no k: it did not learn",
            )
        )
    rows += _linear_claims(config, results, acc_at, chance)
    rows += long_range_conv.claims(config, results, acc_at, chance)
    out = {
        "config": config.to_dict(),
        "k_grid": list(config.k_grid),
        "chance": chance,
        "models": results,
        "plots": [png],
        "table": probes.claims_json(rows),
    }
    out["provenance"] = common.run_provenance("long_range", config, started, t0)
    common.write_json(workdir, out)
    acc_table = common.markdown_table(
        ("model", "width", "params") + tuple(f"k={k}" for k in config.k_grid),
        [(n, r["width"], r["params"]) + tuple(r["accuracy"]) for n, r in results.items()],
    )
    notes = (
        f"Vocabulary {config.vocab} (chance {chance:.3f}), sequence length "
        f"{max(config.k_grid) + config.extra_length} for every k, {config.steps} Adam steps of "
        f"{config.batch} sequences (lr {config.learning_rate:g}, clip 1.0) per point, from "
        f"scratch; every model sized to ~{config.param_budget} parameters. One seed: differences "
        "of a few points are noise. Small, short runs: a model that fails here might succeed "
        "with more steps; the comparison is at equal budget."
    )
    common.write_report(
        workdir,
        "Long-range recall: accuracy against distance k",
        [
            ("Claims", probes.claims_markdown(rows)),
            ("Accuracy", acc_table),
            ("How it was measured", notes),
            ("Plot", f"![long_range]({png})"),
            ("Run", common.provenance_line(out["provenance"])),
        ],
    )
    return out
