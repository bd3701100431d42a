"""Helpers several test files share (test files import from here, never from each other).

* translators: TINY (a tiny config for every registered model: the contract suites in
  test_seq2seq.py and test_sharding_models.py run over it), V, make_batch / random_batch /
  overfit_batch, train_translator, noisy_params
* sharded training: SHARD_VOCAB, sharding_batches, run_steps, assert_trees_close
* the training harness's stand-in Translator (no anatomy.seq2seq): bigram_model, batch_at,
  batches, small_config and their sizes BIGRAM_V, BIGRAM_B, BIGRAM_L, NAN_TOKEN
* tsv_config, adam_fit, rel
* injected results of the walls experiments, as their claims read them: per_seed,
  gradient_decay_results, long_range_results
* gettext catalogs: write_mo (a .mo file, GNU's format, written here so that no test reads the
  machine's catalogs), locale_dir
* end-to-end runs: launch_together (several launch.py runs at once), MOCK_LAUNCH (launch.py
  inside tfds's mock data)
"""

import os
import struct
import subprocess
import sys
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

import anatomy.data as data
from anatomy import train
from anatomy.compiling import compiler_options, jit_options
from anatomy.seq2seq import BOS, EOS


def tsv_config(train_path, **fields):
    """data.default_config() for a user corpus read from the TSV file train_path, with fields."""
    config = data.default_config()
    config.update(dict(name="tsv", train_path=train_path, **fields))
    return config


def write_mo(path, messages, *, plural_forms="nplurals=2; plural=(n > 1);", byteorder="<"):
    """Write a GNU .mo catalog (the layout of CPython's Tools/i18n/msgfmt.py: header, the
    originals' and the translations' (length, offset) tables, the strings; no hash table).

    messages: [(msgid, msgstr)] where msgid may be 'context\x04msgid' and/or
    'msgid\x00msgid_plural', msgstr one string or a tuple of plural forms."""
    header = f"Content-Type: text/plain; charset=UTF-8\nPlural-Forms: {plural_forms}\n"
    entries = {"": header}
    for msgid, msgstr in messages:
        entries[msgid] = msgstr if isinstance(msgstr, str) else "\x00".join(msgstr)
    keys = sorted(entries, key=lambda k: k.encode())
    ids = strs = b""
    offsets = []
    for k in keys:
        o, t = k.encode(), entries[k].encode()
        offsets.append((len(ids), len(o), len(strs), len(t)))
        ids += o + b"\0"
        strs += t + b"\0"
    n = len(keys)
    keystart = 7 * 4 + 16 * n
    valuestart = keystart + len(ids)
    koffsets, voffsets = [], []
    for o1, l1, o2, l2 in offsets:
        koffsets += [l1, o1 + keystart]
        voffsets += [l2, o2 + valuestart]
    out = struct.pack(byteorder + "7I", 0x950412DE, 0, n, 7 * 4, 7 * 4 + 8 * n, 0, 0)
    out += struct.pack(byteorder + f"{2 * n}I", *koffsets)
    out += struct.pack(byteorder + f"{2 * n}I", *voffsets)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(out + ids + strs)
    return path


def locale_dir(root, catalogs, lang="fr", **kw):
    """root/<lang>/LC_MESSAGES/<name> written from {name: messages} (write_mo); returns root."""
    for name, messages in catalogs.items():
        write_mo(os.path.join(root, lang, "LC_MESSAGES", name), messages, **kw)
    return str(root)


# launch.py as a user runs it, inside tfds's mock (a context manager: it patches this process);
# its first argument is the number of mock examples per split
MOCK_LAUNCH = (
    "import runpy, sys\n"
    "import tensorflow_datasets as tfds\n"
    "n = int(sys.argv[1])\n"
    "sys.argv = ['launch.py'] + sys.argv[2:]\n"
    "with tfds.testing.mock_data(num_examples=n):\n"
    "    runpy.run_path('launch.py', run_name='__main__')\n"
)


def launch_together(tmp_path_factory, runs, root, timeout=600, env=None):
    """Start every run at once, `python *argv --workdir=<tmp>/run` from `root` (runs: {name:
    argv after the interpreter}) in environment `env` (None: this process's), wait for all;
    {name: (workdir, returncode, stdout, stderr)}."""
    procs = {}
    for name, argv in runs.items():
        wd = tmp_path_factory.mktemp(name)
        out, err = open(wd / "stdout.txt", "w"), open(wd / "stderr.txt", "w")
        args = [sys.executable, *argv, f"--workdir={wd / 'run'}"]
        procs[name] = (
            wd,
            subprocess.Popen(args, cwd=root, env=env, stdout=out, stderr=err),
            out,
            err,
        )
    done = {}
    for name, (wd, proc, out, err) in procs.items():
        proc.wait(timeout=timeout)
        out.close(), err.close()
        done[name] = (
            wd / "run",
            proc.returncode,
            (wd / "stdout.txt").read_text(),
            (wd / "stderr.txt").read_text(),
        )
    return done


