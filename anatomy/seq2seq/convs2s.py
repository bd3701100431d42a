"""ConvS2S (Gehring et al. 2017, "Convolutional Sequence to Sequence Learning") from anatomy.conv.

Letters: b batch, s source / t target positions, f embedding width, d conv width, K kernel.

    e   = E_src[src] + P_src[0..s)                              [b, s, f]  learned positions
    x   = W_in e + b_in                                         [b, s, d]
    x   = (GLU(conv_K(x)) + x) · √0.5,  n_encoder_layers times   'same' padding (non-causal)
    z   = W_out x + b_out                                       [b, s, f]  attention keys
    values = z + e                                              [b, s, f]

    g   = E_tgt[tgt_in] + P_tgt[0..t)                           [b, t, f]
    y   = W_in g + b_in                                         [b, t, d]
    per decoder layer l:
      h    = GLU(conv_K(y))                                     causal: left padding K-1
      q    = (W_d h + b_d + g) · √0.5                           [b, t, f]
      a    = softmax_j(q_i · z_j)   over the real source positions j
      c    = √m · Σ_j a_ij values_j                             m = real source length
      h    = (W_c c + b_c + h) · √0.5                           attention added to the layer
      y    = (h + y) · √0.5                                     residual
    logits = W_o (W_f y + b_f) + b_o                            [b, t, V]

Scalings kept: every sum of two branches is multiplied by √0.5 (§3.5): the residuals, the
attention query d_i = W h_i + b + g_i, and the conditional input added to the layer output
(as fairseq's fconv does; the paper's eq. for d_i is written without it); c is scaled by
m·√(1/m) = √m with m each row's real source length (§3.5; fairseq's newer fconv uses the
unpadded length too). The values are z + e as in the paper (fairseq multiplies them by a
further √0.5). Every decoder layer has its own attention (multi-step attention).

Initialisation (§3.5): embeddings N(0, 0.1²); GLU convolutions N(0, 4(1-p)/(K·d_in));
linear maps N(0, (1-p)/d_in) where dropout p acts on their input, N(0, 1/d_in) elsewhere;
biases 0. Sharding: embeddings (vocab, embed), positions (-, embed), the output map
(embed, vocab), everything else unsharded (the GLU splits its conv's channels in halves).
Departures: no weight normalisation (the paper and fairseq use it), all blocks
the same width d (no residual projections), the encoder output's gradient scaled by
1/(2·n_decoder_layers) only with config.scale_encoder_grad (forward value unchanged;
default on, as in the paper). Dropout (config.dropout_rate) on the embeddings, on each
convolution's input and before W_o, in training only.

Padding: each encoder conv input is zeroed at the padded source positions, so a real
position sees exactly the zero padding of a shorter sequence; padded keys get weight 0.
Decoding: encode precomputes keys and values; the state holds one input buffer per
decoder layer (its last K-1 inputs, anatomy.conv.conv1d_step) and each row's position, so
a step costs O(K·d² + s·f) per layer, the same at every position.
"""

import math

import jax
import jax.numpy as jnp
import ml_collections

from anatomy import conv
from anatomy.attention import masked_softmax
from anatomy.attention.positions import lookup as position_lookup
from anatomy.axes import declare
from anatomy.errors import BadInputError
from anatomy.layers import OUT_AXES, dense, dropout, init_dense, init_embedding
from anatomy.seq2seq import base


def default_config():
    """Hyperparameters: about 1.45M parameters at 1,000-word vocabularies (4 + 4 layers)."""
    c = ml_collections.ConfigDict()
    c.d_emb = 128  # embedding / attention width f (token and position embeddings, keys z)
    c.d_conv = 128  # convolution width d (every GLU block's input and output)
    c.d_out = 128  # width of the last linear map before the output projection
    c.kernel_size = 3  # K: each conv sees K positions (encoder centred, decoder causal)
    c.n_encoder_layers = 4  # receptive field of the encoder: 1 + n·(K-1) source positions
    c.n_decoder_layers = 4  # each with its own attention over the encoder output
    c.max_positions = 256  # rows of each learned position table (longest sequence)
    c.dropout_rate = 0.1  # embeddings, conv inputs, before the output map; training only
    c.scale_encoder_grad = True  # encoder output's gradient x 1/(2·n_decoder_layers) (§3.5)
    return c


