"""Config of rnn_vs_attn: RNNenc vs RNNsearch vs Transformer on one corpus, same token budget.

Fields, each commented where get_config sets it and each a flag (`--config.seeds=3`): models,
seeds, data (anatomy.data.load_corpus's), curriculum, model (every registered model's config
by name), train (the same steps and token budget for every model), train_by_model (a model's
own recipe over train), eval, sharding; cost_estimate in the paper-scale presets.

Presets (`--preset=NAME`, or `--config=experiments/configs/rnn_vs_attn.py:NAME`), each a
function in PRESET_OVERRIDES that says what it changes in the default and why:
  (none)              toy_wmt at 0.1 lexicon scale, 2,000 steps per model, the whole test split
  full                the full 1,063-word lexicon, 3,000 steps per model
  quick               tiny corpus and models, under a minute: the smoke test
  seeds               the default with 3 seeds per model and validation every 50 steps
  equal_time          the same wall-clock training budget for every model
  bahdanau            Bahdanau et al. 2015's protocol: each model trained on sources of at most
                      30 / 50 tokens, tested on every length
  gettext_enfr        real text: English -> French from the machine's gettext catalogs
  gettext_enfr_seeds  the same with ConvS2S and 3 seeds
  ted_pten            the same recipe on TED talks Portuguese -> English (tfds: a network)
  wmt14_enfr          paper scale: Bahdanau et al. 2015's RNNencdec-50 and RNNsearch-50 on
                      WMT'14 En->Fr
  wmt14_ende_base     paper scale: Vaswani et al. 2017's Transformer-base on WMT'14 En->De
"""

import ml_collections

from anatomy.data import default_config as data_config
from anatomy.seq2seq import registry
from anatomy.sharding import default_config as sharding_config
from anatomy.train import default_train_config
from experiments.configs import recipe_sweep

MODELS = ("rnnenc", "rnnsearch", "transformer")
# The accelerators the paper-scale presets' cost estimate prices (anatomy.probes.hardware names)
COST_GPU, COST_TPU, COST_TPU_CHIPS = "H100 SXM", "TPU v5e", 16

# The recipe fields a model may set for itself (typed placeholders: overridable from flags).
RECIPE_FIELDS = {
    "learning_rate": float,
    "warmup_steps": int,
    "decay": str,
    "end_fraction": float,
    "label_smoothing": float,
    "clip_norm": float,
    "b1": float,
    "b2": float,
    "weight_decay": float,
}


def recipe_overrides(**values):
    """A train_by_model block: every RECIPE_FIELDS entry None (inherit) unless given."""
    block = ml_collections.ConfigDict(
        {k: ml_collections.config_dict.placeholder(t) for k, t in RECIPE_FIELDS.items()}
    )
    block.update(values)
    return block


