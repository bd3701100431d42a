# Source of notebooks/tour.ipynb (jupytext "percent" format: `# %%` starts a cell).
# Regenerate the notebook, outputs included:  python notebooks/build.py --execute
# Executed fresh by tests/test_notebook.py in CI.
# ruff: noqa: E402

# %% [markdown]
# # A guided tour of `anatomy`: from the RNN bottleneck to the Transformer
#
# This notebook walks through the chapter *Why the Transformer* in its own order, one
# claim at a time. Every section gives the formula, names the library function that computes
# it and the test in `tests/` that proves the function computes the formula, and draws a plot
# from the library's own outputs. Everything is tiny (a few minutes on 2 CPU cores); the
# full-size measurements are the experiments' (`python launch.py --experiment=NAME`, numbers in
# the README). The chapter's claims and the experiment measuring each are in
# [`docs/chapter.md`](../docs/chapter.md); the code's layout and conventions in
# [`docs/design.md`](../docs/design.md).
#
# **Run it** from a checkout of the repository, with torch's CPU build first (the test extra
# pins `torch==2.13.0`; without the index below pip fetches the CUDA build and its `nvidia-*`
# wheels, none of which the tour uses):
#
# ```bash
# pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
# pip install -c constraints.txt -e ".[test]" && python notebooks/build.py --execute
# ```
#
# (`build.py` rebuilds this notebook from `notebooks/tour.py` and runs it; the plumbing, showing
# a figure, running an experiment quietly, rendering a table, is `notebooks/tourkit.py`.)

# %%
import os

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import anatomy
from anatomy import attention as attn
from anatomy import mixers, probes
from anatomy.mixers.cells import init_gru, init_lstm, init_rnn
from anatomy.scan import run
from notebooks.tourkit import (
    committed_block,
    report_section,
    run_experiment,
    show,
    show_committed,
    show_png,
)

print("anatomy", anatomy.__version__, "| jax", jax.__version__, "|", jax.devices()[0].platform)


# %% [markdown]
# ## 1. The three questions of sequence modelling
#
# A sequence model reads tokens in order and builds a context representation from them. The
# chapter asks every such model three questions:
#
# 1. **Context**: can it represent the current token in the light of its context?
# 2. **Long range**: can it still use a token read long ago?
# 3. **Parallel training**: can training use the whole machine, or must it go one step at a
#    time?
#
# The RNN family answers the first, struggles with the second (gradients over distance,
# section 3; the fixed-vector bottleneck, sections 4 and 9) and fails the third by
# construction (section 2). Attention answers the second, and the Transformer, dropping
# recurrence altogether, the third, paying O(N²) for it (sections 7 and 8).
#
# Our data is `toy_wmt` (`anatomy.data.toy_wmt`), a synthetic translation pair with an exact
# oracle: recursive clauses, verb-final subordinate clauses, gendered articles, sources of
# 3-120 tokens. Length is what the long-range question is about, so here is the length mix of
# the tiny corpus the smoke tests (and section 9) use. Tests:
# `tests/anatomy/data/test_data_toy.py`, `tests/anatomy/data/test_data_pipeline.py`.

# %%
from anatomy import data as D
from experiments.configs import rnn_vs_attn as rnn_vs_attn_config

corpus = D.load_corpus(rnn_vs_attn_config.get_config("quick").data)
src, tgt = corpus.splits["train"][0]
print("source:", src[:150], "...")
print("target:", tgt[:150], "...")
print("vocabularies:", corpus.src_vocab.size, "/", corpus.tgt_vocab.size, "words")

lengths = [len(corpus.src_vocab.encode(s)) for s, _ in corpus.splits["train"]]
fig, ax = plt.subplots(figsize=(6, 2.5))
ax.hist(lengths, bins=30)
ax.set(xlabel="source length (tokens)", ylabel="training pairs", title="toy_wmt (quick preset)")
show(fig)

