"""Config of recipe_sweep: a named grid of rnn_vs_attn override sets, one model, one table.

    python launch.py --experiment=recipe_sweep --preset=NAME

(NAME is required: there is no default grid) runs every setting of GRIDS[NAME] (a label and {dotted rnn_vs_attn config path: value}; '{model}'
in a path is the model being run) for every model of the grid, each as its own rnn_vs_attn run
in workdir/<label>/<model>/ (a rerun resumes and reuses finished runs), scored on the
validation split, and writes sweep.md / sweep.json: final train token accuracy, validation
loss and valid BLEU overall / 1-10 / 61+ per setting and model, and the setting chosen for
each model (highest valid BLEU). 'budget' is the equal tuning budget every model of the
README gets (the same settings, the same steps); the grids of FROM_UNTUNED start from
rnn_vs_attn's defaults before any grid tuned them (UNTUNED_DEFAULTS); 'quick' is the smoke
test's.
"""

import itertools

import ml_collections

E, T = "model.rnnenc.", "model.transformer."
M = "train_by_model.{model}."  # the recipe of whichever model the setting is run for
RE, RT = "train_by_model.rnnenc.", "train_by_model.transformer."

# rnn_vs_attn's defaults, in the fields the first grids tuned, before any grid tuned them: no
# curriculum, RNNenc reading its source in order at the default embedding scale, a post-LN
# Transformer, config.train's rates. The grids of FROM_UNTUNED start from them (each setting's
# overrides on top), so that rerunning one today regenerates its committed table.
UNTUNED_DEFAULTS = {
    "curriculum.phases": (),
    E + "reverse_source": False,
    E + "emb_init_std": 0.0,
    T + "norm": "post",
    RE + "learning_rate": None,
    RT + "learning_rate": None,
    RT + "warmup_steps": None,
}

# The equal tuning budget (Melis et al. 2018: unequal tuning alone reorders models): every
# model gets the same grid, peak learning rate x warmup steps, at the default 2,000 steps.
BUDGET_LR = (2e-3, 6e-3)
BUDGET_WARMUP = (50, 400)
BUDGET_MODELS = ("rnnenc", "rnnsearch", "transformer", "convs2s")

# Real text (rnn_vs_attn:gettext_enfr, English -> French from the machine's gettext
# catalogs), every model of its seeds preset. First the vocabulary every model must share
# (chosen jointly: the best mean valid BLEU), screened at fewer steps and at equal cost: a
# setting's steps are SCREEN_STEPS scaled by the CPU seconds per train step of the three
# models at 1,000 pieces over those at its size (process CPU time of each model's jitted step
# on gettext batches, every shape compiled first: VOCAB_COST; the output softmax makes a step
# dearer at more pieces), so each setting costs about the same time. Then the same
# learning-rate x warmup grid as toy_wmt's 'budget' for every model at the chosen vocabulary
# and the run's full steps (BUDGET_STEPS at 1,000 pieces, scaled the same way), which the
# 15-minute budget of the three-model run sets (README, "Real text").
GETTEXT_MODELS = ("rnnenc", "rnnsearch", "transformer", "convs2s")
SCREEN_STEPS = 600
VOCAB_COST = {1000: 0.60, 2000: 0.74}  # CPU seconds per step, rnnenc + rnnsearch + transformer


BUDGET_STEPS = 1000


def _steps(steps_at_1000, size):
    return round(steps_at_1000 * VOCAB_COST[1000] / VOCAB_COST[size])


def budget_steps(size):
    """The real-text run's steps at a vocabulary of `size` pieces: BUDGET_STEPS at 1,000
    pieces at equal cost, rounded to a hundred (validation every 200 steps ends on the last
    one); rnn_vs_attn's real-text presets train this long (800 at 2,000 pieces)."""
    return round(_steps(BUDGET_STEPS, size), -2)