def _check(cfg):
    for field in ("d_emb", "d_conv", "d_out", "kernel_size", "n_encoder_layers"):
        if int(cfg[field]) < 1:
            raise BadInputError(f"convs2s: {field} must be >= 1, got {cfg[field]}")
    if int(cfg.n_decoder_layers) < 1 or int(cfg.max_positions) < 1:
        raise BadInputError("convs2s: n_decoder_layers and max_positions must be >= 1")
    if not 0.0 <= float(cfg.dropout_rate) < 1.0:
        raise BadInputError(f"convs2s: dropout_rate must be in [0, 1), got {cfg.dropout_rate}")


def _linear(key, d_in, d_out, p=0.0, axes=(None, None)):
    """{'w': [d_in, d_out] ~ N(0, (1-p)/d_in), 'b': zeros [d_out]}; w's logical axes `axes`."""
    lin = init_dense(key, d_in, d_out)
    return declare({"w": lin["w"] * math.sqrt(1.0 - p), "b": lin["b"]}, {"w": axes, "b": axes[1:]})


def _scale_grad(x, scale):
    """x in the forward pass (exactly); its gradient multiplied by `scale`."""
    frozen = jax.lax.stop_gradient(x)
    return frozen + scale * (x - frozen)


def attend(p, h, g, memory):
    """One decoder layer's attention: (h [b, t, d], weights [b, t, s]) with the module doc's
    q = (W_d h + b_d + g)·√0.5, a = softmax(q·z), c = √m Σ a (z + e), h' = (W_c c + b_c + h)·√0.5."""
    q = (dense(p["query"], h) + g) * conv.SQRT_HALF  # [b, t, f]
    logits = jnp.einsum("btf,bsf->bts", q, memory["keys"])  # [b, t, s]
    a = masked_softmax(logits, memory["mask"][:, None, :], axis=-1)  # [b, t, s]
    c = jnp.einsum("bts,bsf->btf", a, memory["values"])  # [b, t, f]
    c = c * jnp.sqrt(memory["length"])[:, None, None]  # m·√(1/m)
    return conv.residual(dense(p["context"], c), h), a


