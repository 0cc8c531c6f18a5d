"""Runs that start at, or next to, a singular configuration: the IFToMM A02 N four-bar started on its
parallelogram branch phi rad above the horizontal (all rods horizontal: J loses rank), heading down
at 1 rad/s, 3 s (the crossing at the start, then two more passages).

    python benchmarks/bench_singular_start.py [--n 1 2] [--methods adams radau ida] [--rtols 1e-10 1e-12]
                                              [--phis 0 1e-8 1e-6 1e-4 1e-3] [--regular] [--out FILE]
                                              [--timeout 300]

For each case: the largest error of the rod angle a0 against the reduced equation of the branch
(tests/oracles/nfourbar.py: one coordinate, DOP853 at rtol 1e-13 from the same start), the
largest distance of the output rows from the branch (every a_i and -b_i against a0), the number
of steps across (info["singular_passages"]), the RHS calls, and "reduced *": the same integrator
on the reduced equation itself, the best an error-per-step method does on this motion; the seconds of
the run (`simulate` alone). With --regular, also the same orbit started REGULAR rad below the
horizontal (at the orbit's rate there, outside any gap): the integrator's own error on this motion
without a start next to a crossing. Each case runs in its own process with a time limit.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _peers import run_case, serve_case  # noqa: E402

from oracles import nfourbar as nf  # noqa: E402

T_END, RATE = 3.0, -1.0
#: --regular: the same orbit started this far below the horizontal, heading down (phi'^2 / 2 + c sin(phi) kept)
REGULAR = -0.3


def rate(n, phi):
    """phi' at phi on the orbit through (0, RATE), heading down."""
    return -math.sqrt(RATE ** 2 - 2.0 * nf.reduced_coefficient(n) * math.sin(phi)) if phi < 0 else RATE


def reference(n, phi, times, rtol=1e-13):
    from scipy.integrate import solve_ivp
    c = nf.reduced_coefficient(n)
    return solve_ivp(lambda t, y: [y[1], -c * math.cos(y[0])], (0.0, T_END), [phi, rate(n, phi)], method="DOP853",
                     rtol=rtol, atol=rtol, t_eval=times).y[0]


def case(n, method, rtol, phi, folder):
    """One run: a dict of the measured numbers."""
    import dynamica
    model = dynamica.load(str(Path(folder) / f"nfourbar{n}.yaml"))
    q0, qd0 = nf.branch_state(model.coordinates, phi, rate(n, phi))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        res = dynamica.simulate(model, t_end=T_END, rtol=rtol, atol=rtol, output_step=0.01, method=method,
                                q0=q0, qd0=qd0)
        seconds = time.perf_counter() - start
    ia = model.coordinates.index("a0")
    a0 = res.q[:, ia]
    signs = np.array([1.0 if c.startswith("a") else -1.0 for c in model.coordinates])
    return {"error": float(np.abs(a0 - reference(n, phi, res.t)).max()),
            "off": float(np.abs(res.q * signs - a0[:, None]).max()),
            "passages": len(res.info.get("singular_passages", [])), "nfev": int(res.nfev), "seconds": seconds,
            "warned": any("SingularStart" in w.category.__name__ for w in caught)}


def reduced(n, method, rtol, phi):
    """The same integrator on the reduced equation (adams: the compiled loop on a Python f; ida: scipy's
    BDF, the same family of method, not IDA itself)."""
    from scipy.integrate import solve_ivp

    from dynamica.runtime.integrators.compiled_adams import solve
    c = nf.reduced_coefficient(n)
    times = np.linspace(0.0, T_END, 301)
    f = lambda t, y: np.array([y[1], -c * math.cos(y[0])])  # noqa: E731
    if method == "adams":
        y = np.asarray(solve(f, (0.0, T_END), [phi, rate(n, phi)], rtol=rtol, atol=rtol, t_eval=times).y)
    else:
        y = solve_ivp(f, (0.0, T_END), [phi, rate(n, phi)], method="BDF" if method == "ida" else "Radau", rtol=rtol,
                      atol=rtol, t_eval=times).y
    return float(np.abs(y[0] - reference(n, phi, times)).max())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--methods", nargs="+", default=["adams"])
    ap.add_argument("--rtols", type=float, nargs="+", default=[1e-10, 1e-12])
    ap.add_argument("--phis", type=float, nargs="+", default=[0.0, 1e-8, 1e-6, 1e-4, 1e-3])
    ap.add_argument("--regular", action="store_true", help=f"also the same orbit from {REGULAR} rad (module docstring)")
    ap.add_argument("--out", help="also write the table to this file")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.case:
        serve_case(a.case, case)
        return
    import dynamica
    lines = [f"IFToMM A02 N four-bar started phi rad above the horizontal on its branch, heading down at "
             f"{-RATE:g} rad/s, {T_END:g} s", "",
             f"{'N':>3} {'method':>7} {'rtol':>7} {'phi':>7} {'a0 error':>9} {'reduced *':>9} {'off branch':>10} "
             f"{'passages':>8} {'RHS calls':>9} {'seconds':>7} warned"]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory() as folder:
        for n in a.n:
            (Path(folder) / f"nfourbar{n}.yaml").write_text(nf.model_text(n))
            dynamica.load(str(Path(folder) / f"nfourbar{n}.yaml"))         # compiled once, outside the cases
            for method in a.methods:
                for rtol in a.rtols:
                    for phi in [*a.phis, *([REGULAR] if a.regular else [])]:
                        r = run_case(__file__, [n, method, rtol, phi, folder], a.timeout)
                        head = f"{n:>3} {method:>7} {rtol:7.0e} {phi:7.0e}"
                        if "failed" in r:
                            lines.append(f"{head}  failed: {r['failed']}")
                        else:
                            lines.append(f"{head} {r['error']:9.1e} {reduced(n, method, rtol, phi):9.1e} "
                                         f"{r['off']:10.1e} {r['passages']:8d} {r['nfev']:9d} {r['seconds']:7.2f} "
                                         f"{r['warned']}")
                        print(lines[-1], flush=True)
    lines += ["", "a0 error: rad, against the reduced equation (DOP853, rtol 1e-13); off branch: the largest "
              "|a_i - a0|, |b_i + a0| (rad)", "* the same integrator on the reduced equation"]
    if a.out:
        Path(a.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
