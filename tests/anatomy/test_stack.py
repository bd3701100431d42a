"""The deep recurrent stack (anatomy/stack.py's recurrent_stack preset, over the stack's own
apply_stack / stack_step and {'blocks': [...]} layout): the plain stack against torch's
multi-layer nn.LSTM / nn.GRU with copied weights (values and gradients, float64), and the
residual / LayerNorm variants against a float64 NumPy loop over layers and time."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from anatomy import axes as axes_mod
from anatomy import scan, stack
from anatomy.errors import BadInputError
from anatomy.mixers import get_cell

B, T, D, H, L = 3, 6, 4, 5, 3
LENGTHS = np.array([4, 6, 1])  # unsorted on purpose


def make(cell, n_layers=L, *, residual=False, layer_norm=False, bidirectional=False, **kw):
    """recurrent_stack over d_in = D, the cells' hoisted autodiff path."""
    return stack.recurrent_stack(
        cell, H, n_layers, d_in=D, residual=residual, layer_norm=layer_norm,
        bidirectional=bidirectional, hoist=True, vjp="autodiff", **kw,
    )  # fmt: skip


def randomize(s, rng):
    """init_stack's structure for stack s, every leaf random float64 (LN scale around 1)."""
    shapes = jax.eval_shape(lambda k: stack.init_stack(k, s), jax.random.key(0))
    params = jax.tree_util.tree_map(lambda a: rng.normal(0, 0.5, a.shape), shapes)
    for block in params["blocks"]:
        if "out_ln1" in block:
            block["out_ln1"]["scale"] = 1.0 + block["out_ln1"]["scale"]
    return params


def rand_stack(cell, rng, n_layers=L, layer_norm=False):
    return randomize(make(cell, n_layers, layer_norm=layer_norm), rng)


def run(s, params, x, lengths=None, **kw):
    """apply_stack -> (final carries, y, every layer's output): one carry per layer, a
    (forward, backward) pair per layer both ways."""
    y, outs, finals = stack.apply_stack(
        params, s, x, lengths=lengths, return_states=True, return_layers=True, **kw
    )
    return (finals if s.bidirectional else [f["mix"] for f in finals]), y, outs


def cells(params, direction="mixer"):
    """Each layer's cell parameters (one direction's both ways: 'fw' / 'bw')."""
    return [b[direction]["mix"] for b in params["blocks"]]


# --- the float64 NumPy twin ---------------------------------------------------------------


def sig(a):
    return 1.0 / (1.0 + np.exp(-a))