# %% [markdown]
# ## 2. Recurrence: one step at a time, over `jax.lax.scan`
#
# An RNN keeps one hidden state and updates it token by token, with the same parameters at
# every step:
#
# * vanilla RNN: $h_t = \tanh(W_{xh} x_t + W_{hh} h_{t-1} + b)$
# * LSTM: gates $i, f, o = \sigma(\cdot)$, candidate $g = \tanh(\cdot)$;
#   $c_t = f \odot c_{t-1} + i \odot g$, $h_t = o \odot \tanh(c_t)$: the cell state $c_t$ lets
#   information bypass the nonlinearity
# * GRU: update and reset gates $z, r$; $h_t = (1 - z) \odot n + z \odot h_{t-1}$
#
# Every cell is a pure function `cell(params, carry, x) -> (carry, y)`
# (`anatomy.mixers.cells.rnn_cell`, `lstm_cell`, `gru_cell`), and one runner,
# `anatomy.scan.run`, scans it over time with `jax.lax.scan` (per-sequence lengths,
# reverse, the input projection hoisted out of the loop as one matmul). Tests:
# `tests/anatomy/mixers/test_cells.py::test_scan_matches_python_loop_and_hoist_matches_plain`,
# `tests/anatomy/mixers/test_cells.py::test_padding_equals_each_sequence_alone`,
# `tests/anatomy/mixers/test_cells.py::test_cell_matches_numpy_float64`, and against `torch.nn.LSTM`/`GRU`
# `tests/anatomy/mixers/test_cells_torch.py::test_unidirectional_vs_torch`.
#
# The third question in one number: the compiled program of an LSTM layer over N tokens has a
# loop of N serial steps (`anatomy.probes.jaxpr_sequential_steps`), whatever the hardware;
# self-attention over the same tokens has none. Test:
# `tests/anatomy/probes/test_probes.py::test_sequential_steps_lstm_linear_attention_none`.

# %%
B, T_LEN, D_IN, H = 3, 12, 8, 16
x = jax.random.normal(jax.random.key(0), (B, T_LEN, D_IN))
seq_len = jnp.array([12, 7, 3])  # rows 2 and 3 are padded

fig, axes = plt.subplots(1, 3, figsize=(10, 2.6), sharey=True)
for ax, (name, init) in zip(axes, (("rnn", init_rnn), ("lstm", init_lstm), ("gru", init_gru))):
    params = init(jax.random.key(1), D_IN, H)
    _, ys = run(mixers.get_cell(name), params, x, lengths=seq_len)  # ys [B, T, H]
    # the obvious twin: a Python loop over the cell, one sequence alone
    spec = mixers.get_cell(name)
    carry, loop = spec.zero_carry(1, H, jnp.float32), []
    for t in range(int(seq_len[1])):
        carry, y = spec.cell(params, carry, x[1:2, t])
        loop.append(y[0])
    assert np.allclose(ys[1, : seq_len[1]], np.stack(loop), atol=1e-5)
    assert not np.any(ys[1, seq_len[1] :])  # past its length a sequence's outputs are zero
    ax.imshow(np.asarray(ys[1]).T, aspect="auto", cmap="RdBu", vmin=-1, vmax=1)
    ax.set(title=f"{name}: h_t of row 2 (length 7)", xlabel="t")
axes[0].set_ylabel("hidden unit")
show(fig)

lstm = init_lstm(jax.random.key(2), D_IN, H)
mha = attn.init_mha(jax.random.key(3), d_model=D_IN, n_heads=2)
for n in (16, 64, 256):
    xs = jnp.zeros((1, n, D_IN))
    rnn_steps = probes.jaxpr_sequential_steps(
        lambda v: run(mixers.get_cell("lstm"), lstm, v)[1], xs
    )
    attn_steps = probes.jaxpr_sequential_steps(lambda v: attn.multi_head_attention(mha, v, v), xs)
    print(f"N = {n:3d}: serial steps, LSTM {rnn_steps}, self-attention {attn_steps}")

