#!/usr/bin/env python
"""Simulation benchmark: 10 s of the 7-link chain, three ways, in one run.

    dynamica : compiled RHS + compiled Adams (method="adams", the C entry point, no Python per step)
    PyDy     : PyDy 0.9.4 Cython RHS + scipy LSODA
    Pinocchio: pin.aba + scipy LSODA

The chain is benchmarks/bench_spine.py's (revolute joints about x, y, x, ...). Each
integrator runs at rtol = atol = tol; the error is the max abs difference of the state at
t = 10 from DOP853 at rtol = atol = 1e-13 on dynamica's RHS; wall time is the best of 5 runs.
A plain script, run by hand:  python benchmarks/bench_sim.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_spine as bs

N, T_END, TOLS, RUNS = 7, 10.0, (1e-6, 1e-8, 1e-10), 5


def best(fn, runs=RUNS):
    out, times = None, []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    import dynamica
    tmp = Path(tempfile.mkdtemp(prefix="bench_sim_"))
    model = dynamica.load(bs.write_chain_yaml(N, tmp))
    y0 = np.concatenate([0.4 * np.cos(np.arange(N)), np.zeros(N)])
    ref = solve_ivp(model.rhs_function(), (0, T_END), y0, method="DOP853", rtol=1e-13, atol=1e-13).y[:, -1]

    import pinocchio as pin
    pm = bs.pinocchio_chain(N)
    pdata = pm.createData()
    zero = np.zeros(N)

    def f_pin(t, y):
        return np.concatenate([y[N:], pin.aba(pm, pdata, y[:N], y[N:], zero)])

    print("building the PyDy Cython RHS (about 30 s) ...", file=sys.stderr, flush=True)
    import sympy as sp
    from pydy.codegen.ode_function_generators import generate_ode_function
    kane, q, u, constants = bs.sympy_chain(N)
    pydy_rhs = generate_ode_function(kane.forcing, q, u, constants, mass_matrix=kane.mass_matrix,
                                     coordinate_derivatives=sp.Matrix(u), generator="cython",
                                     constants_arg_type="array", tmp_dir=str(tmp / "pydy"))
    gp = np.array([bs.G])

    def f_pydy(t, y):
        return pydy_rhs(y, t, gp)

    for f in (f_pin, f_pydy):
        assert np.allclose(f(0.0, y0), model.rhs(0.0, y0), rtol=1e-10, atol=1e-12)

    rows = []
    for tol in TOLS:
        t_dyn, r = best(lambda: dynamica.simulate(model, t_end=T_END, method="adams", rtol=tol, atol=tol,
                                                  q0=y0[:N], qd0=y0[N:], output_step=T_END))
        e_dyn = np.abs(np.concatenate([r.q[-1], r.qd[-1]]) - ref).max()
        row = {"tol": tol, "dyn": (t_dyn, r.nfev, e_dyn)}
        for name, f in (("pydy", f_pydy), ("pin", f_pin)):
            t, s = best(lambda: solve_ivp(f, (0, T_END), y0, method="LSODA", rtol=tol, atol=tol))
            row[name] = (t, s.nfev, np.abs(s.y[:, -1] - ref).max())
        rows.append(row)

    print(f"10 s of the {N}-link chain; wall time (best of {RUNS}), RHS evaluations, max error at t = 10")
    print(f"{'tol':>7} | {'dynamica adams (compiled)':>30} | {'PyDy Cython + LSODA':>30} | "
          f"{'Pinocchio aba + LSODA':>30} | PyDy/dyn | pin/dyn")
    for r in rows:
        cells = [f"{r[k][0] * 1e3:8.2f} ms {r[k][1]:6d} {r[k][2]:8.1e}" for k in ("dyn", "pydy", "pin")]
        print(f"{r['tol']:7.0e} | " + " | ".join(f"{c:>30}" for c in cells)
              + f" | {r['pydy'][0] / r['dyn'][0]:8.1f} | {r['pin'][0] / r['dyn'][0]:7.1f}")


if __name__ == "__main__":
    main()
