"""anatomy.mixers and the recurrences behind them: every mixer in every form against a float64
NumPy loop written from its paper (values) and its float64 sequential form (gradients);
decoding step by step equals the full pass (short conv included); a state carries over from
one call to the next and stops at each length; state sizes; the hybrid pattern; clear errors.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rel

from anatomy import mixers
from anatomy.compiling import compiler_options, jit_options
from anatomy.conv import init_short_conv, short_conv
from anatomy.errors import BadInputError

B, T, D = 2, 7, 8
CHUNK = 3  # two full chunks and a padded one
FAST = jit_options(compiler_options(0))  # tiny programs: compiling dominates
# Each mixer at a tiny size; twins below compute the same layer in float64.
KNOBS = {
    "linear_attention": {"n_heads": 2, "d_key": 3},
    "rglru": {"expand": 1, "n_blocks": 2},
    "mlstm": {"n_heads": 2, "d_value": 3},
    "gated_deltanet": {"n_heads": 2, "d_key": 3},
    "mamba2": {"expand": 2, "head_dim": 4, "d_state": 3},
    "mingru": {"expand": 2},
    "mamba": {"d_state": 3},
    "attention": {"n_heads": 2},
    "rnn": {},
    "lstm": {},
    "gru": {},
}
RNG = np.random.default_rng(0)


def build(name, **knobs):
    return mixers.build_mixer(name, D, chunk=CHUNK, **{"conv": 0, **KNOBS[name], **knobs})


def moved(mixer, seed=0, scale=0.3):
    """init with every leaf moved off it (zero biases or unit scales would hide a missed term)."""
    noise = np.random.default_rng(seed)
    params = mixer.init(jax.random.key(seed))
    params = jax.tree.map(lambda p: p + scale * noise.normal(size=p.shape).astype(p.dtype), params)
    if mixer.name == "mamba2":  # Δ near 0.7 and D small, so the state carries the output
        params["mix"]["b_dt"] = jnp.zeros_like(params["mix"]["b_dt"])
        params["mix"]["d"] = 0.1 * params["mix"]["d"]
    return params


def inputs(seed=1, t=T):
    return jnp.asarray(np.random.default_rng(seed).normal(size=(B, t, D)), jnp.float32)


# ------------------------------------------------------- float64 twins, from the papers

sig = lambda x: 1 / (1 + np.exp(-x))
silu = lambda x: x * sig(x)
softplus = lambda x: np.log1p(np.exp(x))
heads = lambda x, w: np.einsum("bm,mhk->bhk", x, w)
merge = lambda y, w: np.einsum("bhv,hvm->bm", y, w)


def rms(x, scale, eps=1e-6):
    return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps) * scale


def twin_linear_attention(p, xs):
    """Katharopoulos et al. 2020: S += φ(k) vᵀ, z += φ(k), y = Sᵀφ(q) / (zᵀφ(q) + ε)."""
    phi = lambda x: np.where(x > 0, x + 1, np.exp(x))  # elu + 1
    s, z, out = 0.0, 0.0, []
    for t in range(xs.shape[1]):
        q, k = phi(heads(xs[:, t], p["w_q"])), phi(heads(xs[:, t], p["w_k"]))
        v = heads(xs[:, t], p["w_v"])
        s, z = s + k[..., :, None] * v[..., None, :], z + k
        num, den = np.einsum("bhkv,bhk->bhv", s, q), np.einsum("bhk,bhk->bh", z, q)
        out.append(merge(num / (den[..., None] + 1e-6), p["w_o"]))
    return np.stack(out, 1)


def twin_rglru(p, xs):
    """De et al. 2024: h = a ⊙ h + √(1 - a²) ⊙ (i ⊙ u), log a = -8 r softplus(Λ), gated out."""
    n = p["w_a"].shape[0]
    blocks = lambda u, w, b: np.einsum("bni,nij->bnj", u.reshape(len(u), n, -1), w).reshape(u.shape) + b  # fmt: skip
    gelu = lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    h, out = 0.0, []
    for t in range(xs.shape[1]):
        x = xs[:, t]
        g = gelu(x @ p["y"]["w"] + p["y"]["b"])
        u = x @ p["x"]["w"] + p["x"]["b"]
        r, i = sig(blocks(u, p["w_a"], p["b_a"])), sig(blocks(u, p["w_i"], p["b_i"]))
        a = np.exp(-8.0 * r * softplus(p["lam"]))
        h = a * h + np.sqrt(1 - a**2) * (i * u)
        out.append((h * g) @ p["out"]["w"] + p["out"]["b"])
    return np.stack(out, 1)


def twin_mlstm(p, xs):
    """Beck et al. 2024, unstabilised (float64 holds exp(ĩ) here): C = f C + exp(ĩ) k vᵀ,
    n = f n + exp(ĩ) k, h̃ = Cᵀq / max(|nᵀq|, 1), out = (σ(x W_o) ⊙ RMSNorm(h̃)) W_out."""
    c, n, out = 0.0, 0.0, []
    for t in range(xs.shape[1]):
        x = xs[:, t]
        q, k, v = (heads(x, p[w]) for w in ("w_q", "w_k", "w_v"))
        k = k / np.sqrt(k.shape[-1])
        i = np.exp(x @ p["i"]["w"] + p["i"]["b"])[..., None]
        f = sig(x @ p["f"]["w"] + p["f"]["b"])[..., None]
        c = f[..., None] * c + i[..., None] * k[..., :, None] * v[..., None, :]
        n = f * n + i * k
        den = np.maximum(np.abs(np.einsum("bhk,bhk->bh", n, q)), 1.0)[..., None]
        h = np.einsum("bhkv,bhk->bhv", c, q) / den
        out.append(merge(sig(heads(x, p["w_o"])) * rms(h, p["norm"]["scale"]), p["w_out"]))
    return np.stack(out, 1)


def twin_gated_deltanet(p, xs):
    """Yang et al. 2024 as the paper writes it: S [v, k], S = α S (I - β k kᵀ) + β v kᵀ, o = S q."""
    l2 = lambda x: x / np.sqrt(np.sum(x**2, -1, keepdims=True) + 1e-6)
    s = np.zeros((xs.shape[0],) + p["w_v"].shape[1:] + p["w_k"].shape[-1:])  # [b, h, v, k]
    out = []
    for t in range(xs.shape[1]):
        x = xs[:, t]
        q, k = l2(heads(x, p["w_q"])) / np.sqrt(p["w_q"].shape[-1]), l2(heads(x, p["w_k"]))
        v = heads(x, p["w_v"])
        beta = sig(x @ p["beta"]["w"] + p["beta"]["b"])[..., None, None]
        alpha = np.exp(-np.exp(p["a_log"]) * softplus(x @ p["alpha"]["w"] + p["alpha"]["b"]))
        eye = np.eye(k.shape[-1])
        s = alpha[..., None, None] * (s @ (eye - beta * k[..., :, None] * k[..., None, :]))
        s = s + beta * v[..., :, None] * k[..., None, :]
        o = np.einsum("bhvk,bhk->bhv", s, q)
        gate = silu(heads(x, p["w_g"]))
        out.append(merge(rms(o, p["norm"]["scale"]) * gate, p["w_out"]))
    return np.stack(out, 1)


def twin_mamba2(p, xs):
    """Dao & Gu 2024, the recurrence: h = exp(Δ A) h + (Δ B) xᵀ, y = hᵀC + D x, gated norm."""
    e, nh = p["out"]["w"].shape[0], p["a_log"].shape[0]
    n = (p["in"]["w"].shape[1] - 2 * e - nh) // 2
    h, out = 0.0, []
    for t in range(xs.shape[1]):
        zxbcdt = xs[:, t] @ p["in"]["w"] + p["in"]["b"]
        z, x = zxbcdt[:, :e], silu(zxbcdt[:, e : 2 * e])
        b_in, c_out = silu(zxbcdt[:, 2 * e : 2 * e + n]), silu(zxbcdt[:, 2 * e + n : 2 * e + 2 * n])
        delta = softplus(zxbcdt[:, 2 * e + 2 * n :] + p["b_dt"])  # [b, h]
        xh = x.reshape(len(x), nh, -1)  # [b, h, p]
        h = np.exp(-np.exp(p["a_log"]) * delta)[..., None, None] * h
        h = h + (delta[..., None] * b_in[:, None, :])[..., :, None] * xh[..., None, :]
        y = np.einsum("bhnp,bn->bhp", h, c_out) + p["d"][:, None] * xh
        y = rms(y.reshape(len(x), e) * silu(z), p["norm"]["scale"])
        out.append(y @ p["out"]["w"] + p["out"]["b"])
    return np.stack(out, 1)


def twin_mingru(p, xs):
    """Feng et al. 2024: h = (1 - z) h + z h̃, z = σ(x W_z), h̃ = x W_h; then the out dense."""
    h, out = 0.0, []
    w = p["cell"]["w"].shape[1] // 2
    for t in range(xs.shape[1]):
        a = xs[:, t] @ p["cell"]["w"] + p["cell"]["b"]
        z = sig(a[:, :w])
        h = (1 - z) * h + z * a[:, w:]
        out.append(h @ p["out"]["w"] + p["out"]["b"])
    return np.stack(out, 1)


def twin_mamba(p, xs):
    """Gu & Dao 2023 (mamba.py's simplified block), the recurrence step by step."""
    hw = p["d"].shape[0]
    s, out = 0.0, []
    for t in range(xs.shape[1]):
        uz = xs[:, t] @ p["w_in"]
        u, z = silu(uz[:, :hw]), uz[:, hw:]
        delta = softplus(u @ p["w_dt"] + p["b_dt"])
        b_in, c_out = u @ p["w_b"], u @ p["w_c"]
        s = np.exp(delta[..., None] * -np.exp(p["a_log"])) * s
        s = s + (delta * u)[..., None] * b_in[:, None, :]
        y = np.einsum("bhn,bn->bh", s, c_out) + p["d"] * u
        out.append((y * silu(z)) @ p["w_out"])
    return np.stack(out, 1)


def twin_rnn(p, xs):
    """Elman 1990: h = tanh(x W_x + h W_h + b)."""
    h, out = np.zeros((xs.shape[0], p["w_h"].shape[0])), []
    for t in range(xs.shape[1]):
        h = np.tanh(xs[:, t] @ p["w_x"] + h @ p["w_h"] + p["b"])
        out.append(h)
    return np.stack(out, 1)


def twin_lstm(p, xs):
    """Hochreiter & Schmidhuber 1997 with a forget gate: [i, f, g, o] = x W_x + h W_h + b,
    c = σ(f) c + σ(i) tanh(g), h = σ(o) tanh(c)."""
    h = c = np.zeros((xs.shape[0], p["w_h"].shape[0]))
    out = []
    for t in range(xs.shape[1]):
        i, f, g, o = np.split(xs[:, t] @ p["w_x"] + h @ p["w_h"] + p["b"], 4, -1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        out.append(h)
    return np.stack(out, 1)


def twin_gru(p, xs):
    """Cho et al. 2014 with the reset after the product (torch's): r, z = σ(x W + b_x + h U +
    b_h), n = tanh(x W_n + b_xn + r ⊙ (h U_n + b_hn)), h = (1 - z) n + z h."""
    h, out = np.zeros((xs.shape[0], p["w_h"].shape[0])), []
    for t in range(xs.shape[1]):
        xr, xz, xn = np.split(xs[:, t] @ p["w_x"] + p["b_x"], 3, -1)
        hr, hz, hn = np.split(h @ p["w_h"] + p["b_h"], 3, -1)
        r, z = sig(xr + hr), sig(xz + hz)
        h = (1 - z) * np.tanh(xn + r * hn) + z * h
        out.append(h)
    return np.stack(out, 1)


def twin_attention(p, xs):
    """Causal softmax attention with RoPE (rotate pairs (i, i + d/2) by position / 10000^(2i/d))."""
    q, k, v = (np.einsum("btm,mhd->bthd", xs, p[w]) + p[b] for w, b in (("w_q", "b_q"), ("w_k", "b_k"), ("w_v", "b_v")))  # fmt: skip
    d = q.shape[-1]
    ang = np.arange(T)[:, None] / 10000.0 ** (np.arange(d // 2) * 2 / d)  # [t, d/2]
    cos, sin = np.cos(ang)[None, :, None], np.sin(ang)[None, :, None]

    def rot(x):
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    logits = np.einsum("bqhd,bkhd->bhqk", rot(q), rot(k)) / np.sqrt(d)
    logits = np.where(np.tril(np.ones((T, T), bool)), logits, -np.inf)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    o = np.einsum("bhqk,bkhd->bqhd", w / w.sum(-1, keepdims=True), v)
    return np.einsum("bqhd,hdm->bqm", o, p["w_o"]) + p["b_o"]


TWINS = {name: globals()[f"twin_{name}"] for name in mixers.NAMES}


@pytest.mark.slow_except("mingru")
@pytest.mark.parametrize("name", mixers.NAMES)
def test_every_form_equals_the_papers_float64_loop_values_and_gradients(name):
    mixer = build(name)
    params, x = moved(mixer), inputs()
    p64 = jax.tree.map(lambda a: np.asarray(a, np.float64), params["mix"])
    want = TWINS[name](p64, np.asarray(x, np.float64))
    w = RNG.normal(size=want.shape)

    def loss(params, x, w, form):
        y = mixer.apply(params, x, form=form)
        return jnp.sum(y * w), y

    def all_forms(params, x, w):
        return {f: jax.value_and_grad(loss, (0, 1), has_aux=True)(params, x, w, f) for f in mixer.forms}  # fmt: skip

    with jax.enable_x64():  # the gradients' twin: the first (sequential) form in float64
        ref = jax.jit(lambda p, x, w: jax.value_and_grad(loss, (0, 1), has_aux=True)(p, x, w, mixer.forms[0]), compiler_options=FAST)  # fmt: skip
        (_, ref_y), ref_grads = ref(*jax.tree.map(lambda a: np.asarray(a, np.float64), (params, x, w)))  # fmt: skip
        ref_grads = jax.tree.map(np.asarray, ref_grads)
        assert rel(ref_y, want) < 1e-10
    got = jax.jit(all_forms, compiler_options=FAST)(params, x, jnp.asarray(w, jnp.float32))
    for form, ((_, y), grads) in got.items():
        assert rel(y, want) < 1e-5, form
        flat, ref_flat = jax.tree.leaves(grads), jax.tree.leaves(ref_grads)
        assert len(flat) == len(ref_flat) > 3
        norm = np.sqrt(sum(np.sum(np.square(r)) for r in ref_flat))
        for g, r in zip(flat, ref_flat):  # norm-wise over all gradients, no leaf left out
            assert np.abs(r).max() > 0  # every gradient reaches its leaf
            assert np.linalg.norm(np.asarray(g, np.float64) - r) / norm < 1e-5, form


def _steps(mixer, params, x, state):
    def body(state, x_t):
        y, state = mixer.step(params, state, x_t)
        return state, y

    state, ys = jax.lax.scan(body, state, jnp.swapaxes(x, 0, 1))
    return jnp.swapaxes(ys, 0, 1), state


@pytest.mark.slow_except("rglru")
@pytest.mark.parametrize("name", mixers.NAMES)
def test_decoding_step_by_step_equals_the_full_pass_and_a_state_carries_over(name):
    """With the short conv: step by step == apply (KV-cache style); for the recurrent
    mixers also apply(x[:, :4]) then apply(x[:, 4:], state) == apply(x), and with lengths the
    state stops at each row's last real step."""
    mixer = build(name, conv=3)
    params, x = moved(mixer, 2), inputs(3)
    recurrent = name != "attention"

    @functools.partial(jax.jit, compiler_options=FAST)
    def run(params, x):
        full = mixer.apply(params, x)
        steps, _ = _steps(mixer, params, x, mixer.init_state(params, B, T))
        if not recurrent:
            return full, steps, None
        y1, s1 = mixer.apply(params, x[:, :4], return_state=True)
        y2, s2 = mixer.apply(params, x[:, 4:], s1, return_state=True)
        _, s_len = mixer.apply(params, x, lengths=jnp.asarray([T, 4]), return_state=True)
        return full, steps, (jnp.concatenate([y1, y2], 1), s1, s_len)

    full, steps, carried = run(params, x)
    assert rel(steps, full) < 1e-5
    if recurrent:
        _, s_full = mixer.apply(params, x, return_state=True)
        y, s_4, s_len = carried
        assert rel(y, full) < 1e-5
        for a, b4, b_full in zip(*(jax.tree.leaves(s) for s in (s_len, s_4, s_full))):
            assert rel(a[1], b4[1]) < 1e-5 and rel(a[0], b_full[0]) < 1e-5


def test_short_conv_is_a_causal_depthwise_convolution():
    p = init_short_conv(jax.random.key(0), D, 3)
    p = {"w": p["w"], "b": p["b"] + 0.5}
    x = np.asarray(inputs(4), np.float64)
    w = np.asarray(p["w"], np.float64)
    want = np.zeros_like(x)
    for t in range(T):
        for k in range(3):
            if t - 2 + k >= 0:
                want[:, t] += w[k] * x[:, t - 2 + k]
    y, buffer = short_conv(p, jnp.asarray(x, jnp.float32))
    assert rel(y, want + 0.5) < 1e-6
    np.testing.assert_array_equal(buffer, np.asarray(x[:, -2:], np.float32))


def test_state_bytes_are_the_decoding_state():
    h, k, v = 2, 3, 4
    got = {
        name: build(name, conv=3).state_bytes(length=5)
        for name in ("linear_attention", "mlstm", "gated_deltanet", "mamba2", "rglru", "attention")
    }
    conv = 4 * 2 * D  # the conv's K-1 = 2 inputs of width D
    assert got["linear_attention"] == 4 * h * k * (v + 1) + conv  # d_value = D / h = 4
    assert got["mlstm"] == 4 * (h * (D // h) * (3 + 1) + h) + conv  # + the stabiliser m
    assert got["gated_deltanet"] == 4 * h * k * v + conv
    assert got["mamba2"] == 4 * (2 * D // 4) * 3 * 4 + conv  # heads = expand·D / head_dim
    assert got["rglru"] == 4 * D + conv
    kv = 2 * 4 * 5 * D  # keys and values of 5 positions, D = h · d numbers each
    assert got["attention"] == kv + 4 + 1 + conv  # + the length counter and overflow flag
    assert build("attention").state_bytes(length=10) == 2 * kv + 5  # grows with the length
    assert build("mlstm").state_bytes(length=10, batch=3) == 3 * build("mlstm").state_bytes()


def test_bad_names_knobs_forms_and_patterns_are_one_clear_line():
    with pytest.raises(
        BadInputError, match="unknown mixer 'lru'; choose one of linear_attention, rglru"
    ):
        mixers.build_mixer("lru", D)
    with pytest.raises(BadInputError, match=r"unknown knobs \['d_state'\]"):
        mixers.build_mixer("mlstm", D, d_state=4)
    with pytest.raises(BadInputError, match="form must be one of"):
        build("rglru").apply(build("rglru").init(jax.random.key(0)), inputs(), form="parallel")
    with pytest.raises(BadInputError, match="max_len"):
        m = build("attention")
        m.init_state(m.init(jax.random.key(0)), B)
    with pytest.raises(BadInputError, match="takes no state"):
        m = build("attention")
        m.apply(m.init(jax.random.key(0)), inputs(), return_state=True)
    with pytest.raises(BadInputError, match="pattern must be 3 letters of R/A"):
        mixers.parse_pattern("RXA", 3)
    assert mixers.parse_pattern("", 2) == ("R", "R") and mixers.parse_pattern("AR", 2) == ("A", "R")


def test_every_recurrent_mixer_has_a_default_form_among_its_forms_with_its_source():
    from anatomy.mixers.defaults import TABLE, default_form, row

    forms = [r for r in TABLE if r.kind == "form"]
    for backend in {r.backend for r in forms}:
        assert {r.name for r in forms if r.backend == backend} == set(mixers.RECURRENT), backend
    for r in forms:
        assert r.choice in mixers.get_mixer(r.name).forms, r
    for r in TABLE:  # every row says where it comes from, and why
        assert r.source.split(":")[0] in ("measured", "reasoned") and r.reason, r
    assert default_form("mlstm", "tpu") == default_form("mlstm", "cpu")  # unmeasured: the CPU's
    assert build("mlstm").form == default_form("mlstm") and build("attention").form == "dense"
    with pytest.raises(BadInputError, match="no default form for 'attention'"):
        row("form", "attention", "cpu")


def test_a_recurrence_that_is_a_mixer_and_a_cell_is_registered_once():
    """The cell table is read from the mixers' registrations (their cell part) and the cells
    that are only cells: no name in both, none twice."""
    for name, cell in mixers.CELLS.items():
        if name in mixers.MIXERS:
            assert mixers.MIXERS[name].cell is cell
    assert {"mingru", "mamba", "rnn", "lstm", "gru"} <= set(mixers.MIXERS) & set(mixers.CELLS)
    assert mixers.get_cell("lstm").fused is not None and mixers.get_cell("gru_paper").fused is None
    m = mixers.build_mixer("lstm", D, vjp="autodiff")
    assert (m.config.hoist, m.config.vjp) == mixers.resolve_path("lstm", None, "autodiff")
    with pytest.raises(BadInputError, match="vjp='fused' exists for the cells"):
        mixers.build_mixer("rnn", D, vjp="fused")


@pytest.mark.parametrize("name", mixers.NAMES)
def test_every_parameter_declares_its_logical_axes(name):
    """trace() raises on an array no init declared (sharding reads the axes from it)."""
    from anatomy.axes import is_axes, trace

    axes, shapes = trace(build(name, conv=3).init, jax.random.key(0))
    assert jax.tree.structure(shapes) == jax.tree.structure(
        jax.tree.map(lambda a: 0, axes, is_leaf=is_axes)
    )


def test_the_taylor_feature_map_is_the_second_order_expansion_of_exp():
    from anatomy.mixers.linear_attention import taylor

    q, k = (np.random.default_rng(s).normal(size=(5, 4)) for s in (5, 6))
    s = np.sum(q * k, -1) / np.sqrt(4)
    got = np.sum(np.asarray(taylor(jnp.asarray(q))) * np.asarray(taylor(jnp.asarray(k))), -1)
    np.testing.assert_allclose(got, 1 + s + s**2 / 2, rtol=1e-5)
    m = build("linear_attention", feature_map="taylor")  # 2 heads, d_key 3: 13 features
    assert m.state_bytes() == 4 * 2 * (1 + 3 + 9) * (D // 2 + 1)
