"""The one atomic writer (files.py): a file is the previous one or the new one, never a part, and
no temporary file is left behind; every temporary-name-and-replace write of the package goes
through it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dynamica.files import atomic_path, is_temporary, temporary_name, write_atomic

ROOT = Path(__file__).resolve().parent.parent


def test_a_write_that_completes_replaces_the_file(tmp_path):
    f = tmp_path / "table.csv"
    f.write_text("old\n")
    with atomic_path(f) as tmp:
        assert tmp.parent == f.parent and tmp.suffix == ".csv" and is_temporary(tmp) and not is_temporary(f)
        tmp.write_text("new\n")
        assert f.read_text() == "old\n"                 # not yet: the reader sees the previous file
    assert f.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]


def test_a_write_that_fails_leaves_the_previous_file_and_no_temporary(tmp_path):
    f = tmp_path / "table.csv"
    f.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_path(f) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert f.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]


def test_write_atomic_text_bytes_and_folders(tmp_path):
    f = write_atomic(tmp_path / "a" / "b" / "x.json", '{"k": "\u00e9"}', parents=True)
    assert f.read_text(encoding="utf-8") == '{"k": "\u00e9"}'
    write_atomic(f, b"\x00\x01")
    assert f.read_bytes() == b"\x00\x01"
    assert [p.name for p in f.parent.iterdir()] == ["x.json"]


def test_temporary_names_differ():
    names = {temporary_name("/x/y.parquet") for _ in range(50)}
    assert len(names) == 50 and all(n.name.startswith(".y.") and n.suffix == ".parquet" for n in names)


def test_no_hand_written_replace_outside_the_writer():
    """`os.replace` of a temporary name is files.py's; the others rename on purpose: a streamed
    CSV's `.partial` (kept readable while it grows) and the cache's folders (build.py, cache.py)."""
    allowed = {"files.py": None, "runtime/results/result.py": "self.partial"}
    code = [p for d in ("generator", "runtime") for p in (ROOT / d).rglob("*.py")] + \
           [ROOT / n for n in ("build.py", "cache.py", "files.py", "__init__.py")]
    bad = []
    for p in code:
        rel = str(p.relative_to(ROOT))
        for line in p.read_text(encoding="utf-8").splitlines():
            if re.search(r"\bos\.replace\(|\.tmp\b", line) and not line.lstrip().startswith("#"):
                if rel in allowed and (allowed[rel] is None or allowed[rel] in line):
                    continue
                bad.append(f"{rel}: {line.strip()}")
    assert not bad, "\n".join(bad)
