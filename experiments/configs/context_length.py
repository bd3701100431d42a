"""context_length: decoder-only LMs with each positional encoding, and an LSTM, trained at one
length L on a key-value stream and evaluated at L, 2L, 4L, 8L; RoPE extended by position
interpolation or a raised base, zero-shot and along a short fine-tune at 4L (its curve over
the fine-tune steps), beside plain RoPE given the same fine-tune.

Presets:
    default   the judged run: seeds 0-7 (the RoPE family and the LSTM; the other encodings on
              the first three: model_seeds), held-out data of eval_seed 10,000. Sized from the
              committed pilot (results/context_length/pilot.json); see the sizing below.
    pilot     the same run on design seeds 1000-1003 and design held-out data (eval_seed
              20,000): each judged quantity's effect and seed spread, before the judged run.
    lr_grid   every pre-trained model at each learning rate of its grid, and every fine-tune
              at each rate of the fine-tune grid, on design seed 1000 and the design held-out
              data, scored on the held-out loss; committed as results/context_length/lr_grid.json.
              The rates it chose are written below (recipe, ft_learning_rate), and
              tests/experiments/context_length/test_context_length.py ties them to the committed grid.
    quick     tests.

What the default gives up to fit 30 minutes on 2 idle cores: L = 64 (not 512 or 4K) and 8L
= 512 at most, Transformers of ~0.1M parameters, 32 probe sequences per point, a fine-tune of
50 steps, three seeds for the encodings outside the chapter's claim.

The task (32 keys, at most 4 in play, a new key in a quarter of the pairs, so that a value is
often copied from an early position of L) was chosen on design seeds; a reader of a fixed
window of the first 3L/4 tokens does not pass the bar of "learned" on it (task_shortcut).

The LSTM's own recipe, chosen on design seed 1000 and the design held-out data before its half
was judged ("closed": the fraction of the gap from log V to the oracle closed on the last
quarter of L, the bar of context_length/learned being 0.9; "ret": its retrieval at L, mean over
k, the bar 0.53). With the Transformers' recipe (128 units, 1,000 steps of 16 at 3e-3) it
closed 0.27 (ret 0.09): it never learned the task. At 128 units, 1,000 steps: 1e-2 closed 0.29,
3e-2 0.44, 1e-1 0.23; 3,000 steps at 3e-2 closed 0.56 (ret 0.48). At 256 units (a state that
holds the bindings of every key seen): 2,000 steps at 1e-2 closed 0.86 (ret 0.69), 4,000 steps
0.91 (ret 0.90); 1,500 steps of 64 sequences 0.91 (ret 0.78) at 1.6x the CPU time of 4,000 of
16. So: 256 units, 4,000 steps of 16, warmup 200, its peak rate from its own grid (lr_grid),
four times the Transformers' 1,000 steps. It has about 5x the Transformers' parameters, which
can only help it use a longer context.

The sizing, from the pilot on design seeds 1000-1003 (4 seeds for the RoPE family and the LSTM,
3 for the others; 651 s on 2 idle cores): every Transformer but NoPE learned the task at L and
the LSTM did (NoPE closed 0.36 of the gap: did not learn); RoPE + PI and RoPE + NTK work at 4L
after the fine-tune (retrieval beyond L 0.99 and 0.95); the speed-up against plain RoPE given
the same fine-tune is -0.12 (PI) and -0.02 (NTK) (about 6 and 44 seeds to clear the edge at
their spread); the LSTM's retrieval beyond L, 0.106, sits 0.007 from its edge 0.113 (no number
of seeds clears it). So 8 seeds for the RoPE family and the LSTM (PI's speed-up, with a margin;
NTK's and the LSTM's are limited by their effects, not by seeds), 3 for the encodings outside
the chapter's claim (sinusoidal's blow-up clears its edge at 3; ALiBi's rise at 4L sits 0.005
from its edge, so no number of seeds decides it).
"""

import ml_collections

PRESETS = ("", "pilot", "lr_grid", "quick")

TRANSFORMERS = ("sinusoidal", "learned", "rope", "alibi", "none")

# The learning rates the committed lr_grid chose (results/context_length/lr_grid.json; a test
# ties these to it): each pre-trained model's peak rate, and each fine-tune's rate.
CHOSEN = {"sinusoidal": 3e-3, "learned": 1e-2, "rope": 1e-2, "alibi": 1e-2, "none": 1e-2}
CHOSEN_LSTM = 1e-2
CHOSEN_FT = {"rope": 1e-2, "pi": 1e-2, "ntk": 3e-3, "lstm": 1e-3}


