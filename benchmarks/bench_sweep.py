#!/usr/bin/env python
"""Parameter-study benchmark: cases per second of `dynamica.sweep`.

The case: the bundled double pendulum over 1 s (model defaults: adams, rtol 1e-8, atol 1e-10,
output step 0.01), l2 varied over the cases. Measured:

    serial      : `dynamica.simulate` case by case in this process (the per-case cost c)
    local W = 1 : `sweep` on a LocalCluster of one worker process (automatic batches, and one
                  case per task), after a warm-up study so that the workers have the module
    local W = 2 : the same on two worker processes
    scheduler   : no-op tasks through the same cluster (the per-task cost s of the Dask path)

The per-case overhead of the distributed path is (time on one worker - N c) / N. The
projection of a 10 000-case study on W workers is a model, not a measurement:

    T(W) = ceil(tasks / W) * B * (c + o) + tasks * s / W_sched,   B = the automatic batch size,

with o the measured per-case overhead and the scheduler's dispatch (tasks * s) overlapping the
work, so T = max of the two terms plus the one-time start (cluster and module per worker).
A plain script, run by hand:  python benchmarks/bench_sweep.py [--cases N] [--no-save]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "double_pendulum.yaml"
T_END = 1.0


def serial(model, values):
    import dynamica
    t0 = time.perf_counter()
    for v in values:
        dynamica.simulate(model, t_end=T_END, params={"l2": float(v)})
    return time.perf_counter() - t0


def distributed(model, values, workers, batch_size=None):
    """(start-up s, first study s, timed study s, no-op task s) on a fresh LocalCluster."""
    import pandas as pd
    from distributed import Client, LocalCluster

    from dynamica.runtime.studies.sweep import sweep
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
    client = Client(cluster)
    start = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        sweep(model, pd.DataFrame({"l2": values[:4 * workers]}), T_END, scheduler=client)   # modules to workers
        warm = time.perf_counter() - t0
        timed = {}
        for label, size in (("auto", batch_size), ("1", 1)):
            cases = values if size is None else values[:len(values) // 4]
            t0 = time.perf_counter()
            table = sweep(model, pd.DataFrame({"l2": cases}), T_END, scheduler=client, batch_size=size)
            timed[label] = (time.perf_counter() - t0, len(cases))
            assert (table["status"] == "ok").all()
        k = 400
        t0 = time.perf_counter()
        client.gather([client.submit(int, j, pure=False) for j in range(k)])
        noop = (time.perf_counter() - t0) / k
    finally:
        client.close()
        cluster.close()
    return start, warm, timed, noop


def auto_batch(n, workers):
    from dynamica.runtime.studies.sweep import MAX_BATCH, TASKS_PER_SLOT
    return max(1, min(MAX_BATCH, math.ceil(n / (TASKS_PER_SLOT * workers))))


def project(n, workers, c, o, s, start):
    b = auto_batch(n, workers)
    tasks = math.ceil(n / b)
    work = math.ceil(tasks / workers) * b * (c + o)
    return b, tasks, start + max(work, tasks * s)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    import dynamica
    model = dynamica.load(MODEL)
    values = np.linspace(0.5, 1.0, args.cases)
    serial(model, values[:50])                                   # imports, caches
    t_serial = min(serial(model, values) for _ in range(2))
    c = t_serial / len(values)
    lines = [f"python benchmarks/bench_sweep.py --cases {args.cases}   ({time.strftime('%Y-%m-%d')}, "
             f"{os.cpu_count()} cores {platform.processor() or platform.machine()}, load average "
             f"{os.getloadavg()[0]:.1f} at the start: the machine is shared)",
             f"double pendulum, {T_END:g} s per case (adams, rtol 1e-8, 101 output points); N = {args.cases}", "",
             f"{'path':<28s} {'cases/s':>9s} {'ideal':>9s} {'of ideal':>8s} {'per case':>10s}",
             f"{'serial, one process':<28s} {1 / c:9.0f} {1 / c:9.0f} {'100 %':>8s} {1e3 * c:8.3f} ms"]
    runs = {}
    for w in (1, 2):
        print(f"[bench] local cluster, {w} worker(s) ...", file=sys.stderr, flush=True)
        runs[w] = distributed(model, values, w)
        start, warm, timed, noop = runs[w]
        for label in ("auto", "1"):
            t, n = timed[label]
            rate, ideal = n / t, w / c
            name = f"local, {w} worker{'s' if w > 1 else ''}, batch {label if label == '1' else auto_batch(n, w)}"
            lines.append(f"{name:<28s} {rate:9.0f} {ideal:9.0f} {100 * rate / ideal:6.0f} % {1e3 * t / n:8.3f} ms")
    start1, warm1, timed1, noop1 = runs[1]
    o_auto = timed1["auto"][0] / timed1["auto"][1] - c
    o_one = timed1["1"][0] / timed1["1"][1] - c
    s = min(runs[1][3], runs[2][3])
    start = runs[2][1]                     # the module reaching the workers and a first small study
    lines += [
        "",
        f"overhead of the distributed path (one worker, against the serial cost c = {1e3 * c:.3f} ms per case):",
        f"  per case, automatic batches ({auto_batch(timed1['auto'][1], 1)} cases a task): {1e3 * o_auto:7.3f} ms",
        f"  per case, one case a task:                     {1e3 * o_one:7.3f} ms",
        f"  per no-op Dask task (submit to result, 2 workers): {1e3 * s:7.3f} ms",
        f"  one-time: cluster start {runs[2][0]:.1f} s (2 workers), module on the workers and "
        f"first study {runs[2][1]:.1f} s",
        "",
        "projection of a 10 000-case study (a model from the numbers above, not a measurement):",
        f"  T(W) = start + max(ceil(tasks/W) * B * (c + o), tasks * s), c = {1e3 * c:.3f} ms, "
        f"o = {1e3 * max(o_auto, 0):.3f} ms, s = {1e3 * s:.3f} ms, start = {start:.1f} s (measured, workers running)",
        f"  {'workers':>7s} {'batch B':>7s} {'tasks':>6s} {'T':>9s} {'speed-up':>9s} {'efficiency':>10s}",
    ]
    t1 = None
    for w in (1, 8, 64):
        b, tasks, t = project(10_000, w, c, max(o_auto, 0), s, start)
        t1 = t1 or t
        lines.append(f"  {w:7d} {b:7d} {tasks:6d} {t:8.1f}s {t1 / t:9.1f} {100 * t1 / t / w:9.0f} %")
    n64 = 10_000 / 64
    lines += [
        f"  at 64 workers a worker has {n64:.0f} cases ({n64 * c:.2f} s of work): the {start:.1f} s start dominates; "
        "a study is worth a cluster when its cases are long or many"
    ]
    report = "\n".join(lines)
    print(report)
    if not args.no_save:
        out = ROOT / "benchmarks" / "results" / "sweep.txt"
        out.write_text(report + "\n")
        print(f"saved to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
