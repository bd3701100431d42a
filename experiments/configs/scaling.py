"""Config of scaling: the chapter's scale-out claim read from compiled programs, and a cost model
checked on this CPU and applied to named accelerators (experiments/scaling/).

Presets (`--config=experiments/configs/scaling.py:NAME`):
  (none)  the stacks at d = 512 over N = 32..256 and L = 1..4 on 8 fake devices, the
          translators at rnn_vs_attn's default sizes, parallelism's layers at N = 64..2,048:
          within 15 minutes on 2 cores
  quick   tiny stacks, two N and two L, one translator, a short check: under a minute (tests)

The layers checked and applied are the `parallelism` experiment's (its config, read here), the
translators rnn_vs_attn's (its models and recipes, read from its config by preset name).
"""

import ml_collections

from experiments.configs import parallelism

PRESETS = ("", "quick")


def get_config(preset=None):
    par = parallelism.get_config(preset or None)
    c = ml_collections.ConfigDict()
    c.seed = 0  # PRNG seed for parameters and inputs

    # Structure: train steps compiled for a mesh of fake CPU devices, read, never run.
    c.devices = 8  # fake CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count)
    c.modes = ("dp", "tp", "single")  # data parallel (8 x 1), tensor parallel (1 x 8), one device
    c.full_grid_modes = ("dp", "tp")  # modes compiled over the whole (N, L) grid; the others
    # at (n_fixed, layers_fixed) only (one device: the scale-out baseline)
    c.stack_families = ("lstm", "transformer", "lstm_autodiff")  # experiments/scaling/structure.py
    # Compiled, never run: the sizes cost no memory or time here, so the stacks are at
    # Transformer-base width (Vaswani et al. 2017) and the predictions at a size people train.
    c.d = 512  # stack width: LSTM hidden = Transformer d_model (8d² weights per layer each)
    c.n_heads = 8  # Transformer heads (divisible by the devices: tensor parallel over heads)
    c.batch = 256  # sequences per step (divisible by the devices: data parallel over rows)
    c.learning_rate = 1e-3  # the stacks' Adam (only the program is read: any value)
    c.n_grid = (32, 64, 128, 256)  # sequence lengths N, at layers_fixed layers
    c.layers_fixed = 2  # layers L of the N grid
    c.layers_grid = (1, 2, 3, 4)  # layers L, at n_fixed
    c.n_fixed = 128  # N of the L grid (and of the one-device baselines)

    # rnn_vs_attn's translators, for the structure (on the mesh) and the check (one device).
    c.translators = ml_collections.ConfigDict()
    c.translators.preset = ""  # rnn_vs_attn preset whose models and recipes are used
    c.translators.families = ("rnnenc", "rnnsearch", "translator_transformer")  # on the mesh
    c.translators.vocab = (243, 357)  # source, target vocabulary sizes of rnn_vs_attn's default
    # corpus (its results record them: setup.vocab)
    c.translators.rows = 32  # sentences per batch: the default 1,024-token budget ...
    c.translators.length = 32  # ... at its 32-token length bucket

    # The check: the cost model against measured time on this CPU (one device).
    c.check = ml_collections.ConfigDict()
    c.check.seed = c.get_ref("seed")
    c.check.d = par.d  # parallelism's layers: its width, heads, batch and N grid
    c.check.n_heads = par.n_heads
    c.check.batch = par.batch
    c.check.n_grid = tuple(par.n_grid)
    c.check.small_d = 16  # the LSTM layer again at this width and batch ('lstm_small'): its
    c.check.small_batch = 1  # ops do nearly no work, so its time is per-op latency, the term
    c.check.small_n_grid = (128, 512)  # the accelerator estimate of the LSTM rests on
    c.check.translators = ("rnnenc", "rnnsearch", "transformer")  # rnn_vs_attn's, timed
    c.check.vocab = c.translators.get_ref("vocab")
    c.check.rows = c.translators.get_ref("rows")
    c.check.length = c.translators.get_ref("length")
    c.check.rounds = 5  # interleaved timing rounds (the median is reported)
    c.check.warmup = 2  # untimed calls of each program first
    c.check.run_in = 1  # untimed calls of each program and benchmark at the start of its turn in
    # every round: each timed call follows a call of the same program (a train step runs after
    # a train step), not the previous program of the round
    c.check.quick_benchmarks = False  # smaller micro-benchmark arrays and loops

    # Applied: the model on named accelerators (anatomy.probes.hardware.ACCELERATORS).
    c.applied = ml_collections.ConfigDict()
    c.applied.accelerators = ("H100 SXM", "A100 80GB", "TPU v5e")
    c.applied.headline = "H100 SXM"  # the accelerator of the chapter's figures
    c.applied.precision = "bfloat16"  # bf16 compute, float32 master parameters
    c.applied.n_ratio = par.n_ratio  # N of the chapter's 5-10x (parallelism's)
    # Kernels counted from what the accelerator would run: the layers at n_ratio and the
    # translators' steps compiled by XLA:GPU for gpu_target without a GPU
    # (anatomy.probes.gpu_target), in a Python whose JAX has the CUDA plugin:
    c.applied.gpu_target = "H100 SXM"  # '' = none (every estimate from XLA:CPU's programs)
    c.applied.gpu_python = ""  # that Python ('' = this one: without the plugin, the GPU
    # programs are not compiled and the report says why)
    # The estimates' sensitivity, one assumption varied at a time:
    c.applied.latency_scales = (0.2, 2.0)  # op, loop and call latencies x these
    c.applied.peak_fractions = (0.25, 0.5)  # achieved share of the published peak rates
    c.applied.wide_d = 1024  # the layers again at this width and batch, at n_ratio (compiled,
    c.applied.wide_batch = 64  # never run: not checked here): 0 = none
    # rnn_vs_attn results with per-seed validation curves: the first of these that exists
    c.applied.results = ("results/rnn_vs_attn/seeds.json", "results/rnn_vs_attn/default.json")
    c.applied.target_fraction = 0.5  # time to loss: the target is the higher of the two
    # models' validation losses at this fraction of their schedules (both reach it before
    # their schedules end; neither's learning-rate decay makes it)

    if preset == "quick":
        c.modes = ("dp", "tp")
        c.full_grid_modes = ("tp",)
        c.stack_families = ("lstm", "transformer")
        c.d = 32
        c.batch = 8
        c.n_grid = (8, 16)
        c.layers_fixed = 1
        c.layers_grid = (1, 2)
        c.n_fixed = 8
        c.translators.preset = "quick"
        c.translators.families = ()
        c.translators.rows = 8
        c.translators.length = 16
        c.check.n_grid = (32, 64)
        c.check.small_n_grid = (32,)
        c.applied.gpu_target = ""
        c.check.translators = ("transformer", "rnnsearch")
        c.check.rounds = 2
        c.check.warmup = 1
        c.check.quick_benchmarks = True
        c.applied.wide_d = 64
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose one of {PRESETS}")
    return c
