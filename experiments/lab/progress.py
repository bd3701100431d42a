"""Every experiment talks while it runs: one line per measured configuration, k of n, with the
time so far and an estimate of the time left for the whole run.

    progress = Progress("complexity", total=len(work))
    for layer, n in work:
        progress.step(f"{layer} N={n}")        # before measuring it
        ...
    # record.finish then prints where the report went and the claims table

    [complexity 3/26] attention_core N=512 (elapsed 0:00:41, about 0:04:55 left)

The estimate is the mean time of the configurations done so far times those left: rough when
they differ in size (it says 'about'); no estimate before the first one is done. Lines go to
stdout, flushed, from process 0 of a multi-process run only.
"""

from __future__ import annotations

import datetime
import sys
import time

import jax


def clock(seconds: float) -> str:
    """'0:04:55'."""
    return str(datetime.timedelta(seconds=round(max(seconds, 0.0))))


class Progress:
    """k-of-n progress lines with an ETA (module docstring); `now` is injectable for tests."""

    def __init__(self, name: str, total: int, *, stream=None, now=time.monotonic):
        self.name, self.total, self.done = name, max(int(total), 1), 0
        self.stream, self.now = stream, now
        self.t0 = now()

    def line(self, what: str) -> str:
        """The line for the next configuration, `what` (advances the count)."""
        self.done += 1
        elapsed = self.now() - self.t0
        finished = self.done - 1
        left = (
            f", about {clock(elapsed / finished * (self.total - finished))} left"
            if finished
            else ""
        )
        return f"[{self.name} {self.done}/{self.total}] {what} (elapsed {clock(elapsed)}{left})"

    def step(self, what: str) -> None:
        """Print the line for the next configuration (process 0 only)."""
        text = self.line(what)
        if jax.process_index() == 0:
            print(text, file=self.stream or sys.stdout, flush=True)
