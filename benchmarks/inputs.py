"""The cases' inputs: random weights in our layouts and padded translator batches (NumPy).

Every leaf is drawn fresh, biases and LayerNorms too: a zero bias or a unit scale would
let a wrong weight mapping (benchmarks/peers.py) pass the equal-work check unseen.
"""

import jax
import numpy as np

from anatomy.seq2seq.base import BOS, EOS


def f32(a):
    return np.asarray(a, np.float32)


def shapes(init, *args):
    """The parameter tree of init(*args) as shapes only (no computation, no compilation)."""
    return jax.tree.map(
        lambda s: s.shape,
        jax.eval_shape(lambda: init(*args)),
        is_leaf=lambda s: isinstance(s, jax.ShapeDtypeStruct),
    )


def fill(tree, draw):
    """Fresh random float32 NumPy leaves for a tree of shapes; draw(name, shape)."""
    return {k: fill(v, draw) if isinstance(v, dict) else f32(draw(k, v)) for k, v in tree.items()}


def jitter(params, rng, scale=0.05):
    """Fresh noise on every leaf (untrained LayerNorms and zero biases would hide a mapping)."""
    return jax.tree.map(
        lambda a: np.asarray(a + scale * rng.normal(size=a.shape), np.float32), params
    )


def batch(rng, b, s, t, v_src, v_tgt):
    """A padded batch {src, src_len, tgt_in, tgt_out} (NumPy int32); row 0 fills the shape."""
    src_len, tgt_len = rng.integers(s // 2, s + 1, b), rng.integers(t // 2, t + 1, b)
    src_len[0], tgt_len[0] = s, t
    src = np.where(np.arange(s)[None] < src_len[:, None], rng.integers(4, v_src, (b, s)), 0)
    words = rng.integers(4, v_tgt, (b, t))
    real_out = np.arange(t)[None] < tgt_len[:, None]
    tgt_out = np.where(real_out, words, 0)
    tgt_out[np.arange(b), tgt_len - 1] = EOS
    tgt_in = np.where(real_out, np.concatenate([np.full((b, 1), BOS), words[:, :-1]], 1), 0)
    return {
        k: a.astype(np.int32)
        for k, a in dict(src=src, src_len=src_len, tgt_in=tgt_in, tgt_out=tgt_out).items()
    }
