"""recall: multi-query associative recall (MQAR, Zoology's generator) against state size.

Presets: default (the judged run), 'lr_grid' (the learning-rate choice, on the design seed
and the validation set; its chosen rates are written into the default below), 'full' (every
family of anatomy.mixers, N to 512, twice the steps: about ten times the default's time),
'quick' (tests). The wall time of a run is in its results.json (provenance.wall_seconds).

What the default gives up to fit 15 minutes on 2 cores, against Zoology's Figure 2 and
Based's Figure 2: V = 1,024 (not 8,192); a fresh batch per step for c.steps steps instead of
64 epochs of 100,000 examples; one learning rate per family chosen once by 'lr_grid' (Zoology
keeps the best of four per point); the frontier at one length (N = 64) with one state sweep
(mLSTM's head width) and one diagonal decay matched to its smallest; the lengths for
attention only.
"""

import ml_collections

from experiments import committed

PRESETS = ("", "quick", "lr_grid", "full")


# The frontier's contenders (experiments/recall/models.py: "family:knob=value:..."), width 64,
# 2 layers. The mLSTM sweep varies its heads' key and value width X at 2 heads: 2·X·(X+1) + 2
# numbers per layer (X = 8, 32, 64: 146, 2,114, 8,322; at 64 its state is attention's KV cache
# at N = 64). On the design seed, d_value 16 with d_key 64 recalled less than 32 x 32 heads
# of the same bytes. RG-LRU at expand 2 (d_rnn 128) is a diagonal decay within 10% of the
# smallest mLSTM's state bytes (conv buffers included); RG-LRU as large as the middle one needs
# d_rnn ~ 2,048 (17.6M parameters, 1.8 s per step here); the full sweep matches Mamba to it.
MLSTM = "mlstm:n_heads=2:d_key={x}:d_value={x}"
FRONTIER = (
    "attention",
    MLSTM.format(x=8),
    MLSTM.format(x=32),
    MLSTM.format(x=64),
    "rglru:expand=2",
    "hybrid:mixer=mlstm:n_heads=2:d_key=32:d_value=32",
)
# What the full sweep adds (results/recall/full.json when run): the other families, and a
# diagonal decay matched to the middle mLSTM (Mamba, d_state 32)
FULL = (
    MLSTM.format(x=16),
    "rglru:expand=8:n_blocks=8",  # Griffin's block-diagonal gates
    "mamba:d_state=32",  # a diagonal decay at the middle mLSTM's bytes (0.1% apart)
    "linear_attention:n_heads=2:d_key=32:d_value=32",
    "linear_attention:n_heads=1:d_key=8:feature_map=taylor",  # Based's: 1 + 8 + 64 features
    "mamba2",
    "mingru:expand=8",
    "gated_deltanet:n_heads=2:d_key=32:d_value=32",
    "lstm",
    "lstm:d_model=256",
)
GRID = (1e-3, 3e-3, 1e-2)  # the learning rates the 'lr_grid' preset tries for every contender


def chosen_rates(name):
    """{family: rate} the committed lr_grid run of experiment `name` chose
    (results/<name>/lr_grid.json), or {} before it is committed (then every family takes the
    grid's middle rate)."""
    if not committed.exists(f"{name}/lr_grid"):
        return {}
    return dict(committed.load(f"{name}/lr_grid")["result"]["lr_grid"]["chosen"])


def rates(name, families):
    """ConfigDict {family: peak rate}: the committed choice, the grid's middle elsewhere."""
    chosen = chosen_rates(name)
    return ml_collections.ConfigDict({f: float(chosen.get(f, GRID[1])) for f in families})


