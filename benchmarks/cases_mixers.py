"""The mixer cases: every mixer of anatomy.mixers in every form, forward + backward, at a length N.

One Case per (mixer, N) whose implementations are the mixer's forms, all the same function
(each mixer's twin file in tests/anatomy/mixers/ proves it; the protocol checks it again before timing, against the
first form that fits in memory):

    'sequential'              jax.lax.scan, the twin every form is held to
    'associative'             jax.lax.associative_scan
    'chunked'                 dense products inside chunks, a scan across them
    'quadratic'               the T x T attention-like form (where one exists)

and, for Mamba-2 and gated DeltaNet, 'torch': a twin written from the paper's equations
(benchmarks/peers_mixers.py: SSD's chunked algorithm; the delta rule step by step), beside
the same N for softmax attention ('anatomy' dense, 'anatomy chunked': the online
softmax of anatomy/attention/chunked.py) and the LSTM (anatomy.scan.run on the translators'
default path, and torch.nn.LSTM). The pass timed is 'fwdbwd': the gradients of <y, g> w.r.t.
the input and every parameter (benchmarks/cases.py: _jax_impl). torch is imported only where a
torch twin is built (twin=True, the default, and torch installed: without it the twins are
skipped, the JAX forms timed as before; the crossover experiment builds none). A form whose compiled
forward + backward program would hold more than ``MAX_BYTES`` (XLA's memory analysis, before
anything runs) is left out at that N and reported as such.
"""

import importlib.util

import jax
import numpy as np

from anatomy import mixers
from anatomy.mixers.cells import init_lstm
from anatomy.scan import run
from benchmarks.cases import _jax_impl
from benchmarks.inputs import f32, fill, jitter, shapes
from benchmarks.protocol import Case

TORCH_TWINS = (
    "mamba2",
    "gated_deltanet",
)  # the mixers benchmarks/peers_mixers.py has a PEERS twin of
MAX_BYTES = 3 * 2**30  # a program above this (temp + output) is not run on this machine
# The sizes every mixer is benchmarked at: width m, heads, per-head widths (the same state
# budget order for the matrix-state mixers: 4 heads x 16 x 16).
KNOBS = {
    "linear_attention": {"n_heads": 4},
    "rglru": {"expand": 1},
    "mlstm": {"n_heads": 4},
    "gated_deltanet": {"n_heads": 4},
    "mamba2": {"expand": 2, "d_state": 16},  # head_dim: 4 heads of expand·m / 4
    "mingru": {"expand": 1},
    "mamba": {"d_state": 16},
    "attention": {"n_heads": 4},
}


def _fwdbwd_only(impl):
    """The impl with only its 'fwdbwd' pass timed (check() still compares out and dx)."""
    return impl._replace(passes={"fwdbwd": impl.passes["fwdbwd"]})


def mixer_case(name, batch, n, d_model, rng, forms=None, max_bytes=MAX_BYTES, twin=True):
    """One Case: mixer ``name`` at width d_model over [batch, n, d_model], its forms (all, or
    ``forms``) as implementations labelled by form; max_bytes None: no sizing (tiny shapes);
    twin: also the torch twin ('torch') where one exists and torch is installed (imports it).
    Returns (case, reference: the first form that fits, {form: 'over memory'} left out)."""
    knobs = dict(KNOBS.get(name, {}))  # a mixer not listed runs at its own defaults
    if name == "mamba2":
        knobs["head_dim"] = knobs["expand"] * d_model // 4
    mixer = mixers.build_mixer(name, d_model, conv=0, **knobs)
    params = jitter(jax.tree.map(np.asarray, mixer.init(jax.random.key(0))), rng)
    x = f32(rng.normal(size=(batch, n, d_model)))
    g = f32(rng.normal(size=(batch, n, d_model)))
    impls, left_out = {}, {}
    for form in forms or mixer.forms:
        impl = _jax_impl(lambda p, x_, f=form: mixer.apply(p, x_, form=f), params, x, g)
        if max_bytes is not None and impl.memory("fwdbwd") > max_bytes:
            left_out[form] = "over memory"
            continue
        impls[form] = _fwdbwd_only(impl)
    if (
        twin and _have_torch() and name in TORCH_TWINS
    ):  # the torch twin written from the paper, same weights
        import torch

        from benchmarks.cases import _torch_impl
        from benchmarks.peers_mixers import PEERS, torch_leaves, torch_params

        tp = torch_params(params["mix"])
        t_impl = _torch_impl(
            lambda x_: PEERS[name](
                tp, x_, **({"chunk": mixer.config.chunk} if name == "mamba2" else {})
            ),
            torch_leaves(tp),
            [torch.from_numpy(np.array(x))],
            torch.from_numpy(np.array(g)),
        )
        impls["torch"] = t_impl._replace(passes={"fwdbwd": t_impl.passes["fwdbwd"]})
    shape = f"B={batch} N={n} m={d_model}"
    return Case(name, shape, impls, {}), next(iter(impls)), left_out


