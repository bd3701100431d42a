"""recall: multi-query associative recall (MQAR, Zoology's generator) against state size.

Presets: default (the judged run), 'lr_grid' (the learning-rate choice, on the design seeds
and the validation set; its chosen rates are written into the default below), 'quick'
(tests). The wall time of a run is in its results.json (provenance.wall_seconds).

What the default gives up to fit 15 minutes on 2 cores, against Zoology's Figure 2 and
Based's Figure 2: a fresh batch per step for STEPS steps instead of 64 epochs of 100,000
examples; one learning rate per family chosen once by 'lr_grid' (Zoology keeps the best of
four per point); the frontier at one length; the lengths sweep for two families only.
"""

import ml_collections

PRESETS = ("", "quick", "lr_grid")


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.seeds = (0, 1, 2)  # judged seeds: one full run (every contender from scratch) per seed
    # the task (experiments/recall/task.py), Zoology's defaults but V
    c.vocab = 8192  # V: keys are 1 .. V/2-1, values V/2 .. V-1 (Zoology: 8,192)
    c.power_a = 0.01  # the query gaps' power law (Zoology's power_a)
    c.random_non_queries = True  # fillers drawn from the vocabulary (Zoology's default)
    # the models (experiments/recall/models.py): 2 layers, no MLP, as Zoology's MQAR models
    c.d_model = 64  # width of every contender unless its string says otherwise
    c.n_layers = 2  # blocks / recurrent layers
    c.conv = 4  # the short causal conv in front of every mixer (Zoology / Based: every model)
    # the frontier: every contender at one length, trained on a mixture of K, tested per K
    c.frontier = ml_collections.ConfigDict()
    c.frontier.seq_len = 64  # N
    c.frontier.pair_counts = (4, 8, 16)  # K: each batch split evenly over them
    c.frontier.contenders = ("attention", "lstm", "lstm:d_model=128")
    # the lengths: accuracy against N at fixed width, K = N / pairs_ratio
    c.lengths = ml_collections.ConfigDict()
    c.lengths.seq_lens = (64, 128, 256)  # N
    c.lengths.pairs_ratio = 16  # K = N / 16 (Zoology's Figure 2: (64, 4) .. (256, 16))
    c.lengths.contenders = ("attention", "lstm")
    # training, the same for every contender
    c.steps = 1000  # AdamW steps
    c.tokens_per_batch = 4096  # batch = tokens_per_batch / N sequences (64 at N = 64)
    c.warmup = 50  # linear warmup steps, then cosine decay to 0 (Zoology: cosine, no warmup)
    c.weight_decay = 0.1  # AdamW's (Zoology's)
    # peak learning rate per family, chosen by the 'lr_grid' preset (results/recall/lr_grid.json)
    c.learning_rate = ml_collections.ConfigDict({"attention": 3e-3, "lstm": 3e-3})
    c.lr_grid = ()  # 'lr_grid' preset: every contender at every rate, scored on valid
    # measurement
    c.valid_seed = 20_000  # the validation set (the lr grid's choice): one fixed draw
    c.test_seed = 30_000  # the test set (every verdict): another
    c.eval_examples = 256  # held-out examples per (N, K)
    c.eval_chunk = 64  # rows per forward pass when measuring
    c.reader_examples = 2000  # training examples the position-only reader counts
    if preset == "quick":
        c.seeds = (0,)
        c.vocab = 64
        c.d_model = 16
        c.frontier.seq_len = 16
        c.frontier.pair_counts = (2, 4)
        c.frontier.contenders = ("attention", "lstm")
        c.lengths.seq_lens = (16, 32)
        c.lengths.pairs_ratio = 8
        c.lengths.contenders = ("attention",)
        c.steps = 10
        c.tokens_per_batch = 128
        c.warmup = 2
        c.eval_examples = 16
        c.eval_chunk = 16
        c.reader_examples = 64
    elif preset == "lr_grid":
        c.seeds = (100,)  # the design seed: never a judged one
        c.lr_grid = (1e-3, 3e-3, 1e-2)
        c.lengths.seq_lens = ()
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose one of {PRESETS}")
    return c
