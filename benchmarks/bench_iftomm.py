"""Two published closed-loop benchmarks: Andrews' squeezing mechanism (Hairer and Wanner, Solving
ODEs II, section VII.7; the Test Set for IVP Solvers, problem "andrews"; IFToMM A03) and Bricard's
mechanism (IFToMM A04: five rods, six revolute joints, one redundant equation).

    python benchmarks/bench_iftomm.py [--problems andrews bricard] [--out results/iftomm.txt] [--timeout 120]

For each problem, integrator (adams, DOP853, radau) and tolerance (rtol = atol = 1e-8, 1e-10,
1e-12), one run of `simulate` in its own process with a time limit:

- andrews (tests/data/andrews.yaml), t = 0 ... 0.03: the largest relative error of q(0.03)
  against the test set's published reference and its significant digits (scd); the drift of
  T + V_spring - mom beta (the motor's work; T from the published mass matrix,
  tests/oracles/andrews.py) relative to the largest kinetic energy; the largest |phi|; seconds
  and RHS calls. First row: the published equations themselves (DOP853 at 1e-13), the
  reference's own limit.
- bricard (models/bricard.yaml), 10 s from rest: the largest error of P3 (m) against the
  Pinocchio oracle (tests/oracles/bricard.py, DOP853 at 1e-12); the energy drift relative to
  m g L; the largest |phi|; seconds and RHS calls.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _peers import run_case, serve_case  # noqa: E402

METHODS = ("adams", "DOP853", "radau")
RTOLS = (1e-8, 1e-10, 1e-12)


def andrews_case(method, rtol):
    import dynamica

    from oracles import andrews as an
    model = dynamica.load(str(ROOT / "tests" / "data" / "andrews.yaml"))
    dynamica.simulate(model, t_end=1e-4, method=method)                     # imports and first calls
    t0 = time.perf_counter()
    res = dynamica.simulate(model, t_end=an.T_END, output_step=0.001, rtol=rtol, atol=rtol, method=method)
    seconds = time.perf_counter() - t0
    order = np.argsort([an.NAMES.index(c) for c in model.coordinates])
    q, v = res.q[:, order], res.qd[:, order]
    invariant, kinetic = [], []
    for qk, vk in zip(q, v):
        t_kin = 0.5 * vk @ an.mass_matrix(qk) @ vk
        kinetic.append(t_kin)
        invariant.append(t_kin + an.spring_energy(qk) - an.P["mom"] * qk[0])
    invariant = np.array(invariant)
    return {"error": float(np.max(np.abs(q[-1] - an.REFERENCE) / np.abs(an.REFERENCE))), "scd": an.scd(q[-1]),
            "drift": float(np.abs(invariant - invariant[0]).max() / max(kinetic)),
            "residual": max(float(np.abs(model.constraints(x)).max()) for x in res.q),
            "seconds": seconds, "nfev": int(res.nfev)}


def bricard_case(method, rtol):
    import dynamica

    from oracles import bricard as br
    times = np.round(np.arange(0.0, 10.0 + 1e-9, 0.01), 10)
    p3_ref, _, _ = br.Bricard().run(times)
    model = dynamica.load(str(ROOT / "models" / "bricard.yaml"))
    dynamica.simulate(model, t_end=0.01, method=method)
    t0 = time.perf_counter()
    res = dynamica.simulate(model, t_end=10.0, output_step=0.01, rtol=rtol, atol=rtol, method=method)
    seconds = time.perf_counter() - t0
    energy = res.outputs["energy.total"]
    return {"error": float(np.abs(res.outputs["P3.position"] - p3_ref).max()),
            "drift": float(np.abs(energy - energy[0]).max() / (br.MASS * br.G * br.LENGTH)),
            "residual": max(float(np.abs(model.constraints(x)).max()) for x in res.q),
            "seconds": seconds, "nfev": int(res.nfev)}


CASES = {"andrews": andrews_case, "bricard": bricard_case}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "iftomm.txt"))
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.case:
        serve_case(a.case, lambda problem, method, rtol: CASES[problem](method, rtol))
        return
    import dynamica
    dynamica.load(str(ROOT / "tests" / "data" / "andrews.yaml"))       # compiled once, outside the timing
    dynamica.load(str(ROOT / "models" / "bricard.yaml"))
    lines = [f"Andrews' squeezing mechanism (0.03 s) and Bricard's mechanism (10 s); dynamica "
             f"{getattr(dynamica, '__version__', '')}, {mp.cpu_count()} cores (shared)", "",
             f"{'problem':>8} {'method':>8} {'rtol':>7} {'error':>9} {'scd':>6} {'drift':>9} {'max |phi|':>9} "
             f"{'seconds':>8} {'RHS calls':>9}"]
    if "andrews" in a.problems:
        from oracles import andrews as an
        q, _ = an.solve()
        err = float(np.max(np.abs(q - an.REFERENCE) / np.abs(an.REFERENCE)))
        lines.append(f"{'andrews':>8} {'eqs *':>8} {1e-13:7.0e} {err:9.2e} {an.scd(q):6.2f}")
        print(lines[-1], flush=True)
    for problem in a.problems:
        for method in METHODS:
            for rtol in RTOLS:
                r = run_case(__file__, [problem, method, rtol], a.timeout)
                if "failed" in r:
                    lines.append(f"{problem:>8} {method:>8} {rtol:7.0e}  failed: {r['failed']}")
                else:
                    scd = f"{r['scd']:6.2f}" if "scd" in r else f"{'':>6}"
                    lines.append(f"{problem:>8} {method:>8} {rtol:7.0e} {r['error']:9.2e} {scd} {r['drift']:9.2e} "
                                 f"{r['residual']:9.2e} {r['seconds']:8.2f} {r['nfev']:9d}")
                print(lines[-1], flush=True)
    lines += ["", "andrews: error = max relative error of q(0.03) against the published reference, scd its digits;",
              "  drift = of T + V_spring - mom beta, relative to the largest kinetic energy;",
              "  * the published equations themselves (tests/oracles/andrews.py) with DOP853 at 1e-13.",
              "bricard: error = max |P3 - oracle| (m) over 10 s, the oracle Pinocchio's chain closed at O2",
              "  (tests/oracles/bricard.py, DOP853 at 1e-12); drift = energy, relative to m g L."]
    text = "\n".join(lines) + "\n"
    print(text)
    Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
