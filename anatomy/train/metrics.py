"""Training metrics: a JSONL file, TensorBoard event files, and a progress line on stderr."""

from __future__ import annotations

import json
import math
import os
import sys
import time


def read_metrics(workdir: str, name: str = "metrics.jsonl") -> list[dict]:
    """All records of `workdir/name`, in order (empty list if absent)."""
    path = os.path.join(workdir, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class MetricsWriter:
    """Append {step, ...} records to `workdir/metrics.jsonl` and TensorBoard scalars.

    On resume (`resume_step` > 0) records past `resume_step` (written after the last
    checkpoint by a run that was then killed) are dropped, so the file reads as one run.
    """

    def __init__(
        self,
        workdir: str,
        resume_step: int = 0,
        tensorboard: bool = True,
        name: str = "metrics.jsonl",
    ):
        os.makedirs(workdir, exist_ok=True)
        self.path = os.path.join(workdir, name)
        kept = [r for r in read_metrics(workdir, name) if r["step"] <= resume_step]
        with open(self.path, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in kept)
        self._tb = None
        if tensorboard:
            from tensorboardX import SummaryWriter

            self._tb = SummaryWriter(logdir=os.path.join(workdir, "tensorboard"))

    def write(self, step: int, scalars: dict):
        """Record float scalars at `step`."""
        rec = {"step": int(step), **{k: float(v) for k, v in scalars.items()}}
        with open(self.path, "a") as f:
            f.write(json.dumps(rec) + "\n")
        if self._tb is not None:
            for k, v in scalars.items():
                self._tb.add_scalar(_tb_tag(k), float(v), int(step))

    def close(self):
        if self._tb is not None:
            self._tb.close()


def _tb_tag(key: str) -> str:
    """TensorBoard tag: 'valid_loss' -> 'valid/loss' (validation), anything else 'train/<key>'."""
    return "valid/" + key[len("valid_") :] if key.startswith("valid_") else f"train/{key}"


def _hms(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Progress:
    """A one-line progress report with ETA, printed to stderr at each update."""

    def __init__(
        self, total: int, start: int = 0, name: str = "", enabled: bool = True, stream=None
    ):
        self.total, self.start, self.name, self.enabled = total, start, name, enabled
        self.stream = stream or sys.stderr
        self.t0 = time.perf_counter()

    def update(self, step: int, **scalars):
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.t0
        done = step - self.start
        eta = elapsed / done * (self.total - step) if done > 0 else float("inf")
        width = 20
        filled = int(width * step / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        vals = " ".join(f"{k} {v:.4g}" for k, v in scalars.items())
        print(
            f"[{self.name}] [{bar}] {step}/{self.total} {vals} elapsed {_hms(elapsed)} "
            f"ETA {_hms(eta)}",
            file=self.stream,
            flush=True,
        )