FAMILIES = ("attention", "mlstm", "rglru", "hybrid", "linear_attention", "mamba2", "mamba",
            "mingru", "gated_deltanet", "lstm")  # fmt: skip


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.seeds = (0, 1, 2)  # judged seeds: one full run (every contender from scratch) per seed
    # the task (experiments/recall/task.py), Zoology's generator
    # V: keys are 1 .. V/2-1, values V/2 .. V-1. Zoology's is 8,192; at 2,048 attention reached
    # 0.91 / 0.84 / 0.76 (K = 4 / 8 / 16) after 1,000 steps on the design seed, at 1,024 it
    # reached 0.99 / 0.98 / 0.96 (the readout of 8,192 ids also costs more than the stack)
    c.vocab = 1024
    c.power_a = 0.01  # the query gaps' power law (Zoology's power_a)
    c.random_non_queries = True  # fillers drawn from the vocabulary (Zoology's default)
    # the models (experiments/recall/models.py): 2 layers, no MLP, as Zoology's MQAR models
    c.d_model = 64  # width of every contender unless its string says otherwise
    c.n_layers = 2  # blocks / recurrent layers
    c.conv = 4  # the short causal conv in front of every mixer (Zoology / Based: every model)
    # softmax attention (alone and in hybrids): one head and no positional encoding beside the
    # conv, as Based's MQAR attention; with 4 RoPE heads it stayed on the plateau for 1,000 steps
    c.attention = ml_collections.ConfigDict({"n_heads": 1, "positions": "none"})
    # the form each mixer runs in (speed only; fwd+bwd at B=32, N=64, d=64 on this machine:
    # mLSTM parallel 28 ms, linear attention quadratic 15, Mamba-2 quadratic 93, RG-LRU
    # sequential 19, gated DeltaNet sequential 431, its chunked form 1,543)
    c.forms = ml_collections.ConfigDict({
        "mlstm": "parallel", "linear_attention": "quadratic", "mamba2": "quadratic",
        "rglru": "sequential", "mingru": "sequential", "gated_deltanet": "sequential",
        "mamba": "sequential", "attention": "dense",
    })  # fmt: skip
    # the frontier: every contender at one length, trained on a mixture of K, tested per K
    c.frontier = ml_collections.ConfigDict()
    c.frontier.seq_len = 64  # N
    c.frontier.pair_counts = (4, 8, 16)  # K: each batch split evenly over them (N/16 .. N/4)
    c.frontier.contenders = FRONTIER
    # the lengths: accuracy against N at fixed width, each N on its own mixture of K = N/16,
    # N/8, N/4 (the frontier's at N = 64, whose runs it reuses)
    c.lengths = ml_collections.ConfigDict()
    c.lengths.seq_lens = (64, 128, 256)  # N
    c.lengths.contenders = ("attention",)
    # training, the same for every contender
    c.steps = 1200  # AdamW steps
    c.tokens_per_batch = 2048  # batch = tokens_per_batch / N sequences (32 at N = 64)
    c.warmup = 50  # linear warmup steps, then cosine decay to 0 (Zoology: cosine, no warmup)
    c.weight_decay = 0.1  # AdamW's (Zoology's)
    # peak learning rate per family: the committed 'lr_grid' run's choice (results/recall/lr_grid.json)
    c.learning_rate = rates("recall", FAMILIES)
    c.lr_grid = ()  # 'lr_grid' preset: every contender at every rate, scored on valid
    # measurement
    c.valid_seed = 20_000  # the validation set (the lr grid's choice): one fixed draw
    c.test_seed = 30_000  # the test set (every verdict): another
    c.eval_examples = 256  # held-out examples per (N, K)
    c.eval_chunk = 64  # rows per forward pass when measuring
    c.reader_examples = 2000  # training examples the position-only reader counts
    # XLA's backend optimisation level for every compiled step (None: XLA's default); the
    # quick preset's time is almost all compiling
    c.xla_opt_level = None
    if preset == "quick":
        c.xla_opt_level = 0  # compiles faster; the smoke test reads shapes and rules
        c.seeds = (0,)
        c.vocab = 64
        c.d_model = 16
        c.frontier.seq_len = 16
        c.frontier.pair_counts = (2, 4)
        c.frontier.contenders = ("attention", "mlstm:n_heads=2:d_key=2", "mlstm:n_heads=2",
                                 "hybrid:mixer=mlstm:n_heads=2")  # fmt: skip
        c.lengths.seq_lens = (16, 32)
        c.steps = 10
        c.tokens_per_batch = 128
        c.warmup = 2
        c.eval_examples = 16
        c.eval_chunk = 16
        c.reader_examples = 64
    elif preset == "lr_grid":
        c.seeds = (100,)  # the design seed: never a judged one
        c.lr_grid = GRID
        c.lengths.seq_lens = ()
    elif preset == "full":
        c.frontier.contenders = FRONTIER + FULL
        c.lengths.seq_lens = (64, 128, 256, 512)
        c.lengths.contenders = ("attention", MLSTM.format(x=32))
        c.steps = 3000
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose one of {PRESETS}")
    return c