# %% [markdown]
# ## 3. The vanishing gradient, measured
#
# With the loss at the last step T, the gradient reaching token t is a product of T − t
# Jacobians:
#
# $$\frac{\partial L}{\partial x_t} = \frac{\partial L}{\partial h_T}
#   \prod_{s=t+1}^{T} \frac{\partial h_s}{\partial h_{s-1}} \frac{\partial h_t}{\partial x_t},
#   \qquad \Big\|\frac{\partial h_s}{\partial h_{s-1}}\Big\| \le \gamma\,\sigma_{\max}(W_{hh})$$
#
# (Pascanu et al. 2013; γ bounds |tanh'| by 1). Below 1 per step the gradient vanishes
# exponentially with distance, above 1 it may explode. `anatomy.probes.input_grad_norms`
# takes ‖∂L/∂x_t‖ for every t with one `jax.grad`, `probes.by_distance` orders it by distance,
# `probes.fit_rate` fits the per-step rate and `probes.pascanu_bound` gives γ·σ_max. A
# self-attention layer connects the loss to every position in one step, so its gradient does
# not decay with distance. Tests:
# `tests/anatomy/probes/test_probes.py::test_input_grad_norms_match_explicit_jacobian_product`,
# `tests/anatomy/probes/test_probes.py::test_pascanu_bound_holds_for_every_step`; the experiment
# `gradient_decay` (`tests/test_walls.py::test_gradient_decay_quick`) does this at full size,
# with clipping.

# %%
T_GRAD, H_GRAD = 80, 32
xs = 0.1 * jax.random.normal(jax.random.key(4), (2, T_GRAD, H_GRAD))
readout = jax.random.normal(jax.random.key(5), (H_GRAD,))
w_orth = probes.random_orthogonal(jax.random.key(6), H_GRAD)

fig, ax = plt.subplots(figsize=(7, 3.5))
for sigma in (0.8, 1.0, 1.2):
    params = init_rnn(jax.random.key(7), H_GRAD, H_GRAD)
    params["w_h"] = probes.scale_to_sigma(w_orth, sigma)  # σ_max(W_hh) = sigma
    loss = lambda v, p=params: jnp.sum(run(mixers.get_cell("rnn"), p, v)[1][:, -1] @ readout)
    dist, norms = probes.by_distance(probes.input_grad_norms(loss, xs))
    fit = probes.fit_rate(dist[1:], norms[1:])
    bound = probes.pascanu_bound(params["w_h"], "tanh")
    print(f"tanh RNN σ_max={sigma}: fitted rate {fit['rate']:.3f}/step <= bound {bound:.3f}")
    ax.semilogy(dist, norms, label=f"tanh RNN, σ_max(W_hh) = {sigma}")
for name, init in (("lstm", init_lstm), ("gru", init_gru)):
    params = init(jax.random.key(8), H_GRAD, H_GRAD)
    loss = lambda v, p=params, n=name: jnp.sum(run(mixers.get_cell(n), p, v)[1][:, -1] @ readout)
    dist, norms = probes.by_distance(probes.input_grad_norms(loss, xs))
    ax.semilogy(dist, norms, label=f"{name} (default init)")
layer = attn.init_encoder_layer(jax.random.key(9), H_GRAD, n_heads=4, d_ff=4 * H_GRAD)
loss = lambda v: jnp.sum(attn.encoder_layer(layer, v)[:, -1] @ readout)
dist, norms = probes.by_distance(probes.input_grad_norms(loss, xs))
ax.semilogy(dist, norms, "k--", label="self-attention layer")
ax.set(xlabel="distance T-1-t to the loss", ylabel="‖∂L/∂x_t‖", title="Gradient over distance")
ax.legend(fontsize=8)
show(fig)