def _vocab_setting(size, shared):
    """One vocabulary at equal cost, under toy_wmt's recipe laid over the setting's steps: its
    warmup a fifth of them (400 of 2,000) and each curriculum phase a tenth (200 of 2,000)."""
    label = f"sp{size}_{'shared' if shared else 'separate'}"
    steps = _steps(SCREEN_STEPS, size)
    return label, {
        "data.vocab_size": size,
        "data.shared_vocab": shared,
        "train.num_steps": steps,
        M + "warmup_steps": steps // 5,
        "curriculum.phases": ((steps // 10, 16), (steps // 10, 32)),
    }


def _budget_grid(size, shared):
    """toy_wmt's budget grid (peak LR x warmup, the same for every model) at one vocabulary,
    at its full steps, the curriculum's phases a tenth of them each (as toy_wmt's)."""
    steps = budget_steps(size)
    vocab = {
        "data.vocab_size": size,
        "data.shared_vocab": shared,
        "curriculum.phases": ((steps // 10, 16), (steps // 10, 32)),
    }
    return [
        (f"lr{lr:g}_wu{wu}", {**vocab, M + "learning_rate": lr, M + "warmup_steps": wu})
        for lr, wu in itertools.product(BUDGET_LR, BUDGET_WARMUP)
    ]


GETTEXT_VOCABS = [
    _vocab_setting(1000, True),
    _vocab_setting(2000, True),
    _vocab_setting(2000, False),
]

# name -> (models, num_steps, eval.max_per_bucket, [(label, {path: value}), ...])
GRIDS = {
    "budget": (
        BUDGET_MODELS,
        2000,
        30,
        [
            (f"lr{lr:g}_wu{wu}", {M + "learning_rate": lr, M + "warmup_steps": wu})
            for lr, wu in itertools.product(BUDGET_LR, BUDGET_WARMUP)
        ],
    ),
    # The Transformer's two structural choices (pre-LN, 8 heads of 16 dims), first set by single
    # runs scored on test sentences, re-chosen on the validation split: post-/pre-LN x 4/8
    # heads at the default recipe (budget's choice, 6e-3 / 400, the curriculum), 2,000 steps.
    "transformer_arch": (
        ("transformer",),
        2000,
        30,
        [
            (f"{norm}ln_h{h}", {T + "norm": norm, T + "n_heads": h})
            for norm, h in itertools.product(("post", "pre"), (4, 8))
        ],
    ),
    "gettext_vocab": (
        GETTEXT_MODELS,
        SCREEN_STEPS,
        20,
        GETTEXT_VOCABS,
    ),
    # the budget grid at each vocabulary the screen may choose (run: the one it chose)
    **{
        f"gettext_budget_{label}": (
            GETTEXT_MODELS,
            budget_steps(over["data.vocab_size"]),
            20,
            _budget_grid(over["data.vocab_size"], over["data.shared_vocab"]),
        )
        for label, over in GETTEXT_VOCABS
    },
    "quick": (
        ("rnnenc",),
        6,
        2,
        [
            ("base", {}),
            ("curriculum", {"curriculum.phases": ((3, 32),), RE + "learning_rate": 1e-3}),
        ],
    ),
    # RNNenc at 800 steps: embedding init scale, source reversal, context feeding, LR, warmup.
    "rnnenc_800": (
        ("rnnenc",),
        800,
        30,
        [
            ("std1", {E + "emb_init_std": 1.0}),
            ("reverse", {E + "reverse_source": True}),
            ("std1_reverse", {E + "emb_init_std": 1.0, E + "reverse_source": True}),
            (
                "std1_reverse_lr5e-3",
                {E + "emb_init_std": 1.0, E + "reverse_source": True, RE + "learning_rate": 5e-3},
            ),
            (
                "std1_reverse_feed",
                {E + "emb_init_std": 1.0, E + "reverse_source": True, E + "feed_context": True},
            ),
        ],
    ),
    # Transformer at the default 2,000 steps: pre-LN + 400 warmup steps with a length
    # curriculum, or a higher peak LR.
    "transformer_2000": (
        ("transformer",),
        2000,
        30,
        [
            (
                "preln_wu400_cur",
                {
                    T + "norm": "pre",
                    RT + "warmup_steps": 400,
                    "curriculum.phases": ((200, 16), (200, 32)),
                },
            ),
            (
                "preln_wu400_lr4e-3",
                {T + "norm": "pre", RT + "warmup_steps": 400, RT + "learning_rate": 4e-3},
            ),
        ],
    ),
    # Both levers together, and a higher peak LR with the curriculum.
    "transformer_2000b": (
        ("transformer",),
        2000,
        30,
        [
            (
                "preln_wu400_lr4e-3_cur",
                {
                    T + "norm": "pre",
                    RT + "warmup_steps": 400,
                    RT + "learning_rate": 4e-3,
                    "curriculum.phases": ((200, 16), (200, 32)),
                },
            ),
            (
                "preln_wu400_lr6e-3_cur",
                {
                    T + "norm": "pre",
                    RT + "warmup_steps": 400,
                    RT + "learning_rate": 6e-3,
                    "curriculum.phases": ((200, 16), (200, 32)),
                },
            ),
        ],
    ),
}


# grid -> the rnn_vs_attn preset its settings start from (absent: the default, toy_wmt)
BASE_PRESETS = {"quick": "quick"} | {g: "gettext_enfr" for g in GRIDS if g.startswith("gettext_")}
# the grids that start from UNTUNED_DEFAULTS
FROM_UNTUNED = ("rnnenc_800", "transformer_2000", "transformer_2000b")
PRESETS = tuple(GRIDS)  # each grid is a preset; none is the default


def get_config(preset=None):
    name = preset
    if name not in GRIDS:  # no default: each grid is a choice (launch.py says so in one line)
        raise ValueError(
            f"Unknown preset {preset!r} for recipe_sweep; choose one of {sorted(GRIDS)}"
        )
    models, steps, per_bucket, _ = GRIDS[name]
    c = ml_collections.ConfigDict()
    c.grid = name  # which GRIDS entry to run
    c.base_preset = BASE_PRESETS.get(name, "")  # rnn_vs_attn preset every setting starts from
    c.models = models  # rnn_vs_attn's config.models for every setting
    c.num_steps = steps  # rnn_vs_attn's config.train.num_steps (same for every setting)
    c.max_per_bucket = per_bucket  # valid sentences decoded per length bucket (0 = all)
    # apply UNTUNED_DEFAULTS before the setting's overrides (the grids of FROM_UNTUNED only)
    c.from_untuned_defaults = name in FROM_UNTUNED
    return c