def build(config, src_vocab_size, tgt_vocab_size):
    """The ConvS2S Translator (see base.Translator)."""
    _check(config)
    cfg = base.freeze(config)
    f, d, k, rate = cfg.d_emb, cfg.d_conv, cfg.kernel_size, cfg.dropout_rate
    n_enc, n_dec = cfg.n_encoder_layers, cfg.n_decoder_layers

    def init(key):
        ks = jax.random.split(key, 11)

        def positions(kk):  # learned positions [P, f] ~ N(0, 0.1²)
            table = jax.random.normal(kk, (cfg.max_positions, f), jnp.float32) * 0.1
            return declare(table, (None, "embed"))

        return {
            "src_emb": init_embedding(ks[0], src_vocab_size, f, scale=0.1),
            "src_pos_emb": positions(ks[1]),
            "tgt_emb": init_embedding(ks[2], tgt_vocab_size, f, scale=0.1),
            "tgt_pos_emb": positions(ks[3]),
            "encoder": {
                "fc_in": _linear(ks[4], f, d, rate),
                "blocks": [
                    conv.init_glu_block(kk, d, k, rate) for kk in jax.random.split(ks[5], n_enc)
                ],
                "fc_out": _linear(ks[6], d, f),
            },
            "decoder": {
                "fc_in": _linear(ks[7], f, d, rate),
                "blocks": [
                    dict(
                        conv.init_glu_block(k1, d, k, rate),
                        query=_linear(k2, d, f),
                        context=_linear(k3, f, d),
                    )
                    for k1, k2, k3 in jax.random.split(ks[8], (n_dec, 3))
                ],
                "fc_out": _linear(ks[9], d, cfg.d_out),
            },
            "out": _linear(ks[10], cfg.d_out, tgt_vocab_size, rate, OUT_AXES),
        }

    def _length_ok(n, what):
        if n > cfg.max_positions:
            raise BadInputError(
                f"convs2s: {what} of {n} positions exceeds max_positions={cfg.max_positions}"
            )

    def _drop(x, rng):
        return dropout(x, rate, rng, rng is None)

    def _encode(params, src, src_len, rngs):
        """memory = {'keys' z [b, s, f], 'values' z + e [b, s, f], 'mask' [b, s], 'length' [b]}."""
        _length_ok(src.shape[1], "a source")
        e = _drop(params["src_emb"][src] + params["src_pos_emb"][: src.shape[1]], rngs[0])
        mask = base.source_mask(src_len, src.shape[1])  # [b, s]
        x = dense(params["encoder"]["fc_in"], e)  # [b, s, d]
        for p_block, r in zip(params["encoder"]["blocks"], rngs[1:]):
            x = jnp.where(mask[..., None], x, 0.0)  # padded positions read as 'same' padding
            x = conv.residual(conv.glu_conv(p_block, _drop(x, r), causal=False), x)
        z = dense(params["encoder"]["fc_out"], x)  # [b, s, f]
        if cfg.scale_encoder_grad:
            z = _scale_grad(z, 1.0 / (2.0 * n_dec))
        length = jnp.maximum(src_len, 1).astype(jnp.float32)  # [b]
        return {"keys": z, "values": z + e, "mask": mask, "length": length}

    def _logits(params, y, rng=None):
        y = _drop(dense(params["decoder"]["fc_out"], y), rng)  # [..., d_out]
        return dense(params["out"], y)  # [..., V]

    def encode(params, src, src_len):
        src, src_len = base.check_src(src, src_len, "convs2s")
        return _encode(params, src, src_len, [None] * (n_enc + 1))

    def apply(params, batch, *, rng=None, deterministic=True, return_intermediates=False):
        """Teacher-forced logits [b, t, V]. Intermediates: 'cross_attention' (last layer)
        [b, t, s], 'cross_attention_layers' (tuple over decoder layers of [b, t, s])."""
        src, src_len, tgt = base.check_batch(batch, "convs2s")
        _length_ok(tgt.shape[1], "a target")
        rngs = base.dropout_keys(rng, n_enc + n_dec + 3, deterministic, rate)
        memory = _encode(params, src, src_len.astype(jnp.int32), rngs[: n_enc + 1])
        g = params["tgt_emb"][tgt] + params["tgt_pos_emb"][: tgt.shape[1]]  # [b, t, f]
        g = _drop(g, rngs[n_enc + 1])
        y = dense(params["decoder"]["fc_in"], g)  # [b, t, d]
        weights = []
        for p_block, r in zip(params["decoder"]["blocks"], rngs[n_enc + 2 :]):
            h = conv.glu_conv(p_block, _drop(y, r), causal=True)  # [b, t, d]
            h, a = attend(p_block, h, g, memory)
            y = conv.residual(h, y)
            weights.append(a)
        inter = {"cross_attention": weights[-1], "cross_attention_layers": tuple(weights)}
        logits = _logits(params, y, rngs[-1])
        return base.intermediates_or_logits(logits, inter, return_intermediates)

    def init_state(params, memory, max_len):
        """{'buffers': per decoder layer its conv's last K-1 inputs [b, K-1, d] (zeros: the
        causal left padding), 'pos': [b] int32, each row's next position}. Every leaf is
        batch-leading, so beam search reorders the buffers with the rows."""
        _length_ok(int(max_len), "a decoding budget")
        b = memory["mask"].shape[0]
        buffers = tuple(conv.init_buffer(p["conv"], b) for p in params["decoder"]["blocks"])
        return {"buffers": buffers, "pos": jnp.zeros((b,), jnp.int32)}

    def step(params, memory, state, tokens):
        """One target position per row: tokens [b] -> (logits [b, V], state with each buffer
        shifted by one input). Past max_positions the position row is NaN, so are the logits."""
        pos = state["pos"]
        g = params["tgt_emb"][tokens] + position_lookup(params["tgt_pos_emb"], pos)  # [b, f]
        y = dense(params["decoder"]["fc_in"], g)  # [b, d]
        buffers = []
        for p_block, buf in zip(params["decoder"]["blocks"], state["buffers"]):
            h, buf = conv.glu_conv_step(p_block, buf, y)  # [b, d]
            h, _ = attend(p_block, h[:, None], g[:, None], memory)  # [b, 1, d]
            y = conv.residual(h[:, 0], y)
            buffers.append(buf)
        return _logits(params, y), {"buffers": tuple(buffers), "pos": pos + 1}

    return base.Translator(
        "convs2s", cfg, src_vocab_size, tgt_vocab_size, init, apply, encode, init_state, step
    )
