"""Config of recipe_sweep: a named grid of rnn_vs_attn override sets, one model, one table.

    python launch.py --experiment=recipe_sweep --config=experiments/configs/recipe_sweep.py:NAME \
        --workdir=/tmp/sweep/NAME

runs every setting of GRIDS[NAME] (a label and {dotted rnn_vs_attn config path: value}; '{model}'
in a path is the model being run) for every model of the grid, each as its own rnn_vs_attn run
in workdir/<label>/<model>/ (a rerun resumes and reuses finished runs), scored on the
validation split, and writes sweep.md / sweep.json: final train token accuracy, validation
loss and valid BLEU overall / 1-10 / 61+ per setting and model, and the setting chosen for
each model (highest valid BLEU). 'budget' is the equal tuning budget every model of the
README gets (the same settings, the same steps); the issue-10 grids start from the defaults
before that issue; 'quick' is the smoke test's.
"""

import itertools

import ml_collections

E, T = "model.rnnenc.", "model.transformer."
M = "train_by_model.{model}."  # the recipe of whichever model the setting is run for
RE, RT = "train_by_model.rnnenc.", "train_by_model.transformer."

# The rnn_vs_attn defaults before issue 10's sweep: the issue-10 grids start from them (each
# setting's overrides on top), so rerunning a grid regenerates its table under today's defaults.
BEFORE_ISSUE10 = {
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
    # The Transformer's two structural choices that issue 10 set by single runs scored on test
    # sentences (pre-LN, 8 heads of 16 dims), re-chosen on the validation split: post-/pre-LN x
    # 4/8 heads at the default recipe (budget's choice, 6e-3 / 400, the curriculum), 2,000 steps.
    "transformer_arch": (
        ("transformer",),
        2000,
        30,
        [
            (f"{norm}ln_h{h}", {T + "norm": norm, T + "n_heads": h})
            for norm, h in itertools.product(("post", "pre"), (4, 8))
        ],
    ),
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


PRESETS = tuple(GRIDS)  # each grid is a preset (none is the default: rnnenc_800)


def get_config(preset=None):
    name = preset or "rnnenc_800"
    if name not in GRIDS:
        raise ValueError(
            f"Unknown preset {preset!r} for recipe_sweep; choose one of {sorted(GRIDS)}"
        )
    models, steps, per_bucket, _ = GRIDS[name]
    c = ml_collections.ConfigDict()
    c.grid = name  # which GRIDS entry to run
    c.base_preset = (
        "quick" if name == "quick" else ""
    )  # rnn_vs_attn preset every setting starts from
    c.models = models  # rnn_vs_attn's config.models for every setting
    c.num_steps = steps  # rnn_vs_attn's config.train.num_steps (same for every setting)
    c.max_per_bucket = per_bucket  # valid sentences decoded per length bucket (0 = all)
    # apply BEFORE_ISSUE10 first: only the issue-10 grids start from the defaults before it
    c.from_before_issue10 = name not in ("quick", "budget", "transformer_arch")
    return c
