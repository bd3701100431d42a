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
