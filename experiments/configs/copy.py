"""copy: repeat a string after a separator (Jelassi et al. 2024), trained on lengths up to L,
tested to 8L, every family at a matched parameter count.

Presets: default (the judged run), 'lr_grid' (the learning-rate choice on the design seed and
the validation set; its chosen rates are written into the default below), 'quick' (tests).
The wall time of a run is in its results.json (provenance.wall_seconds).

What the default gives up to fit 15 minutes on 2 cores, against Jelassi et al.'s ~160M-
parameter models trained on strings up to 20-50 tokens and tested to 1,000: models of about
CONTENDER_PARAMS parameters, L = 16, tests to 8L = 128, STEPS steps of fresh strings.
"""

import ml_collections

from experiments.configs import recall as recall_config

PRESETS = ("", "quick", "lr_grid")


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.seeds = (0, 1, 2)  # judged seeds: every contender from scratch per seed
    # the task (experiments/copy/task.py)
    c.alphabet = 16  # A symbols; the vocabulary is A + 4 ('$', '|', '.', PAD)
    c.train_max = 16  # L: training strings have U{1 .. L} symbols
    c.test_lengths = (4, 8, 16, 24, 32, 64, 128)  # string lengths tested, up to 8L
    # the contenders (experiments/recall/models.py), each at the d_model whose parameter count
    # comes closest to target_params; 2 layers, no MLP, the short conv in front of every mixer
    c.contenders = ("attention", "attention:positions=none", "lstm", "mlstm", "mamba2",
                    "rglru")  # fmt: skip
    c.target_params = 60_000  # matched parameter count
    c.d_model = 64  # only a starting point: every contender's width is matched
    c.n_layers = 2
    c.conv = 4  # the short causal conv in front of every mixer
    # softmax attention's knobs (a contender's string overrides them: "attention:positions=none")
    c.attention = ml_collections.ConfigDict({"n_heads": 2, "positions": "rope"})
    # the form each mixer runs in (speed only: every form is the same function): recall's
    c.forms = recall_config.get_config().forms
    # training, the same for every contender
    c.steps = 800  # AdamW steps (NoPE attention copied 2L on the design seed after 600)
    c.batch = 32  # strings per step
    c.warmup = 50  # linear warmup, then cosine decay to 0
    c.weight_decay = 0.1
    # peak learning rate per family: the committed 'lr_grid' run's choice (results/copy/lr_grid.json)
    c.learning_rate = recall_config.rates("copy", ("attention", "lstm", "mlstm", "mamba2", "rglru"))
    c.lr_grid = ()  # 'lr_grid' preset: every contender at every rate, scored on valid
    # measurement
    c.valid_seed = 20_000  # the validation set (the lr grid's choice)
    c.test_seed = 30_000  # the test set (every verdict)
    c.eval_examples = 128  # strings per tested length
    c.eval_chunk = 32  # rows per forward pass when measuring
    c.reader_examples = 2000  # training strings the position-only reader counts
    # XLA's backend optimisation level for every compiled step (None: XLA's default); the
    # quick preset's time is almost all compiling
    c.xla_opt_level = None
    if preset == "quick":
        c.xla_opt_level = 0  # compiles faster; the smoke test reads shapes and rules
        c.seeds = (0,)
        c.alphabet = 4
        c.train_max = 4
        c.test_lengths = (2, 4, 8)
        c.contenders = ("attention", "lstm")
        c.target_params = 3000
        c.steps = 10
        c.batch = 8
        c.warmup = 2
        c.eval_examples = 8
        c.eval_chunk = 8
        c.reader_examples = 64
    elif preset == "lr_grid":
        c.seeds = (100,)  # the design seed: never a judged one
        c.lr_grid = recall_config.GRID
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose one of {PRESETS}")
    return c
