#!/usr/bin/env python
"""The matrix-exponential integrator for linear multi-mass chains against Adams and Radau on a chain whose natural
frequencies span three decades (the method's motivating case: railway trains, chain drives).

    python benchmarks/bench_expm.py                 # n = 50 masses, t_end = 10 s
    python benchmarks/bench_expm.py --n 100 --no-save

Model (written as a YAML model file): n unit masses on x slides in absolute coordinates, mass i
at rest at x = i d, joined to its neighbour (mass 1 to the ground) by a spring-damper of free
length d, stiffness k_i from 1e2 to 1e6 N/m geometrically along the chain and damping 1e-4 k_i
(N s/m); no gravity. M is diagonal, K and C tridiagonal: the system is linear, and
`dynamica.linearize` about q = 0 gives it exactly. Initial state: every mass displaced by
0.01 (i / n) and the last one given 0.1 m/s, so that slow and fast modes are excited.

Reference: scipy.linalg.expm(A t) x0 at every output point (0.01 s). Methods:
  - expm: lin.simulate(method="expm") with its step = the output step, at several `tol`
    (series order r from the method's table (19)); its time includes forming D_0 (m doublings);
  - adams: the compiled Adams-Bashforth-Moulton of dynamica.simulate on the model's module;
  - radau: scipy's Radau on the compiled RHS with the generated Jacobian (jacobian="analytic").
Error: the largest deviation of q over all outputs, relative to the largest |q| of the reference.
Times: wall-clock seconds, best of --repeat runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")       # small matrices: threads only contend (2 shared cores)
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np

HERE = Path(__file__).resolve().parent


def chain_model(n, d=0.5):
    k = np.geomspace(1e2, 1e6, n)
    bodies = [
        {
            "name": f"w{i}",
            "parent": "ground",
            "joint": [{"translate": [i * d, 0, 0]}, {"translate": "x", "q": f"x{i}"}],
            "mass": 1.0,
            "com": [0, 0, 0],
            "inertia": [0.01, 0.01, 0.01],
        }
        for i in range(1, n + 1)
    ]
    forces = [{"type": "spring_damper", "body_a": "ground" if i == 1 else f"w{i - 1}",
               "point_a": [0, 0, 0] if i > 1 else [0, 0, 0], "body_b": f"w{i}", "point_b": [0, 0, 0],
               "stiffness": float(k[i - 1]), "damping": float(1e-4 * k[i - 1]), "free_length": d}
              for i in range(1, n + 1)]
    initial = {f"x{i}": 0.01 * i / n for i in range(1, n + 1)}
    initial[f"der(x{n})"] = 0.1
    return {"name": f"wide_chain{n}", "gravity": [0, 0, 0], "bodies": bodies, "forces": forces, "initial": initial}


def best_time(f, repeat):
    out, best = None, float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--t-end", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    import tempfile

    import scipy.linalg as sla
    import yaml

    import dynamica
    folder = Path(tempfile.mkdtemp(prefix="bench_expm_"))
    path = folder / f"wide_chain{args.n}.yaml"
    path.write_text(yaml.safe_dump(chain_model(args.n), sort_keys=False))
    model = dynamica.load(path)
    n, h = model.n, 0.01
    lin = dynamica.linearize(model, q=np.zeros(n))
    w = np.sqrt(np.abs(sla.eigvals(lin.K, lin.M).real))
    q0, qd0 = model.initial_state()
    x0 = np.concatenate([q0, qd0])
    t = np.arange(0.0, args.t_end + h / 2, h)
    A = lin.A
    ref = np.array([sla.expm(A * tk) @ x0 for tk in t])[:, :n]
    scale = np.max(np.abs(ref))

    def err(q):
        return float(np.max(np.abs(np.asarray(q) - ref)) / scale)

    rows = []
    for tol in (1e-5, 1e-8, 1e-13):
        sec, res = best_time(lambda: lin.simulate(args.t_end, x0, h, tol=tol), args.repeat)
        info = res.info
        rows.append(("expm", f"tol {tol:.0e} (r {info['series_order']}, m {info['doublings']})", err(res.q), sec,
                     f"{info['steps']} steps"))
    for method, rtols, repeat in (("adams", (1e-6, 1e-8, 1e-10, 1e-12), args.repeat), ("radau", (1e-4, 1e-6, 1e-8), 1)):
        for rtol in rtols:
            try:
                sec, res = best_time(lambda: dynamica.simulate(model, t_end=args.t_end, output_step=h, rtol=rtol,
                                                               atol=rtol * 1e-2, method=method), repeat)
            except dynamica.IntegrationError as exc:
                rows.append((method, f"rtol {rtol:.0e}", float("inf"), float("nan"), f"failed: {exc}"))
                continue
            work = f"{res.nfev} RHS, " + (f"{res.info['steps']} steps" if method == "adams" else
                                          f"{res.info['njev']} Jacobians")
            rows.append((method, f"rtol {rtol:.0e}", err(res.q), sec, work))
    head = [f"expm vs Adams and Radau: chain of {n} masses, omega {w.min():.3g} .. {w.max():.4g} rad/s "
            f"(ratio {w.max() / w.min():.0f}), t_end {args.t_end} s, outputs every {h} s",
            f"{platform.platform()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; dynamica "
            f"{dynamica.__version__}; error: max |q - expm(A t) x0| / max |q| over the outputs; seconds: best of "
            f"{args.repeat} (radau: 1)", "",
            f"{'method':<7s} {'setting':<26s} {'error':>9s} {'seconds':>9s}  work"]
    lines = [f"{m:<7s} {s:<26s} {e:9.2e} {sec:9.4f}  {wk}" for m, s, e, sec, wk in rows]
    summary = ["", "at equal accuracy (the fastest run of each method reaching the error):"]
    for target in (1e-5, 1e-8, 1e-11):
        best = {}
        for m, s, e, sec, _ in rows:
            if e <= target and sec < best.get(m, (float("inf"),))[0]:
                best[m] = (sec, s)
        summary.append(f"  error <= {target:.0e}: " + "; ".join(f"{m} {v[0]:.4f} s ({v[1]})" for m, v in best.items())
                       + ("" if len(best) == 3 else "; " + ", ".join(m for m in ("expm", "adams", "radau")
                                                                      if m not in best) + " not reached"))
    text = "\n".join(head + lines + summary)
    print(text)
    if not args.no_save:
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / "expm.txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