# %% [markdown]
# ## 4. Bahdanau attention: keep every encoder state
#
# The RNN encoder-decoder without attention (RNNenc) squeezes the whole source into its last
# state: a fixed vector, whatever the length. RNNsearch (Bahdanau et al. 2015) keeps every
# annotation $h_j$ of a bidirectional encoder and, at each decoder step $i$, scores them
# against the previous decoder state:
#
# $$e_{ij} = v^\top \tanh(W s_{i-1} + U h_j), \qquad \alpha_{ij} = \mathrm{softmax}_j(e_{ij}),
#   \qquad c_i = \sum_j \alpha_{ij} h_j$$
#
# `anatomy.attention.additive_attention` is one such step (`project_keys` computes $U h_j$
# once per source); `anatomy.seq2seq.build_model("rnnsearch", ...)` is the whole translator,
# and `apply(..., return_intermediates=True)` returns the alignments α. We train a tiny one on a
# toy task whose alignment we know, reversing a random sequence, with the library's own train
# step (`anatomy.train.make_train_step`, `make_optimizer`) and decode with
# `anatomy.decode.greedy`: the heatmap should be the anti-diagonal. Tests:
# `tests/anatomy/attention/test_attention.py::test_additive_matches_loop`,
# `tests/anatomy/seq2seq/test_seq2seq.py::test_attention_intermediates`,
# `tests/anatomy/seq2seq/test_seq2seq.py::test_incremental_decoding_equals_teacher_forcing_and_padding_is_invisible`,
# `tests/anatomy/test_decode.py::test_greedy_matches_python_loop_and_pads_after_eos`.

# %%
from anatomy import decode, seq2seq, train

V, L_MAX, BATCH, STEPS = 24, 12, 32, 200
rng = np.random.default_rng(0)


def reversal_batch(batch=BATCH):
    """Random token sequences (ids past the 4 specials) and their reversals."""
    n = rng.integers(4, L_MAX + 1, size=batch)
    out = {
        k: np.zeros((batch, L_MAX + (k != "src")), np.int32) for k in ("src", "tgt_in", "tgt_out")
    }
    for row, length in enumerate(n):
        s = rng.integers(seq2seq.UNK + 1, V, size=length)
        out["src"][row, :length] = s
        out["tgt_in"][row, : length + 1] = np.concatenate([[seq2seq.BOS], s[::-1]])
        out["tgt_out"][row, : length + 1] = np.concatenate([s[::-1], [seq2seq.EOS]])
    return dict(out, src_len=n.astype(np.int32), tgt_len=(n + 1).astype(np.int32))


sizes = {"d_emb": 32, "d_enc": 32, "d_dec": 64, "d_attn": 32, "d_readout": 64}
model = seq2seq.build_model("rnnsearch", sizes, V, V)
train_config = train.default_train_config()
train_config.update(learning_rate=1e-2, warmup_steps=20, num_steps=STEPS, decay="linear")
tx = train.make_optimizer(train_config)
step = jax.jit(train.make_train_step(model, tx))
state = train.create_state(model.init(jax.random.key(0)), tx)
for i in range(STEPS):
    state, metrics = step(state, reversal_batch(), jax.random.key(i))
    if i % 50 == 0 or i == STEPS - 1:
        print(
            f"step {i:3d}: loss {float(metrics['loss']):.3f}, token accuracy {float(metrics['accuracy']):.2f}"
        )

test = reversal_batch(4)
decoded = np.asarray(decode.greedy(model, state.params, test["src"], test["src_len"], L_MAX + 2))
for row in range(2):
    n = test["src_len"][row]
    print("source", test["src"][row, :n], "-> decoded", decoded[row, :n])
_, inter = model.apply(state.params, test, deterministic=True, return_intermediates=True)
longest = int(np.argmax(test["src_len"]))
alpha = np.asarray(inter["cross_attention"][longest])  # [T, S] for the longest test sequence
n = int(test["src_len"][longest])
fig, ax = plt.subplots(figsize=(4, 4))
ax.imshow(alpha[: n + 1, :n], cmap="Greys", vmin=0, vmax=1)
ax.set(xlabel="source position j", ylabel="output step i", title="RNNsearch α_ij, reversal task")
show(fig)

# %% [markdown]
# ## 5. Scaled dot-product and multi-head attention, and the causal mask
#
# The Transformer's attention drops the small scoring network for a dot product, computed for
# all queries at once:
#
# $$\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\Big(\frac{Q K^\top}{\sqrt{d_k}}\Big) V$$
#
# `anatomy.attention.scaled_dot_product(q, k, v, mask)` is two batched einsums
# (`bqhd,bkhd->bhqk`, then `bhqk,bkhd->bqhd`) with masked keys set to exactly zero weight;
# `multi_head_attention` projects into h heads of d_k = d_model / h, attends in each and
# projects back. A decoder may not look ahead: `causal_mask` lets query i see keys j ≤ i, and
# `padding_mask` hides padded keys; `combine_masks` ANDs them. Tests:
# `tests/anatomy/attention/test_attention.py::test_scaled_dot_product_matches_loop`,
# `tests/anatomy/attention/test_attention.py::test_multi_head_matches_loop_and_weights`,
# `tests/anatomy/attention/test_attention.py::test_masks_shapes_and_values`,
# `tests/anatomy/attention/test_attention_torch.py::test_mha_vs_torch`.

