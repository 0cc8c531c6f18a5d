"""Idea (1) of docs/loops.md "Stepping across the singular instant", measured as a prototype
outside the compiled loop: adams up to where J's scaled smallest singular value falls below
EPS, a polynomial in t fitted to q and q' over the last stretch extrapolated to a time as far
past the singular instant, the state assembled there onto the branch nearest the prediction
(`assemble`, the crank held: Gauss-Newton from the prediction), adams restarted from it.
Oracle: tests/oracles/changepoint.py (the branch's one-coordinate equation in 40 digits).
Prints the crank-angle error after the crossing against the plain adams run."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import dynamica  # noqa: E402

from oracles import changepoint  # noqa: E402

T_END = 2.5


def sigma(model, q, rank):
    """J's rank-th singular value over its largest (rank: J's rank away from the singularity)."""
    from dynamica.runtime.assembly import jacobian
    s = np.linalg.svd(jacobian(model, q)[0], compute_uv=False)
    return s[rank - 1] / s[0]


def stepped(model, q0, qd0, rtol, eps, deg):
    """adams with the singular instant stepped across by extrapolation: (t, crank angle) after it, gap."""
    i1 = model.coordinates.index("th1")
    coarse = dynamica.simulate(model, t_end=T_END, rtol=rtol, atol=rtol, output_step=1e-4, q0=q0, qd0=qd0)
    from dynamica.runtime.assembly import jacobian
    s0 = np.linalg.svd(jacobian(model, q0)[0], compute_uv=False)
    rank = int(np.sum(s0 > 1e-6 * s0[0]))
    sig = np.array([sigma(model, q, rank) for q in coarse.q])
    below = np.nonzero(sig < eps)[0]
    if len(below) == 0:
        raise RuntimeError("no rank drop found")
    ta = coarse.t[below[0] - 1]
    ts = coarse.t[below[0] + np.argmin(sig[below[0]:below[0] + 2000])]
    tb = 2 * ts - ta
    w = 4 * (tb - ta)
    pre = dynamica.simulate(model, t_end=ta, rtol=rtol, atol=rtol, output_step=(ta - max(ta - w, 0)) / 40,
                            q0=q0, qd0=qd0)
    sel = pre.t >= ta - w - 1e-12
    tt, qq, vv = (pre.t[sel] - ta) / w, pre.q[sel], pre.qd[sel]
    x = (tb - ta) / w
    qp = np.array([np.polyval(np.polyfit(tt, qq[:, j], deg), x) for j in range(qq.shape[1])])
    vp = np.array([np.polyval(np.polyfit(tt, vv[:, j], deg), x) for j in range(vv.shape[1])])
    qb, vb = model.assemble(qp, vp)
    post = dynamica.simulate(model, t0=tb, t_end=T_END, rtol=rtol, atol=rtol, output_step=(T_END - tb) / 40,
                             q0=qb, qd0=vb)
    return post.t, post.q[:, i1], tb - ta


def main():
    model = dynamica.load(str(ROOT / "tests" / "data" / "changepoint.yaml"))
    q0, qd0 = model.assemble()
    bodies = [(1.0, 4.0 / 12, 1.0, 0.0), (2.0, 16.0 / 6, 4.0 / 3, 0.1), (1.0, 9.0 / 12, 1.5, 0.0)]
    branch = changepoint.Branch(3, 2, 4, 3, bodies, 9.81)
    i1 = model.coordinates.index("th1")
    sd0 = qd0[i1]
    epss = [float(a) for a in sys.argv[1].split(",")] if len(sys.argv) > 1 else [1e-2]
    degs = [int(a) for a in sys.argv[2].split(",")] if len(sys.argv) > 2 else [8]
    print(f"{'rtol':>6} {'plain adams':>12} {'eps':>6} {'deg':>4} {'gap s':>9} {'stepped':>10}")
    rtols = [float(a) for a in sys.argv[3].split(",")] if len(sys.argv) > 3 else [1e-8, 1e-10, 1e-12]
    for rtol in rtols:
        res = dynamica.simulate(model, t_end=T_END, rtol=rtol, atol=rtol, output_step=0.01)
        sel = res.t >= 2.05
        ref = changepoint.reference(branch, q0, sd0, np.r_[0.0, res.t[sel]], rtol=1e-11)[0][1:]
        plain = float(np.abs(res.q[sel, i1] - ref).max())
        for eps in epss:
            for deg in degs:
                t, s, gap = stepped(model, q0, qd0, rtol, eps, deg)
                ref = changepoint.reference(branch, q0, sd0, np.r_[0.0, t], rtol=1e-11)[0][1:]
                print(f"{rtol:6.0e} {plain:12.2e} {eps:6.0e} {deg:4d} {gap:9.2e} "
                      f"{float(np.abs(s - ref).max()):10.2e}", flush=True)


if __name__ == "__main__":
    main()