def adam_fit(loss_fn, params, steps, lr):
    """Adam on loss_fn(params) -> scalar, all steps in one jit (one compilation).

    Returns (params after `steps` steps, their loss).
    """
    tx = optax.adam(lr)

    def run(params):
        def body(_, carry):
            params, opt = carry
            updates, opt = tx.update(jax.grad(loss_fn)(params), opt, params)
            return optax.apply_updates(params, updates), opt

        params, _ = jax.lax.fori_loop(0, steps, body, (params, tx.init(params)))
        return params, loss_fn(params)

    # Tiny models: XLA's backend optimisations cost more compile time than they save.
    compiled = jax.jit(run).lower(params).compile(jit_options(compiler_options(0)))
    return compiled(params)


def rel(a, b):
    """Relative error ‖a - b‖ / ‖b‖ in float64."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.linalg.norm(a - b) / np.linalg.norm(b)


# ---------------------------------------------------------------- translators

V = 14  # the translators' vocabulary: ids 0-3 are pad, bos, eos, unk; 4..13 are words

# A tiny config for every registered model (test_seq2seq checks that none is missing): each
# trains, overfits, decodes step by step as it trains and shards through the contract suites.
TINY = {
    "rnnenc": {"cell": "lstm", "d_emb": 16, "d_hidden": 32},
    "rnnsearch": {
        "cell": "gru",
        "d_emb": 16,
        "d_enc": 16,
        "d_dec": 32,
        "d_attn": 16,
        "d_readout": 32,
    },
    "luong": {"cell": "lstm", "d_emb": 16, "d_hidden": 32, "score": "general"},
    "transformer": {
        "d_model": 32,
        "n_heads": 4,
        "d_ff": 64,
        "n_encoder_layers": 1,
        "n_decoder_layers": 1,
        "dropout_rate": 0.0,
    },
    "rnnenc_mixer": {"mixer": "mlstm", "d_model": 16, "n_heads": 2, "form": "quadratic"},
    "convs2s": {
        "d_emb": 16,
        "d_conv": 24,
        "d_out": 20,
        "kernel_size": 3,
        "n_encoder_layers": 2,
        "n_decoder_layers": 2,
        "dropout_rate": 0.0,
    },
}


def make_batch(srcs, tgts):
    """Pad lists of id lists into the batch layout of anatomy.data (pad 0, bos 1, eos 2)."""
    s_len = max(map(len, srcs))
    t_len = max(map(len, tgts)) + 1
    batch = {
        "src": np.zeros((len(srcs), s_len), np.int32),
        "tgt_in": np.zeros((len(srcs), t_len), np.int32),
        "tgt_out": np.zeros((len(srcs), t_len), np.int32),
    }
    for i, (s, t) in enumerate(zip(srcs, tgts)):
        batch["src"][i, : len(s)] = s
        batch["tgt_in"][i, : len(t) + 1] = [BOS] + t
        batch["tgt_out"][i, : len(t) + 1] = t + [EOS]
    batch["src_len"] = np.array([len(s) for s in srcs], np.int32)
    batch["tgt_len"] = np.array([len(t) + 1 for t in tgts], np.int32)
    return batch


def random_batch(seed, n=3):
    r = np.random.default_rng(seed)
    srcs = [list(r.integers(4, V, size=k)) for k in r.integers(2, 7, size=n)]
    tgts = [list(r.integers(4, V, size=k)) for k in r.integers(2, 6, size=n)]
    return make_batch(srcs, tgts)


def overfit_batch():
    """8 pairs: the target is the source reversed with each word shifted by 3 (mod 10)."""
    r = np.random.default_rng(7)
    srcs = [list(r.integers(4, V, size=k)) for k in (4, 5, 6, 4, 7, 5, 6, 4)]
    tgts = [[(x - 4 + 3) % 10 + 4 for x in reversed(s)] for s in srcs]
    return make_batch(srcs, tgts)


def train_translator(model, batch, steps=300, lr=1e-2):
    """Adam on the masked token cross-entropy, all steps in one jit (one compilation)."""
    mask = np.arange(batch["tgt_out"].shape[1])[None] < batch["tgt_len"][:, None]

    def loss_fn(params):
        logits = model.apply(params, batch)
        nll = optax.softmax_cross_entropy_with_integer_labels(logits, batch["tgt_out"])
        return jnp.sum(nll * mask) / mask.sum()

    return adam_fit(loss_fn, model.init(jax.random.key(0)), steps, lr)


def noisy_params(model, seed):
    """Every leaf moved off its init (biases start at 0, LN scales at 1), so a bias or a scale
    that only one of two paths applies changes the outputs."""
    noise = np.random.default_rng(seed)
    return jax.tree.map(
        lambda p: p + 0.1 * noise.normal(size=p.shape).astype(p.dtype),
        model.init(jax.random.key(seed)),
    )


# ---------------------------------------------------------------- sharded training

SHARD_VOCAB, SHARD_B, SHARD_S, SHARD_T, SHARD_STEPS = 24, 8, 7, 6, 2


def sharding_batches(seed=0):
    """SHARD_STEPS random batches (never zeros), B x S sources and B x T targets, ragged."""
    r = np.random.default_rng(seed)
    b, s, t = SHARD_B, SHARD_S, SHARD_T
    out = []
    for _ in range(SHARD_STEPS):
        src_len = r.integers(2, s + 1, size=b).astype(np.int32)
        tgt_len = r.integers(2, t + 1, size=b).astype(np.int32)
        src = np.where(np.arange(s) < src_len[:, None], r.integers(4, SHARD_VOCAB, (b, s)), 0)
        tgt = r.integers(4, SHARD_VOCAB, (b, t))
        tgt_out = np.where(np.arange(t) < tgt_len[:, None], tgt, 0)
        tgt_in = np.concatenate([np.ones((b, 1), int), tgt_out[:, :-1]], axis=1)
        out.append(
            {
                "src": src.astype(np.int32),
                "src_len": src_len,
                "tgt_in": tgt_in.astype(np.int32),
                "tgt_out": tgt_out.astype(np.int32),
                "tgt_len": tgt_len,
            }
        )
    return out


def _copy(tree):
    return jax.tree.map(lambda x: np.array(x, copy=True), tree)


def run_steps(step, state, batches):
    """(losses, gradients of step 1 (the momentum trace), final params) as numpy."""
    losses, mu1 = [], None
    for k, batch in enumerate(batches):
        state, metrics = step(state, batch, jax.random.key(100 + k))
        losses.append(float(metrics["loss"]))
        if k == 0:
            mu1 = _copy(state.opt_state[0].trace)  # a copy: the next step donates these buffers
    return np.array(losses), mu1, _copy(state.params)


def assert_trees_close(a, b, what):
    """Leaf by leaf within float32 rounding of sums reordered across devices."""
    for (path, x), y in zip(jax.tree_util.tree_flatten_with_path(a)[0], jax.tree.leaves(b)):
        scale = max(float(np.max(np.abs(y))), 1e-3)
        np.testing.assert_allclose(
            x, y, rtol=2e-5, atol=2e-5 * scale, err_msg=f"{what} {jax.tree_util.keystr(path)}"
        )


# ---------------------------------------------------------------- the harness's stand-in

BIGRAM_V, BIGRAM_D, BIGRAM_B, BIGRAM_L = 24, 16, 4, 8
NAN_TOKEN = BIGRAM_V - 1  # a batch whose src[0, 0] is this makes the stand-in's loss NaN


class Bigram(NamedTuple):
    name: str
    init: object
    apply: object


def bigram_model(dropout=0.1):
    """logits[b,t] = (E[tgt_in[b,t]] + mean_s E[src[b,s]]) @ W; NaN when src[0,0] == NAN_TOKEN."""

    def init(key):
        k1, k2 = jax.random.split(key)
        return {
            "emb": jax.random.normal(k1, (BIGRAM_V, BIGRAM_D)) * 0.3,
            "out": {"w": jax.random.normal(k2, (BIGRAM_D, BIGRAM_V)) * 0.3},
        }

    def apply(params, batch, *, rng=None, deterministic=True, return_intermediates=False):
        src, tgt = jnp.asarray(batch["src"]), jnp.asarray(batch["tgt_in"])
        h = params["emb"][tgt] + jnp.mean(params["emb"][src], axis=1, keepdims=True)  # [b,t,d]
        if not deterministic and dropout > 0:
            keep = jax.random.bernoulli(rng, 1 - dropout, h.shape)
            h = jnp.where(keep, h / (1 - dropout), 0.0)
        logits = h @ params["out"]["w"]  # [b,t,v]
        return logits * jnp.where(src[0, 0] == NAN_TOKEN, jnp.nan, 1.0)

    return Bigram("bigram", init, apply)


def batch_at(k, nan_step=None):
    """Batch k as a pure function of k (targets copy the source, shifted), zero-padded tails."""
    b, n = BIGRAM_B, BIGRAM_L
    r = np.random.default_rng(1000 + k)
    src = r.integers(4, BIGRAM_V - 1, (b, n)).astype(np.int32)
    lens = r.integers(3, n + 1, b).astype(np.int32)
    src[np.arange(n)[None] >= lens[:, None]] = 0
    tgt_out = src.copy()
    tgt_in = np.concatenate([np.ones((b, 1), np.int32), src[:, :-1]], 1)
    if nan_step is not None and k == nan_step:
        src[0, 0] = NAN_TOKEN
    return {"src": src, "src_len": lens, "tgt_in": tgt_in, "tgt_out": tgt_out, "tgt_len": lens}


def batches(start, nan_step=None, delay=0.0):
    k = start
    while True:
        if delay:
            time.sleep(delay)
        yield batch_at(k, nan_step)
        k += 1


def small_config(**kw):
    c = train.default_train_config()
    c.update(
        dict(
            num_steps=40,
            warmup_steps=5,
            learning_rate=1e-2,
            log_every=5,
            checkpoint_every=10,
            keep_checkpoints=3,
            progress=False,
        ),
        **kw,
    )
    return c


# ------------------------------------------- injected results of the walls experiments


def per_seed(mean, spread=0.0, n=3):
    """n per-seed values around `mean` (mean − spread, mean, mean + spread for n = 3)."""
    return [float(mean + spread * (i - (n - 1) / 2)) for i in range(n)]


def gradient_decay_results(rates, *, distance=100, far_over_near=1.0, clip=None):
    """gradient_decay results as its claims read them. rates: {label: [rate per seed]}; a
    label 'rnn <regime> <W kind> σ=<s>' is a tanh-RNN curve whose γ·σ_max is s, any other
    ('lstm', 'gru open gate', 'attention') a curve of results['other']. clip: (raw norms
    per seed at the first T, at the last T, clipped norms per seed at the last T)."""
    n = len(next(iter(rates.values())))
    raw0, raw1, clipped = clip or (per_seed(300.0, n=n), per_seed(1e7, n=n), per_seed(1.0, n=n))
    res = {
        "config": {
            "fit_max_distance": distance,
            "clip_sigma": 1.5,
            "clip_norm": 1.0,
            "clip_lengths": [10, 40],
            "seeds": list(range(n)),
        },
        "rnn": {},
        "other": {},
        "clipping": [
            {"length": 10, "grad_norm": raw0, "grad_norm_clipped": per_seed(1.0, n=n)},
            {"length": 40, "grad_norm": raw1, "grad_norm_clipped": clipped},
        ],
    }
    for label, values in rates.items():
        seeds = [{"seed": i, "fit": {"rate": r}} for i, r in enumerate(values)]
        if label.startswith("rnn ") and "σ=" in label:
            _, regime, w_kind, sigma = label.split(" ")
            s = float(sigma.split("=")[1])
            for e in seeds:
                e.update(sigma_max=s, spectral_radius=s, pascanu_bound=s)
            res["rnn"][label] = {"regime": regime, "w_kind": w_kind, "sigma": s, "seeds": seeds}
        else:
            if label == "attention":
                for e in seeds:
                    e["far_over_near"] = far_over_near
            res["other"][label] = {"seeds": seeds}
    return res


def long_range_results(accuracy, k_grid, *, readers=None, vocab=8, conv_field=(2, 3)):
    """long_range results as its claims read them. accuracy: {model: [[acc per seed] per k]}
    (a number for a k: that accuracy on every one of 3 seeds); readers likewise."""

    def table(rows):
        return [list(r) if isinstance(r, (list, tuple)) else per_seed(r) for r in rows]

    return {
        "config": {"conv_layers": conv_field[0], "conv_kernel": conv_field[1], "seeds": [0, 1, 2]},
        "k_grid": list(k_grid),
        "chance": 1.0 / vocab,
        "models": {m: {"accuracy": table(rows), "params": 1000} for m, rows in accuracy.items()},
        "readers": {r: table(rows) for r, rows in (readers or {}).items()},
    }
