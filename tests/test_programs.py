"""The compiled programs a refactor must not move: the translators' train steps at the headline
config and the language-model families' gradients, each named by a digest of its lowered
StableHLO (locations stripped, so moving code between files or lines does not count; a change
of any op, shape, dtype, constant or the order of operations does).

A change to a program that is meant (a new default path, a new op) re-records the digests:
`python tests/test_programs.py` prints them; paste them into PROGRAMS with the reason in the
commit message. The digests are of this project's pinned jax (constraints.txt) on CPU.
"""

import hashlib
import re

import jax
import jax.numpy as jnp
import pytest

from anatomy import lm, train
from anatomy.seq2seq import build_model
from anatomy.train.state import create_state
from anatomy.train.step import make_train_step
from experiments.configs import rnn_vs_attn
from experiments.tasks.translation.training import _model_config, train_config

PROGRAMS = {
    "rnnenc": "f1a964a65828e39b",
    "rnnsearch": "8f4968835bb4d929",
    "transformer": "3fb227bd960705cf",
    "lm/attention": "ef892695bbf6343e",
    "lm/recurrent": "722da35f441f28d0",
    "lm/mixer": "ad5c17b76282108c",
}
VOCAB, BATCH, SRC, TGT = 64, 4, 11, 13


def digest(lowered) -> str:
    """sha256 (16 hex digits) of a jax.stages.Lowered's text without its source locations."""
    text = re.sub(r"#loc[^\n]*\n", "", re.sub(r"loc\([^\n]*?\)", "", lowered.as_text()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _translator(name):
    cfg = rnn_vs_attn.get_config()
    model = build_model(name, _model_config(cfg, name), VOCAB, VOCAB)
    tc = train_config(cfg, name)
    tx = train.make_optimizer(tc)
    state = create_state(model.init(jax.random.PRNGKey(0)), tx)
    step = make_train_step(model, tx, label_smoothing=float(tc.get("label_smoothing", 0.0)))
    batch = {k: jnp.ones((BATCH, n), jnp.int32) for k, n in (("src", SRC), ("tgt_in", TGT))}
    batch |= {
        "tgt_out": jnp.ones((BATCH, TGT), jnp.int32),
        "src_len": jnp.full((BATCH,), SRC, jnp.int32),
        "tgt_len": jnp.full((BATCH,), TGT, jnp.int32),
    }
    return jax.jit(step).lower(state, batch, jax.random.PRNGKey(1))


def _lm(family):
    model = lm.build_lm(lm.default_config(family), VOCAB)
    params = model.init(jax.random.PRNGKey(0))
    tokens = jnp.ones((2, 16), jnp.int32)
    return jax.jit(jax.grad(lambda p: jnp.sum(model.hidden(p, tokens)))).lower(params)


def program(name):
    """The lowered program PROGRAMS[name] names."""
    return _lm(name.split("/", 1)[1]) if name.startswith("lm/") else _translator(name)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_program_is_unchanged(name):
    assert digest(program(name)) == PROGRAMS[name], (
        f"{name}'s lowered program changed; if that is meant, re-record (python "
        "tests/test_programs.py) and say why in the commit"
    )


def test_the_digest_sees_a_change_of_one_op():
    f = lambda x: jnp.sum(jnp.tanh(x))
    g = lambda x: jnp.sum(jnp.sin(x))
    x = jnp.ones((3,))
    assert digest(jax.jit(f).lower(x)) == digest(jax.jit(f).lower(x))
    assert digest(jax.jit(f).lower(x)) != digest(jax.jit(g).lower(x))


if __name__ == "__main__":
    for name in sorted(PROGRAMS):
        print(f'    "{name}": "{digest(program(name))}",')