# %%
N_TOK, D_MODEL, HEADS = 8, 16, 2
x = jax.random.normal(jax.random.key(10), (1, N_TOK, D_MODEL))
mask = attn.combine_masks(attn.causal_mask(N_TOK, N_TOK), attn.padding_mask(jnp.array([6]), N_TOK))
mha = attn.init_mha(jax.random.key(11), d_model=D_MODEL, n_heads=HEADS)
out, weights = attn.multi_head_attention(
    mha, x, x, mask, return_weights=True
)  # [1,8,16], [1,2,8,8]
w = np.asarray(weights[0])
assert np.all(
    w[:, np.triu_indices(N_TOK, 1)[0], np.triu_indices(N_TOK, 1)[1]] == 0
)  # no look-ahead
assert np.all(w[:, :, 6:] == 0) and np.allclose(w.sum(-1), 1.0, atol=1e-6)  # padding hidden

# the formula by hand, one query at a time, in float64
q, k, v = (
    np.asarray(jax.random.normal(jax.random.key(s), (1, 5, 1, 4)), np.float64) for s in (12, 13, 14)
)
got, _ = attn.scaled_dot_product(
    jnp.asarray(q, jnp.float32), jnp.asarray(k, jnp.float32), jnp.asarray(v, jnp.float32)
)
for i in range(5):
    logits = k[0, :, 0] @ q[0, i, 0] / np.sqrt(4)
    p = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    assert np.allclose(got[0, i, 0], p @ v[0, :, 0], atol=1e-5)
print("causal + padding weights: upper triangle and padded keys exactly 0; formula checked by hand")

fig, axes = plt.subplots(1, HEADS, figsize=(7, 3.2))
for h, ax in enumerate(axes):
    ax.imshow(w[h], cmap="Greys", vmin=0, vmax=1)
    ax.set(title=f"head {h}: causal, 6 real tokens", xlabel="key j", ylabel="query i")
show(fig)

# %% [markdown]
# ## 6. The Transformer layer
#
# A layer is self-attention then a position-wise feed-forward network, each wrapped in a
# residual connection and LayerNorm; the paper's post-LN is
# $x \leftarrow \mathrm{LN}(x + \mathrm{MHA}(x))$, $x \leftarrow \mathrm{LN}(x + \mathrm{FFN}(x))$
# with $\mathrm{FFN}(x) = \max(0, x W_1 + b_1) W_2 + b_2$; pre-LN,
# $x \leftarrow x + \mathrm{MHA}(\mathrm{LN}(x))$, trains more easily and is the default of our
# translation runs. Order comes only from the sinusoidal positions added to the embeddings,
# $PE_{p,2i} = \sin(p / 10000^{2i/d})$, $PE_{p,2i+1} = \cos(p / 10000^{2i/d})$.
# `anatomy.attention.encoder_layer`, `decoder_layer`, `decoder_layer_step` (one token with a
# KV cache) and `sinusoidal`; the translator is `build_model("transformer", ...)`. Tests:
# `tests/anatomy/attention/test_attention.py::test_padded_batch_equals_unpadded_sequences`,
# `tests/anatomy/attention/test_attention.py::test_positional_encoding_matches_loop`,
# `tests/anatomy/attention/test_attention_torch.py::test_encoder_layer_vs_torch`,
# `tests/anatomy/attention/test_attention_torch.py::test_decoder_layer_vs_torch`.
#
# The three translators of the chapter have comparable sizes at their defaults
# (`tests/anatomy/seq2seq/test_seq2seq.py::test_default_param_counts_are_comparable`).

