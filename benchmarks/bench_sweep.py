#!/usr/bin/env python
"""Parameter-study benchmark: cases per second of `dynamica.sweep`, in one process, on local
worker processes and on a local Dask cluster, in the same run.

The case: the bundled double pendulum over 1 s (model defaults: adams, rtol 1e-8, atol 1e-10,
output step 0.01) with every output of the model reduced (final, min, max, rms: 140 columns a
row), l2 varied over the cases. Measured:

    simulate loop   : `dynamica.simulate` case by case (the integration and the outputs, no rows)
    serial          : `sweep(..., scheduler="serial")`, the study's rows built (the per-case cost c)
    processes W     : `sweep(..., scheduler="processes", workers=W)`, W = 1, 2 (the default local path:
                      workers forked with the study, rows back through shared memory)
    2 independent   : two other Python processes, started and warmed up before the rounds, each
                      running `"serial"` on half the cases at once (no pool at all): the machine's
                      ceiling for two processes, against which the pool's own cost shows
    dask W          : `sweep` on a LocalCluster of W worker processes (after a warm-up study)
    workers' start  : a study of one short case a worker on the local processes
    no-op task      : the cost of one task through Dask

The machine is shared: the load averages are printed before and after. Wall times then mix our
work with other people's, so the processes path is also measured in CPU seconds (this process,
and its workers as reaped children), from which a model gives the wall time on idle cores:

    T(W) = start(W) + max((C_workers + C_parent) / min(W + 1, cores), C_workers / W, C_parent)

with C_workers the workers' CPU seconds for the cases (their per-case cost c + o), C_parent the
parent's (cutting blocks, forking, taking the blocks' messages, building the table), start(W) =
a + W b from the measured start of a study of one short case a worker on 1 and 2 workers (b: one
more forked worker). A model, not a
measurement; it ignores memory bandwidth and the OS.
A plain script, run by hand:  python benchmarks/bench_sweep.py [--cases N] [--repeat R] [--no-save]
(results/sweep.txt for N = 2000, results/sweep_N.txt for another N)
The paths run interleaved, R rounds (default 3), and each reports its best round; the ratio of
serial to 2 workers is also given round by round (the two measured seconds apart) with its median.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "double_pendulum.yaml"
T_END = 1.0


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def reap():
    """Wait until the study's worker processes have exited and are reaped (they exit after the
    study returns), so that their CPU seconds are counted; not part of a study's wall time."""
    import multiprocessing
    while multiprocessing.active_children():
        time.sleep(0.0005)


def simulate_loop(model, values):
    import dynamica
    t0 = time.perf_counter()
    for v in values:
        dynamica.simulate(model, t_end=T_END, params={"l2": float(v)})
    return time.perf_counter() - t0


def study(model, values, outputs, scheduler, **kw):
    """(wall s, this process's CPU s, reaped children's CPU s, table)."""
    import pandas as pd

    from dynamica.runtime.studies.sweep import sweep
    w0, c0, k0 = time.perf_counter(), cpu_self(), cpu_children()
    table = sweep(model, pd.DataFrame({"l2": values}), T_END, outputs=outputs, scheduler=scheduler, **kw)
    wall, parent = time.perf_counter() - w0, cpu_self() - c0
    reap()
    children = cpu_children() - k0
    assert (table["status"] == "ok").all(), table["status"].unique()
    return wall, parent, children, table


def pool_start(model, workers, rounds=5):
    """Wall seconds of a study of one short case a worker on the local processes (the workers'
    fork, their first block, the table): best of `rounds`."""
    import pandas as pd

    from dynamica.runtime.studies.sweep import sweep
    best = math.inf
    for _ in range(rounds):
        t0 = time.perf_counter()
        sweep(model, pd.DataFrame({"l2": [0.7] * workers}), 1e-3, scheduler="processes", workers=workers,
              batch_size=1)
        best = min(best, time.perf_counter() - t0)
        reap()
    return best


_FRESH = """
import sys, time
import numpy as np, pandas as pd
t0 = time.perf_counter()
import dynamica
from dynamica.runtime.studies.sweep import sweep
model = dynamica.load(sys.argv[1])
t1 = time.perf_counter()
values = np.linspace(0.5, 1.0, int(sys.argv[3]))
kw = {"workers": 2} if sys.argv[2] == "processes" else {}
table = sweep(model, pd.DataFrame({"l2": values}), 1.0, outputs=list(dict(model.output_layout)),
              scheduler=sys.argv[2], **kw)
assert (table["status"] == "ok").all()
print(t1 - t0, time.perf_counter() - t1)
"""


