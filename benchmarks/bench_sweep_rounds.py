#!/usr/bin/env python
"""Two local workers against one process on a shared machine: rounds of `sweep` kept only when
the other processes left the cores alone.

Each round runs the same study three ways in this process, in turn: `scheduler="serial"`, the
pool of `concurrent.futures` processes (`sweep.ProcessExecutor`, the path of platforms that spawn,
run here with fork) and the forked workers (`pool.ForkedWorkers`, the default where the platform
forks), 2 workers each. A round starts only when the cores were 90 % idle over 0.3 s, and is kept
only when the other processes' CPU during it (the system's busy time from /proc/stat minus this
process's and its reaped children's) stayed under 2 % of the round's wall time. The rows of every
path are checked equal to the serial rows. Linux only (/proc/stat).

    python benchmarks/bench_sweep_rounds.py [--cases 2000] [--minutes 15] [--no-save]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import statistics
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("serial", "concurrent.futures pool", "forked workers")


def busy() -> tuple:
    """(busy seconds, all seconds) of every core since boot."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(v) - v[3] - v[4]) / hz, sum(v) / hz


def mine() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def idle(dt=0.3) -> float:
    b0, t0 = busy()
    time.sleep(dt)
    b1, t1 = busy()
    return 1 - (b1 - b0) / max(t1 - t0, 1e-9)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--minutes", type=float, default=15.0)
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    import pandas as pd

    import dynamica
    from dynamica.runtime.studies import sweep as study
    model = dynamica.load(ROOT / "models" / "double_pendulum.yaml")
    outputs = list(dict(model.output_layout))
    cases = pd.DataFrame({"l2": np.linspace(0.5, 1.0, args.cases)})
    forked = study.SCHEDULERS["processes"]
    executors = {"concurrent.futures pool": study.ProcessExecutor, "forked workers": forked}
    ref = study.sweep(model, cases, 1.0, outputs=outputs, scheduler="serial").drop(columns=["wall_time", "worker"])
    kept, tried, lines = {p: [] for p in PATHS}, 0, []
    stop = time.time() + 60 * args.minutes
    try:
        while time.time() < stop:
            if idle() < 0.9:
                continue
            tried += 1
            b0, c0, times = busy()[0], mine(), {}
            for path in PATHS:
                kw = {"scheduler": "serial"} if path == "serial" else {"scheduler": "processes", "workers": 2}
                study.SCHEDULERS["processes"] = executors.get(path, forked)
                t0 = time.perf_counter()
                table = study.sweep(model, cases, 1.0, outputs=outputs, **kw)
                times[path] = time.perf_counter() - t0
                assert table.drop(columns=["wall_time", "worker"]).equals(ref), f"{path}: rows differ from serial"
                while multiprocessing.active_children():
                    time.sleep(0.0005)
            others = (busy()[0] - b0) - (mine() - c0)
            if others < 0.02 * sum(times.values()):
                for p in PATHS:
                    kept[p].append(times[p])
                lines.append(f"  {time.strftime('%H:%M:%S')}  " + "  ".join(f"{1e3 * times[p]:7.1f}" for p in PATHS)
                             + f"   others {1e3 * others:4.0f} ms")
    finally:
        study.SCHEDULERS["processes"] = forked
    n, k = args.cases, len(kept["serial"])
    out = [f"python benchmarks/bench_sweep_rounds.py --cases {n} --minutes {args.minutes:g}   "
           f"({time.strftime('%Y-%m-%d')}; load average at the end {os.getloadavg()[0]:.1f}); "
           f"{k} rounds kept of {tried} started",
           "double pendulum, 1 s a case, every output reduced; 2 workers; the rows of every path equal the serial rows",
           "", "kept rounds (ms):  " + "  ".join(f"{p[:7]:>7s}" for p in PATHS), *lines]
    if k:
        best = {p: min(v) for p, v in kept.items()}
        out += ["", f"  {'path':<26s} {'best':>9s} {'x serial':>8s} {'median':>9s} {'median x serial':>16s}"]
        for p in PATHS:
            ratio = statistics.median(s / t for s, t in zip(kept["serial"], kept[p]))
            out.append(f"  {p:<26s} {n / best[p]:7.0f}/s {best['serial'] / best[p]:8.2f} "
                       f"{n / statistics.median(kept[p]):7.0f}/s {ratio:16.2f}")
        faster = sum(f < c for f, c in zip(kept["forked workers"], kept["concurrent.futures pool"]))
        out.append(f"  forked workers faster than the concurrent.futures pool in {faster} of {k} rounds")
    report = "\n".join(out)
    print(report)
    if not args.no_save:
        (ROOT / "benchmarks" / "results" / "sweep_rounds.txt").write_text(report + "\n")


if __name__ == "__main__":
    main()