# %%
layer = attn.init_encoder_layer(jax.random.key(15), D_MODEL, n_heads=HEADS, d_ff=4 * D_MODEL)
batch = jax.random.normal(jax.random.key(16), (2, N_TOK, D_MODEL))
row_len = jnp.array([N_TOK, 5])
for norm in ("post", "pre"):
    y = attn.encoder_layer(layer, batch, attn.padding_mask(row_len, N_TOK), norm=norm)
    alone = attn.encoder_layer(layer, batch[1:, :5], norm=norm)  # row 2 without its padding
    assert np.allclose(y[1, :5], alone[0], atol=1e-5)
    print(f"{norm}-LN layer: {batch.shape} -> {y.shape}; padding is invisible")

for name in ("rnnenc", "rnnsearch", "transformer"):
    m = seq2seq.build_model(name, None, 1000, 1000)
    print(
        f"{name:12s} default size at 1,000 words: {seq2seq.count_params(m.init(jax.random.key(0))):,} parameters"
    )

pe = np.asarray(attn.sinusoidal(64, 32))  # [positions, d_model]
fig, ax = plt.subplots(figsize=(6, 3))
ax.imshow(pe.T, aspect="auto", cmap="RdBu")
ax.set(xlabel="position p", ylabel="dimension", title="sinusoidal positions (attention.sinusoidal)")
show(fig)

# %% [markdown]
# ## 7. O(N·d²) against O(N²·d), read from XLA's cost analysis
#
# Per layer, a recurrence does N steps of a d×d matmul: O(N·d²) FLOPs, O(N) serial steps. Self
# attention does all N² query-key products of width d: O(N²·d), O(1) serial steps (Vaswani et
# al. 2017, Table 1, with convolutions at O(k·N·d²) and restricted attention at O(r·N·d)).
# The `complexity` experiment compiles each layer for a grid of N and d, reads FLOPs from XLA's
# cost analysis (`anatomy.probes.xla_cost`, with the while-loop trip count put back by
# `probes.scan_cost`, since XLA counts a loop body once) and fits the exponents
# (`probes.fit_power_law`). Tests: `tests/test_walls.py::test_complexity_exponents_match_theory`,
# `tests/anatomy/probes/test_probes.py::test_scan_cost_matches_unrolled_loop`,
# `tests/anatomy/probes/test_probes.py::test_fits_recover_known_laws`. This is its `quick` preset.

# %%
results, workdir = run_experiment("complexity")
report_section(workdir)
show_png(os.path.join(workdir, "complexity.png"))

# %% [markdown]
# ## 8. The KV cache and the cost of decoding
#
# Generating token N, an RNN does one O(d²) step from its state. A Transformer decoder must
# attend over all N previous tokens: with a **KV cache** (keys and values of the past kept, only
# the new token projected) that is O(N·d) per token; recomputing the prefix every time costs
# O(N²·d). `anatomy.attention.init_cache`, `append` and `attend` are the cache;
# `decoder_layer_step` is one decoder layer on one token. Below, decoding one token at a time
# through the cache gives exactly full causal attention; then the `decode_cost` experiment
# (quick preset) measures the per-token FLOPs of all three. Tests:
# `tests/anatomy/attention/test_attention.py::test_kv_cache_equals_full_causal_attention`,
# `tests/anatomy/attention/test_attention.py::test_decoder_layer_step_equals_full_decoder`,
# `tests/test_walls.py::test_decode_cost_quick`.

# %%
N_DEC, D_HEAD = 10, 8
q, k, v = (jax.random.normal(jax.random.key(s), (1, N_DEC, HEADS, D_HEAD)) for s in (17, 18, 19))
full, _ = attn.scaled_dot_product(q, k, v, attn.causal_mask(N_DEC, N_DEC))
cache, steps = attn.init_cache(1, N_DEC, HEADS, D_HEAD), []
for t in range(N_DEC):
    cache = attn.append(cache, k[:, t : t + 1], v[:, t : t + 1])  # O(d) new work per token
    out_t, _ = attn.attend(cache, q[:, t : t + 1])  # O(t·d): one query over the cache
    steps.append(out_t)
