"""crossover: forward + backward time and peak memory against N of every recurrent mixer in
its default form, dense and chunked softmax attention, and the LSTM, on this CPU; where the
recurrences overtake attention; the serial steps of each compiled program.

The cases are the mixer benchmark's (benchmarks/cases_mixers.py: mixer_case, lstm_case), read
here, not rewritten. Presets: default (the judged run), 'quick' (tests). The wall time of a
run is in its results.json (provenance.wall_seconds). The full sweep would add N = 32K and
64K (dense attention is over memory from 16K: the benchmark's MAX_BYTES) and more rounds.
"""

import ml_collections

PRESETS = ("", "quick")


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.lengths = (256, 1024, 4096, 16384)  # N (the mixer benchmark's 'full' lengths)
    c.batch = 1  # sequences per call (the benchmark's)
    c.d_model = 64  # width (the benchmark's; knobs per mixer: cases_mixers.KNOBS)
    # the recurrent mixers, each in its default form on this backend (form_defaults)
    c.mixers = ("gated_deltanet", "mamba2", "mlstm", "linear_attention", "rglru", "mamba", "mingru")
    # extra (mixer, form) contenders beside the defaults: the associative scan's log depth
    c.extra_forms = ("rglru:associative",)
    c.rounds = 5  # timed rounds per N, every contender interleaved in each (the interval's n)
    c.target_s = 0.05  # a sample lasts at least this long (inner calls averaged)
    c.seed = 0  # inputs and weights
    if preset == "quick":
        c.d_model = 8
        c.lengths = (16, 128)
        c.mixers = ("gated_deltanet", "rglru")
        c.rounds = 3
        c.target_s = 0.0
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose one of {PRESETS}")
    return c
