"""rnn_vs_attn with the Transformer's other positional encodings: --config.model.transformer.
positions=learned|rope|alibi is accepted by every preset and builds a model whose decoding
budget fits, and a tiny in-process run with RoPE trains, validates and decodes."""

import math

import jax
import pytest

from anatomy.data import defaults as data_defaults
from anatomy.seq2seq import build_model
from experiments import rnn_vs_attn
from experiments.configs.rnn_vs_attn import PRESETS, get_config

ENCODINGS = ("learned", "rope", "alibi")


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_takes_each_encoding(preset):
    """The override reaches the model block of every preset; the model builds (RoPE's head
    width is even) and the longest toy_wmt source's decoding budget has a learned row."""
    for positions in ENCODINGS:
        c = get_config(preset)
        c.model.transformer.positions = positions
        model = build_model("transformer", c.model.transformer, 300, 300)
        jax.eval_shape(model.init, jax.random.key(0))
        longest = -(-data_defaults.MAX_SRC_LEN // c.eval.len_multiple) * c.eval.len_multiple
        assert longest + c.eval.extra_len <= c.model.transformer.max_positions


# One encoding end to end through rnn_vs_attn (RoPE: rotated keys in the cache); every
# encoding trains and decodes step by step in tests/anatomy/seq2seq/test_seq2seq.py (CI time).
@pytest.mark.parametrize("positions", ("rope",))
def test_quick_run_trains_and_decodes_with_an_encoding(tmp_path, positions):
    c = get_config("quick")
    c.models = ("transformer",)
    c.model.transformer.positions = positions
    c.data.toy.update(train_size=200, valid_size=10, test_per_bucket=1)
    c.train.update(num_steps=4, log_every=2, checkpoint_every=4, eval_every=2)
    c.eval.valid_batches = 1
    res = rnn_vs_attn.run(c, str(tmp_path))
    row = res["models"]["transformer"]
    assert row["steps"] == 4 and 0 <= row["bleu"] <= 100, row
    assert math.isfinite(row["final_loss"]) and math.isfinite(row["valid_loss"]), row
    assert row["params"] > 0 and set(row["bleu_by_length"])
