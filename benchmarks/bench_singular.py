"""Closed loops through singular positions: the N four-bar of the IFToMM library of computational
benchmark problems for multibody dynamics (problem A02: N + 1 vertical rods on the ground, their
tips joined by N horizontal rods, 1 m and 1 kg each, gravity 9.81 m/s^2 along -y, B0 at 1 m/s;
20 s, about seven turns, fourteen singular passages).

    python benchmarks/bench_singular.py [--n 1 2 40] [--methods adams ...] [--out results/singular.txt] [--timeout 600]
                                        [--radau-past K]

For each N, integrator and tolerance (rtol = atol): the largest error of B0's x against the
reduced equation of the parallelogram branch (tests/oracles/nfourbar.py, DOP853 at 1e-14), the
largest relative drift of the energy, the largest constraint residual at the output rows, the
wall time of `simulate` and its RHS calls (IDA: residual calls). The first rows of each N are the same integrators on
the reduced equation itself (one coordinate, no loop): what the tolerance gives on this motion.
Each case runs in its own process with a time limit (a case that does not finish in it is
reported as such). The benchmark's own precision limit for B0 is 1e-3 m. `--radau-past K` runs radau's
step across with the polynomial through K past states (singular.RADAU_PAST; 5 before it was raised).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _peers import run_case, serve_case  # noqa: E402

from oracles import nfourbar as nf  # noqa: E402

T_END = 20.0
#: "drift off": the energy drift at the rows whose rods are at least this far (rad) from the horizontal.
#: Near a crossing the velocity of a state on the constraints is resolved only to about w eps / d^2 (d rad
#: from the crossing): the rows inside a step across (d ~ 3e-3) carry up to 1e-9 rad/s of it
OFF_CROSSING = 0.05


def case(n, method, rtol, folder, radau_past=None):
    """One run: a dict of the measured numbers."""
    import dynamica
    if radau_past:
        from dynamica.runtime.integrators import singular
        singular.RADAU_PAST = int(radau_past)
    path = Path(folder) / f"nfourbar{n}.yaml"
    model = dynamica.load(str(path))
    ia = model.coordinates.index("a0")
    dynamica.simulate(model, t_end=0.01, method=method)                      # imports and first calls
    t0 = time.perf_counter()
    res = dynamica.simulate(model, t_end=T_END, rtol=rtol, atol=rtol, output_step=0.01, method=method)
    seconds = time.perf_counter() - t0
    ref, _ = nf.reference(n, res.t)
    energy = nf.energy(n, res.q[:, ia], res.qd[:, ia])
    off = np.abs(np.sin(res.q[:, ia])) > OFF_CROSSING
    return {"error": float(np.abs(nf.b0_x(res.q[:, ia]) - nf.b0_x(ref)).max()),
            "drift": float(np.abs(energy - energy[0]).max() / abs(energy[0])),
            "drift_off": float(np.abs(energy[off] - energy[0]).max() / abs(energy[0])),
            "residual": max(float(np.abs(model.constraints(q)).max()) for q in res.q),
            "seconds": seconds, "nfev": int(res.nfev)}


def reduced(n, method, rtol):
    """The same integrator on the reduced equation (adams: the compiled loop on a Python f)."""
    from scipy.integrate import solve_ivp

    from dynamica.runtime.integrators.compiled_adams import solve
    c = nf.reduced_coefficient(n)
    times = np.linspace(0.0, T_END, 2001)
    y0 = np.array([math.pi / 2, -1.0])
    if method == "adams":
        y = np.asarray(solve(lambda t, y: np.array([y[1], -c * math.cos(y[0])]), (0.0, T_END), y0, rtol=rtol,
                             atol=rtol, t_eval=times).y)
        y = y if y.shape[0] == 2 else y.T
    else:
        y = solve_ivp(
            lambda t, y: [y[1], -c * math.cos(y[0])],
            (0.0, T_END),
            y0,
            method=method.replace("radau", "Radau"),
            rtol=rtol,
            atol=rtol,
            t_eval=times,
        ).y
    ref, _ = nf.reference(n, times)
    return float(np.abs(nf.b0_x(y[0]) - nf.b0_x(ref)).max())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1, 2, 40])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "singular.txt"))
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--methods", nargs="+", help="integrators (default: adams, and for N <= 2 DOP853, radau, ida)")
    ap.add_argument("--radau-past", type=int, help="radau's step across through this many past states")
    ap.add_argument("--case", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.case:
        serve_case(a.case, case)
        return
    import dynamica
    from dynamica.runtime.integrators.singular import RADAU_PAST
    lines = [f"IFToMM A02 N four-bar, {T_END:g} s; dynamica {getattr(dynamica, '__version__', '')}, "
             f"{mp.cpu_count()} cores; radau's step across through {a.radau_past or RADAU_PAST} past states", "",
             f"{'N':>3} {'method':>8} {'rtol':>7} {'B0 error m':>11} {'energy drift':>12} {'drift off':>10} "
             f"{'max |phi|':>10} {'seconds':>8} {'RHS calls':>9}"]
    with tempfile.TemporaryDirectory() as folder:
        for n in a.n:
            (Path(folder) / f"nfourbar{n}.yaml").write_text(nf.model_text(n))
            import dynamica as d
            d.load(str(Path(folder) / f"nfourbar{n}.yaml"))                 # compiled once, outside the timing
            methods = a.methods or (["adams"] if n > 2 else ["adams", "DOP853", "radau", "ida"])
            rtols = [1e-8, 1e-10, 1e-12]
            for method in methods:
                for rtol in rtols if method != "ida" else []:       # (no reduced run for IDA)
                    lines.append(f"{n:>3} {method + ' *':>8} {rtol:7.0e} {reduced(n, method, rtol):11.2e}")
                for rtol in rtols:
                    r = run_case(__file__, [n, method, rtol, folder, a.radau_past], a.timeout)
                    if "failed" in r:
                        lines.append(f"{n:>3} {method:>8} {rtol:7.0e}  failed: {r['failed']}")
                    else:
                        lines.append(f"{n:>3} {method:>8} {rtol:7.0e} {r['error']:11.2e} {r['drift']:12.2e} "
                                     f"{r['drift_off']:10.2e} {r['residual']:10.2e} {r['seconds']:8.2f} {r['nfev']:9d}")
                    print(lines[-1], flush=True)
    lines += ["", "* the same integrator on the reduced equation of the branch (one coordinate, no loop)",
              f"drift off: at the rows with the rods at least {OFF_CROSSING} rad from the horizontal"]
    text = "\n".join(lines) + "\n"
    print(text)
    Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
