"""anatomy.mixers.cells (run by anatomy.scan) vs torch.nn.LSTM / torch.nn.GRU (float64) and flax.linen cells, on our
weights mapped by benchmarks/peers.py (the benchmarks' own mappings)."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from helpers import rel

from anatomy.mixers import get_cell
from anatomy.mixers.cells import LSTMState, gru_cell, lstm_cell
from anatomy.scan import bidirectional, run
from benchmarks import peers

B, T, D, H = 3, 6, 4, 5
LENGTHS = np.array([4, 6, 1])  # unsorted on purpose (enforce_sorted=False)


def rand_params(name, rng):
    shapes = jax.tree_util.tree_map(jnp.shape, get_cell(name).init(jax.random.key(0), D, H))
    return {k: rng.normal(0, 0.5, s).astype(np.float32) for k, s in shapes.items()}


def torch_state(params, suffix="_l0"):
    return peers.torch_rnn_state(params, suffix=suffix, dtype=torch.float64)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(2024)
    return rng, rng.normal(size=(B, T, D)).astype(np.float32)


@pytest.mark.parametrize("name,torch_cls", [("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU)])
def test_unidirectional_vs_torch(name, torch_cls, data):
    rng, xs = data
    p = rand_params(name, rng)
    layer = torch_cls(D, H, batch_first=True).double()
    layer.load_state_dict(torch_state(p))
    with torch.no_grad():
        out, hn = layer(torch.tensor(xs, dtype=torch.float64))
    final, ys = run(get_cell(name), p, xs)
    assert rel(ys, out.numpy()) <= 1e-5
    if name == "lstm":
        assert rel(final.h, hn[0][0].numpy()) <= 1e-5
        assert rel(final.c, hn[1][0].numpy()) <= 1e-5
    else:
        assert rel(final, hn[0].numpy()) <= 1e-5


@pytest.mark.parametrize("name,torch_cls", [("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU)])
def test_bidirectional_packed_vs_torch(name, torch_cls, data):
    """Variable lengths: torch bidirectional=True over pack_padded_sequence vs ours."""
    rng, xs = data
    p_fw, p_bw = rand_params(name, rng), rand_params(name, rng)
    layer = torch_cls(D, H, batch_first=True, bidirectional=True).double()
    layer.load_state_dict({**torch_state(p_fw), **torch_state(p_bw, "_l0_reverse")})
    packed = torch.nn.utils.rnn.pack_padded_sequence(
        torch.tensor(xs, dtype=torch.float64),
        torch.tensor(LENGTHS),
        batch_first=True,
        enforce_sorted=False,
    )
    with torch.no_grad():
        out, hn = layer(packed)
    out, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)
    ys, (cf, cb) = bidirectional(get_cell(name), p_fw, p_bw, xs, lengths=LENGTHS)
    assert rel(ys, out.numpy()) <= 1e-5
    assert np.all(np.asarray(ys)[out.numpy() == 0.0] == 0.0)  # torch pads with zeros too
    h_n = hn[0] if name == "lstm" else hn  # [2, B, H]: forward, backward
    assert rel(get_cell(name).hidden(cf), h_n[0].numpy()) <= 1e-5
    assert rel(get_cell(name).hidden(cb), h_n[1].numpy()) <= 1e-5
    if name == "lstm":
        assert rel(cf.c, hn[1][0].numpy()) <= 1e-5
        assert rel(cb.c, hn[1][1].numpy()) <= 1e-5


def flax_params(module, carry, x, ours, mapping):
    """mapping(ours), checked to have exactly the names and shapes of flax's own init tree."""
    fp = mapping(ours)
    want = module.init(jax.random.key(0), carry, x)["params"]
    assert jax.tree.map(np.shape, fp) == jax.tree.map(np.shape, want)
    return fp


@pytest.mark.slow
@pytest.mark.parametrize("cls", [nn.LSTMCell, nn.OptimizedLSTMCell])
def test_lstm_cell_vs_flax(cls, data):
    """flax params: input kernels ii/if/ig/io [D, H] (no bias), hidden hi/hf/hg/ho [H, H] + bias.

    flax's carry is (c, h); ours is LSTMState(h, c). Both sides run in float32 with the same
    equations (ours is checked against float64 NumPy in test_cells.py), so 1e-5 holds.
    """
    rng, xs = data
    module = cls(features=H)
    h0, c0 = (jnp.asarray(rng.normal(size=(B, H)), jnp.float32) for _ in range(2))
    ours = rand_params("lstm", rng)
    fp = flax_params(module, (c0, h0), xs[:, 0], ours, peers.flax_lstm_cell)
    carry_f, carry_o = (c0, h0), LSTMState(h0, c0)
    for t in range(3):
        carry_f, y_f = module.apply({"params": fp}, carry_f, xs[:, t])
        carry_o, y_o = lstm_cell(ours, carry_o, xs[:, t])
        assert rel(y_o, y_f) <= 1e-5
        assert rel(carry_o.c, carry_f[0]) <= 1e-5


def test_gru_cell_vs_flax(data):
    """flax.linen.GRUCell applies the reset gate AFTER the hidden matmul, n = tanh(W_in x + b_in
    + r ⊙ (W_hn h + b_hn)), and h' = (1 - z) ⊙ n + z ⊙ h: our reset_after=True variant.
    flax has biases on ir/iz/in and hn only; our b_h's r and z slices fold into ir/iz."""
    rng, xs = data
    module = nn.GRUCell(features=H)
    h = jnp.asarray(rng.normal(size=(B, H)), jnp.float32)
    ours = rand_params("gru", rng)
    fp = flax_params(module, h, xs[:, 0], ours, peers.flax_gru_cell)
    hf, ho = h, h
    for t in range(3):
        hf, _ = module.apply({"params": fp}, hf, xs[:, t])
        ho, _ = gru_cell(ours, ho, xs[:, t], reset_after=True)
        assert rel(ho, hf) <= 1e-5
    # the paper variant is a different function
    assert (
        rel(
            gru_cell(ours, h, xs[:, 0], reset_after=False)[0],
            module.apply({"params": fp}, h, xs[:, 0])[0],
        )
        > 1e-3
    )
