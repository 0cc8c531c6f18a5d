"""Change-point four-bars through their flat configuration with the default integrator (adams).

    python benchmarks/bench_changepoint.py [--random 20] [--rtol 1e-8 1e-10 1e-12] [--method adams ida]
                                           [--timeout 600] [--random-rtol 1e-12] [--random-method radau]

1. tests/data/changepoint.yaml (l0, l1, l2, l3 = 3, 2, 4, 3) over 2.5 s, through the crossing near
   t = 1.9: the largest crank-angle error before t = 1.8 and after it, against
   tests/oracles/changepoint.py (the smooth branch's one-coordinate equation in 40 digits, DOP853
   at 1e-13; never off the constraint manifold), for each rtol (= atol).
2. Random Grashof change-point four-bars drawn as in tests/runtime/test_changepoint_property.py
   (a fixed seed), integrated until the crank is 0.5 rad past the flat configuration; the
   crank-angle error against tests/oracles/changepoint_quadrature.py (energy and quadrature) and the
   RHS calls, with --random-method (default adams) at --random-rtol; a mechanism passes when the error
   is within 100 x rtol.

--method: the integrators of part 1 (each rtol, each method, in the same run: its peer), with their
RHS (ida: residual) calls; a run stopped after --timeout seconds is a row that says so.

--step-across: the prototype of docs/loops.md's "stepping across": integrate until the scaled
smallest singular value of J (sigma_min / sigma_max) falls below --threshold at an output row
(output every 1e-3 s), extrapolate q, q' from the last four rows (Hermite, degree 7) to the
singular instant of the extrapolated path and as far again past it, project that prediction onto
the constraints (Newton from it: the nearest branch), and restart adams there.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import dynamica  # noqa: E402

from oracles import changepoint  # noqa: E402
from oracles import changepoint_quadrature as cq  # noqa: E402

DATA = ROOT / "tests" / "data" / "changepoint.yaml"


def _bodies(l0, l1, l2, l3):
    return cq.bodies(l0, l1, l2, l3)


def _ratio(model, q, p, rank=2):
    """sigma_rank / sigma_1 of J (the four-bar's loop: rank 2 at a regular configuration)."""
    m = len(model.constraints(q))
    J = np.zeros((m, model.n))
    model.module.con_jac(0.0, np.ascontiguousarray(q), p, J, np.zeros(m))
    s = np.linalg.svd(J, compute_uv=False)
    return s[rank - 1] / s[0]


def across(model, t_end, q0, qd0, rtol, params, threshold, stride=1):
    """Times and crank angles (every 1e-3 s), stepping across the first singular instant (see
    --step-across); also the time stepped over."""
    from scipy.interpolate import KroghInterpolator
    p = model.param_vector(params)
    dt = 1e-3
    res = dynamica.simulate(model, t_end=t_end, rtol=rtol, atol=rtol, output_step=dt, q0=q0, qd0=qd0,
                            params=params)
    ratios = np.array([_ratio(model, q, p) for q in res.q])
    below = np.flatnonzero(ratios < threshold)
    i = model.coordinates.index("th1")
    if below.size == 0 or below[0] < 3 * stride + 1:
        return res.t, res.q[:, i], 0.0
    k = below[0]
    rows = np.arange(k - 3 * stride, k + 1, stride)
    ts = res.t[rows]
    xi = np.repeat(ts, 2)
    yi = np.empty((8, 2 * model.n))
    yi[0::2, :model.n] = res.q[rows]
    yi[1::2, :model.n] = res.qd[rows]
    yi[0::2, model.n:] = res.qd[rows]
    yi[1::2, model.n:] = [model.qdd(q, v, params=params) for q, v in zip(res.q[rows], res.qd[rows])]
    poly = KroghInterpolator(xi, yi)
    grid = ts[-1] + np.linspace(0.0, 20 * dt, 2001)
    r = [_ratio(model, poly(t)[:model.n], p) for t in grid]
    t_sing = grid[int(np.argmin(r))]
    t_b = 2 * t_sing - ts[-1]
    y = np.ascontiguousarray(poly(t_b), dtype=float)
    from dynamica.runtime.assembly import PROJECT_ITERATIONS, PROJECT_TOL
    model.module.project(t_b, y, p, np.array([PROJECT_TOL, PROJECT_ITERATIONS], dtype=float))
    rest = dynamica.simulate(model, t_end=t_end - t_b, rtol=rtol, atol=rtol, output_step=dt,
                             q0=y[:model.n], qd0=y[model.n:], params=params)
    t_all = np.concatenate([res.t[:k + 1], t_b + rest.t])
    s_all = np.concatenate([res.q[:k + 1, i], rest.q[:, i]])
    return t_all, s_all, t_b - ts[-1]


class _Timeout(Exception):
    pass


def _timed(run, timeout):
    """run() stopped after `timeout` seconds (SIGALRM: the integrators step from Python)."""
    import signal

    def stop(signum, frame):
        raise _Timeout

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(int(timeout))
    try:
        return run()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def fixed(model, rtols, methods=("adams",), timeout=600):
    """(method, rtol, error before t = 1.8, after, seconds, calls, passages or the failure) per run."""
    q0, qd0 = model.assemble()
    i = model.coordinates.index("th1")
    branch = changepoint.Branch(3, 2, 4, 3, _bodies(3, 2, 4, 3), 9.81)
    times = np.linspace(0.0, 2.5, 251)
    ref, _ = changepoint.reference(branch, q0, qd0[i], times, rtol=1e-13)
    rows = []
    for rtol in rtols:
        for method in methods:
            t0 = time.perf_counter()
            try:
                res = _timed(lambda: dynamica.simulate(model, t_end=2.5, rtol=rtol, atol=rtol, output_step=0.01,
                                                       method=method), timeout)
            except _Timeout:
                rows.append((method, rtol, math.nan, math.nan, time.perf_counter() - t0, 0,
                             f"stopped after {timeout} s"))
                continue
            except Exception as exc:  # noqa: BLE001 - reported as a row
                rows.append((method, rtol, math.nan, math.nan, time.perf_counter() - t0, 0, str(exc)[:60]))
                continue
            sec = time.perf_counter() - t0
            err = np.abs(res.q[:, i] - ref)
            rows.append((method, rtol, float(err[times < 1.8].max()), float(err[times >= 1.8].max()), sec, res.nfev,
                         f"{len(res.info.get('singular_passages', ()))} passage(s)"))
    return rows


def draw(rng):
    l1 = rng.uniform(0.5, 2.0)
    a, b = rng.uniform(0.3, 2.0, 2)
    return ((l1 + a, l1, l1 + a + b, l1 + b), int(rng.choice([1, -1])),
            rng.uniform(-2 * math.pi + 0.3, -0.3), rng.uniform(5.0, 60.0))


def crossing_error(model, lengths, sign, s0, extra, rtol, method=None):
    l0, l1, l2, l3 = lengths
    fb, sdot0, q0, qd0, t_end = cq.crossing_start(lengths, sign, s0, extra)
    params = {"l0": l0, "l1": l1, "l2": l2, "l3": l3}
    try:
        res = dynamica.simulate(model, t_end=t_end, rtol=rtol, atol=rtol, output_step=t_end / 50,
                                q0=q0, qd0=qd0, params=params, method=method)
    except Exception as exc:  # noqa: BLE001 - reported as a row
        return float("nan"), type(exc).__name__
    s = res.q[:, model.coordinates.index("th1")]
    if s[-1] < 0.4 or not np.all(np.diff(s) > 0):
        return float("inf"), "branch"
    T, rate = cq.times(fb, s0, sdot0, s)
    return float(np.abs((T - res.t) * rate).max()), f"{res.nfev} calls"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--random", type=int, default=20)
    ap.add_argument("--rtol", type=float, nargs="+", default=[1e-8, 1e-10, 1e-12])
    ap.add_argument("--random-rtol", type=float, default=1e-12)
    ap.add_argument("--random-method", default=None, help="the integrator of part 2 (default adams)")
    ap.add_argument("--step-across", action="store_true")
    ap.add_argument("--method", nargs="+", default=["adams"])
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    model = dynamica.load(str(DATA))
    if args.step_across:
        q0, qd0 = model.assemble()
        i = model.coordinates.index("th1")
        branch = changepoint.Branch(3, 2, 4, 3, _bodies(3, 2, 4, 3), 9.81)
        print("step across (prototype), change-point four-bar 3-2-4-3, 2.5 s")
        print(f"{'threshold':>9} {'stride s':>8} {'rtol':>8} {'stepped s':>9} {'err t<1.8':>10} {'err t>=1.8':>10}")
        for thr, stride in ((1e-2, 5), (3e-3, 2), (1e-3, 1)):
            for rtol in args.rtol:
                t, s, jump = across(model, 2.5, q0, qd0, rtol, {}, thr, stride)
                sel = np.arange(0, len(t), 10)
                ref, _ = changepoint.reference(branch, q0, qd0[i], t[sel], rtol=1e-13)
                err = np.abs(s[sel] - ref)
                early = t[sel] < 1.8
                print(f"{thr:9.0e} {stride * 1e-3:8.0e} {rtol:8.0e} {jump:9.2e} {err[early].max():10.2e} "
                      f"{err[~early].max():10.2e}")
        return
    print(f"change-point four-bar 3-2-4-3, 2.5 s; dynamica {dynamica.__version__}")
    print(f"{'method':>8} {'rtol':>8} {'err t<1.8':>10} {'err t>=1.8':>10} {'seconds':>8} {'calls':>8}  note")
    for method, rtol, before, after, sec, calls, note in fixed(model, args.rtol, args.method, args.timeout):
        print(f"{method:>8} {rtol:8.0e} {before:10.2e} {after:10.2e} {sec:8.2f} {calls:8d}  {note}", flush=True)
    if args.random:
        rng = np.random.default_rng(26)
        rtol = args.random_rtol
        print(f"\nrandom change-point four-bars, {args.random_method or 'adams'} at rtol {rtol:.0e} "
              "(pass: error <= 100 rtol)")
        n_pass = 0
        for k in range(args.random):
            lengths, sign, s0, extra = draw(rng)
            err, note = crossing_error(model, lengths, sign, s0, extra, rtol, args.random_method)
            ok = err <= 100 * rtol
            n_pass += ok
            print(f"{k:3d} {' '.join(f'{x:.3f}' for x in lengths)} {sign:+d} {err:10.2e} {note}{' pass' if ok else ''}")
        print(f"passed {n_pass} of {args.random}")


if __name__ == "__main__":
    main()
