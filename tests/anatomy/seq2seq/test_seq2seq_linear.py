"""RNNenc and RNNsearch with linear-recurrence cells (sru, qrnn, mingru, mamba): each variant
overfits a tiny batch and decodes it back greedily, and an unknown cell is named. Their
incremental decoding against the teacher-forced pass (whose encoder, and RNNenc's decoder, run
the associative scan) is in the translators' contract (test_seq2seq.py's VARIANTS)."""

import numpy as np
import pytest
from helpers import V, overfit_batch, train_translator

from anatomy import decode
from anatomy.seq2seq import build_model

LINEAR = ("sru", "qrnn", "mingru", "mamba")
SIZES = {
    "rnnenc": {"d_emb": 16, "d_hidden": 32, "reverse_source": True},
    "rnnsearch": {"d_emb": 16, "d_enc": 16, "d_dec": 32, "d_attn": 16, "d_readout": 32},
}
VARIANTS = [(m, c) for m in SIZES for c in LINEAR]
IDS = [f"{m}-{c}" for m, c in VARIANTS]


@pytest.mark.slow
@pytest.mark.parametrize("name,cell", VARIANTS, ids=IDS)
def test_overfits_a_tiny_batch_and_decodes_it_back(name, cell):
    batch = overfit_batch()
    model = build_model(name, dict(SIZES[name], cell=cell), V, V)
    # Two learning rates, the second tried only if the first stalls: rnnsearch-mamba can sit
    # on a plateau of one wrong token for hundreds of steps (its Δ starts at 1e-3..1e-1: little
    # memory until Δ grows), and which rate reaches it turns on rounding (measured, 300
    # steps: at XLA's default level 1e-2 stalls at 0.038 and 2e-2 reaches 4e-4; at backend
    # optimisation level 0, the suite's, 2e-2 stalls at 0.069 and 1e-2 reaches 1e-3)
    _, first = train_translator(model, batch, steps=0, lr=2e-2)  # the loss at init
    for lr in (2e-2, 1e-2):
        params, last = train_translator(model, batch, steps=300, lr=lr)
        if float(last) < 0.05:
            break
    assert float(last) < 0.05 and float(first) / float(last) > 40, (lr, float(first), float(last))
    t_len = batch["tgt_out"].shape[1]
    tokens = decode.greedy(model, params, batch["src"], batch["src_len"], t_len)
    np.testing.assert_array_equal(tokens, batch["tgt_out"])


def test_unknown_cell_is_named():
    for name in SIZES:
        with pytest.raises(ValueError, match=f"{name}: cell must be one of .*mingru.*mamba"):
            build_model(name, dict(SIZES[name], cell="lru"), V + 1, V)