def _recipe(learning_rate, steps, warmup):
    return ml_collections.ConfigDict(
        {"learning_rate": learning_rate, "steps": steps, "warmup": warmup}
    )


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.mode = "judged"  # 'judged' (claims over seeds) | 'grid' (the learning-rate grid alone)
    # the judged seeds: every model from scratch per seed, the same batches for every model
    # of a seed (differences between models are paired by seed)
    c.seeds = (0, 1, 2, 3, 4, 5, 6, 7)
    # models run on the first n of c.seeds only (the others on all of them): the encodings
    # outside the chapter's claim, whose effects the pilot sizes at three seeds
    c.model_seeds = ml_collections.ConfigDict(
        {"sinusoidal": 3, "learned": 3, "alibi": 3, "none": 3}
    )
    # the task (experiments/context_length/task.py)
    c.n_keys = 32  # K keys (a table of values drawn per sequence); see the design notes
    c.n_values = 16  # V values; the probe's chance accuracy is 1/V
    c.in_play = 4  # at most this many keys in play; the oldest leaves when one enters
    c.p_new = 0.25  # the chance that a pair brings a key into play (else repeats one)
    c.train_length = 64  # L: the length every model is pre-trained at (tokens, even)
    c.length_factors = (1, 2, 4, 8)  # evaluated at these multiples of L
    # probe distances (tokens, even): at L the k <= L - 2; at ft_factor·L the k <= L - 2 (within
    # the window of L) and the k > L that plant the key at an absolute position >= L (k <= 3L -
    # 2 at 4L): none is read from the first L tokens. None plants its key at the very start,
    # where a Transformer can find it by its position alone.
    c.k_grid = (2, 8, 16, 32, 48, 96, 128, 160, 188)
    # the contenders pre-trained at L: encodings of anatomy.attention.positions, and 'lstm'
    c.models = (*TRANSFORMERS, "lstm")
    c.d_model = 64  # Transformer width
    c.n_layers = 2  # Transformer blocks (pre-LN, causal)
    c.n_heads = 4  # heads per block (head width d_model / n_heads)
    c.lstm_hidden = 256  # LSTM hidden size = its embedding width (its own recipe: see above)
    c.lstm_layers = 1  # LSTM layers (residual + LayerNorm from the second on)
    c.batch = 16  # sequences per pre-training step, every model
    # pre-training: each model's own recipe (peak rate from the committed grid, warmup, then
    # cosine decay to a tenth)
    c.recipe = ml_collections.ConfigDict(
        {name: _recipe(CHOSEN[name], 1000, 100) for name in TRANSFORMERS}
    )
    c.recipe.lstm = _recipe(CHOSEN_LSTM, 4000, 200)
    # extension: RoPE by interpolation (rope_scale) or a raised base, and the fine-tune
    c.ft_factor = 4  # extend to ft_factor·L: rope_scale = ft_factor, the NTK base for it
    c.ft_steps = 50  # fine-tune steps at ft_factor·L
    c.ft_batch = 16  # sequences per fine-tune step
    c.ft_warmup = 5  # fine-tune warmup steps (then constant)
    # each fine-tune's rate from the committed grid: plain RoPE (the control), RoPE + PI,
    # RoPE + NTK, the LSTM
    c.ft_learning_rate = ml_collections.ConfigDict(dict(CHOSEN_FT))
    # the fine-tune curve: the RoPE family's retrieval at ft_factor·L after these many steps
    # (0: the zero-shot model; ft_steps: the end point). The speed-up claim reads the pairs
    # (s, 2s) among them.
    c.ft_curve = (0, 5, 10, 20, 25, 40, 50)
    # the learning-rate grids (lr_grid preset): the same number of rates for every model
    c.grid = ml_collections.ConfigDict()
    c.grid.transformer = (1e-3, 3e-3, 1e-2, 3e-2)
    c.grid.lstm = (3e-3, 1e-2, 3e-2, 1e-1)
    # five fine-tune rates: a first grid of four (3e-4 .. 1e-2) chose its top edge for RoPE + PI
    # and plain RoPE (held-out loss 0.483 and 0.488 at 1e-2), so the grid goes one step past it
    c.grid.fine_tune = (3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
    # measurement
    c.eval_seed = 10_000  # held-out data: the same sequences for every model and seed
    c.eval_batch = 64  # held-out sequences at the longest length (loss per position)
    c.probe_batch = 32  # probe sequences per (length, distance)
    c.eval_chunk = 32  # sequences per forward pass when measuring (bounds memory)
    c.position_bin = 16  # the loss-against-position plot averages this many tokens
    # XLA's backend optimisation level for every compiled step (None: XLA's default); the
    # quick preset's time is almost all compiling (ten train steps, one pass per model)
    c.xla_opt_level = None
    if preset == "pilot":
        c.seeds = (1000, 1001, 1002, 1003)  # design seeds: never judged
        c.eval_seed = 20_000  # design held-out data: never judged
    elif preset == "lr_grid":
        c.mode = "grid"
        c.seeds = (1000,)  # the design seed the rates are chosen on
        c.eval_seed = 20_000
    elif preset == "quick":
        c.seeds = (0, 1)
        c.model_seeds = ml_collections.ConfigDict({"sinusoidal": 1, "learned": 1, "none": 1})
        c.train_length = 16
        c.k_grid = (2, 8, 24, 40)
        c.d_model = 16
        c.n_layers = 1
        c.n_heads = 2
        c.lstm_hidden = 16
        c.batch = 8
        for name in c.models:
            c.recipe[name] = _recipe(3e-3, 20, 5)
        c.ft_steps = 4
        c.ft_curve = (0, 1, 2, 4)
        c.ft_batch = 8
        c.ft_warmup = 1
        c.grid.transformer = (3e-3, 1e-2)
        c.grid.lstm = (3e-3, 1e-2)
        c.grid.fine_tune = (1e-3, 3e-3)
        c.eval_batch = 8
        c.probe_batch = 8
        c.eval_chunk = 16
        c.position_bin = 4
        c.xla_opt_level = 0  # compiles ~40% faster; the tests read shapes and rules here
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose 'pilot', 'lr_grid', 'quick' or none")
    return c