def model_config(name, **overrides):
    """Model `name`'s default_config() (anatomy.seq2seq.registry) with `overrides` applied;
    a field the model does not have raises naming it."""
    c = registry.get(name).default_config()
    unknown = sorted(set(overrides) - set(c.keys()))
    if unknown:
        raise ValueError(f"model {name}: unknown config fields {unknown}")
    c.update(overrides)
    return c


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.models = MODELS  # translators to train, each in workdir/<name>/ (anatomy.seq2seq names;
    # '<name>-N': trained on sources of at most N tokens only)
    # > 1: every model trained with train.seed + s, s < seeds (mean ± std), in
    # workdir/<model>/seed<s>/; the data and its order unchanged, so seed 0 reproduces the
    # one-seed run (in workdir/<model>/) to the digit
    c.seeds = 1

    # Data: passed as is to anatomy.data.load_corpus (toy_wmt, or name='tsv'/'text_pair'/'tfds').
    c.data = data_config()
    # token_budget: the data default, ~1,000-token batches (docs/design.md: batch size mattered)
    c.data.bucket_boundaries = (16, 32, 48, 64, 96, 128, 160)  # 7 shapes: 7 compilations per model
    # ~250 / 360-word vocabularies: small enough that three models with enough steps fit a
    # short run on 2 CPU cores (on the full lexicon the Transformer needs many more steps
    # before its cross-attention aligns); the grammar and the length mix are the full one's
    c.data.toy.lexicon_scale = 0.1

    # Length curriculum (anatomy.data.curriculum; Bengio et al. 2009), the same for every model:
    # phases ((steps, max tokens), ...) train first on short pairs only; () = none. Same steps,
    # same tokens per step: only the order of the data changes. 200 steps of pairs <= 16 tokens,
    # 200 of <= 32, then all lengths (recipe_sweep's transformer_2000 grids).
    c.curriculum = ml_collections.ConfigDict({"phases": ((200, 16), (200, 32))})

    # Model hyperparameters, by name: every registered model's default_config() (docs/design.md's
    # comparable sizes, about 1-2M parameters before the embeddings; anatomy.seq2seq.registry)
    # with the overrides below, so a changed default reaches this experiment and every field
    # can be set from the command line (--config.model.rnnenc.d_hidden=512).
    c.model = ml_collections.ConfigDict({name: model_config(name) for name in registry.names()})
    # RNNenc as Sutskever et al. trained it: reversed source and N(0, 1) embeddings (torch's
    # nn.Embedding; the default d^-1/2 leaves the LSTM gates nearly blind to the input):
    # recipe_sweep's rnnenc_800 grid.
    c.model.rnnenc = model_config("rnnenc", reverse_source=True, emb_init_std=1.0)
    # No dropout: 2,000 steps x 1,024 tokens is under two passes over toy_wmt; nothing to regularise.
    # Pre-LN with the default 4 heads: recipe_sweep's transformer_arch grid (post-/pre-LN x 4/8
    # heads at the default recipe, scored on the validation split).
    c.model.transformer = model_config("transformer", dropout_rate=0.0, norm="pre")
    # ConvS2S (Gehring et al. 2017; not in the default models: --config.models=convs2s): its
    # defaults (4 + 4 GLU layers of 128, ~1.4M parameters at 1,000 words) without dropout.
    c.model.convs2s = model_config("convs2s", dropout_rate=0.0)
    # RNNenc with a mixer's state (not in the default models: experiments/rnnenc_state trains
    # it): reversed source, as RNNenc.
    c.model.rnnenc_mixer = model_config("rnnenc_mixer", reverse_source=True)

    # Training (anatomy.train.default_train_config): the same steps x token_budget for every
    # model, so the same token budget. Stops on num_steps (reproducible).
    c.train = default_train_config()
    c.train.num_steps = 2000
    c.train.learning_rate = 2e-3
    c.train.warmup_steps = 50
    c.train.decay = "linear"
    c.train.end_fraction = 0.05
    c.train.label_smoothing = 0.1
    c.train.log_every = 25
    c.train.eval_every = 250  # validation loss/accuracy every N steps (0 = off)
    c.train.checkpoint_every = 300

    # Per-model recipe: overrides of config.train for one model, each chosen by the same sweep
    # procedure (None = config.train's value). num_steps, max_train_seconds and seed cannot
    # differ between models (same token budget). From the command line:
    #   --config.train_by_model.transformer.warmup_steps=400
    c.train_by_model = ml_collections.ConfigDict()
    for name in registry.names():
        c.train_by_model[name] = recipe_overrides()
    # Chosen by recipe_sweep's 'budget' grid (the same peak LR x warmup settings for every
    # model, scored on the validation split; results/recipe_sweep/budget.json).
    c.train_by_model.rnnenc.learning_rate = 0.006
    c.train_by_model.rnnenc.warmup_steps = 400
    c.train_by_model.rnnsearch.learning_rate = 0.006
    c.train_by_model.rnnsearch.warmup_steps = 400
    c.train_by_model.transformer.learning_rate = 0.006
    c.train_by_model.transformer.warmup_steps = 400
    c.train_by_model.convs2s.learning_rate = 0.006
    c.train_by_model.convs2s.warmup_steps = 400
    # Not swept: the recipe every swept model chose (the budget grid's corner).
    c.train_by_model.rnnenc_mixer.learning_rate = 0.006
    c.train_by_model.rnnenc_mixer.warmup_steps = 400

    # Evaluation: greedy (beam_size 0) decoding of eval.split, sacrebleu per length bucket.
    c.eval = ml_collections.ConfigDict()
    c.eval.split = "test"  # 'test' (a final run) | 'valid' (model selection: recipe_sweep)
    c.eval.max_per_bucket = 0  # > 0: decode only the first N sentences of each bucket
    c.eval.batch_size = 100  # sentences decoded together
    c.eval.beam_size = 0  # > 1: beam search with GNMT length penalty
    c.eval.length_penalty = 0.6  # beam search's GNMT length-penalty exponent alpha
    # ((beam_size, length_penalty), ...): when set, each model decodes eval.select_per_bucket
    # valid sentences per length bucket under every pair and the test with the one of highest
    # valid BLEU (anatomy.train.select_decoding); () = eval.beam_size / length_penalty as given
    c.eval.decode_grid = ()
    c.eval.select_per_bucket = 0  # valid sentences per bucket the decode_grid choice reads
    c.eval.len_multiple = 32  # sources padded to a multiple of this (fewer compilations)
    c.eval.extra_len = 16  # output budget = padded source length + extra_len
    c.eval.attention_min_len = 50  # heatmaps: first test sentence with at least this many tokens
    # validation while training (every train.eval_every steps, outside the training clock):
    # teacher-forced loss and token accuracy on this many fixed valid batches, into
    # metrics.jsonl, TensorBoard, valid_loss.png and valid_loss_vs_time.png
    c.eval.valid_batches = 16

    # Scale-out (anatomy.sharding.default_config): mesh_shape (-1, 1) = every device on the data
    # axis (one device on a plain CPU run); batches are rounded to a multiple of the data axis.
    c.sharding = sharding_config()

    if (preset or "") not in PRESET_OVERRIDES:
        raise ValueError(f"Unknown preset {preset!r} for rnn_vs_attn; choose one of {PRESETS}")
    PRESET_OVERRIDES[preset or ""](c)
    return c


