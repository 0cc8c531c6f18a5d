#!/usr/bin/env python
"""The default form against composite, articulated and Pinocchio on the N-link chain of
bench_spine.py (N = 7, 20, 50), in one run.

Per N and form: the form `dynamica.load` takes without one (runtime/analysis/selection.py default_form),
the time per RHS call from C (runtime/native/ctiming.pyx, best of 5), and a 10 s simulation from the
state of bench_sim.py (q = 0.4 cos(k), q' = 0) with the compiled adams at rtol = atol = TOL: wall
time (best of RUNS), RHS calls, and the error of q at t = 1 s (the chain is chaotic after a few
seconds) against DOP853 at 1e-13 on Pinocchio's aba (an RHS independent of dynamica's). The
peers, their RHS calls and errors measured the same way, at equal accuracy: pin.aba + scipy
LSODA and DOP853 at the loosest tolerance of SCIPY_TOLS whose error of q at 1 s is at most the
default form's; MuJoCo RK4 (mj_step in a Python loop) at the largest step of RK4_STEPS whose
error is at most the default form's. The last column is each row's wall time over the
default's (above 1: the default is faster). Peers at N > 50 are timed once (a run takes seconds
to a minute). Composite and articulated
rows up to --forms-max (50). A plain script, run by hand:
python benchmarks/bench_defaults.py [--sizes 7 20 50 100]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_spine as bs

HERE = Path(__file__).resolve().parent
T_END, TOL, RUNS = 10.0, 1e-8, 3


def best(fn, runs=RUNS):
    out, times = None, []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def measure(n: int, folder: Path, forms_max: int = 50) -> list:
    import pinocchio as pin

    import dynamica
    from dynamica.runtime.integrators.timing import ctiming
    path = bs.write_chain_yaml(n, folder)
    default = dynamica.load(path)
    models = {"default": default}
    if n <= forms_max:              # symbolic composite at N = 100 takes minutes to build
        models.update({"composite": dynamica.load(path, form="composite"),
                       "articulated": dynamica.load(path, form="articulated")})
    q0 = 0.4 * np.cos(np.arange(n))
    y0 = np.concatenate([q0, np.zeros(n)])
    pm = bs.pinocchio_chain(n)
    pd = pm.createData()
    zero = np.zeros(n)

    def f_pin(t, y):
        return np.concatenate([y[n:], pin.aba(pm, pd, y[:n], y[n:], zero)])
    ref = solve_ivp(f_pin, (0, 1.0), y0, method="DOP853", rtol=1e-13, atol=1e-13).y[:n, -1]   # an independent RHS
    rows = []
    for label, m in models.items():
        out = np.empty(2 * n)
        us = min(ctiming().rhs_seconds_per_call(m.module.rhs_capsule, 0.0, y0, m.param_vector(), out,
                                                max(200, 20000 // n)) for _ in range(5)) * 1e6
        wall, res = best(lambda m=m: dynamica.simulate(m, t_end=T_END, q0=q0, rtol=TOL, atol=TOL, output_step=1.0))
        err = float(np.abs(res.q[1] - ref).max())
        rows.append((n, f"{label} ({m.form})" if label == "default" else label, us, wall, res.nfev, err))
    target = max(r[5] for r in rows if r[1].startswith("default"))
    t_eval = np.arange(0.0, T_END + 0.5, 1.0)
    for method in ("LSODA", "DOP853"):
        rows.append(scipy_equal(n, f_pin, y0, ref, target, method, t_eval))
    rows += mujoco_rk4(n, q0, ref, target)
    return rows


#: scipy tolerances tried (rtol = atol): the loosest whose error of q at 1 s is at most the default form's is timed
SCIPY_TOLS = (1e-8, 3e-9, 1e-9, 3e-10, 1e-10, 3e-11, 1e-11, 3e-12, 1e-12)


def scipy_equal(n, f_pin, y0, ref, target, method, t_eval):
    """pin.aba + scipy `method` at equal accuracy: the loosest tolerance of SCIPY_TOLS whose error
    of q at 1 s is at most `target` (the default form's), its 10 s run timed."""
    err = np.inf
    for tol in SCIPY_TOLS:
        sol = solve_ivp(f_pin, (0, 1.0), y0, method=method, rtol=tol, atol=tol)
        err = float(np.abs(sol.y[:n, -1] - ref).max())
        if err <= target:
            break
    note = "" if err <= target else " (error above the default's)"
    wall, sol = best(lambda: solve_ivp(f_pin, (0, T_END), y0, method=method, rtol=tol, atol=tol, t_eval=t_eval),
                     runs=RUNS if n <= 50 else 1)
    return (n, f"pin.aba + {method} tol={tol:g}{note}", None, wall, sol.nfev, err)


def mujoco_chain(n: int):
    """The chain of bench_spine.py through MuJoCo's MjSpec: hinges about x / y, each body at
    OFFSET from its parent, inertial at COM with diag(INERTIA); contacts off, RK4."""
    import mujoco
    spec = mujoco.MjSpec()
    spec.option.gravity = [0.0, 0.0, -bs.G]
    spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_RK4
    parent = spec.worldbody
    for i in range(1, n + 1):
        body = parent.add_body(name=f"b{i}", pos=list(bs.OFFSET))
        body.add_joint(type=mujoco.mjtJoint.mjJNT_HINGE, axis=[1, 0, 0] if bs.axis_of(i) == "x" else [0, 1, 0])
        body.explicitinertial = True
        body.mass, body.ipos = bs.MASS, list(bs.COM)
        body.fullinertia = [*bs.INERTIA, 0.0, 0.0, 0.0]
        parent = body
    m = spec.compile()
    return m, mujoco.MjData(m)


#: RK4 time steps tried: the largest whose error of q at 1 s is at most the default form's is timed
RK4_STEPS = (1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2.5e-4, 2e-4, 1.6e-4, 1.25e-4, 1e-4)     # each divides 1 s


def mujoco_rk4(n, q0, ref, target):
    """MuJoCo RK4 at equal accuracy: the largest step of RK4_STEPS with error(q, 1 s) <= target,
    its 10 s run timed (mj_step in a Python loop; 4 mj_forward-like stages a step)."""
    try:
        import mujoco
    except ImportError:
        return []
    m, d = mujoco_chain(n)

    def run(dt, t_end):
        m.opt.timestep = dt
        mujoco.mj_resetData(m, d)
        d.qpos[:] = q0
        for _ in range(int(round(t_end / dt))):
            mujoco.mj_step(m, d)
        return d.qpos.copy()
    for dt in RK4_STEPS:
        err = float(np.abs(run(dt, 1.0) - ref).max())
        if err <= target:
            wall, _ = best(lambda dt=dt: run(dt, T_END), runs=RUNS if n <= 50 else 1)
            return [(n, f"MuJoCo RK4 dt={dt:g}", None, wall, 4 * int(round(T_END / dt)), err)]
    return [(n, f"MuJoCo RK4 dt={RK4_STEPS[-1]:g} (error above the default's)", None,
             best(lambda: run(RK4_STEPS[-1], T_END))[0], 4 * int(round(T_END / RK4_STEPS[-1])), err)]


def report(rows, info) -> list:
    head = ("N", "method, setting", "us per RHS (C)", "10 s wall ms", "RHS calls", "error of q at 1 s",
            "wall / default")
    lines = info + ["", " | ".join(head), " | ".join("---" for _ in head)]
    defaults = {r[0]: r[3] for r in rows if r[1].startswith("default")}
    for n, label, us, wall, nfev, err in rows:
        lines.append(" | ".join([str(n), label, "-" if us is None else f"{us:.3f}", f"{1e3 * wall:.1f}", str(nfev),
                                 f"{err:.1e}", f"{wall / defaults[n]:.2f}"]))
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[7, 20, 50, 100])
    ap.add_argument("--out", default=str(HERE / "results" / "defaults.txt"))
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--forms-max", type=int, default=50, help="composite and articulated rows up to this N")
    args = ap.parse_args(argv)
    import platform

    import pinocchio

    import dynamica
    tmp = Path(tempfile.mkdtemp(prefix="bench_defaults_"))
    rows = []
    for n in args.sizes:
        rows += measure(n, tmp, args.forms_max)
        print(f"N = {n} done", file=sys.stderr, flush=True)
    info = [f"# load average at the end {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores (a shared machine)",
            f"# the default form: dynamica {dynamica.__version__}, pinocchio {pinocchio.__version__}, "
            f"Python {platform.python_version()}, {platform.machine()}",
            f"# chain of bench_spine.py, 10 s from q = 0.4 cos(k), rtol = atol = {TOL:g}; wall: best of {RUNS}; "
            "error: max |q(1 s) - DOP853 at 1e-13|"]
    lines = report(rows, info)
    print("\n".join(lines))
    if not args.no_save:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
