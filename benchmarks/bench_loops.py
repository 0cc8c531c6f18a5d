"""Closed loops against Pinocchio's constrained dynamics (pin.constraintDynamics with rigid
constraint models), measured in the same run.

    python benchmarks/bench_loops.py [--out results/loops.txt]

Two mechanisms, both bundled: the planar four-bar (models/fourbar.yaml) and the spatial RSSR
(models/rssr.yaml), built again as Pinocchio models here (the loop as a CONTACT_3D constraint).

1. Per call from Python: dynamica's module `qdd(t, q, qd, p, out)` (the constrained solve) against
   `pin.constraintDynamics(model, data, q, v, tau, constraints, datas, settings)`; also
   dynamica's C entry point timed from C (runtime/integrators/timing.py), as a compiled integrator calls it.
2. A 10 s simulation at equal accuracy: dynamica's compiled Adams loop with the projection after
   every step (runtime/compiled_adams.solve, what `simulate` runs, without its output sampling)
   against Pinocchio's dynamics under scipy's `solve_ivp` (DOP853 and LSODA), at several
   tolerances, from the same assembled state; error of q(10) against a reference from
   Pinocchio + DOP853 at rtol = atol = 1e-13. Each run is timed after a warm-up run; the time at
   equal error is read off by log-log interpolation of each front.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pinocchio as pin
from _peers import write_table
from scipy.integrate import solve_ivp

import dynamica

ROOT = Path(__file__).resolve().parent.parent


def rod(m, com, inertia):
    return pin.Inertia(m, np.array(com, float), np.diag(inertia))


def pin_fourbar():
    l1, l2, l3, l0, m = 0.2, 0.6, 0.5, 0.55, 1.0
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0, -9.81, 0]), np.zeros(3))
    j1 = model.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "th1")
    model.appendBodyToJoint(j1, rod(m, [l1 / 2, 0, 0], [1e-4, m * l1**2 / 12, m * l1**2 / 12]), pin.SE3.Identity())
    j2 = model.addJoint(j1, pin.JointModelRZ(), pin.SE3(np.eye(3), np.array([l1, 0, 0])), "th2")
    model.appendBodyToJoint(j2, rod(m, [l2 / 2, 0, 0], [1e-4, m * l2**2 / 12, m * l2**2 / 12]), pin.SE3.Identity())
    j3 = model.addJoint(0, pin.JointModelRZ(), pin.SE3(np.eye(3), np.array([l0, 0, 0])), "th3")
    model.appendBodyToJoint(j3, rod(m, [l3 / 2, 0, 0], [1e-4, m * l3**2 / 12, m * l3**2 / 12]), pin.SE3.Identity())
    return model, [(j2, [l2, 0, 0], j3, [l3, 0, 0])]


def pin_rssr():
    a, c, m = 0.1, 0.25, 0.5
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0, 0, -9.81]), np.zeros(3))
    j1 = model.addJoint(0, pin.JointModelRX(), pin.SE3.Identity(), "th1")
    model.appendBodyToJoint(j1, rod(m, [0, 0, a / 2], [m * a**2 / 12, m * a**2 / 12, 1e-4]), pin.SE3.Identity())
    comp = pin.JointModelComposite()
    comp.addJoint(pin.JointModelRX(), pin.SE3.Identity())
    comp.addJoint(pin.JointModelRY(), pin.SE3.Identity())
    j2 = model.addJoint(j1, comp, pin.SE3(np.eye(3), np.array([0, 0, a])), "coupler")
    model.appendBodyToJoint(j2, rod(m, [0.15, 0.1, 0.05], [0.004, 0.004, 0.004]), pin.SE3.Identity())
    j3 = model.addJoint(0, pin.JointModelRY(), pin.SE3(np.eye(3), np.array([0.3, 0.2, 0.0])), "th2")
    model.appendBodyToJoint(j3, rod(m, [0, 0, c / 2], [m * c**2 / 12, m * c**2 / 12, 1e-4]), pin.SE3.Identity())
    return model, [(j2, [0.3, 0.2, 0.1], j3, [0, 0, c])]


class PinConstrained:
    def __init__(self, build):
        self.model, loops = build()
        self.data = self.model.createData()
        self.cms, self.cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
        for ja, pa, jb, pb in loops:
            cm = pin.RigidConstraintModel(
                pin.ContactType.CONTACT_3D,
                self.model,
                ja,
                pin.SE3(np.eye(3), np.array(pa, float)),
                jb,
                pin.SE3(np.eye(3), np.array(pb, float)),
                pin.ReferenceFrame.LOCAL,
            )
            self.cms.append(cm)
            self.cds.append(cm.createData())
        pin.initConstraintDynamics(self.model, self.data, self.cms, self.cds)
        self.prox = pin.ProximalSettings(1e-12, 1e-12, 10)
        self.tau = np.zeros(self.model.nv)

    def qdd(self, q, v):
        return pin.constraintDynamics(self.model, self.data, q, v, self.tau, self.cms, self.cds, self.prox)

    def f(self, t, y):
        n = self.model.nq
        return np.concatenate([y[n:], self.qdd(y[:n], y[n:])])


def per_call(fn, *args, repeat=20000):
    fn(*args)
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn(*args)
    return (time.perf_counter() - t0) / repeat


def front_time(points, err):
    """Time at error `err` by log-log interpolation over (error, seconds) points (None outside)."""
    pts = sorted(points)
    for (e0, s0), (e1, s1) in zip(pts, pts[1:]):
        if e0 <= err <= e1 and e0 > 0:
            w = (np.log(err) - np.log(e0)) / (np.log(e1) - np.log(e0))
            return float(np.exp(np.log(s0) + w * (np.log(s1) - np.log(s0))))
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="also write the report to this file")
    ap.add_argument("--t-end", type=float, default=10.0)
    args = ap.parse_args(argv)
    from dynamica.runtime.integrators.timing import seconds_per_call

    lines = [
        f"dynamica {dynamica.__version__}, pinocchio {pin.__version__}; per-call times are means over 20 000 calls"
    ]
    for name, build in (("fourbar", pin_fourbar), ("rssr", pin_rssr)):
        dm = dynamica.load(str(ROOT / "models" / f"{name}.yaml"))
        pc = PinConstrained(build)
        q, qd = dm.assemble()
        a_dyn, a_pin = dm.qdd(q, qd), pc.qdd(q, qd)
        agree = float(np.abs(a_dyn - a_pin).max() / max(1.0, np.abs(a_pin).max()))
        p, out = dm.param_vector(), np.empty(dm.n)
        t_dyn = per_call(dm.module.qdd, 0.0, q, qd, p, out)
        t_pin = per_call(pc.qdd, q, qd)
        t_c = seconds_per_call(dm)
        lines += ["", f"{name}: n = {dm.n}, {len(dm.module.INFO['constraints'])} constraint equations; "
                      f"q'' agrees with Pinocchio to {agree:.1e} (relative)",
                  f"  per call from Python: dynamica {t_dyn * 1e6:.2f} us, pinocchio {t_pin * 1e6:.2f} us "
                  f"(ratio {t_pin / t_dyn:.1f}); dynamica's RHS from C {t_c * 1e6:.3f} us"]
        y0 = np.concatenate([q, qd])
        ref = solve_ivp(pc.f, (0, args.t_end), y0, method="DOP853", rtol=1e-13, atol=1e-13).y[:dm.n, -1]
        runs = {"dynamica adams": [], "pinocchio+DOP853": [], "pinocchio+LSODA": []}
        from dynamica.runtime.integrators.compiled_adams import solve

        def timed(fn):
            fn()                                            # warm-up (first-use costs)
            t0 = time.perf_counter()
            out = fn()
            return out, time.perf_counter() - t0
        for tol in (1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10):
            res, sec = timed(lambda: solve(dm, (0, args.t_end), y0, rtol=tol, atol=tol))
            runs["dynamica adams"].append((float(np.abs(res.y[:dm.n, -1] - ref).max()), sec, tol))
            for method in ("DOP853", "LSODA"):
                sol, sec = timed(lambda: solve_ivp(pc.f, (0, args.t_end), y0, method=method, rtol=tol, atol=tol))
                runs[f"pinocchio+{method}"].append((float(np.abs(sol.y[:dm.n, -1] - ref).max()), sec, tol))
        lines.append(f"  {args.t_end:g} s simulation: error of q(T) against Pinocchio + DOP853 at 1e-13, wall seconds")
        lines.append(f"  {'tol':>8} " + " ".join(f"{k:>26}" for k in runs))
        for k in range(len(runs["dynamica adams"])):
            row = [runs[r][k] for r in runs]
            lines.append(f"  {row[0][2]:8.0e} " + " ".join(f"{e:12.2e} {s:10.4f} s  " for e, s, _ in row))
        for err in (1e-4, 1e-6, 1e-8):
            td = front_time([(e, s) for e, s, _ in runs["dynamica adams"]], err)
            tp = [front_time([(e, s) for e, s, _ in runs[r]], err) for r in ("pinocchio+DOP853", "pinocchio+LSODA")]
            best = min([x for x in tp if x], default=None)
            if td and best:
                lines.append(f"  at error {err:.0e}: dynamica {td:.4f} s, best Pinocchio+scipy {best:.4f} s: "
                             f"{best / td:.1f}x faster")
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
