"""Workdir paths through etils.epath (the path type orbax already uses), so that a workdir
may be a local folder or a bucket: `--workdir=gs://bucket/run` (or s3://) works for every
file a run writes and reads back.

    path(workdir) / "results.json"       an epath.Path; str() of a local one is os.path.join's
    absolute(p)                          os.path.abspath's, a gs:// URI as it is
    makedirs(workdir)                    mkdir -p (an object store has no folders to make)
    write_text(p, text, atomic=True)     readers never see half a file (locally: a temp renamed)
    read_text(p), read_bytes(p), exists(p), is_remote(p)

epath picks the backend by prefix: plain paths go to the os module, gs:// to tf.io.gfile when
TensorFlow is installed, else to fsspec (gcsfs must be installed for gs://, s3fs for s3://).
Text is UTF-8 either way. A str workdir gives the same files, byte for byte, as before.
"""

from __future__ import annotations

import os

from etils import epath

PathLike = str | os.PathLike

_REMOTE_PREFIXES = ("gs://", "s3://", "az://", "hf://")


def path(p: PathLike) -> epath.Path:
    """`p` as an epath.Path (a gs:// string stays gs://)."""
    return epath.Path(p)


def join(p: PathLike, *parts: str) -> str:
    """The str of path(p).joinpath(*parts): os.path.join's result for a local path."""
    return os.fspath(path(p).joinpath(*parts))


def is_remote(p: PathLike) -> bool:
    """True for an object-store URI (gs://, s3://, az://, hf://), False for a local path."""
    return os.fspath(p).startswith(_REMOTE_PREFIXES)


def absolute(p: PathLike) -> epath.Path:
    """`p` made absolute as os.path.abspath does (against the current folder, '..' folded);
    an object-store URI is absolute already and stays as it is."""
    return path(p) if is_remote(p) else path(os.path.abspath(p))


def exists(p: PathLike) -> bool:
    return path(p).exists()


def makedirs(p: PathLike) -> None:
    """mkdir -p `p` (object stores have no folders; their backends accept it)."""
    path(p).mkdir(parents=True, exist_ok=True)


def read_text(p: PathLike) -> str:
    return path(p).read_text()


def read_bytes(p: PathLike) -> bytes:
    return path(p).read_bytes()


def write_text(p: PathLike, text: str, *, atomic: bool = False) -> None:
    """Write `text` (UTF-8) at `p`; atomic=True, on a local disk: `p`.tmp<pid> renamed over
    `p`. An object store needs no temporary: an object appears whole when it is closed (and a
    rename there is a copy)."""
    target = path(p)
    if not atomic or is_remote(p):
        target.write_text(text)
        return
    tmp = path(f"{os.fspath(target)}.tmp{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(target)


def write_bytes(p: PathLike, data: bytes) -> None:
    path(p).write_bytes(data)