_HALF = """
import resource, sys, time
import numpy as np, pandas as pd
import dynamica
from dynamica.runtime.studies.sweep import sweep
model = dynamica.load(sys.argv[1])
outputs = list(dict(model.output_layout))
values = np.linspace(0.5, 1.0, int(sys.argv[2]))[int(sys.argv[3])::2]
sweep(model, pd.DataFrame({"l2": values[:50]}), 1.0, outputs=outputs, scheduler="serial")
print("ready", flush=True)
for _ in sys.stdin:
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    table = sweep(model, pd.DataFrame({"l2": values}), 1.0, outputs=outputs, scheduler="serial")
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    assert (table["status"] == "ok").all()
    print(time.perf_counter() - t0, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, flush=True)
"""


class Halves:
    """Two independent Python processes, each running `"serial"` on every other case (half the
    study) when told: what two processes do on this machine without any pool."""

    def __init__(self, n):
        import subprocess
        self.procs = [subprocess.Popen([sys.executable, "-c", _HALF, str(MODEL), str(n), str(i)], text=True,
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE) for i in range(2)]
        for p in self.procs:
            assert p.stdout.readline().strip() == "ready"

    def run(self):
        """(wall s from the start of both to the end of the later, CPU s of both)."""
        t0 = time.perf_counter()
        for p in self.procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        cpu = sum(float(p.stdout.readline().split()[1]) for p in self.procs)
        return time.perf_counter() - t0, cpu

    def close(self):
        for p in self.procs:
            p.stdin.close()
            p.wait()


def fresh_study(scheduler, n, rounds=3):
    """(import and load s, study s) of the first study in a new Python process (the model in the
    cache): what a script pays, the first case's imports included. Best of `rounds`."""
    import subprocess
    best = (math.inf, math.inf)
    for _ in range(rounds):
        r = subprocess.run([sys.executable, "-c", _FRESH, str(MODEL), scheduler, str(n)], capture_output=True,
                           text=True, check=True)
        load, run = map(float, r.stdout.split()[-2:])
        best = min(best, (load, run), key=lambda x: x[1])
    return best


