"""A length curriculum over a Batcher (Bengio et al. 2009: easy examples first).

    phases = ((200, 16), (200, 32))   # (steps, max tokens): 200 steps of pairs <= 16 tokens,
                                      # then 200 of pairs <= 32, then the whole corpus
    batches = Curriculum(batcher, phases, token_budget=config.data.token_budget).iterate

Step k of phase i is batch k - start_i of a Batcher over only the pairs whose padded need
max(len(src), len(tgt) + 1) is at most that phase's max tokens, with the same token budget,
bucket boundaries, seed and batch_multiple as the full one: the same batch shapes (no new
compilations) and the same tokens per step, so a curriculum changes the ORDER of the
training data, not the budget. After the last phase, step k is batch k - (curriculum steps)
of the full Batcher. Deterministic and resumable like Batcher (iterate(start_step)).
"""

import itertools

from anatomy.data.batching import Batcher
from anatomy.errors import BadInputError


class Curriculum:
    """Batches of `batcher` preceded by length-limited phases [(steps, max_tokens), ...]."""

    def __init__(self, batcher, phases, *, token_budget):
        self.full, self.phases, self.parts = batcher, [], []
        start = 0
        for steps, max_tokens in phases:
            if int(steps) <= 0 or int(max_tokens) <= 0:
                raise BadInputError(
                    f"curriculum phase (steps, max_tokens) must be positive, "
                    f"got {(steps, max_tokens)}"
                )
            keep = [
                p
                for p in batcher.pairs
                if 0 < len(p[0]) <= max_tokens and len(p[1]) + 1 <= max_tokens
            ]
            if not keep:
                raise BadInputError(f"curriculum: no training pair has at most {max_tokens} tokens")
            self.parts.append(
                Batcher(
                    keep,
                    token_budget=token_budget,
                    boundaries=batcher.boundaries,
                    max_len=batcher.boundaries[-1],
                    seed=batcher.seed,
                    shuffle=batcher.shuffle,
                    batch_multiple=batcher.batch_multiple,
                )
            )
            self.phases.append((start, int(steps)))
            start += int(steps)
        self.curriculum_steps = start
        self.shapes = batcher.shapes

    def batch_at(self, k, row_slice=None):
        """Batch number k (k >= 0); row_slice: only those rows, read alone (Batcher.batch_at)."""
        for (start, steps), part in zip(self.phases, self.parts):
            if start <= k < start + steps:
                return part.batch_at(k - start, row_slice)
        return self.full.batch_at(k - self.curriculum_steps, row_slice)

    def iterate(self, start_step=0, num_steps=None, prefetch=0, row_slice=None):
        """Iterator over batches start_step, start_step + 1, ... (as Batcher.iterate)."""
        steps = (
            itertools.count(start_step)
            if num_steps is None
            else range(start_step, start_step + num_steps)
        )
        return (self.batch_at(k, row_slice) for k in steps)
