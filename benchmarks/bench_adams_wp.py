"""Work-precision benchmark for dynamica's Adams integrator.

Compares, at rtol = atol = tol for tol in 1e-4 ... 1e-12:

* dynamica compiled Adams  (``dynamica.runtime.integrators.compiled_adams.solve`` with a Python callable)
* dynamica Adams OdeSolver (``solve_ivp(..., method=dynamica.runtime.Adams)``: scipy's Python
  driver, one compiled step per call; the same steps and numbers as the compiled loop)
* CVODE-Adams              (scikit-sundae ``sksundae.cvode.CVODE(method="Adams")``)
* scipy LSODA and DOP853

on Pleiades (t in [0, 3]), Arenstorf over one period and DETEST D5 (Kepler, e = 0.9, [0, 20]);
problems and reference values from tests/data (README.md, detest_public.json; sources cited there).

A second section sweeps dyn-C and CVODE alone over 37 tolerances (1e-3 ... 1e-12, quarter
decades) and compares them per digit band in three ways (see ``dense_sweep``), because one end
point's digits scatter by a few tenths between neighbouring tolerances; it also counts attempted
steps (CVODE: distinct times of its RHS calls) to show evaluations per step.

Score: 'mescd' digits = -log10(max_i |y_i - ref_i| / max(|ref_i|, 1)) at the end point.
nfev: RHS evaluations as reported by each solver.  For CVODE two numbers are kept: ``nfe``
(CVodeGetNumRhsEvals, the number the testsets baseline uses; it excludes the RHS calls of the
difference-quotient Jacobian) and ``calls`` (every call of the Python RHS, counted by a wrapper,
i.e. including the DQ Jacobian).  scikit-sundae 1.2.0 does not expose the nonlinear solver:
CVODE always runs its default Newton iteration (dense linear solver, DQ Jacobian), not
fixed-point iteration.  Wall time: best of ``--repeat`` (default 3) runs.

    pip install scikit-sundae==1.2.0
    python benchmarks/bench_adams_wp.py                 # full run, saves results/adams_wp.txt
    python benchmarks/bench_adams_wp.py --repeat 1 --no-save
    python benchmarks/bench_adams_wp.py --no-dense      # without the 37-tolerance sweep
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import textwrap
import time
from importlib import metadata
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

TESTSETS = Path(__file__).resolve().parents[1] / "tests" / "data"
TOLS = [1e-4, 1e-6, 1e-8, 1e-10, 1e-12]
METHODS = ["dyn-C", "dyn-Py", "CVODE", "LSODA", "DOP853"]
METHOD_DOC = {
    "dyn-C": "dynamica compiled Adams (runtime.compiled_adams.solve, Python callable RHS)",
    "dyn-Py": "dynamica Adams OdeSolver (solve_ivp(method=dynamica.runtime.Adams): scipy's driver, compiled step)",
    "CVODE": "CVODE-Adams, scikit-sundae (Newton + dense DQ Jacobian; nfev = CVodeGetNumRhsEvals)",
    "LSODA": "scipy.integrate.solve_ivp(method='LSODA')",
    "DOP853": "scipy.integrate.solve_ivp(method='DOP853')",
}


# ----------------------------------------------------------------------------------- problems
def pleiades():
    m = np.arange(1.0, 8.0)

    def f(t, u):
        x, y, vx, vy = u[0:7], u[7:14], u[14:21], u[21:28]
        dx = x[None, :] - x[:, None]          # dx[i, j] = x_j - x_i
        dy = y[None, :] - y[:, None]
        r = (dx * dx + dy * dy) ** 1.5
        np.fill_diagonal(r, 1.0)
        w = m[None, :] / r
        np.fill_diagonal(w, 0.0)
        out = np.empty(28)
        out[0:7] = vx
        out[7:14] = vy
        out[14:21] = (w * dx).sum(axis=1)
        out[21:28] = (w * dy).sum(axis=1)
        return out

    y0 = np.array([3, 3, -1, -3, 2, -2, 2,
                   3, -3, 2, 0, 0, -4, 4,
                   0, 0, 0, 0, 0, 1.75, -1.5,
                   0, 0, 0, -1.25, 1, 0, 0], dtype=float)
    ref = np.array([
        0.3706139143970502, 0.3237284092057233e1, -0.3222559032418324e1, 0.6597091455775310,
        0.3425581707156584, 0.1562172101400631e1, -0.7003092922212495, -0.3943437585517392e1,
        -0.3271380973972550e1, 0.5225081843456543e1, -0.2590612434977470e1, 0.1198213693392275e1,
        -0.2429682344935824, 0.1091449240428980e1, 0.3417003806314313e1, 0.1354584501625501e1,
        -0.2590065597810775e1, 0.2025053734714242e1, -0.1155815100160448e1, -0.8072988170223021,
        0.5952396354208710, -0.3741244961234010e1, 0.3773459685750630, 0.9386858869551073,
        0.3667922227200571, -0.3474046353808490, 0.2344915448180937e1, -0.1947020434263292e1])
    return "PLEI(0,3)", f, (0.0, 3.0), y0, ref


def arenstorf():
    mu = 0.012277471
    mup = 1.0 - mu

    def f(t, u):
        y1, y2, v1, v2 = u
        d1 = ((y1 + mu) ** 2 + y2 ** 2) ** 1.5
        d2 = ((y1 - mup) ** 2 + y2 ** 2) ** 1.5
        return np.array([
            v1, v2,
            y1 + 2 * v2 - mup * (y1 + mu) / d1 - mu * (y1 - mup) / d2,
            y2 - 2 * v1 - mup * y2 / d1 - mu * y2 / d2])

    y0 = np.array([0.994, 0.0, 0.0, -2.00158510637908252240537862224])
    T = 17.0652165601579625588917206249
    return "AREN(0,T)", f, (0.0, T), y0, y0.copy()


def detest_d5():
    e = 0.9

    def f(t, u):
        y1, y2, y3, y4 = u
        r3 = (y1 * y1 + y2 * y2) ** 1.5
        return np.array([y3, y4, -y1 / r3, -y2 / r3])

    y0 = np.array([1 - e, 0.0, 0.0, math.sqrt((1 + e) / (1 - e))])
    ref = np.array(json.loads((TESTSETS / "detest_public.json").read_text())["y20"]["D5"])
    return "D5(0,20) e=0.9", f, (0.0, 20.0), y0, ref


PROBLEMS = [pleiades, arenstorf, detest_d5]

# CVODE-Adams baseline (digits, nfe) printed in tests/data/README.md, for a cross-check
README_CVODE = {
    "PLEI(0,3)": [(0.70, 431), (2.30, 702), (4.16, 1226), (6.04, 1725), (7.80, 2740)],
    "AREN(0,T)": [(0.80, 342), (0.69, 549), (2.95, 952), (4.79, 1370), (6.04, 1956)],
    "D5(0,20) e=0.9": [(1.39, 559), (2.93, 906), (5.18, 1322), (6.35, 1874), (8.22, 2778)],
}


def mescd(y, ref):
    err = np.max(np.abs(y - ref) / np.maximum(np.abs(ref), 1.0))
    return float("inf") if err == 0 else -math.log10(err)


# ------------------------------------------------------------------------------------ solvers
class Counted:
    """Wrap f(t, y) and count calls."""

    def __init__(self, f):
        self.f = f
        self.n = 0

    def __call__(self, t, y):
        self.n += 1
        return self.f(t, y)


def run_dyn_c(f, span, y0, tol):
    from dynamica.runtime.integrators.compiled_adams import solve
    r = solve(f, span, y0, t_eval=np.array([span[1]]), rtol=tol, atol=tol)
    return r.y[:, -1], int(r.nfev), {}


def run_dyn_py(f, span, y0, tol):
    from dynamica.runtime import Adams
    s = solve_ivp(f, span, y0, method=Adams, rtol=tol, atol=tol)
    if not s.success:
        raise RuntimeError(s.message)
    return s.y[:, -1], int(s.nfev), {}


def run_cvode(f, span, y0, tol):
    from sksundae.cvode import CVODE
    g = Counted(f)

    def rhs(t, y, yp):
        yp[:] = g(t, y)

    solver = CVODE(rhs, method="Adams", rtol=tol, atol=tol, max_num_steps=1_000_000)
    s = solver.solve(np.array([span[0], span[1]]), y0)
    if not s.success:
        raise RuntimeError(s.message)
    if abs(s.t[-1] - span[1]) > 1e-12 * max(1.0, abs(span[1])):
        raise RuntimeError(f"CVODE stopped at t = {s.t[-1]}")
    return np.asarray(s.y)[-1, :], int(s.nfev), {"calls": g.n, "njev": int(s.njev)}


def run_scipy(method):
    def run(f, span, y0, tol):
        s = solve_ivp(f, span, y0, method=method, rtol=tol, atol=tol)
        if not s.success:
            raise RuntimeError(s.message)
        return s.y[:, -1], int(s.nfev), {}
    return run


RUNNERS = {"dyn-C": run_dyn_c, "dyn-Py": run_dyn_py, "CVODE": run_cvode,
           "LSODA": run_scipy("LSODA"), "DOP853": run_scipy("DOP853")}


def measure(method, f, span, y0, ref, tol, repeat):
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            y, nfev, extra = RUNNERS[method](f, span, y0, tol)
        except Exception as exc:  # noqa: BLE001 - report and go on
            return {"error": f"{type(exc).__name__}: {exc}"[:120]}
        best = min(best, time.perf_counter() - t0)
        out = (y, nfev, extra)
    y, nfev, extra = out
    return {"digits": mescd(y, ref), "nfev": nfev, "time": best, **extra}


# ----------------------------------------------------------------------------------- analysis
def front(points):
    """Pareto front (digits, nfev): sorted by nfev, keep points that improve digits."""
    pts = sorted((n, d) for d, n in points if math.isfinite(d))
    out, best = [], -float("inf")
    for n, d in pts:
        if d > best:
            out.append((d, n))
            best = d
    return out


def nfev_at_digits(points, d):
    """nfev needed for d digits, from points (digits, nfev) of one method.

    Inside the digit range of the Pareto front: log-linear interpolation between neighbouring
    front points (flag '').  Outside: least-squares line log10(nfev) = a + b*digits over all
    front points (flag '~', extrapolated; less reliable)."""
    fr = front(points)
    if len(fr) < 2:
        return float("nan"), "?"
    ds = np.array([p[0] for p in fr])
    ls = np.log10([p[1] for p in fr])
    if ds[0] <= d <= ds[-1]:
        return 10 ** float(np.interp(d, ds, ls)), ""
    b, a = np.polyfit(ds, ls, 1)
    return 10 ** float(a + b * d), "~"


# ------------------------------------------------------------------------------ dense sweep
DENSE_TOLS = [10.0 ** (-3 - j / 4) for j in range(37)]        # 1e-3 ... 1e-12, quarter decades
BANDS = [(0, 2), (2, 4), (4, 6), (6, 8), (8, 11)]              # digit bands of the summary


def sweep_point(f, span, y0, ref, tol):
    """dyn-C and CVODE at one tol: (digits, nfev, attempted steps) each, or None for a failed run.

    Attempted steps: dyn-C accepted + rejected. CVODE: the distinct times at which it called the
    RHS. Its corrector iterations and DQ Jacobian evaluate at the step's new time, so that is about
    one per attempted step; it also counts the call at t0 and the probes of the initial step
    (about 1 %), and a retry at the same time counts once."""
    from sksundae.cvode import CVODE

    from dynamica.runtime.integrators.compiled_adams import solve
    dyn = cv = None
    try:
        r = solve(f, span, y0, t_eval=np.array([span[1]]), rtol=tol, atol=tol)
        dyn = (mescd(r.y[:, -1], ref), int(r.nfev), int(r.nsteps + r.nrejected))
    except Exception as exc:  # noqa: BLE001 - report and go on
        print(f"  dyn-C failed at tol {tol:.1e}: {exc}", file=sys.stderr)
    times = []

    def rhs(t, y, yp):
        times.append(t)
        yp[:] = f(t, y)

    c = CVODE(rhs, method="Adams", rtol=tol, atol=tol, max_num_steps=1_000_000).solve(
        np.array([span[0], span[1]]), y0)
    if c.success:
        cv = (mescd(np.asarray(c.y)[-1, :], ref), int(c.nfev), len(set(times)))
    else:
        print(f"  CVODE failed at tol {tol:.1e}: {c.message}", file=sys.stderr)
    return dyn, cv


def dense_sweep(problems):
    """Lines of the dense-sweep section: dyn-C against CVODE-Adams at 37 tolerances per problem.

    A single end point's digits scatter by a few tenths from one tolerance to the next (see the
    sweep), so 'equal accuracy' is read three ways, per digit band: (a) each dyn-C point against
    CVODE's Pareto front interpolated at its digits, (b) each CVODE point against dyn-C's front
    (the same comparison from the other side: a front picks each method's lucky points), and
    (c) least-squares quadratics digits(log10 nfev) of both methods, compared at the band centre.
    """
    lines = ["", "Dense sweep: dyn-C vs CVODE-Adams at 37 tolerances (1e-3 ... 1e-12, quarter decades)",
             ("Per digit band: geometric mean of the nfev ratio dyn-C/CVODE at equal digits, (a) at "
              "dyn-C's points on CVODE's front, (b) at CVODE's points on dyn-C's front, (c) between "
              "least-squares fits at the band centre; n = points in the band (a / b).  eval/step = "
              "nfev per attempted step (median over the sweep)."),
             ""]
    hdr = (f"{'problem':16s} {'band':>6s} | {'(a)':>5s} {'(b)':>5s} {'(c)':>5s} {'n':>6s} | "
           f"{'dyn-C eval/step':>15s} {'CVODE eval/step':>15s}")
    lines += [hdr, "-" * len(hdr)]
    verdict, steps = {}, {}
    for mk in problems:
        name, f, span, y0, ref = mk()
        pts = [sweep_point(f, span, y0, ref, tol) for tol in DENSE_TOLS]
        print(f"  dense sweep {name}: done", file=sys.stderr, flush=True)
        # finite digits only (a failed run is None; an exact end point would give inf)
        dyn = [(p[0][0], p[0][1]) for p in pts if p[0] and math.isfinite(p[0][0])]
        cv = [(p[1][0], p[1][1]) for p in pts if p[1] and math.isfinite(p[1][0])]
        eps_d = np.median([p[0][1] / p[0][2] for p in pts if p[0]])
        eps_c = np.median([p[1][1] / p[1][2] for p in pts if p[1]])
        fd = np.polyfit(np.log10([n for _, n in dyn]), [d for d, _ in dyn], 2)
        fc = np.polyfit(np.log10([n for _, n in cv]), [d for d, _ in cv], 2)

        def n_fit(fit, points, dig):
            # invert the fit on the nfev range the method was run on
            grid = np.linspace(math.log10(min(n for _, n in points)), math.log10(max(n for _, n in points)), 20001)
            return 10 ** grid[np.argmin(np.abs(np.polyval(fit, grid) - dig))]

        for lo, hi in BANDS:
            a = [n / nfev_at_digits(cv, d)[0] for d, n in dyn
                 if lo <= d < hi and nfev_at_digits(cv, d)[1] == ""]
            b = [nfev_at_digits(dyn, d)[0] / n for d, n in cv
                 if lo <= d < hi and nfev_at_digits(dyn, d)[1] == ""]
            mid = 0.5 * (lo + hi)
            inside = all(min(d for d, _ in m) <= mid <= max(d for d, _ in m) for m in (dyn, cv))
            c = n_fit(fd, dyn, mid) / n_fit(fc, cv, mid) if inside else float("nan")
            if not a and not b:
                continue
            gma = math.exp(np.mean(np.log(a))) if a else float("nan")
            gmb = math.exp(np.mean(np.log(b))) if b else float("nan")
            verdict[(name, lo, hi)] = (gma, gmb, c)
            lines.append(f"{name:16s} {f'{lo}-{hi}':>6s} | {gma:5.2f} {gmb:5.2f} {c:5.2f} "
                         f"{f'{len(a)}/{len(b)}':>6s} | {eps_d:15.2f} {eps_c:15.2f}")
        steps[name] = [(pts[j][0][2], pts[j][1][2]) for j in (4, 36) if pts[j][0] and pts[j][1]]
        lines.append(f"{'':16s} {'':6s}   attempted steps at tol 1e-4 / 1e-8 / 1e-12: dyn-C "
                     + " / ".join(str(pts[j][0][2]) if pts[j][0] else "-" for j in (4, 20, 36)) + ", CVODE "
                     + " / ".join(str(pts[j][1][2]) if pts[j][1] else "-" for j in (4, 20, 36)))
        lines.append(f"{'':16s} {'':6s}   dyn-C points (digits/nfev): "
                     + " ".join(f"{d:.2f}/{n}" for d, n in dyn[::4]) + "  (every 4th)")
        lines.append(f"{'':16s} {'':6s}   CVODE points (digits/nfev): "
                     + " ".join(f"{d:.2f}/{n}" for d, n in cv[::4]))
    return lines, verdict, steps


def dense_reading(verdict, steps):
    """The dense sweep's reading, from its numbers: per problem, the digit bands in which dyn-C
    needs more or fewer evaluations than CVODE-Adams (geometric mean of the measures (a), (b), (c)
    of the band), and the ratio of attempted steps at the loosest and the tightest tolerance."""
    parts = []
    for name in dict.fromkeys(k[0] for k in verdict):
        rows = [(lo, hi, [v for v in verdict[(name, lo, hi)] if math.isfinite(v)])
                for (nm, lo, hi) in verdict if nm == name]
        means = [(lo, hi, math.exp(np.mean(np.log(v)))) for lo, hi, v in rows if v]
        lose = [f"{lo}-{hi} ({m:.2f})" for lo, hi, m in means if m > 1.0]
        win = [f"{lo}-{hi} ({m:.2f})" for lo, hi, m in means if m <= 1.0]
        parts.append(f"{name}: at most CVODE's nfev in the digit bands {', '.join(win) or 'none'}; "
                     f"more in {', '.join(lose) or 'none'}")
    cells = [(k, math.exp(np.mean(np.log([x for x in v if math.isfinite(x)]))))
             for k, v in verdict.items() if any(math.isfinite(x) for x in v)]
    nall, nwin = len(cells), sum(m <= 1.0 for _, m in cells)
    nlow = sum(k[1] == 0 for k, _ in cells)
    nlow_lose = sum(k[1] == 0 and m > 1.0 for k, m in cells)
    loose = [d / c for v in steps.values() for d, c in v[:1]]
    tight = [d / c for v in steps.values() for d, c in v[1:]]
    text = ("Reading of the dense sweep (geometric mean of (a), (b), (c) per band). " + "; ".join(parts)
            + f". In all, {nwin} of {nall} (problem, band) cells are at or below 1, i.e. the target "
            "'nfev <= CVODE at equal accuracy' holds there")
    if nlow:
        text += ("; no 0-2 digit band is above" if not nlow_lose else "; every 0-2 digit band is above"
                 if nlow_lose == nlow else f"; {nlow_lose} of {nlow} 0-2 digit bands are above")
    text += "."
    if nlow_lose and loose and tight:
        text += (" The eval/step column gives the reason: the Shampine-Gordon PECE step evaluates f "
                 "twice (predictor and corrector), while CVODE's Newton corrector mostly converges in "
                 "one iteration (its DQ-Jacobian calls are not counted in nfe). dyn-C's corrector is "
                 "one order higher (local extrapolation), which pays off as the tolerance tightens: "
                 f"dyn-C attempts {min(tight):.2f}-{max(tight):.2f}x CVODE's steps at 1e-12 but "
                 f"{min(loose):.2f}-{max(loose):.2f}x at 1e-4, too few fewer to make up for the "
                 "second evaluation (this explains the low-accuracy bands, not a high-accuracy cell "
                 "above 1).")
    return text


def machine_info():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    vers = []
    for pkg in ["dynamica", "numpy", "scipy", "scikit-sundae"]:
        try:
            vers.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            vers.append(f"{pkg} ?")
    return [f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
            f"nproc: {os.cpu_count()}  (os.sched_getaffinity: {len(os.sched_getaffinity(0))})",
            f"CPU: {cpu}",
            f"python: {sys.version.split()[0]} ({platform.platform()})",
            "packages: " + ", ".join(vers)]


def fmt(r, key):
    if "error" in r:
        return "ERR"
    v = r[key]
    if key == "digits":
        return f"{v:.2f}"
    if key == "time":
        return f"{v * 1e3:.1f}"
    return str(v)


def events_table(repeat):
    """Cost of events and dense output: the pendulum of tests/runtime/integrators/test_adams_events.py (period 2,
    theta = 0 at t = 0.5 + k) on [0, 30] at rtol = atol = 1e-12, Python RHS for every method."""
    from dynamica.runtime import Adams
    from dynamica.runtime.integrators.compiled_adams import solve
    g = 13.7503716360407456549801915596
    y0 = np.array([math.pi / 2, 0.0])
    crossings = 0.5 + np.arange(30)

    def f(t, y):
        return np.array([y[1], -g * math.sin(y[0])])

    def ev(t, y):
        return y[0]

    def with_events(r):
        return r, r.t_events[0]

    runs = {
        "dyn-C, no events": lambda: (solve(f, (0.0, 30.0), y0, rtol=1e-12, atol=1e-12), None),
        "dyn-C, dense_output": lambda: (solve(f, (0.0, 30.0), y0, rtol=1e-12, atol=1e-12,
                                              dense_output=True), None),
        "dyn-C, 1 event": lambda: with_events(
            solve(f, (0.0, 30.0), y0, rtol=1e-12, atol=1e-12, events=[ev])),
        "dyn-Py (solve_ivp), 1 event": lambda: with_events(
            solve_ivp(f, (0.0, 30.0), y0, method=Adams, rtol=1e-12, atol=1e-12, events=ev)),
        "DOP853 (solve_ivp), 1 event": lambda: with_events(
            solve_ivp(f, (0.0, 30.0), y0, method="DOP853", rtol=1e-12, atol=1e-12, events=ev)),
    }
    out = ["", ("Events: pendulum theta'' = -g sin(theta), period 2, 30 crossings of theta = 0 on [0, 30], "
                f"rtol = atol = 1e-12, Python RHS; ms best of {repeat}"),
           f"{'run':30s} {'ms':>8s} {'nfev':>6s} {'events':>6s} {'max |t_e - (0.5 + k)|':>22s}",
           "-" * 76]
    for name, fn in runs.items():
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            r, te = fn()
            best = min(best, time.perf_counter() - t0)
        err = f"{np.max(np.abs(te - crossings)):.1e}" if te is not None and len(te) == 30 else "-"
        out.append(f"{name:30s} {best * 1e3:8.1f} {int(r.nfev):6d} {len(te) if te is not None else '-':>6} "
                   f"{err:>22s}")
    return out + [""]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "adams_wp.txt"))
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--no-dense", action="store_true", help="skip the 37-tolerance sweep of dyn-C and CVODE")
    args = ap.parse_args()

    # warm-up (imports, compiled-loop set-up) so that no timing includes one-off costs
    _, f, span, y0, _ = detest_d5()
    for m in METHODS:
        RUNNERS[m](f, (0.0, 1.0), y0, 1e-6)

    results = {}  # (problem, tol, method) -> dict
    names = []
    for mk in PROBLEMS:
        name, f, span, y0, ref = mk()
        names.append(name)
        for tol in TOLS:
            for m in METHODS:
                r = measure(m, f, span, y0, ref, tol, args.repeat)
                results[(name, tol, m)] = r
                print(f"  {name} {tol:.0e} {m}: {r}", file=sys.stderr, flush=True)

    lines = ["Adams work-precision benchmark (benchmarks/bench_adams_wp.py)", ""]
    lines += machine_info()
    lines += ["", "Methods:"] + [f"  {m:7s} {METHOD_DOC[m]}" for m in METHODS]
    lines += [("digits = mescd = -log10(max_i |y_i - ref_i| / max(|ref_i|, 1)) at the end point; "
               f"nfev = RHS evaluations; ms = wall time, best of {args.repeat} (machine may be shared)."),
              "CVODE 'calls' = all RHS calls incl. the DQ-Jacobian ones (njev Jacobians x n).", ""]

    # table 1: digits and nfev
    hdr = f"{'problem':16s} {'tol':>6s} |" + "|".join(f" {m:>7s} dig   nfev " for m in METHODS) \
        + f"| {'CVODE calls':>11s}"
    lines += ["Digits and nfev", hdr, "-" * len(hdr)]
    for name in names:
        for tol in TOLS:
            row = f"{name:16s} {tol:6.0e} |"
            for m in METHODS:
                r = results[(name, tol, m)]
                row += f" {fmt(r, 'digits'):>11s} {fmt(r, 'nfev'):>6s} |"
            rc = results[(name, tol, "CVODE")]
            row += f" {rc.get('calls', 'ERR'):>11}"
            lines.append(row)
    lines.append("")

    # table 2: wall time
    hdr = f"{'problem':16s} {'tol':>6s} |" + "|".join(f" {m + ' ms':>10s} " for m in METHODS)
    lines += [f"Wall time (ms, best of {args.repeat})", hdr, "-" * len(hdr)]
    for name in names:
        for tol in TOLS:
            lines.append(f"{name:16s} {tol:6.0e} |" + "|".join(
                f" {fmt(results[(name, tol, m)], 'time'):>10s} " for m in METHODS))
    lines.append("")

    # table 3: dynamica vs CVODE, equal tol and equal digits
    hdr = (f"{'problem':16s} {'tol':>6s} | {'dyn-C/CVODE nfev':>16s} {'(dig C-CV)':>10s} | "
           f"{'CVODE nfev @dyn-C digits':>24s} {'ratio':>6s} | "
           f"{'dyn-Py/CVODE':>12s} {'@digits':>8s}")
    lines += [("dynamica Adams vs CVODE-Adams (nfev = CVodeGetNumRhsEvals). 'equal tol': ratio of "
               "nfev at the same tol (and digit difference dynamica - CVODE). 'equal digits': CVODE "
               "nfev log-linearly interpolated on its Pareto front (digits vs log10 nfev) at the "
               "digits dynamica achieved; '~' = extrapolated beyond CVODE's range."),
              hdr, "-" * len(hdr)]
    summary = {}
    for name in names:
        cv = [(results[(name, t, "CVODE")].get("digits", float("nan")),
               results[(name, t, "CVODE")].get("nfev", 0)) for t in TOLS
              if "error" not in results[(name, t, "CVODE")]]
        for tol in TOLS:
            rc = results[(name, tol, "CVODE")]
            cells = []
            for m in ("dyn-C", "dyn-Py"):
                rd = results[(name, tol, m)]
                if "error" in rd or "error" in rc:
                    cells.append(("ERR", "", "", "ERR"))
                    continue
                eq_tol = rd["nfev"] / rc["nfev"]
                ddig = rd["digits"] - rc["digits"]
                n_cv, flag = nfev_at_digits(cv, rd["digits"])
                eq_dig = rd["nfev"] / n_cv
                summary.setdefault((name, m), []).append((eq_tol, eq_dig, flag, rd["digits"]))
                cells.append((f"{eq_tol:.2f}", f"{ddig:+.2f}", f"{flag}{n_cv:.0f}",
                               f"{flag}{eq_dig:.2f}"))
            c, p = cells
            lines.append(f"{name:16s} {tol:6.0e} | {c[0]:>16s} {c[1]:>10s} | {c[2]:>24s} "
                         f"{c[3]:>6s} | {p[0]:>12s} {p[3]:>8s}")
    lines.append("")
    lines.append("Geometric means of nfev ratio dynamica/CVODE (equal-digits: interpolated points "
                 "only, extrapolated ones excluded):")
    for name in names:
        for m in ("dyn-C", "dyn-Py"):
            s = summary.get((name, m), [])
            if not s:
                continue
            gt = math.exp(np.mean([math.log(a) for a, _, _, _ in s]))
            inner = [b for _, b, fl, _ in s if fl == ""]
            gd = math.exp(np.mean([math.log(b) for b in inner])) if inner else float("nan")
            lines.append(f"  {name:16s} {m:7s} equal tol: {gt:.2f}   equal digits: {gd:.2f} "
                         f"({len(inner)} of {len(s)} points)")
    lines.append("")

    # cross-check with the README's CVODE-Adams baseline
    lines.append("Cross-check of CVODE-Adams with the testsets README baseline "
                 "(this run minus README: digits / nfe):")
    for name in names:
        cells = []
        for tol, (d0, n0) in zip(TOLS, README_CVODE.get(name, [])):
            r = results[(name, tol, "CVODE")]
            cells.append("ERR" if "error" in r else f"{tol:.0e}: {r['digits'] - d0:+.2f}/{r['nfev'] - n0:+d}")
        lines.append(f"  {name:16s} " + ", ".join(cells))
    lines.append("")

    dense, verdict, steps = ([], {}, {}) if args.no_dense else dense_sweep(PROBLEMS)

    # the reading, from the numbers of this run
    all_tol, all_dig, n_dig_le, extrap = [], [], 0, []
    dgain = []
    for name in names:
        for tol in TOLS:
            rd, rc = results[(name, tol, "dyn-C")], results[(name, tol, "CVODE")]
            if "error" in rd or "error" in rc:
                continue
            all_tol.append(rd["nfev"] / rc["nfev"])
            dgain.append(rd["digits"] - rc["digits"])
        for a, b, fl, _ in summary.get((name, "dyn-C"), []):
            (extrap if fl else all_dig).append(b)
    n_dig_le = sum(b <= 1.0 for b in all_dig)
    if all_tol and all_dig:
        def gm(v):
            return math.exp(np.mean(np.log(v)))

        worse = [d for name in names for _, b, fl, d in summary.get((name, "dyn-C"), [])
                 if fl == "" and b > 1.0]
        above = (f" (the ones above 1 were at {max(worse):.1f} digits or fewer)" if worse else "")
        reading = (
            f"Reading (dyn-C; dyn-Py takes the same steps, to the last bit). At equal tol, dynamica "
            f"Adams uses {min(all_tol):.2f}-{max(all_tol):.2f}x CVODE-Adams' nfev (geometric mean "
            f"{gm(all_tol):.2f}), so by that measure it misses the target 'nfev <= CVODE'; but at "
            f"equal tol it is also more accurate by {np.median(dgain):+.2f} digits (median; range "
            f"{min(dgain):+.2f} to {max(dgain):+.2f}), i.e. it follows the tolerance more tightly. "
            f"At equal achieved digits (CVODE's log nfev interpolated on its own work-precision "
            f"front) the ratio is {min(all_dig):.2f}-{max(all_dig):.2f} (geometric mean "
            f"{gm(all_dig):.2f}) over the {len(all_dig)} points inside CVODE's digit range, and "
            f"<= 1 at {n_dig_le} of them{above}. The {len(extrap)} points outside CVODE's range "
            f"(extrapolated with a least-squares line, '~': tol 1e-4 where dynamica got fewer "
            f"digits than CVODE's loosest run, and 1e-10/1e-12 where it got more than CVODE's "
            f"tightest) give {min(extrap):.2f}-{max(extrap):.2f}. Caveats: scikit-sundae runs CVODE-Adams with "
            f"Newton iteration (dense DQ Jacobian; fixed-point is not exposed), and its nfe "
            f"excludes the Jacobian's RHS calls ('CVODE calls' column, up to ~40% more on "
            f"Pleiades); wall times use a Python RHS for every method, so they mostly measure "
            f"RHS-call and per-step interpreter overhead, on a shared 2-core machine.")
        lines += textwrap.wrap(reading, 100)
        lines.append("")
    if dense:
        lines += dense
        lines.append("")
        lines += textwrap.wrap(dense_reading(verdict, steps), 100)
        lines.append("")

    lines += events_table(args.repeat)
    text = "\n".join(lines)
    print(text)
    if not args.no_save:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
        print(f"saved {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