assert np.allclose(jnp.concatenate(steps, axis=1), full, atol=1e-5)
print("token-by-token decoding through the KV cache == full causal attention")

results, workdir = run_experiment("decode_cost")
report_section(workdir)
show_png(os.path.join(workdir, "decode_cost.png"))

# %% [markdown]
# ## 9. RNNenc vs RNNsearch vs the Transformer
#
# The chapter's central experiment: the same data and token budget for an LSTM encoder-decoder
# without attention (`rnnenc`), Bahdanau's RNNsearch and the Transformer, BLEU by source length
# (Bahdanau et al. 2015, Fig. 2). `experiments.rnn_vs_attn.run(config, workdir)` trains each
# model (`anatomy.train.train`, checkpointed and resumable), decodes the test split and scores
# it with sacrebleu by length bucket. The committed three-seed run
# (`python launch.py --experiment=rnn_vs_attn --preset=seeds`; `results/rnn_vs_attn/seeds.json`)
# is the headline; its plot below is drawn from that result, and its verdict is judged on it:

# %%
show_committed("bleu_by_length.png")
committed_block("chapter/claim/the-fixed-vector-bottleneck")

# %% [markdown]
# What RNNsearch attends to while it translates one long test sentence (seed 0 of the same run):
# each target word reads mostly one source word, in order, with the reordering of the
# verb-final clauses visible as the jumps.

# %%
show_committed("attention_rnnsearch.png", width=640)

# %% [markdown]
# **The pipeline, at toy size.** The same code on the `quick` preset's corpus with 300 steps: it
# shows every stage runs (training, validation, decoding, scoring, plots), not the result;
# these models have barely begun to learn. Tests:
# `tests/experiments/rnn_vs_attn/test_rnn_vs_attn.py::test_results_json_has_every_key_finite`,
# `tests/experiments/rnn_vs_attn/test_rnn_vs_attn.py::test_same_seed_gives_identical_metrics`.

# %%
results, workdir = run_experiment(
    "rnn_vs_attn",
    train__num_steps=300,
    train__warmup_steps=30,
    train__learning_rate=5e-3,
    train__eval_every=100,
    train__checkpoint_every=300,
    train__progress=False,
)
show_png(os.path.join(workdir, "loss_vs_steps.png"), width=560)

# %% [markdown]
# ## 10. Why the Transformer kept winning: blocks that stack
#
# The chapter's section 1.8 gives three properties. The first: a block of self-attention, FFN,
# residual and LayerNorm stacks (12 layers in BERT-base, 96 in GPT-3) with a steady gain per
# layer, "without the RNN problem that adding layers makes training fail". The `depth`
# experiment trains decoder-only character LMs at L = 1 to 16 layers, Transformer wirings and
# LSTM stacks, each on the same token budget after the same learning-rate grid scored on
# validation, and reads the gradient per layer at initialisation against Xiong et al.'s
# theorem. Tests: `tests/experiments/depth/test_depth.py`, `tests/anatomy/test_stack.py`.

# %%
committed_block("chapter/claim/stackability")
show_committed("loss_vs_depth.png")
show_committed("grad_norms_at_init.png")

# %% [markdown]
# ## 11. Context extension: a change of positional encoding?
#
# The second: a Transformer trained at one length reaches a longer context mainly by changing
# its positional encoding (RoPE interpolation or a raised base, ALiBi), while an LSTM's state is
# flooded. The `context_length` experiment trains each encoding, and an LSTM, on a retrieval task
# that no position-only reader can solve, reads them at 2L, 4L and 8L, and extends RoPE.
# Tests: `tests/experiments/context_length/test_context_length.py`, `tests/anatomy/attention/test_positions.py`.

# %%
committed_block("chapter/claim/context-extension")
show_committed("context_length_probe.png")

# %% [markdown]
# ## 12. Scaling across machines
#
# The third: a Transformer's training step communicates a fixed amount per layer, an RNN's
# waits on its own past. The `scaling` experiment compiles the training steps for 8 (fake)
# devices and reads every collective from the programs; its cost model's GPU figures are
# labelled estimates, never verdicts, unless a GPU measured them. Tests:
# `tests/anatomy/probes/test_probes_scaling.py`, `tests/experiments/scaling/test_scaling.py`.

