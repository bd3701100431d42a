"""recall: multi-query associative recall (MQAR, Zoology's generator) against state size.

Every contender trains once per seed on Based's mixture of lengths (Arora et al. 2024, the
configs of its Figure 2): every step holds every N of c.mixture.seq_lens with K = N/16, N/8
and N/4 pairs; each is then tested at every (N, K) of that mixture. One run gives the
frontier (accuracy against state bytes) and attention against N.

Presets: default (the judged run), 'lr_grid' (each family's peak rate, chosen on the design
seeds and the validation set; its choice is written into LEARNING_RATE below and a test ties
the two), 'pilot' (the default on design seeds, scored on the validation set: the effect and
spread that size the judged run, results/recall/pilot.json), 'full' (the frontier Zoology and
Based draw: what it needs is in FULL's comment), 'quick' (tests). The wall time of a run is in
its results.json (provenance.wall_seconds).

What the default gives up to fit 30 minutes on 2 cores, against Zoology's Figure 2 (per N:
100,000 examples x 64 epochs = 6.4M sequences, the best of 4 rates per point, V = 8,192) and
Based's Figure 2 (the same mixture of lengths, 180,000 examples x 32 epochs = 5.8M sequences,
the best of 4 rates per point, widths 48-128): V = 1,024, STEPS steps of BATCH fresh
sequences (see c.steps), one rate per family chosen once by 'lr_grid', width 64 only.
"""

import ml_collections

PRESETS = ("", "quick", "lr_grid", "pilot", "full")

# The contenders (experiments/tasks/contenders.py: "family:knob=value:..."), width 64, 2 layers.
# The frontier's family is Based's own (Arora et al. 2024): linear attention with the 2nd-order
# Taylor feature map, one head, its feature dimension d_key setting the state: (1 + d + d²)
# features x (64 values + a normaliser) x 2 layers, plus the conv buffers: 5,176 / 12,456 /
# 39,496 / 143,496 bytes at d = 2 / 4 / 8 / 16, spanning Zoology's and Based's frontier
# (about 5e3 to 1e5 bytes). On the design seed it was the one fixed state that learned recall
# within the budget (0.94 at N = 64, K = 4 after 600 steps at 1e-2, where a 10 kB mLSTM
# reached 0.18 and Mamba 0.03). The diagonal decay at its bytes is Mamba's selective SSM (S6:
# a decay per element of its [H, N] state, A diagonal) at d_state 20: 12,288 bytes beside
# Based's 12,456, with 1.27x its parameters (108,288 against 84,992: the diagonal is not
# the smaller model). The hybrid puts softmax attention in layer 1 and the 39 kB Based layer
# in layer 2.
BASED = "linear_attention:n_heads=1:d_key={d}:feature_map=taylor"
FRONTIER = (
    "attention",
    BASED.format(d=2),
    BASED.format(d=4),
    BASED.format(d=8),
    BASED.format(d=16),
    "mamba:d_state=20",
    "hybrid:mixer=" + BASED.format(d=8),
)
# What the full frontier adds (results/recall/full.json when run): the gated matrix states
# (mLSTM, gated DeltaNet, Mamba-2) at the bytes of the frontier, mLSTM against Mamba at equal
# bytes and parameters (10,272 against 10,240 bytes; 109,712 against 106,752 parameters),
# RG-LRU at 10 kB (537k parameters with 64-block gates), minGRU. It needs the steps that let
# them leave the plateau (none did within 600 on the design seed): STEPS x 4 here, still
# 1/20 of Zoology's budget, and 17 contenders: about 6 hours on this machine's 2 cores.
MLSTM = "mlstm:n_heads=4:d_key={x}:d_value={x}"
FULL = (
    MLSTM.format(x=8),
    MLSTM.format(x=16),
    MLSTM.format(x=32),
    MLSTM.format(x=64),
    "mamba:d_state=16",
    "mamba:d_state=8",
    "rglru:expand=16:n_blocks=64",
    "mamba2:d_state=16",
    "gated_deltanet:n_heads=4:d_key=16:d_value=16",
    "mingru:expand=4",
)
# One representative per family for the learning-rate grid (the same tuning budget for every
# family: every rate of LR_GRID on the same design seeds)
GRID_CONTENDERS = ("attention", BASED.format(d=8), "mamba:d_state=20",
                   "hybrid:mixer=" + BASED.format(d=8))  # fmt: skip