# --- the presets: each changes the default config in place ---------------------------------


def _default(c):
    """Nothing: the fields as get_config sets them."""


def _full(c):
    """The full lexicon, 3,000 steps per model."""
    c.data.toy.lexicon_scale = 1.0  # 1,063 source words: 2,007 / 2,941-word vocabularies
    c.train.num_steps = 3000
    c.train.checkpoint_every = 500


def _quick(c):
    """Tiny corpus and models, under a minute: the smoke test."""
    c.data.toy.train_size = 1500
    c.data.toy.valid_size = 50
    c.data.toy.test_per_bucket = 3
    c.data.toy.max_src_len = 70
    c.data.toy.lexicon_scale = 0.1  # ~250 / 360-word vocabularies: small softmax
    c.data.max_len = 96
    c.data.token_budget = 384
    c.data.bucket_boundaries = (96,)
    # tiny models: each model's defaults with these sizes (not the overrides above)
    c.model.rnnenc = model_config("rnnenc", d_emb=32, d_hidden=32)
    c.model.rnnsearch = model_config(
        "rnnsearch", d_emb=32, d_enc=16, d_dec=32, d_attn=32, d_readout=32
    )
    c.model.transformer = model_config(
        "transformer",
        d_model=32,
        n_heads=2,
        d_ff=64,
        n_encoder_layers=1,
        n_decoder_layers=1,
        dropout_rate=0.0,
    )
    c.model.convs2s = model_config(
        "convs2s", d_emb=32, d_conv=32, n_encoder_layers=2, n_decoder_layers=2, dropout_rate=0.0
    )
    c.train.num_steps = 30
    c.train.warmup_steps = 5
    c.train.log_every = 5
    c.train.checkpoint_every = 15
    c.eval.len_multiple = 96
    c.eval.extra_len = 8
    c.eval.attention_min_len = 40
    c.train.eval_every = 10
    c.eval.valid_batches = 2
    c.curriculum.phases = ()  # 30 steps: no room for a curriculum
    for name in c.train_by_model:  # nor for 400 warmup steps
        c.train_by_model[name] = recipe_overrides()


def _seeds(c):
    """The default with 3 seeds per model: results.json keeps every seed and mean ± sample
    std; the tables print mean ± std and bleu_by_length.png draws the min-max range over seeds
    as a band. Seed 0 trains exactly as the default (validation reads, it does not train), and
    a workdir reuses the seeds it has trained: `--config.seeds=1`, then 2, then 3 in one
    workdir make it as three runs within the 15-minute budget each."""
    c.seeds = 3
    c.train.eval_every = 50  # the time-to-loss brackets: 50 steps (a multiple of log_every)


def _equal_time(c):
    """The same wall-clock training budget for every model (train.max_train_seconds): each
    model's own recipe laid out over the budget instead of over num_steps (warmup ends at
    warmup_steps / num_steps of the budget, the decay at the budget; anatomy.train.loop), so
    the comparison is about time, not about a schedule cut short; the table reports steps
    reached, target tokens seen and BLEU. Compilation counts against the budget (as in train
    s). Time-based: NOT reproducible to the digit (load and machine change the steps
    reached)."""
    c.train.max_train_seconds = 180.0  # the same wall-clock training budget for every model
    # num_steps stays the default's: it sets only the schedule's shape over the budget


