"""Helpers shared by the benchmark scripts that time dynamica against a peer in the same run
(MuJoCo, Pinocchio, scipy): run a script from this folder (`python benchmarks/bench_x.py`) so
that `import _peers` finds this file."""
from __future__ import annotations

from pathlib import Path


def write_table(lines: list[str], out: str | None = None) -> str:
    """Print the table's lines and, with `out` (the scripts' --out), write them to that file too;
    returns the text."""
    text = "\n".join(lines)
    print(text)
    if out:
        Path(out).write_text(text + "\n")
    return text