# the peak rates every family is tried at (the same tuning budget for each: every rate, the
# design seeds, the default's steps), committed as two runs of the 'lr_grid' preset over
# disjoint rates: results/recall/lr_grid.json (1e-2 .. 1e-1; 3e-3 left out at first, having
# been the worst rate of every family on the 400-step grid of 0640678) and
# results/recall/lr_grid_low.json (3e-3, `--config.lr_grid="(0.003,)"`), added for every
# family once the hybrid and Mamba chose 1e-2, the bottom edge; experiments.recall.merged_grid
# reads them as one grid
LR_GRID = (1e-2, 3e-2, 1e-1)  # the first run's rates
GRID_LOW = (3e-3,)  # the added run's
GRID_RUNS = ("recall/lr_grid", "recall/lr_grid_low")
# the rate publish.render_rates names (GRID[1]) for a recall / copy run without a committed
# lr_grid; not a grid either experiment runs (recall's is LR_GRID)
GRID = (1e-3, 3e-3, 1e-2)
# {family: peak rate}: the choice of the committed lr_grid runs (GRID_RUNS, read as one grid);
# tests/experiments/recall/test_recall.py checks these against it. A family without one takes DEFAULT_RATE.
LEARNING_RATE = {"attention": 0.03, "linear_attention": 0.03, "mamba": 0.01, "hybrid": 0.01}
DEFAULT_RATE = 1e-2
FAMILIES = ("attention", "mlstm", "rglru", "hybrid", "linear_attention", "mamba2", "mamba",
            "mingru", "gated_deltanet", "lstm")  # fmt: skip


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.seeds = (0, 1, 2)  # judged seeds: one full run (every contender from scratch) per seed
    # the task (experiments/tasks/mqar.py), Zoology's generator
    # V: keys are 1 .. V/2-1, values V/2 .. V-1 (Zoology and Based: 8,192; V must exceed N)
    c.vocab = 1024
    c.power_a = 0.01  # the query gaps' power law (Zoology's power_a)
    c.random_non_queries = True  # fillers drawn from the vocabulary (Based's; Zoology's Fig. 2: 0)
    # Based's mixture of lengths: every step holds every N below, each split evenly over K =
    # N/f for f in k_fractions, per_k[i] sequences per (N, K) at the i-th N
    c.mixture = ml_collections.ConfigDict()
    c.mixture.seq_lens = (64, 128, 256)
    c.mixture.k_fractions = (16, 8, 4)  # K = N/16, N/8, N/4
    c.mixture.per_k = (16, 4, 2)  # 66 sequences (6,144 tokens) a step
    # the models (experiments/tasks/contenders.py): 2 layers, no MLP, as Zoology's MQAR models
    c.d_model = 64  # width of every contender unless its string says otherwise
    c.n_layers = 2  # blocks / recurrent layers
    c.conv = 4  # the short causal conv in front of every mixer (Zoology / Based: every model)
    # softmax attention (alone and in hybrids): one head and no positional encoding beside the
    # conv, as Based's MQAR attention
    c.attention = ml_collections.ConfigDict({"n_heads": 1, "positions": "none"})
    # the form each mixer runs in (speed only; every form computes the same function,
    # tests/anatomy/mixers/: a twin file per mixer)
    c.forms = ml_collections.ConfigDict({
        "mlstm": "quadratic", "linear_attention": "quadratic", "mamba2": "quadratic",
        "rglru": "sequential", "mingru": "sequential", "gated_deltanet": "sequential",
        "mamba": "sequential", "attention": "dense",
    })  # fmt: skip
    # the frontier: every contender, trained on the mixture, tested at every (N, K) of it
    c.frontier = ml_collections.ConfigDict()
    c.frontier.contenders = FRONTIER
    # training, the same for every contender
    # AdamW steps: 39,600 sequences per model. At 400 (the run of 0640678) Based's layer
    # left the plateau on 7 of 12 seeds x contenders (d = 4, 8, 16, the hybrid): the escape lands between steps 300 and 560
    # at 3e-2 (tried by hand on the training draws of seeds 1 and 2, scored on the validation
    # set, at 600 and 800 steps), so 400 measured which
    # seeds escaped, not the state. 600 is what 30 minutes on 2 cores allow with Mamba's
    # serial scan in the frontier (0.33 s of the 0.73 s a step of all seven contenders)
    c.steps = 600
    c.warmup = 50  # linear warmup steps, then cosine decay to 0 (Zoology: cosine, no warmup)
    c.weight_decay = 0.1  # AdamW's
    # peak learning rate per family: the committed 'lr_grid' run's choice (LEARNING_RATE)
    c.learning_rate = ml_collections.ConfigDict(
        {f: float(LEARNING_RATE.get(f, DEFAULT_RATE)) for f in FAMILIES}
    )
    c.lr_grid = ()  # 'lr_grid' preset: each of grid_contenders at every rate, scored on valid
    c.grid_contenders = GRID_CONTENDERS
    # measurement
    c.valid_seed = 20_000  # the validation set (the lr grid's choice, the pilot): one draw
    c.test_seed = 30_000  # the test set (every verdict): another
    c.split = "test"  # which set the frontier is scored on ('valid' for the pilot)
    c.eval_examples = 256  # held-out examples per (N, K)
    c.eval_chunk = 64  # rows per forward pass when measuring
    c.reader_examples = 1998  # training examples the position-only reader counts, per N
    # XLA's backend optimisation level for every compiled step (None: XLA's default); the
    # quick preset's time is almost all compiling
    c.xla_opt_level = None
    if preset == "quick":
        c.xla_opt_level = 0  # compiles faster; the smoke test reads shapes and rules
        c.seeds = (0,)
        c.vocab = 64
        c.d_model = 16
        c.mixture.seq_lens = (16, 32)
        c.mixture.k_fractions = (8, 4)
        c.mixture.per_k = (2, 1)
        small = BASED.format(d=2)
        c.frontier.contenders = ("attention", small, BASED.format(d=4), "mamba:d_state=2",
                                 "hybrid:mixer=" + small)  # fmt: skip
        c.grid_contenders = ("attention", small)
        c.steps = 6
        c.warmup = 2
        c.eval_examples = 8
        c.eval_chunk = 8
        c.reader_examples = 32
    elif preset == "lr_grid":
        c.seeds = (100, 101)  # design seeds: never judged ones
        c.lr_grid = LR_GRID
        c.split = "valid"
    elif preset == "pilot":
        c.seeds = (1000, 1001, 1002)  # design seeds, disjoint from the judged ones
        c.split = "valid"
    elif preset == "full":
        c.frontier.contenders = FRONTIER + FULL
        c.steps = 2400  # STEPS x 4
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose one of {PRESETS}")
    return c