def _bahdanau(c):
    """Bahdanau et al. 2015's protocol: rnnenc-30/-50, rnnsearch-30/-50, transformer-30/-50,
    each trained only on pairs with at most 30 / 50 source tokens (the same token budget: same
    steps x batch tokens) and tested on every length; bleu_by_length.png draws the six curves
    (-30 dashed)."""
    c.models = tuple(f"{m}-{n}" for m in MODELS for n in (30, 50))


def _gettext_enfr_seeds(c):
    """gettext_enfr with ConvS2S, the road not taken, on the same budget, and 3 seeds."""
    _gettext_enfr(c)
    c.models = MODELS + ("convs2s",)
    c.seeds = 3


# Each model's warmup steps on real text at 800 steps, chosen on the validation split by
# recipe_sweep's gettext_budget_sp2000_shared grid (its results/recipe_sweep/ file).
REAL_TEXT_WARMUP = {"rnnenc": 400, "rnnsearch": 50, "transformer": 400, "convs2s": 50}


def _real_text(c):
    """What the real-text presets share. Chosen on the validation split: each model's beam
    and length penalty (eval.decode_grid, anatomy.train.select_decoding); the vocabulary, one
    shared 2,000-piece sentencepiece model, by recipe_sweep's gettext_vocab screen (the best
    mean valid BLEU of the four models against 1,000 shared and 2,000 per language, at equal
    cost: results/recipe_sweep/gettext_vocab.json); each model's learning-rate recipe, by
    recipe_sweep's gettext_budget_sp2000_shared grid at this vocabulary and these steps
    (toy_wmt's peak LR x warmup settings, the same four for every model: REAL_TEXT_WARMUP,
    which tests/experiments/rnn_vs_attn/test_real_text.py ties to results/recipe_sweep/gettext_budget_sp2000_shared.json).
    NOT chosen on real text: the model sizes (the defaults above) and the
    curriculum (toy_wmt's phases laid over these steps). The steps are what fits the
    15-minute budget of the three-model run on 2 cores: recipe_sweep.budget_steps."""
    c.data.vocab = "sentencepiece"
    c.data.vocab_size = 2000  # the gettext_vocab screen's choice (shared, 2,000 pieces)
    c.data.shared_vocab = True
    c.data.max_len = 256  # the 61+ bucket's sources (61-100 words) fit, pieces and all
    c.data.bucket_boundaries = (16, 32, 48, 64, 96, 128, 192, 256)
    # The budget: 800 steps at 2,000 pieces (1,000 at 1,000 pieces at equal CPU cost per step).
    steps = recipe_sweep.budget_steps(c.data.vocab_size)
    c.train.num_steps = steps
    c.train.eval_every = 200  # validation 4 times (the last on the last step)
    # The peak LR stays toy_wmt's 6e-3 (train_by_model, as above): the grid chose it for every
    # model. The warmups are the grid's; a model it did not train (rnnenc_mixer) keeps toy_wmt's
    # laid over these steps, a fifth of them (400 of 2,000 on toy_wmt).
    for name in c.train_by_model:
        if c.train_by_model[name].warmup_steps is not None:
            c.train_by_model[name].warmup_steps = steps // 5
    for name, warmup in REAL_TEXT_WARMUP.items():
        c.train_by_model[name].warmup_steps = warmup
    # toy_wmt's curriculum laid over these steps: each phase a tenth (200 of 2,000)
    c.curriculum.phases = ((steps // 10, 16), (steps // 10, 32))
    c.eval.decode_grid = ((1, 0.0), (4, 0.6), (4, 1.0))  # greedy; beam 4 at alpha 0.6 / 1.0
    c.eval.select_per_bucket = 20
    c.eval.extra_len = 48  # French runs longer than English, in pieces too
    c.eval.len_multiple = 64  # 4 padded source lengths up to 256: fewer decoder compilations
    # ConvS2S's learned position tables must reach the longest decoding budget, a padded
    # source plus extra_len; the test split is decoded whole (Corpus.test_by_bucket does not
    # filter for max_len) and gettext's longest test source is 280 pieces (padded: 320)
    c.model.convs2s.max_positions = 2 * c.data.max_len


def _gettext_enfr(c):
    """English -> French from the machine's own gettext catalogs (anatomy.data.catalogs)."""
    _real_text(c)
    c.data.name = "gettext"
    c.data.gettext.lang = "fr"


def _ted_pten(c):
    """TED talks Portuguese -> English (Qi et al. 2018's ted_hrlr_translate, TensorFlow's
    Transformer tutorial data) through tfds: downloaded the first run, so it needs a network."""
    _real_text(c)
    c.data.name = "tfds"
    c.data.tfds_name = "ted_hrlr_translate/pt_to_en"
    c.data.src_key, c.data.tgt_key = "pt", "en"  # validation: 1,193 pairs, test: 1,803


def _paper_scale(c, tfds_name, src, tgt):
    """What both paper-scale presets share: a tfds WMT'14 corpus (src -> tgt), no curriculum,
    one recipe for every model (config.train; the toy recipes cleared), the cost estimate
    printed before the run starts.

    They are for someone with the hardware (a GPU or TPU; the real WMT'14 data through tfds,
    downloaded and prepared by tensorflow_datasets the first run: tests run them only at tiny
    size on tfds's mock data, tests/experiments/rnn_vs_attn/test_wmt14_presets.py). config.cost_estimate: before the
    corpus is read, the run compiles each model's train step once on the host's CPU and
    prints what the cost model (anatomy.probes.roofline) predicts: parameters, memory per
    device, step time on one cost_estimate.gpu and on a cost_estimate.tpu_chips-chip slice of
    cost_estimate.tpu, and the hours of num_steps (experiments/tasks/translation/cost.py; kept in
    results.json; --config.cost_estimate.enabled=False skips it). Predicted, never measured."""
    c.data.name = "tfds"
    c.data.tfds_name = tfds_name
    c.data.src_key, c.data.tgt_key = src, tgt  # tfds's validation = newstest2013, test = 2014
    c.curriculum.phases = ()  # neither paper used one
    for name in c.train_by_model:
        c.train_by_model[name] = recipe_overrides()
    c.train.log_every = 100
    c.train.eval_every = 1000
    c.cost_estimate = ml_collections.ConfigDict(
        {"enabled": True, "gpu": COST_GPU, "tpu": COST_TPU, "tpu_chips": COST_TPU_CHIPS}
    )


def _wmt14_enfr(c):
    """Bahdanau et al. 2015: RNNencdec-50 and RNNsearch-50 (rnnenc-50, rnnsearch-50) on WMT'14
    En->Fr (tfds wmt14_translate/fr-en; validation newstest2013, test newstest2014),
    30,000-word vocabulary per language, gated units (gru_paper), 620-dim embeddings, 1,000
    hidden units, RNNsearch's alignment model 1,000 and maxout readout 500, Adadelta (rho
    0.95, eps 1e-6) with norm-1 clipping, batches of 80 x 50 tokens, 300,000 steps each
    (about 80M parameters each at these vocabularies). Not the paper's: the corpus is tfds's
    whole training split, not the paper's 348M-word selection, and it is held in memory
    (--config.data.max_train_examples=N caps it); words are whitespace tokens of the raw text,
    not Moses-tokenised; RNNencdec's readout is linear (no maxout); the initialisation is the
    library's; greedy decoding (the paper used a beam search: --config.eval.beam_size=N)."""
    _paper_scale(c, "wmt14_translate/fr-en", "en", "fr")
    c.models = ("rnnenc-50", "rnnsearch-50")  # trained on sources of <= 50 tokens, tested on all
    c.data.vocab = "word"
    c.data.vocab_size = 30000  # the 30,000 most frequent words per language, the specials
    # among them; every other word is unk
    c.data.max_len = 256  # test on (nearly) every length: pairs over it are filtered, counted
    c.data.bucket_boundaries = (16, 24, 32, 40, 48, 56, 64, 96, 128, 192, 256)
    c.data.token_budget = 80 * 50  # 80 sentences of 50 tokens; the paper's minibatch is 80
    # sentences whatever their length (token budgets here: more rows in shorter buckets)
    # Gated units of Cho et al. 2014 (reset before the recurrent product), 620-dim embeddings,
    # 1,000 hidden units; RNNencdec feeds the summary c to every decoder step (Cho et al.); its
    # readout is this library's linear one (the paper's maxout deep output exists for
    # RNNsearch only here).
    c.model.rnnenc = model_config(
        "rnnenc", cell="gru_paper", d_emb=620, d_hidden=1000, feed_context=True
    )
    # bidirectional 1,000 + 1,000 encoder, 1,000 decoder, alignment model n' = 1,000, maxout
    # readout of l = 500 units (pool 2 over 1,000) on s_{i-1}.
    sizes = dict(d_emb=620, d_enc=1000, d_dec=1000, d_attn=1000, d_readout=500)
    c.model.rnnsearch = model_config(
        "rnnsearch", cell="gru_paper", readout="maxout", readout_state="previous", **sizes
    )
    # Adadelta (Zeiler 2012; eps 1e-6, rho 0.95: anatomy.train.optim.ADADELTA) at rate 1,
    # gradients clipped to norm 1 (Pascanu et al. 2013), no smoothing, no dropout; the paper
    # trained each model about five days: 300,000 steps for both (the same token budget).
    c.train.optimizer = "adadelta"  # a field only this preset has (make_optimizer's default: AdamW)
    c.train.update(dict(learning_rate=1.0, warmup_steps=0, decay="constant", end_fraction=0.0))
    c.train.update(dict(label_smoothing=0.0, clip_norm=1.0, num_steps=300_000))
    c.train.checkpoint_every = 5000
    c.eval.extra_len = 32  # French runs longer than English


def _wmt14_ende_base(c):
    """Vaswani et al. 2017's Transformer-base on WMT'14 En->De (tfds wmt14_translate/de-en):
    6 + 6 post-LN layers, d 512, 8 heads, FFN 2,048, dropout 0.1, one shared 37,000-piece
    sentencepiece vocabulary (trained on both sides of the training split; the paper's was
    byte-pair encoding) with shared embeddings and tied output (about 63M parameters), label
    smoothing 0.1, Adam (0.9, 0.98, 1e-9) at d^-0.5 min(s^-0.5, s 4000^-1.5), ~25,000 source +
    25,000 target tokens (padded) per batch, 100,000 steps, beam 4 with length penalty 0.6.
    Not the paper's: sentencepiece for byte-pair encoding, the batch counted in padded tokens,
    no averaging of the last checkpoints."""
    _paper_scale(c, "wmt14_translate/de-en", "en", "de")
    c.models = ("transformer",)
    c.data.vocab = "sentencepiece"  # the paper: shared byte-pair encoding of about 37,000
    c.data.vocab_size = 37000
    c.data.shared_vocab = True
    c.data.max_len = 256
    c.data.bucket_boundaries = ()  # 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256
    c.data.token_budget = 25000  # ~25,000 source + 25,000 target tokens (padded) per batch
    sizes = dict(d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6, n_decoder_layers=6)
    # post-LN, sinusoidal positions, dropout 0.1; one table for source, target and output
    paper = dict(norm="post", positions="sinusoidal", dropout_rate=0.1, share_embeddings=True)
    c.model.transformer = model_config("transformer", tie_output=True, **paper, **sizes)
    # Adam b1 0.9, b2 0.98, eps 1e-9 (make_optimizer's), lr = d^-0.5 * min(s^-0.5, s * w^-1.5)
    # with w = 4,000: linear warmup to d^-0.5 * w^-0.5, then 'rsqrt' (the same function);
    # no clipping, label smoothing 0.1, 100,000 steps.
    c.train.update(dict(learning_rate=512**-0.5 * 4000**-0.5, warmup_steps=4000, decay="rsqrt"))
    c.train.update(dict(label_smoothing=0.1, clip_norm=0.0, weight_decay=0.0, num_steps=100_000))
    c.train.checkpoint_every = 2000
    c.eval.beam_size = 4  # beam 4, length penalty alpha 0.6 (anatomy.decode's default)
    c.eval.extra_len = 50  # output budget: source length + 50, as the paper


# preset name -> the function that changes the default config into it ('' is the default)
PRESET_OVERRIDES = {
    "": _default,
    "full": _full,
    "quick": _quick,
    "seeds": _seeds,
    "equal_time": _equal_time,
    "bahdanau": _bahdanau,
    "gettext_enfr": _gettext_enfr,
    "gettext_enfr_seeds": _gettext_enfr_seeds,
    "ted_pten": _ted_pten,
    "wmt14_enfr": _wmt14_enfr,
    "wmt14_ende_base": _wmt14_ende_base,
}
PRESETS = tuple(PRESET_OVERRIDES)