def lstm_case(batch, n, d_model, rng, twin=True):
    """The LSTM layer at the same width: anatomy.scan.run on the translators' CPU default path
    (fused VJP, hoist off) and (twin) torch.nn.LSTM (2 threads), fwdbwd only."""
    bound = d_model**-0.5
    p = fill(
        shapes(init_lstm, jax.random.key(0), d_model, d_model),
        lambda _, s: rng.uniform(-bound, bound, s),
    )
    x = f32(rng.normal(size=(batch, n, d_model)))
    g = f32(rng.normal(size=(batch, n, d_model)))
    layer = lambda p_, x_: run(mixers.get_cell("lstm"), p_, x_, hoist=False, vjp="fused")[1]
    impls = {"anatomy": _fwdbwd_only(_jax_impl(layer, p, x, g, note="fused VJP, hoist=False"))}
    if not (twin and _have_torch()):  # the torch reference is only a peer: skipped without it
        return Case("lstm", f"B={batch} N={n} m={d_model}", impls, {})
    import torch

    from benchmarks import peers
    from benchmarks.cases import _torch_impl

    t_mod = torch.nn.LSTM(d_model, d_model, batch_first=True)
    t_mod.load_state_dict(peers.torch_rnn_state(p))
    t_impl = _torch_impl(
        lambda x_: t_mod(x_)[0],
        list(t_mod.parameters()),
        [torch.from_numpy(np.array(x))],
        torch.from_numpy(np.array(g)),
    )
    impls["torch"] = t_impl._replace(passes={"fwdbwd": t_impl.passes["fwdbwd"]})
    return Case("lstm", f"B={batch} N={n} m={d_model}", impls, {})


def _have_torch() -> bool:
    """torch is a reference peer, not a dependency of the experiments: without it the torch
    twins are skipped (the JAX forms are timed as before)."""
    try:
        return importlib.util.find_spec("torch") is not None
    except ModuleNotFoundError:
        return False


PRESETS = {  # batch, lengths, width
    "full": (1, (256, 1024, 4096, 16384), 64),
    "quick": (1, (256, 1024), 32),
    "tiny": (2, (7,), 8),
}


# the mixers timed: every linear recurrence in each of its forms, softmax attention, and the
# LSTM on the translators' CPU path (the nonlinear cells have one form: nothing to choose)
BENCHED = (*mixers.LINEAR, "attention", "lstm")


def build_mixer_cases(preset="full", seed=0, names=BENCHED):
    """Yields (case, reference label, left_out) for every mixer of ``names`` ('lstm': the
    LSTM, reference 'anatomy') at every length of ``preset``, built one at a time."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}")
    batch, lengths, width = PRESETS[preset]
    rng = np.random.default_rng(seed)
    for n in lengths:
        for name in names:
            if name == "lstm":
                yield lstm_case(batch, n, width, rng), "anatomy", {}
            else:
                yield mixer_case(
                    name, batch, n, width, rng, max_bytes=None if preset == "tiny" else MAX_BYTES
                )
