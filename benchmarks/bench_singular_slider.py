"""Closed loops through singular positions where a slider moves fastest: the isosceles slider-crank
of tests/data/isosceles.yaml (crank = coupler = L, the slider on a line through the crank pivot;
the loop's Jacobian loses rank where the slider passes the pivot, twice a turn; 1 s, six passages).

    python benchmarks/bench_singular_slider.py [--lengths 0.05 5 500] [--methods adams radau ida]
                                               [--out results/singular_slider.txt] [--timeout 300]

The mechanism is run at several lengths L with g scaled with L (g = 9.81 L / 0.05 m/s^2), so that the
crank angle theta(t) is the same motion at every L (tests/oracles/slidercrank.py) and only the units
differ: the slider's speed, 2 L sin(theta) theta', is 0.1 theta' at L = 0.05 m (the coupler's
relative angle, -2 theta', is then the fastest coordinate) and 10 or 1000 theta' at L = 5 or 500 m.
For each L, integrator and tolerance (rtol = atol): the largest error of the crank angle against the
reduced equation (DOP853 at 1e-13), the largest of the slider's error over L, the largest relative
drift of the energy, the largest constraint residual at the output rows over L, the steps across,
the RHS calls (IDA: residual calls). "adams *" is adams on the reduced equation itself (one
coordinate, no loop): what the tolerance gives on this motion. Each case runs in its own process
with a time limit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _peers import run_case, serve_case  # noqa: E402

from oracles import slidercrank as sc  # noqa: E402

T_END = 1.0
MODEL = ROOT / "tests" / "data" / "isosceles.yaml"
THETA0, RATE0 = 0.3, 30.0          # (the model file's initial crank angle and rate)


def gravity(length):
    return 9.81 * length / 0.05


def case(length, method, rtol):
    """One run: a dict of the measured numbers."""
    import dynamica
    model = dynamica.load(str(MODEL))
    params = {"L": length, "g": gravity(length)}
    res = dynamica.simulate(model, t_end=T_END, rtol=rtol, atol=rtol, output_step=0.01, method=method,
                            params=params)
    ref, rate = sc.reference(res.t, THETA0, RATE0, length, g=gravity(length))
    th, x = res.q[:, 0], res.q[:, 2]
    energy = sc.energy(th, res.qd[:, 0], length, 1.0, 1.0, gravity(length))
    return {"error": float(np.abs(th - ref).max()),
            "slider": float(np.abs(x - 2 * length * np.cos(ref)).max() / length),
            "drift": float(np.abs(energy - energy[0]).max() / abs(energy[0])),
            "residual": max(float(np.abs(model.constraints(q, params=params)).max()) for q in res.q) / length,
            "passages": len(res.info.get("singular_passages", ())), "nfev": int(res.nfev)}


def reduced(rtol):
    """adams (the compiled loop on a Python f) on the reduced equation: the crank angle's error."""
    from dynamica.runtime.integrators.compiled_adams import solve
    times = np.linspace(0.0, T_END, 101)
    y = np.asarray(solve(lambda t, y: np.array([y[1], sc.theta_dd(y[0], y[1], 0.05, 1.0, 1.0, 9.81)]),
                         (0.0, T_END), np.array([THETA0, RATE0]), rtol=rtol, atol=rtol, t_eval=times).y)
    y = y if y.shape[0] == 2 else y.T
    ref, _ = sc.reference(times, THETA0, RATE0)
    return float(np.abs(y[0] - ref).max())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lengths", nargs="+", type=float, default=[0.05, 5.0, 500.0])
    ap.add_argument("--methods", nargs="+", default=["adams", "radau", "ida"])
    ap.add_argument("--rtols", nargs="+", type=float, default=[1e-8, 1e-10, 1e-12])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "singular_slider.txt"))
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.case:
        serve_case(a.case, case)
        return
    lines = [f"isosceles slider-crank, {T_END:g} s, rtol = atol; theta error rad, slider error / L, "
             "energy drift relative, max |phi| / L",
             f"{'L m':>6} {'method':>8} {'rtol':>7} {'theta err':>10} {'x err / L':>10} {'drift':>9} "
             f"{'|phi| / L':>9} {'across':>6} {'RHS calls':>9}"]
    for rtol in a.rtols:
        lines.append(f"{'any':>6} {'adams *':>8} {rtol:7.0e} {reduced(rtol):10.2e}")
    for length in a.lengths:
        for method in a.methods:
            for rtol in a.rtols:
                r = run_case(__file__, [length, method, rtol], a.timeout)
                if "failed" in r:
                    lines.append(f"{length:6g} {method:>8} {rtol:7.0e}  failed: {r['failed']}")
                else:
                    lines.append(f"{length:6g} {method:>8} {rtol:7.0e} {r['error']:10.2e} {r['slider']:10.2e} "
                                 f"{r['drift']:9.1e} {r['residual']:9.1e} {r['passages']:6d} {r['nfev']:9d}")
                print(lines[-1], flush=True)
    lines += ["", "* adams on the reduced equation of the branch (one coordinate, no loop)"]
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
