"""Training metrics: a JSONL file, TensorBoard event files, and a progress line on stderr.

The workdir may be a local folder or a bucket (gs://...): every file goes through
anatomy.paths (etils.epath), TensorBoard's event files too (a tensorboardX writer factory).
"""

from __future__ import annotations

import io
import json
import math
import sys
import time

from anatomy import paths


def read_metrics(workdir: str, name: str = "metrics.jsonl") -> list[dict]:
    """All records of `workdir/name`, in order (empty list if absent)."""
    path = paths.path(workdir) / name
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


class MetricsWriter:
    """Append {step, ...} records to `workdir/metrics.jsonl` and TensorBoard scalars.

    On resume (`resume_step` > 0) records past `resume_step` (written after the last
    checkpoint by a run that was then killed) are dropped, so the file reads as one run.
    A local file is appended to; an object store cannot append, so there the whole file is
    written again at each record (metrics are a few kB).
    """

    def __init__(
        self,
        workdir: str,
        resume_step: int = 0,
        tensorboard: bool = True,
        name: str = "metrics.jsonl",
    ):
        paths.makedirs(workdir)
        self.path = paths.join(workdir, name)
        kept = [r for r in read_metrics(workdir, name) if r["step"] <= resume_step]
        self._lines = [json.dumps(r) + "\n" for r in kept]
        self._append = not paths.is_remote(self.path)
        paths.write_text(self.path, "".join(self._lines))
        self._tb = None
        if tensorboard:
            from tensorboardX import SummaryWriter

            logdir = paths.join(workdir, "tensorboard")
            if paths.is_remote(logdir):
                _register_epath_event_writer(logdir.split(":", 1)[0])
            self._tb = SummaryWriter(logdir=logdir)

    def write(self, step: int, scalars: dict):
        """Record float scalars at `step`."""
        rec = {"step": int(step), **{k: float(v) for k, v in scalars.items()}}
        line = json.dumps(rec) + "\n"
        if self._append:
            with paths.path(self.path).open("a") as f:
                f.write(line)
        else:
            self._lines.append(line)
            paths.write_text(self.path, "".join(self._lines))
        if self._tb is not None:
            for k, v in scalars.items():
                self._tb.add_scalar(_tb_tag(k), float(v), int(step))

    def close(self):
        if self._tb is not None:
            self._tb.close()


class _EpathEventFile:
    """A TensorBoard event file on an object store through epath: the bytes so far are kept
    and the whole object written at each flush (tensorboardX's own gs:// writer does the same
    through google-cloud-storage, which this one does not need)."""

    def __init__(self, path: str):
        self.path, self.buffer = path, io.BytesIO()

    def write(self, data: bytes):
        self.buffer.write(data)

    def flush(self):
        paths.write_bytes(self.path, self.buffer.getvalue())

    def close(self):
        self.flush()


class _EpathEventFactory:
    def open(self, path: str) -> _EpathEventFile:
        return _EpathEventFile(path)

    def directory_check(self, path: str) -> None:
        paths.makedirs(path)


def _register_epath_event_writer(scheme: str) -> None:
    """Route tensorboardX's event files under `scheme`:// (gs, s3, ...) through epath."""
    from tensorboardX import record_writer

    record_writer.register_writer_factory(scheme, _EpathEventFactory())


def _tb_tag(key: str) -> str:
    """TensorBoard tag: 'valid_loss' -> 'valid/loss' (validation), anything else 'train/<key>'."""
    return "valid/" + key[len("valid_") :] if key.startswith("valid_") else f"train/{key}"


def _hms(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class Progress:
    """A one-line progress report with ETA, printed to stderr at each update.

    Over a number of steps (`total`), or, under a training-time budget (`budget_s` > 0), over
    that budget: the bar and the ETA then follow the training seconds each update reports
    (`seconds=`), since the steps a budget allows are not known in advance.
    """

    def __init__(
        self,
        total: int,
        start: int = 0,
        name: str = "",
        enabled: bool = True,
        stream=None,
        budget_s: float = 0.0,
    ):
        self.total, self.start, self.name, self.enabled = total, start, name, enabled
        self.budget_s = float(budget_s or 0.0)
        self.stream = stream or sys.stderr
        self.t0 = time.perf_counter()

    def line(self, step: int, elapsed: float, seconds: float | None = None, **scalars) -> str:
        """The progress line at `step`, `elapsed` wall seconds into this run."""
        width = 20
        if self.budget_s > 0:
            trained = float(seconds or 0.0)
            frac = min(trained / self.budget_s, 1.0)
            eta = max(self.budget_s - trained, 0.0)
            where = f"step {step}, {trained:.0f}/{self.budget_s:.0f} s trained"
        else:
            done = step - self.start
            frac = step / max(self.total, 1)
            eta = elapsed / done * (self.total - step) if done > 0 else float("inf")
            where = f"{step}/{self.total}"
        bar = "#" * int(width * frac) + "." * (width - int(width * frac))
        vals = " ".join(f"{k} {v:.4g}" for k, v in scalars.items())
        return f"[{self.name}] [{bar}] {where} {vals} elapsed {_hms(elapsed)} ETA {_hms(eta)}"

    def update(self, step: int, seconds: float | None = None, **scalars):
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.t0
        print(
            self.line(step, elapsed, seconds, **scalars),
            file=self.stream,
            flush=True,
        )