def dask_study(model, values, outputs, workers):
    """(cluster start s, first study s, timed study s, no-op task s) on a fresh LocalCluster."""
    import pandas as pd
    from distributed import Client, LocalCluster

    from dynamica.runtime.studies.sweep import sweep
    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
    client = Client(cluster)
    start = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        sweep(model, pd.DataFrame({"l2": values[:4 * workers]}), T_END, outputs=outputs, scheduler=client)
        warm = time.perf_counter() - t0
        t0 = time.perf_counter()
        table = sweep(model, pd.DataFrame({"l2": values}), T_END, outputs=outputs, scheduler=client)
        timed = time.perf_counter() - t0
        assert (table["status"] == "ok").all()
        k = 400
        t0 = time.perf_counter()
        client.gather([client.submit(int, j, pure=False) for j in range(k)])
        noop = (time.perf_counter() - t0) / k
    finally:
        client.close()
        cluster.close()
    return start, warm, timed, noop


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--no-dask", action="store_true", help="leave out the Dask rows")
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of the interleaved paths (best of each)")
    args = ap.parse_args(argv)
    import dynamica
    from dynamica.runtime.studies.sweep import MAX_BATCH, TASKS_PER_SLOT, block_sizes
    model = dynamica.load(MODEL)
    outputs = list(dict(model.output_layout))
    values = np.linspace(0.5, 1.0, args.cases)
    n = len(values)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load0 = os.getloadavg()
    study(model, values[:50], outputs, "serial")                        # imports, caches
    halves = Halves(n)
    # the paths interleaved, best of --repeat each: a burst of other people's work on the shared
    # machine then costs every path alike instead of the ones measured during it
    loops, serials, proc_runs, paired, halved = [], [], {1: [], 2: []}, [], []
    for r in range(args.repeat):
        print(f"[bench] round {r + 1} of {args.repeat}: loop, serial, processes 1 and 2, 2 independent ...",
              file=sys.stderr, flush=True)
        loops.append(simulate_loop(model, values))
        serials.append(study(model, values, outputs, "serial"))
        for w in (1, 2):
            proc_runs[w].append(study(model, values, outputs, "processes", workers=w))
        halved.append(halves.run())
        paired.append((serials[-1][0] / proc_runs[2][-1][0], serials[-1][0] / halved[-1][0],
                       halved[-1][0] / proc_runs[2][-1][0]))
    halves.close()
    t_loop = min(loops)
    serial = min(serials, key=lambda r: r[0])
    ref = serial[3]
    c = serial[0] / n
    rows = [("simulate loop (no table)", t_loop, 1), ("serial (sweep, rows built)", serial[0], 1)]
    proc = {}
    for w in (1, 2):
        proc[w] = min(proc_runs[w], key=lambda r: r[0])
        for run in proc_runs[w]:
            same = run[3].drop(columns=["wall_time", "worker"]).equals(ref.drop(columns=["wall_time", "worker"]))
            assert same, "the processes' rows differ from the serial rows"
        rows.append((f"processes, {w} worker{'s' if w > 1 else ''}", proc[w][0], w))
    half = min(halved)
    rows.append(("2 independent (N/2 serial)", half[0], 2))
    fresh = {s: fresh_study(s, n) for s in ("serial", "processes")}
    start_1 = pool_start(model, 1)
    start_p = pool_start(model, 2)
    fork = max(start_p - start_1, 0.0)             # each further worker process (forked one after another)
    fixed = max(start_1 - fork, 0.0)               # the rest of a study's start (package, warm-up, pool)
    dask = {}
    if not args.no_dask:
        for w in (1, 2):
            print(f"[bench] local Dask cluster, {w} worker(s) ...", file=sys.stderr, flush=True)
            dask[w] = dask_study(model, values, outputs, w)
            rows.append((f"dask, {w} worker{'s' if w > 1 else ''}", dask[w][2], w))
    load1 = os.getloadavg()
    lines = [f"python benchmarks/bench_sweep.py --cases {n} --repeat {args.repeat}   "
             f"({time.strftime('%Y-%m-%d')}, {cores} cores "
             f"{platform.processor() or platform.machine()}; the machine is shared: load average (1, 5, 15 min) "
             f"{load0[0]:.1f} {load0[1]:.1f} {load0[2]:.1f} at the start, {load1[0]:.1f} {load1[1]:.1f} "
             f"{load1[2]:.1f} at the end); each path best of {args.repeat} interleaved rounds",
             f"double pendulum, {T_END:g} s per case (adams, rtol 1e-8, 101 output points), every output reduced "
             f"({ref.shape[1]} columns a row); N = {n}; the rows of every path equal the serial rows bit for bit",
             "", "measured (wall time):",
             f"  {'path':<28s} {'cases/s':>9s} {'x serial':>8s} {'per case':>10s}"]
    for name, t, w in rows:
        lines.append(f"  {name:<28s} {n / t:9.0f} {serial[0] / t:8.2f} {1e3 * t / n:8.3f} ms")
    # ------------------------------------------------------------ CPU seconds and the idle-core model
    wall1, parent1, workers1 = proc[1][:3]
    wall2, parent2, workers2 = proc[2][:3]
    cw_measured = workers2 / n           # workers' CPU a case (c + o), from the 2-worker run
    cs = serial[1] / n                   # serial CPU a case
    cw = max(cw_measured, cs)            # a worker does the serial work and more: less is the load's noise
    cp = parent2 / n                     # the parent's CPU a case
    b2 = block_sizes(n, 2, None, True)             # the blocks of the forked workers (guided)
    lines += [
        "",
        "round by round (the paths of a round measured seconds apart), median last:",
        f"  serial / 2 workers:         {' '.join(f'{x[0]:.2f}' for x in paired)}; median "
        f"{float(np.median([x[0] for x in paired])):.2f}",
        f"  serial / 2 independent:     {' '.join(f'{x[1]:.2f}' for x in paired)}; median "
        f"{float(np.median([x[1] for x in paired])):.2f}   (the machine's ceiling for two processes)",
        f"  2 independent / 2 workers:  {' '.join(f'{x[2]:.2f}' for x in paired)}; median "
        f"{float(np.median([x[2] for x in paired])):.2f}   (1: the pool costs nothing beyond two processes)",
        "",
        "CPU seconds per case (resource.getrusage: this process, and the worker processes once reaped):",
        f"  serial (one process):                      {1e3 * cs:7.3f} ms   (its wall time {1e3 * c:.3f} ms)",
        f"  processes, 2 workers: in the workers        {1e3 * cw_measured:7.3f} ms   "
        f"(1 worker: {1e3 * workers1 / n:.3f} ms)",
        f"                        in the parent         {1e3 * cp:7.3f} ms   (1 worker: {1e3 * parent1 / n:.3f} ms)",
        f"  2 independent processes (serial on N/2 each, at once): {1e3 * half[1] / n:7.3f} ms   "
        f"(median of the rounds {1e3 * float(np.median([h[1] for h in halved])) / n:.3f} ms; serial's "
        f"{1e3 * float(np.median([x[1] for x in serials])) / n:.3f} ms, 2 workers' "
        f"{1e3 * float(np.median([x[2] for x in proc_runs[2]])) / n:.3f} ms)",
        f"  per-case overhead of the pool (workers' CPU - serial CPU): {1e3 * (cw_measured - cs):7.3f} ms; "
        f"{len(b2)} blocks ({b2[0]} cases down to {b2[-1]}, claimed by the workers as they free up)",
        f"  the model below takes the workers' CPU a case as max(measured, serial) = {1e3 * cw:.3f} ms "
        "(a worker cannot do less than the serial work; less is the noise of a loaded machine)",
        f"  workers' start (a study of one short case a worker, best of 5): {1e3 * start_1:.1f} ms wall with 1 worker, "
        f"{1e3 * start_p:.1f} ms with 2: start(W) = {1e3 * fixed:.1f} ms + W x {1e3 * fork:.1f} ms",
    ]
    lines += ["", "the first study in a new Python process (the model in the cache; best of 3):"]
    for name, (load, run) in fresh.items():
        label = name + (" (2 workers)" if name == "processes" else "")
        lines.append(f"  {label:<22s} import and load {1e3 * load:6.0f} ms, study {1e3 * run:6.0f} ms: "
                     f"{n / run:6.0f} cases/s")
    if dask:
        lines += [f"  one no-op Dask task (submit to result, 2 workers): {1e3 * dask[2][3]:.3f} ms wall; cluster start "
                  f"{dask[2][0]:.1f} s, module on the workers and a first study {dask[2][1]:.1f} s"]

    t_serial_cpu = cs * n
    t2 = max((cw * n + cp * n) / cores, cw * n / 2, cp * n)
    lines += [
        "",
        "model of the wall time on idle cores (from the CPU seconds above, not a measurement):",
        "  T(W) = start(W) + max((C_workers + C_parent) / min(W + 1, cores), C_workers / W, C_parent)",
        f"  {cores} idle cores, 2 workers, N = {n}: {t2:.2f} s + start against the serial {t_serial_cpu:.2f} s: "
        f"{t_serial_cpu / t2:.2f}x the serial throughput (the target is 1.6x)",
        f"  the workers' share alone ({1e3 * cw:.3f} ms a case on 2 cores) gives {2 * cs / cw:.2f}x; "
        f"the parent's {1e3 * cp:.3f} ms a case caps any W at {cs / cp:.0f}x",
        "",
        f"projection of a 10 000-case study on W workers with W + 1 idle cores (the model above; start(W) = "
        f"{fixed:.3f} s + W x {fork:.3f} s):",
        f"  {'workers':>7s} {'T':>9s} {'speed-up':>9s} {'efficiency':>10s}",
    ]
    ts = cs * 10_000
    for w in (1, 2, 8, 64):
        cw_, cp_ = cw * 10_000, cp * 10_000
        t = fixed + fork * w + max((cw_ + cp_) / (w + 1), cw_ / w, cp_)
        lines.append(f"  {w:7d} {t:8.2f}s {ts / t:9.1f} {100 * ts / t / w:9.0f} %")
    lines.append("  (the speed-up against the serial CPU time; at 64 workers the workers' start, forked one after "
                 "another from this process, and the parent's rows bound it)")
    if dask:
        s = dask[2][3]
        o_d = dask[1][2] / n - c
        lines += ["",
                  "Dask, the same model (per-task cost s measured; blocks of up to 100 cases, 16 a worker):",
                  f"  per-case overhead o = {1e3 * o_d:.3f} ms (one worker against serial), s = {1e3 * s:.3f} ms",
                  f"  {'workers':>7s} {'T':>9s} {'speed-up':>9s}"]
        for w in (1, 8, 64):
            b = max(1, min(MAX_BATCH, math.ceil(10_000 / (TASKS_PER_SLOT * w))))
            tasks = math.ceil(10_000 / b)
            t = dask[2][1] + max(math.ceil(tasks / w) * b * (c + max(o_d, 0)), tasks * s)
            lines.append(f"  {w:7d} {t:8.1f}s {ts / t:9.1f}")
    report = "\n".join(lines)
    print(report)
    if not args.no_save:
        out = ROOT / "benchmarks" / "results" / ("sweep.txt" if n == 2000 else f"sweep_{n}.txt")
        out.write_text(report + "\n")
        print(f"saved to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
