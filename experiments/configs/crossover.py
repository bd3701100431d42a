"""crossover: forward + backward time and peak memory against N of every recurrent mixer in
its default form, dense and chunked softmax attention, and the LSTM, on this CPU; where the
recurrences overtake attention, against the range the programs' FLOP counts give it; the serial
steps of each compiled program.

The cases are the mixer benchmark's (benchmarks/cases_mixers.py: mixer_case, lstm_case, no
torch twins), read here, not rewritten. Presets: default (the judged run, seed 0), 'pilot'
(the design-seed pilot the rounds are sized from: seed 1000, gated DeltaNet and attention
only), 'quick' (tests). The wall time of a run is in its results.json
(provenance.wall_seconds).

The lengths start at 8, below where FLOP counts put every recurrence's crossing on a CPU (gated
DeltaNet's a few times chunk + head size, the diagonal recurrences' a few dozen: claims.py's
docstring; the range allows a factor 4 below it), and end at 4096: dense attention's program holds 1.6 GB
there and 6.4 GB at 8K (over the benchmark's MAX_BYTES of 3 GiB).
"""

import ml_collections

PRESETS = ("", "quick", "pilot")
LENGTHS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.lengths = LENGTHS  # N, every power of 2 from 8 to 4096
    c.batch = 1  # sequences per call (the benchmark's)
    c.d_model = 64  # width (the benchmark's; knobs per mixer: cases_mixers.KNOBS; 4 heads of 16)
    # the recurrent mixers, each in its default form on this backend (anatomy.mixers.defaults)
    c.mixers = ("gated_deltanet", "mamba2", "mlstm", "linear_attention", "rglru", "mamba", "mingru")
    # extra (mixer, form) contenders beside the defaults: RG-LRU's default is the associative
    # scan (log depth); its sequential scan (N serial steps) is timed beside it
    c.extra_forms = ("rglru:sequential",)
    c.lstm = True  # the LSTM layer beside them (its 2N serial steps)
    # timed rounds per N, every contender interleaved in each (the bootstrap's rows: ≥ 8);
    # sized from the pilot (results/crossover/pilot.json, claims.py's Power)
    c.rounds = 15
    c.target_s = 0.05  # a sample lasts at least this long (inner calls averaged)
    c.seed = 0  # inputs and weights
    if preset == "quick":
        c.d_model = 8
        # 512: past where gated DeltaNet's and dense attention's FLOP counts cross at d = 8
        # (about 300), so the quick report judges the headline rather than leaving it unmeasured
        c.lengths = (16, 128, 512)
        c.mixers = ("gated_deltanet", "rglru")
        c.rounds = 3
        c.target_s = 0.0
    elif preset == "pilot":  # design seed: other weights and inputs than the judged run's
        c.mixers = ("gated_deltanet",)
        c.extra_forms = ()
        c.lstm = False
        c.rounds = 11
        c.seed = 1000
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose one of {PRESETS}")
    return c
