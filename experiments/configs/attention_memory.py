"""attention_memory: compiled peak memory of full vs chunked attention against N, fitted exponents.

Presets: default (N = 512 .. 8192; its time is compile time: nothing runs at those sizes),
'quick' (tests).
"""

import ml_collections

PRESETS = ("", "quick")


def get_config(preset=None):
    c = ml_collections.ConfigDict()
    c.seed = 0  # PRNG seed of the inputs of the equality check (memory does not depend on values)
    c.batch = 1  # sequences per program
    c.d_head = 64  # head dimension d
    c.heads_grid = [1, 4]  # numbers of heads h measured
    c.n_grid = [512, 1024, 2048, 4096, 8192]  # sequence lengths N (queries = keys = N)
    c.block_q = 0  # chunked attention's query block; 0 = all queries at once (its default)
    c.block_k = 128  # chunked attention's key block
    c.check_n = 256  # N at which chunked and full attention are run and compared, fwd and grad
    if preset == "quick":
        c.update(d_head=16, heads_grid=[2], n_grid=[256, 512, 1024], block_k=64, check_n=96)
    elif preset not in (None, ""):
        raise ValueError(f"unknown preset {preset!r}; choose 'quick' or none")
    return c
