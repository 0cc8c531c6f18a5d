"""Helpers shared by the benchmark scripts that time dynamica against a peer in the same run
(MuJoCo, Pinocchio, scipy): run a script from this folder (`python benchmarks/bench_x.py`) so
that `import _peers` finds this file."""
from __future__ import annotations

import time
from pathlib import Path


def write_table(lines: list[str], out: str | None = None) -> str:
    """Print the table's lines and, with `out` (the scripts' --out), write them to that file too;
    returns the text."""
    text = "\n".join(lines)
    print(text)
    if out:
        Path(out).write_text(text + "\n")
    return text


def per_call(fn, count: int, repeat: int, rounds: int = 5) -> float:
    """Seconds per call of fn(k), k = 0 .. count - 1 (each state once a sweep), `repeat` sweeps a
    round, the best of `rounds` rounds."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(repeat):
            for k in range(count):
                fn(k)
        best = min(best, (time.perf_counter() - t0) / (repeat * count))
    return best
