"""Starts at a singular configuration where a slider moves fastest: the isosceles slider-crank of
tests/data/isosceles.yaml started at its dead centre (theta = pi/2: the slider passes the crank
pivot, the loop's Jacobian loses rank, the slider at 2 L theta' m/s) or dtheta rad past it, on its
moving-slider branch at 30 rad/s, 0.1 s (the start's crossing and the next at t = 0.07).

    python benchmarks/bench_slider_start.py [--lengths 0.05 5 500] [--methods adams radau ida]
                                            [--rtols 1e-8 1e-10 1e-12] [--dthetas 0 1e-6 1e-4 1e-2]
                                            [--out FILE] [--timeout 60]

g is scaled with L (as in bench_singular_slider.py), so the crank angle's motion is the same at every
L and only the units differ. For each case: the largest error of the crank angle against the reduced
equation from the same start (tests/oracles/slidercrank.py, DOP853 at rtol 1e-13), the steps across
(info["singular_passages"], the start across among them), the RHS (IDA: residual) calls, and the
singular warnings raised (start: SingularStartWarning, passage: SingularPassageWarning). Each case
runs in its own process with a time limit.
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

T_END, RATE = 0.1, 30.0
MODEL = ROOT / "tests" / "data" / "isosceles.yaml"


def case(length, method, rtol, dtheta):
    """One run: a dict of the measured numbers."""
    import warnings

    import dynamica
    model = dynamica.load(str(MODEL))
    params = {"L": length, "g": 9.81 * length / 0.05}
    theta0 = np.pi / 2 + dtheta
    q0, qd0 = sc.branch_state(theta0, RATE, length)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = dynamica.simulate(model, t_end=T_END, output_step=0.005, params=params, rtol=rtol, atol=rtol,
                                method=method, q0=q0, qd0=qd0)
    ref, _ = sc.reference(res.t, theta0, RATE, length, g=params["g"])
    warned = sorted({type(w.message).__name__.replace("Singular", "").replace("Warning", "").lower()
                     for w in caught if "Singular" in type(w.message).__name__})
    return {"error": float(np.abs(res.q[:, 0] - ref).max()), "passages": len(res.info.get("singular_passages", ())),
            "nfev": int(res.nfev), "warned": ",".join(warned) or "-"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lengths", nargs="+", type=float, default=[0.05, 5.0, 500.0])
    ap.add_argument("--methods", nargs="+", default=["adams", "radau", "ida"])
    ap.add_argument("--rtols", nargs="+", type=float, default=[1e-8, 1e-10, 1e-12])
    ap.add_argument("--dthetas", nargs="+", type=float, default=[0.0, 1e-6, 1e-4, 1e-2])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "slider_start.txt"))
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.case:
        serve_case(a.case, case)
        return
    lines = [f"isosceles slider-crank started dtheta rad past its dead centre (theta = pi/2), {RATE:g} rad/s, "
             f"{T_END:g} s, rtol = atol; crank angle error rad against the reduced equation",
             f"{'L m':>6} {'method':>7} {'rtol':>7} {'dtheta':>7} {'theta err':>10} {'across':>6} {'calls':>7} warned"]
    for length in a.lengths:
        for method in a.methods:
            for rtol in a.rtols:
                for dtheta in a.dthetas:
                    r = run_case(__file__, [length, method, rtol, dtheta], a.timeout)
                    head = f"{length:6g} {method:>7} {rtol:7.0e} {dtheta:7.0e}"
                    if "failed" in r:
                        lines.append(f"{head}  failed: {r['failed']}")
                    else:
                        lines.append(f"{head} {r['error']:10.2e} {r['passages']:6d} {r['nfev']:7d} {r['warned']}")
                    print(lines[-1], flush=True)
    Path(a.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
