"""The rows of a parameter study, kept as they come (docs/sweep.md, "Interrupted studies").

With an output file `F`, every finished batch is written at once as a Parquet part file in the
directory `F.partial/`, next to `study.json`, the fingerprint of the study (model, cases,
settings, dynamica). A study interrupted at any point (Ctrl-C, a killed client, a lost cluster)
keeps every row it had received; run again with the same definition it reads them back and
runs only the cases still missing. When every case is done the table is written to `F`
(Parquet, or CSV for a `.csv` name) under a temporary name, renamed, and `F.partial/` removed.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

from dynamica.files import atomic_path
from dynamica.runtime.studies.worker import LOST

PARTIAL = ".partial"
STUDY = "study.json"


def _write_atomic(path: Path, write):
    """`write(tmp)` to a temporary name, renamed to `path` when it returns (dynamica.files)."""
    with atomic_path(path) as tmp:
        write(tmp)


def write_table(table, path: Path):
    """A result table to Parquet (or CSV for a `.csv` name), atomically."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        _write_atomic(path, lambda tmp: table.to_csv(tmp))
    else:
        _write_atomic(path, lambda tmp: table.to_parquet(tmp))


def read_table(path):
    """A result table written by `sweep` (Parquet or CSV), indexed by case."""
    import pandas as pd
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return pd.read_csv(path, index_col="case")
    return pd.read_parquet(path)


class MemoryStore:
    """The rows of a study without an output file."""

    def __init__(self):
        self.frames = []

    def done(self) -> set:
        return set()

    def add(self, frame):
        self.frames.append(frame)

    def rows(self):
        import pandas as pd
        return pd.concat(self.frames) if self.frames else None

    def finish(self, table):
        return table


class FileStore(MemoryStore):
    """Rows written as they come into `<out>.partial/`, read back by a study run again."""

    def __init__(self, out, fingerprint: dict, resume: bool = True):
        super().__init__()
        self.out = Path(out)
        self.partial = self.out.with_name(self.out.name + PARTIAL)
        if self.partial.exists() and not resume:
            shutil.rmtree(self.partial)
        if self.partial.exists():
            self._resume(fingerprint)
        else:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            self.partial.mkdir()
            _write_atomic(self.partial / STUDY, lambda tmp: tmp.write_text(json.dumps(fingerprint, indent=1)))

    def _resume(self, fingerprint: dict):
        try:
            theirs = json.loads((self.partial / STUDY).read_text())
        except (OSError, ValueError):
            theirs = None
        if theirs != fingerprint:
            what = ", ".join(k for k in fingerprint if (theirs or {}).get(k) != fingerprint[k]) or "its record"
            raise ValueError(f"{self.partial} holds the rows of an unfinished study that differs from this one "
                             f"({what}): remove it, run with resume=False (--restart) to discard it, "
                             "or write to another file")
        import pandas as pd
        for part in sorted(self.partial.glob("part-*.parquet")):
            frame = pd.read_parquet(part)
            self.frames.append(frame[~frame["status"].astype(str).str.startswith(LOST)])

    def done(self) -> set:
        return {int(i) for f in self.frames for i in f.index}

    def add(self, frame):
        super().add(frame)
        name = f"part-{int(frame.index.min()):09d}-{uuid.uuid4().hex[:8]}.parquet"
        _write_atomic(self.partial / name, lambda tmp: frame.to_parquet(tmp))

    def finish(self, table):
        write_table(table, self.out)
        shutil.rmtree(self.partial, ignore_errors=True)
        return table


class TrajectoryWriter:
    """Whole runs, one Parquet file per case (`case-000017.parquet`: t, coordinates, der(...),
    outputs) in a directory, written as they come."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def path(self, case: int) -> Path:
        return self.folder / f"case-{case:06d}.parquet"

    def write(self, case: int, frame):
        _write_atomic(self.path(case), lambda tmp: frame.to_parquet(tmp, index=False))