# %%
committed_block("chapter/claim/scaling-across-machines")
show_committed("scaling.png")

# %% [markdown]
# ## 13. Real text: the same three models on human translations
#
# Every number above is on toy_wmt, a language the project invents. The machine's own gettext
# catalogs (`/usr/share/locale/fr/LC_MESSAGES/*.mo`: git, coreutils, apt, ... translated by
# people) are a real English→French corpus with no download: `anatomy/data/catalogs.py` reads
# them, `python launch.py --experiment=rnn_vs_attn --preset=gettext_enfr` trains the three
# models on it. Its vocabulary and each model's warmup are chosen on its validation split
# (recipe_sweep's gettext_vocab and gettext_budget_sp2000_shared grids); the
# verdicts read its three-seed run with ConvS2S (`--preset=gettext_enfr_seeds`).
# Tests: `tests/experiments/rnn_vs_attn/test_real_text.py`, `tests/anatomy/data/test_data_toy.py`.

# %%
committed_block("rnn_vs_attn/gettext_enfr/verdicts")
show_committed("gettext_enfr_bleu_by_length.png")

# %% [markdown]
# ## 14. After the Transformer: are RNNs back?
#
# The recurrences of 2023-25 (Mamba-2, RG-LRU, mLSTM, gated DeltaNet: `anatomy.mixers`) train
# in parallel through one linear scan (`anatomy.scan.linear_scan`: sequential,
# associative and chunked forms, proven equal in `tests/anatomy/scan/test_linear_scan.py`), but they still
# carry a fixed-size state. Multi-query associative recall (MQAR, Zoology's generator) is
# where that bites: K key-value pairs, then each key asked once. A task must need what it
# claims to test, so readers come first: one that looks the key up, one that knows only where
# the queries are, one that knows which tokens came before but not their order.

# %%
from experiments.tasks import mqar

rng = np.random.default_rng(0)
seen, test = mqar.mqar(rng, 2000, 64, 8, 1024), mqar.mqar(rng, 500, 64, 8, 1024)
readers = {
    "lookup (recall)": mqar.lookup_reader(test.inputs, test.labels),
    "position only": mqar.position_reader(seen.labels, test.labels),
    "bag of tokens": mqar.bag_reader(test.inputs, test.labels, 1024),
}
for name, pred in readers.items():
    print(f"{name:16s} accuracy {mqar.accuracy(pred, test.labels):.3f}")

# %% [markdown]
# The committed runs (`python launch.py --experiment=recall`, `--experiment=copy`,
# `--experiment=crossover`) train each mixer on MQAR and on copying, and time every form
# against N: recall against state bytes (Based's frontier), copying past the training length
# (Jelassi et al.), and where a recurrence overtakes attention on this CPU. The last one goes
# back to the chapter's own experiment: RNNenc with an mLSTM's matrix state in place of its
# vector, no attention (`python launch.py --experiment=rnnenc_state`).

# %%
committed_block("after")
show_committed("recall_frontier.png")
show_committed("copy_length.png")
show_committed("crossover.png")
show_committed("rnnenc_state.png")

# %% [markdown]
# ## 15. The chapter's closing table, measured
#
# The chapter ends on a ledger of RNN against Transformer. Here it is, each row regenerated
# from the committed results and judged by the one rule (the weakest of the claims it cites);
# `python launch.py --experiment=report --preset=committed` writes the same table, and
# `python launch.py --experiment=report` re-measures every row.

# %%
committed_block("chapter/closing")

# %% [markdown]
# ## Where to go next
#
# * The chapter's claims, each with its measurement, verdict and plots:
#   [`docs/chapter.md`](../docs/chapter.md).
# * How the code is laid out, its conventions, and how to add a model or an experiment:
#   [`docs/design.md`](../docs/design.md).
# * Full-size runs: `python launch.py --list` names every experiment and preset; the scorecard
#   is on the [README](../README.md) and every table in [`docs/results.md`](../docs/results.md).
