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


def run_case(script: str, args, timeout: float) -> dict:
    """One case of a benchmark in its own process (`python script --case JSON`), with a time
    limit: the JSON line it prints, or {"failed": why} (the time limit, or its error's last line)."""
    import json
    import subprocess
    import sys
    cmd = [sys.executable, script, "--case", json.dumps(args)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"failed": f"did not finish in {timeout:.0f} s"}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode or not lines:
        return {"failed": ((out.stderr.strip().splitlines() or ["?"])[-1])[:110]}
    return json.loads(lines[-1])


def serve_case(text: str, case) -> None:
    """The case's side of `run_case`: print case(*args) as a JSON line, or its error on stderr and
    exit 1 (reported in the table)."""
    import json
    import sys
    try:
        print(json.dumps(case(*json.loads(text))))
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300], file=sys.stderr)
        sys.exit(1)
