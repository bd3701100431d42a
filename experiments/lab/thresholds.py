"""The thresholds two experiments judge by, each written once (a threshold used by one
experiment stays at the top of its claims.py, beside its verdict):

    ENC_SHORT_FLOOR, BLEU_GAP   the bottleneck's BLEU floors: rnn_vs_attn judges RNNenc by them,
                                rnnenc_state its bigger-state variants by the same
    SPEEDUP_RANGE, SPEEDUP_N    the chapter's wall-clock speed-up: parallelism measures it,
                                scaling predicts it for accelerators
"""

# The ranges stated before any run (BLEU points, over seeds):
ENC_SHORT_FLOOR = 40.0  # RNNenc learned: BLEU on the shortest bucket >= this, else UNDECIDED
BLEU_GAP = 10.0  # ... and scores >= this below every attention model on the longest bucket

SPEEDUP_RANGE = (5.0, 10.0)  # the chapter's wall-clock claim: attention 5-10x faster ...
SPEEDUP_N = 512  # ... at N = 512 (two-sided: far faster is a finding, not agreement)