def np_step(cell, p, carry, x):
    if cell == "lstm":
        h, c = carry
        i, f, g, o = np.split(x @ p["w_x"] + h @ p["w_h"] + p["b"], 4, axis=-1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        return (h, c), h
    xr, xz, xn = np.split(x @ p["w_x"] + p["b_x"], 3, axis=-1)
    hr, hz, hn = np.split(carry @ p["w_h"] + p["b_h"], 3, axis=-1)
    r, z = sig(xr + hr), sig(xz + hz)
    h = (1.0 - z) * np.tanh(xn + r * hn) + z * carry
    return h, h


def np_norm_residual(params, i, out, y, lengths, residual):
    """Layer i's LayerNorm (at real steps only) and residual, in float64."""
    if "out_ln1" in params["blocks"][i]:
        ln = params["blocks"][i]["out_ln1"]
        scale, bias = (np.asarray(ln[k], np.float64) for k in ("scale", "bias"))
        for b in range(B):
            for t in range(lengths[b]):
                v = out[b, t]
                out[b, t] = (v - v.mean()) / np.sqrt(v.var() + 1e-5) * scale + bias
    return out + y if residual and i > 0 else out


def np_stack(cell, params, x, lengths, residual):
    """Layer by layer, step by step, sequence by sequence."""
    x = np.asarray(x, np.float64)
    finals, y = [], x
    for i, p in enumerate(cells(params)):
        p = {k: np.asarray(v, np.float64) for k, v in p.items()}
        out = np.zeros((B, T, H))
        layer_finals = []
        for b in range(B):
            z = np.zeros((1, H))
            carry = (z, z) if cell == "lstm" else z
            for t in range(lengths[b]):
                carry, h = np_step(cell, p, carry, y[b : b + 1, t])
                out[b, t] = h[0]
            layer_finals.append(carry)
        out = np_norm_residual(params, i, out, y, lengths, residual)
        finals.append(layer_finals)
        y = out
    return finals, y


def final_h(cell, carry):
    return np.asarray(carry.h if cell == "lstm" else carry)


@pytest.mark.parametrize(
    "cell,residual,layer_norm",
    [("lstm", True, False), ("gru", False, True), ("lstm", True, True), ("gru", True, True)],
)
def test_stack_equals_numpy_loop(cell, residual, layer_norm):
    """The variants (the plain stack is held to torch below), with lengths, in float64."""
    rng = np.random.default_rng(7)
    params = rand_stack(cell, rng, layer_norm=layer_norm)
    x = rng.normal(size=(B, T, D))
    s = make(cell, residual=residual, layer_norm=layer_norm)
    with jax.enable_x64(True):
        carries, ys, layers = jax.jit(lambda p, x: run(s, p, x, LENGTHS))(params, x)
        assert ys.dtype == jnp.float64 and len(carries) == len(layers) == L
    ref_finals, ref_ys = np_stack(cell, params, x, LENGTHS, residual)
    np.testing.assert_allclose(ys, ref_ys, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(ys)[np.arange(T)[None] >= LENGTHS[:, None]], 0.0)
    np.testing.assert_array_equal(layers[-1], ys)
    for got, ref in zip(carries, ref_finals):
        np.testing.assert_allclose(
            final_h(cell, got),
            np.concatenate([r[0] if cell == "lstm" else r for r in ref]),
            rtol=1e-10,
            atol=1e-12,
        )
        if cell == "lstm":
            np.testing.assert_allclose(got.c, np.concatenate([r[1] for r in ref]), rtol=1e-10)


def load_torch_stack(module, params):
    """Our stack's layers (both directions of a bidirectional one) into torch's nn.LSTM /
    nn.GRU in float64, through benchmarks.peers' mapping of one layer."""
    import torch

    from benchmarks import peers

    both = "fw" in params["blocks"][0]
    directions = (("", "fw"), ("_reverse", "bw")) if both else (("", "mixer"),)
    state = {}
    for sfx, key in directions:
        for k, p in enumerate(cells(params, key)):
            state.update(peers.torch_rnn_state(p, suffix=f"_l{k}{sfx}", dtype=torch.float64))
    module.load_state_dict(state)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_plain_stack_equals_torch_values_and_gradients(cell):
    """torch.nn.LSTM / GRU(num_layers=3) over a packed batch: outputs, h_n (c_n) and the
    gradients of one scalar of them w.r.t. every weight and the input, in float64."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    params = rand_stack(cell, rng)
    x = rng.normal(size=(B, T, D))
    w_y, w_h = rng.normal(size=(B, T, H)), rng.normal(size=(L, B, H))
    w_c = rng.normal(size=(L, B, H))

    module = getattr(torch.nn, cell.upper())(D, H, num_layers=L, batch_first=True).double()
    load_torch_stack(module, params)
    x_t = torch.tensor(x, requires_grad=True)
    packed = torch.nn.utils.rnn.pack_padded_sequence(
        x_t, torch.tensor(LENGTHS), batch_first=True, enforce_sorted=False
    )
    out, state = module(packed)
    out, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)
    h_n, c_n = state if cell == "lstm" else (state, None)
    loss_t = (out * torch.tensor(w_y)).sum() + (h_n * torch.tensor(w_h)).sum()
    if c_n is not None:
        loss_t = loss_t + (c_n * torch.tensor(w_c)).sum()
    loss_t.backward()

    s = make(cell)

    def loss(params, x):
        carries, ys, _ = run(s, params, x, jnp.asarray(LENGTHS))
        total = jnp.sum(ys * w_y)
        for k, c in enumerate(carries):
            total += jnp.sum(get_cell(cell).hidden(c) * w_h[k])
            if cell == "lstm":
                total += jnp.sum(c.c * w_c[k])
        return total, (carries, ys)

    with jax.enable_x64(True):
        (value, (carries, ys)), (g_p, g_x) = jax.jit(
            jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)
        )(params, jnp.asarray(x))
    np.testing.assert_allclose(ys, out.detach().numpy(), rtol=1e-10, atol=1e-12)
    for k, c in enumerate(carries):
        np.testing.assert_allclose(get_cell(cell).hidden(c), h_n[k].detach().numpy(), rtol=1e-10)
        if cell == "lstm":
            np.testing.assert_allclose(c.c, c_n[k].detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(value, loss_t.item(), rtol=1e-10)
    np.testing.assert_allclose(g_x, x_t.grad.numpy(), rtol=1e-9, atol=1e-12)
    for k, g in enumerate(cells(g_p)):
        grad = lambda n, k=k: getattr(module, f"{n}_l{k}").grad.numpy()
        np.testing.assert_allclose(g["w_x"], grad("weight_ih").T, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(g["w_h"], grad("weight_hh").T, rtol=1e-9, atol=1e-12)
        if cell == "lstm":  # our one bias gets what either of torch's gets
            np.testing.assert_allclose(g["b"], grad("bias_ih"), rtol=1e-9, atol=1e-12)
        else:
            np.testing.assert_allclose(g["b_x"], grad("bias_ih"), rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(g["b_h"], grad("bias_hh"), rtol=1e-9, atol=1e-12)


@pytest.mark.slow
def test_residual_layer_norm_gradients_are_the_derivative():
    """check_grads (float64, tiny shapes) through residual + LayerNorm + lengths."""
    rng = np.random.default_rng(3)
    params = rand_stack("lstm", rng, n_layers=2, layer_norm=True)
    x = rng.normal(size=(B, T, D))
    s = make("lstm", 2, residual=True, layer_norm=True)
    with jax.enable_x64(True):
        f = jax.jit(lambda p, x: stack.apply_stack(p, s, x, lengths=LENGTHS))
        check_grads(f, (params, jnp.asarray(x)), order=1, modes=("rev",))


@pytest.mark.slow
def test_init_axes_dropout_and_bad_input():
    key = jax.random.key(0)
    params = stack.init_stack(key, make("gru", 2, residual=True, layer_norm=True))
    assert cells(params)[0]["w_x"].shape == (D, 3 * H)
    assert cells(params)[1]["w_x"].shape == (H, 3 * H)
    axes, _ = axes_mod.trace(lambda k: stack.init_stack(k, make("lstm", 2, layer_norm=True)), key)
    blocks = axes["blocks"]
    assert blocks[1]["mixer"]["mix"]["w_h"] == (None, "hidden")
    assert blocks[0]["out_ln1"]["scale"] == ("embed",)
    x = jnp.asarray(np.random.default_rng(0).normal(size=(B, T, D)), jnp.float32)

    def dropped_run(params, rng):
        n = len(params["blocks"])
        s = make("gru", n, residual=True, layer_norm=True, dropout_rate=0.5)
        return jax.jit(lambda p, r: run(s, p, x, rng=r))(params, rng)

    _, eval_ys, eval_layers = dropped_run(params, None)  # rng=None: evaluation, no dropout
    _, train_ys, train_layers = dropped_run(params, jax.random.key(1))
    assert eval_ys.shape == (B, T, H) and not np.allclose(eval_ys, train_ys)
    dropped = np.asarray(train_layers[0]) == 0.0  # layer 1's branch: 0 or doubled
    assert 0 < dropped.mean() < 1
    np.testing.assert_allclose(np.asarray(train_layers[0])[~dropped], 2 * eval_layers[0][~dropped])
    one = {"blocks": params["blocks"][:1]}  # no layer after it
    np.testing.assert_array_equal(dropped_run(one, jax.random.key(1))[1], dropped_run(one, None)[1])
    for bad in ("mamba", "rnn", None):
        with pytest.raises(BadInputError, match="'lstm', 'gru'"):
            make(bad, 2)
    with pytest.raises(BadInputError, match="cell"):
        make("transformer")
    with pytest.raises(BadInputError, match="n_layers"):
        make("lstm", 0)


# --- reverse, one step at a time, bidirectional --------------------------------------------


@pytest.mark.slow
def test_reverse_reads_each_sequence_backwards_within_its_length():
    """apply_stack(reverse=True) == the stack over the within-length reversed input, reversed
    back; its carries are run(reverse=True)'s for a one-layer stack."""
    rng = np.random.default_rng(5)
    params = rand_stack("lstm", rng, n_layers=2, layer_norm=True)
    x = rng.normal(size=(B, T, D))
    with jax.enable_x64(True):
        rev = lambda a: scan.reverse_padded(jnp.asarray(a), jnp.asarray(LENGTHS))
        s = make("lstm", 2, residual=True, layer_norm=True)
        carries, ys, _ = run(s, params, x, LENGTHS, reverse=True)
        ref_c, ref_y, _ = run(s, params, rev(x), LENGTHS)
        np.testing.assert_allclose(ys, rev(ref_y), rtol=1e-12, atol=1e-12)
        for a, b in zip(jax.tree.leaves(carries), jax.tree.leaves(ref_c)):
            np.testing.assert_allclose(a, b, rtol=1e-12)
        one = {"blocks": [{"mixer": params["blocks"][0]["mixer"]}]}
        (c1,), y1, _ = run(make("lstm", 1), one, x, LENGTHS, reverse=True)
        c_run, y_run = scan.run(get_cell("lstm"), cells(one)[0], x, lengths=LENGTHS, reverse=True)
        np.testing.assert_allclose(y1, y_run, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(c1.c, c_run.c, rtol=1e-12)


@pytest.mark.parametrize(
    "cell,residual,layer_norm", [("lstm", True, True), ("gru", True, False), ("gru", False, True)]
)
def test_stack_step_equals_the_scan_row_by_row(cell, residual, layer_norm):
    """stack_step fed x[:, 0], x[:, 1], ... from init_stack_state gives apply_stack's outputs
    at every position and its final carries (float64)."""
    rng = np.random.default_rng(9)
    params = rand_stack(cell, rng, layer_norm=layer_norm)
    x = rng.normal(size=(B, T, D))
    with jax.enable_x64(True):
        s = make(cell, residual=residual, layer_norm=layer_norm)
        carries, ys, _ = run(s, params, x)
        step = jax.jit(lambda st, x_t: stack.stack_step(params, s, st, x_t))
        state = stack.init_stack_state(params, s, B, dtype=jnp.float64)
        rows = []
        for t in range(T):
            y, state = step(state, jnp.asarray(x[:, t]))
            rows.append(y)
    np.testing.assert_allclose(jnp.stack(rows, 1), ys, rtol=1e-10, atol=1e-12)
    for a, b in zip(jax.tree.leaves([st["mix"] for st in state]), jax.tree.leaves(carries)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    with pytest.raises(BadInputError, match="1 states for 3 layers"):
        stack.stack_step(params, s, state[:1], jnp.asarray(x[:, 0]))


def rand_bistack(cell, rng, n_layers=2, layer_norm=False):
    return randomize(make(cell, n_layers, layer_norm=layer_norm, bidirectional=True), rng)


def np_bistack(cell, params, x, lengths, residual):
    """float64 loops: per layer a forward and a within-length backward pass, concatenated,
    then LayerNorm over 2H and the residual."""
    y = np.asarray(x, np.float64)
    for i, block in enumerate(params["blocks"]):
        out = np.zeros((B, T, 2 * H))
        for half, p in enumerate((block["fw"]["mix"], block["bw"]["mix"])):
            p = {k: np.asarray(v, np.float64) for k, v in p.items()}
            for b in range(B):
                z = np.zeros((1, H))
                carry = (z, z) if cell == "lstm" else z
                steps = range(lengths[b]) if half == 0 else reversed(range(lengths[b]))
                for t in steps:
                    carry, h = np_step(cell, p, carry, y[b : b + 1, t])
                    out[b, t, half * H : (half + 1) * H] = h[0]
        out = np_norm_residual(params, i, out, y, lengths, residual)
        y = out
    return y


@pytest.mark.parametrize("cell,residual,layer_norm", [("lstm", True, True), ("gru", True, False)])
def test_bidirectional_stack_equals_numpy_loops(cell, residual, layer_norm):
    rng = np.random.default_rng(13)
    params = rand_bistack(cell, rng, n_layers=3, layer_norm=layer_norm)
    x = rng.normal(size=(B, T, D))
    s = make(cell, 3, residual=residual, layer_norm=layer_norm, bidirectional=True)
    with jax.enable_x64(True):
        carries, ys, _ = run(s, params, x, LENGTHS)
    np.testing.assert_allclose(ys, np_bistack(cell, params, x, LENGTHS, residual), atol=1e-12)
    assert len(carries) == 3 and ys.shape == (B, T, 2 * H)
    for bad in (dict(reverse=True), dict(states=[None] * 3)):  # one direction's options
        with pytest.raises(BadInputError, match="bidirectional stack takes no states"):
            stack.apply_stack(params, s, x, lengths=LENGTHS, **bad)
    with pytest.raises(BadInputError, match=r"one block per mixer \(3\)"):
        stack.apply_stack({"blocks": params["blocks"][:2]}, s, x)
    with pytest.raises(BadInputError, match="stack_step: a bidirectional stack reads the whole"):
        stack.stack_step(params, s, [None] * 3, x[:, 0])
    with pytest.raises(BadInputError, match="init_stack_state: a bidirectional stack"):
        stack.init_stack_state(params, s, B)
    with pytest.raises(BadInputError, match="bidirectional must be a boolean"):
        make(cell, 2, bidirectional="yes")


def test_plain_bidirectional_stack_equals_torch_values_and_gradients():
    """torch.nn.LSTM(bidirectional=True, num_layers=2) over a packed batch: outputs, the
    top layer's final states and the gradients w.r.t. every weight and the input (float64)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(17)
    params = rand_bistack("lstm", rng)
    x = rng.normal(size=(B, T, D))
    w_y, w_h = rng.normal(size=(B, T, 2 * H)), rng.normal(size=(4, B, H))
    module = torch.nn.LSTM(D, H, num_layers=2, batch_first=True, bidirectional=True).double()
    load_torch_stack(module, params)
    x_t = torch.tensor(x, requires_grad=True)
    packed = torch.nn.utils.rnn.pack_padded_sequence(
        x_t, torch.tensor(LENGTHS), batch_first=True, enforce_sorted=False
    )
    out, (h_n, _) = module(packed)
    out, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)
    loss_t = (out * torch.tensor(w_y)).sum() + (h_n * torch.tensor(w_h)).sum()
    loss_t.backward()

    s = make("lstm", 2, bidirectional=True)

    def loss(params, x):
        carries, ys, _ = run(s, params, x, jnp.asarray(LENGTHS))
        hs = [c.h for pair in carries for c in pair]  # torch's h_n order: l0 fw, l0 bw, l1 ...
        return jnp.sum(ys * w_y) + sum(jnp.sum(h * w) for h, w in zip(hs, w_h)), ys

    with jax.enable_x64(True):
        (value, ys), (g_p, g_x) = jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True))(
            params, jnp.asarray(x)
        )
    np.testing.assert_allclose(ys, out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(value, loss_t.item(), rtol=1e-10)
    np.testing.assert_allclose(g_x, x_t.grad.numpy(), rtol=1e-9, atol=1e-12)
    for k in range(2):
        for sfx, g in (("", cells(g_p, "fw")[k]), ("_reverse", cells(g_p, "bw")[k])):
            grad = lambda n, k=k, sfx=sfx: getattr(module, f"{n}_l{k}{sfx}").grad.numpy()
            np.testing.assert_allclose(g["w_x"], grad("weight_ih").T, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(g["w_h"], grad("weight_hh").T, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(g["b"], grad("bias_ih"), rtol=1e-9, atol=1e-12)
