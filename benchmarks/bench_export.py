"""The exports (docs/export.md) against the Python module: time per right-hand-side call of the
standalone C library (`<name>_rhs` in a C loop) and of the module's kernel (its rhs_capsule in
the C loop of runtime/integrators/timing.py), both over the same states along a short trajectory; and a
10 s simulation of the FMU with FMPy (Co-Simulation: the FMU's Adams core, the one
dynamica.simulate runs; Model Exchange: FMPy's CVode) against `dynamica.simulate` (Adams), same output step and rtol.

    python benchmarks/bench_export.py                    # double_pendulum chain7 puma560
    python benchmarks/bench_export.py --models chain7 --no-save

The FMU times include FMPy's own work per output step (Python calls through ctypes), so they
measure what an FMPy user waits for, not the integrator alone. Prints a table and saves it to
results/export.txt.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MODELS = HERE.parent / "models"

DRIVER = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "NAME.h"
int main(int argc, char **argv)
{
    int count = atoi(argv[1]);
    long repeat = atol(argv[2]);
    double *ys = malloc(sizeof(double) * count * UP_NY), ydot[UP_NY], best = 1e300, sink = 0.0;
    for (int k = 0; k < count * UP_NY; ++k) if (scanf("%lf", &ys[k]) != 1) return 2;
    for (int round = 0; round < 5; ++round) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (long r = 0; r < repeat; ++r) {
            NAME_rhs(0.0, ys + (r % count) * UP_NY, NAME_p_default, ydot);
            sink += ydot[0];
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        double s = (b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec);
        if (s / repeat < best) best = s / repeat;
    }
    printf("%.6e %g\n", best, sink);
    free(ys);
    return 0;
}
"""


def library_seconds_per_call(model, states, folder: Path) -> float:
    from dynamica.runtime.export import export_c
    lib = export_c(model, folder)
    name, up = model.name, model.name.upper()
    (lib / "bench.c").write_text(DRIVER.replace("NAME", name).replace("UP_", f"{up}_"))
    cc = shutil.which("gcc") or shutil.which("cc")
    subprocess.run([cc, "-std=c99", "-O2", "-fno-math-errno", "-I.", "bench.c", f"{name}.c", "-lm", "-o", "bench"],
                   cwd=lib, check=True)
    text = "\n".join(" ".join(repr(float(x)) for x in y) for y in states)
    repeat = 20000
    while True:
        out = subprocess.run(["./bench", str(len(states)), str(repeat)], cwd=lib, input=text, capture_output=True,
                             text=True, check=True).stdout.split()
        per = float(out[0])
        if per * repeat > 0.05:
            return per
        repeat *= 4


def fmu_seconds(path, fmi_type, t_end, step, rtol):
    import fmpy
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        fmpy.simulate_fmu(str(path), fmi_type=fmi_type, stop_time=t_end, output_interval=step,
                          relative_tolerance=rtol)
        best = min(best, time.perf_counter() - t0)
    return best


def simulate_seconds(model, t_end, step, rtol, atol):
    import dynamica
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        dynamica.simulate(model, t_end=t_end, output_step=step, rtol=rtol, atol=atol)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["double_pendulum", "chain7", "puma560"])
    ap.add_argument("--t-end", type=float, default=10.0)
    ap.add_argument("--step", type=float, default=0.01)
    ap.add_argument("--rtol", type=float, default=1e-8)
    ap.add_argument("--out", default=str(HERE / "results" / "export.txt"))
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    import dynamica
    from dynamica.runtime.export import export_fmu
    from dynamica.runtime.integrators.timing import seconds_per_call, trajectory_states
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            print(f"{name} ...", file=sys.stderr)
            model = dynamica.load(MODELS / f"{name}.yaml")
            states = trajectory_states(model)
            module = seconds_per_call(model, states)
            library = library_seconds_per_call(model, states, Path(tmp) / name)
            fmu = export_fmu(model, Path(tmp) / f"{name}.fmu")
            cs = fmu_seconds(fmu, "CoSimulation", args.t_end, args.step, args.rtol)
            me = fmu_seconds(fmu, "ModelExchange", args.t_end, args.step, args.rtol)
            sim = simulate_seconds(model, args.t_end, args.step, args.rtol, args.rtol * 1e-2)
            rows.append((name, model.n, module * 1e9, library * 1e9, library / module, sim, cs, me))
    head = (f"Exports vs the Python module (form composite; RHS per call from C, best of 5, over 64 states; "
            f"{args.t_end:g} s simulated, output every {args.step:g} s, rtol {args.rtol:g}, best of 3)")
    cols = ("model", "n", "module rhs ns", "library rhs ns", "lib/module", "simulate s", "FMU CS s", "FMU ME s")
    lines = [head, "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]} | {r[2]:.0f} | {r[3]:.0f} | {r[4]:.2f} | {r[5]:.3f} | {r[6]:.3f} | "
                     f"{r[7]:.3f} |")
    lines += ["", f"machine: {platform_line()}"]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_save:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    return 0


def platform_line() -> str:
    import os
    import platform
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average {load} at the end, "
            f"Python {platform.python_version()}, numpy {np.__version__}")


if __name__ == "__main__":
    sys.exit(main())
