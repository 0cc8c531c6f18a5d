"""Files written whole or not at all: the one temporary-name-and-replace writer of dynamica.

Every file dynamica replaces in place (results, tables, plots, reports, the cache's index and
URDF conversions, a study's table, a shipped module on a worker, a converted model) is written
under a temporary name beside it and renamed over it when complete (`os.replace`, atomic on one
file system), so a reader sees the previous file or the new one, never a part; an interrupted
write leaves no temporary file behind. (The cache publishes a whole built module by renaming
its build folder under a lock: build.py, a different mechanism.)

This module imports nothing of dynamica, so every layer may use it (the generator, the
runtime, build.py and cache.py); it is not part of the tool fingerprint.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

#: suffix of the temporary files (`dynamica cache prune` removes old ones left in the cache's index)
TEMPORARY_SUFFIX = ".tmp"


def temporary_name(path) -> Path:
    """A name beside `path` that no other process or thread uses: hidden, `.tmp`, with the
    suffix of `path` kept at the end (`.x.csv` -> `..x.<pid>.<random>.tmp.csv`) so that writers
    choosing a format by suffix (matplotlib, pandas) still see it."""
    path = Path(path)
    return path.with_name(f".{path.stem}.{os.getpid()}.{uuid.uuid4().hex[:8]}{TEMPORARY_SUFFIX}{path.suffix}")


def is_temporary(path) -> bool:
    """Whether `path` is a temporary name of `temporary_name` (a write in progress, or left by a
    killed process)."""
    return TEMPORARY_SUFFIX in Path(path).suffixes


@contextlib.contextmanager
def atomic_path(path):
    """A temporary name beside `path` to write to; renamed to `path` when the block ends
    normally, removed when it raises, so `path` is either the previous file or the new one."""
    path = Path(path)
    tmp = temporary_name(path)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def write_atomic(path, data: str | bytes, *, parents: bool = False) -> Path:
    """Write `data` (text as UTF-8, or bytes) to `path` through `atomic_path`; `parents`:
    create the missing folders first. Returns `path`."""
    path = Path(path)
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")
    return path
