"""Slow crossings of a singular configuration next to a turning point: the IFToMM A02 N four-bar
started on its parallelogram branch a little above the horizontal, heading down at 1 rad/s, 3 s
(docs/loops.md, "Adams: stepping across").

    python benchmarks/bench_singular_slow.py [--cases 1:0.03 2:0.3] [--rtols 1e-10 1e-12] [--method adams]

For each case (N, starting angle in rad) and tolerance (rtol = atol): the largest error of a0 over
the output rows (every 0.01 s) with the default `adams` (or `--method radau`), against the reduced
equation of the branch (tests/oracles/nfourbar.py's phi'' = -c cos(phi), scipy's DOP853 at rtol
1e-13); the same for the same integrator on the reduced equation itself (radau: scipy's Radau; one
coordinate, no loop: what the tolerance gives on this motion); the number of crossings and of steps
across, the RHS calls.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from oracles import nfourbar as nf  # noqa: E402

T_END = 3.0
RATE = -1.0


def reference(n, phi0, times, method="DOP853", rtol=1e-13):
    """a0 at `times` from the reduced equation (scipy's DOP853, or adams: the compiled loop on it)."""
    from scipy.integrate import solve_ivp

    from dynamica.runtime.integrators.compiled_adams import solve
    c = nf.reduced_coefficient(n)

    def f(t, y):
        return np.array([y[1], -c * math.cos(y[0])])
    if method == "adams":
        y = np.asarray(solve(f, (0.0, T_END), np.array([phi0, RATE]), rtol=rtol, atol=rtol, t_eval=times).y)
        return y[0] if y.shape[0] == 2 else y[:, 0]
    return solve_ivp(f, (0.0, T_END), [phi0, RATE], method=method, rtol=rtol, atol=rtol, t_eval=times).y[0]


def case(model, n, phi0, rtol, method="adams"):
    """(a0's error, the same integrator on the reduced equation's error, steps across, RHS calls)."""
    import dynamica
    ia = model.coordinates.index("a0")
    q0, qd0 = nf.branch_state(model.coordinates, phi0, RATE)
    res = dynamica.simulate(model, t_end=T_END, rtol=rtol, atol=rtol, output_step=0.01, q0=q0, qd0=qd0,
                            method=method)
    ref = reference(n, phi0, res.t)
    err = float(np.abs(res.q[:, ia] - ref).max())
    red = float(np.abs(reference(n, phi0, res.t, "adams" if method == "adams" else "Radau", rtol) - ref).max())
    return err, red, len(res.info["singular_passages"]), int(res.nfev)


def crossings(n, phi0):
    """(the rate at the crossings, how far past one the motion turns, the crossings in T_END) on the
    branch: 1/2 phi'^2 + c sin(phi) is constant, and the rods are horizontal where sin(phi) = 0."""
    c = nf.reduced_coefficient(n)
    energy = 0.5 * RATE ** 2 + c * math.sin(phi0)
    times = np.arange(0.0, T_END, 1e-4)
    count = int(np.count_nonzero(np.diff(np.floor(reference(n, phi0, times) / math.pi))))
    return math.sqrt(2.0 * energy), math.asin(min(energy / c, 1.0)), count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", default=["1:0.03", "2:0.3"])
    ap.add_argument("--rtols", nargs="+", type=float, default=[1e-10, 1e-12])
    ap.add_argument("--method", default="adams", choices=["adams", "radau"])
    a = ap.parse_args()
    import warnings

    import dynamica
    print(f"N four-bar from phi0 on the branch, phi0' = {RATE} rad/s, {T_END:g} s; a0's largest error (rad)")
    print(f"{'N':>3} {'phi0':>6} {'rate':>5} {'turn':>6} {'rtol':>7} {a.method:>9} {'reduced *':>9} {'ratio':>7} "
          f"{'crossings':>9} {'passages':>8} {'RHS calls':>9}")
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for spec in a.cases:
            n, phi0 = int(spec.split(":")[0]), float(spec.split(":")[1])
            path = Path(folder) / f"nfourbar{n}.yaml"
            path.write_text(nf.model_text(n))
            model = dynamica.load(str(path))
            rate, turn, count = crossings(n, phi0)
            for rtol in a.rtols:
                try:
                    err, red, k, nfev = case(model, n, phi0, rtol, a.method)
                except Exception as exc:                      # (reported in the table)
                    print(f"{n:>3} {phi0:6.3g} {rate:5.2f} {turn:6.3f} {rtol:7.0e}  failed: {exc}"[:150], flush=True)
                    continue
                print(f"{n:>3} {phi0:6.3g} {rate:5.2f} {turn:6.3f} {rtol:7.0e} {err:9.2e} {red:9.2e} {err / red:7.1f} "
                      f"{count:>9d} {k:>8d} {nfev:>9d}", flush=True)
    print("* the same integrator on the reduced equation itself (radau: scipy's Radau; one coordinate, no loop);\n"
          "the reference: DOP853 at 1e-13;\n"
          "rate: |a0'| at the crossings (rad/s); turn: how far past a crossing the motion turns back (rad);\n"
          "crossings: of the horizontal by the reduced equation; passages: info['singular_passages'] (the\n"
          "steps across; adams's also the crossings it stepped over itself)")


if __name__ == "__main__":
    main()
