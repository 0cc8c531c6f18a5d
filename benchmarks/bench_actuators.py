#!/usr/bin/env python
"""Costs of actuators, inputs, states and inverse dynamics, in one run (prints three tables, saves
results/actuators.txt):

1. a tabulated-function call in the compiled code: a 1-DOF model whose right-hand side makes
   K = 32 lookups f(phi + 0.01 k), against the same model with the bare arguments (phi + 0.01 k)
   instead; the difference of the C-level RHS times (runtime/integrators/timing.py, states cycling over
   the table's range) divided by K. Linear, cubic and pchip tables of 10, 1000 and 100 000
   knots, a bilinear grid of 10 x 10 and 300 x 300; for comparison, one scalar call of the
   scipy interpolator from Python.
2. a controller's sampling from Python: models/dc_motor_joint.yaml for 1 s with a PD controller
   at Ts = 1 ms and 0.1 ms (1000 and 10 000 samples). The time of `simulate`, the part spent
   inside the compiled integrator (the stepper's `run`, timed by a subclass) and the rest per
   sample: the controller call, the hold, the restart of the integrator (one RHS evaluation) and
   the Python loop. Times are the thread's CPU time (time.thread_time): on a shared machine the
   wall time also counts the waits for a core. Target: under 5 us per sample.
3. inverse dynamics per call from Python, `module.inverse_dynamics(t, q, qd, qdd, p, out)`
   against Pinocchio's `pin.rnea(model, data, q, v, a)`, on the chains of bench_spine.py
   (N = 5, 10, 20, 50; best of 7 rounds of 20 000 calls); both checked equal first. Target:
   faster for N <= 50.

    python benchmarks/bench_actuators.py [--no-save]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_spine as bs

ROOT = Path(__file__).resolve().parent.parent
K = 32


def _model(folder, name, functions, value):
    import yaml
    data = {"name": name, "parameters": {"g": 9.81}, "gravity": [0, 0, "-g"], "functions": functions,
            "bodies": [{"name": "rod", "parent": "ground", "joint": [{"rotate": "x", "q": "phi"}], "mass": 1.0,
                        "com": [0, 0, -0.5], "inertia": [0.1, 0.1, 0.01]}],
            "forces": [{"type": "generalized_force", "coordinate": "phi",
                        "value": " + ".join(value(k) for k in range(K))}]}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def table_costs(folder) -> list:
    from scipy.interpolate import CubicSpline, PchipInterpolator, RegularGridInterpolator, interp1d

    import dynamica
    from dynamica.runtime.integrators.timing import seconds_per_call
    rng = np.random.default_rng(0)
    states = np.column_stack([rng.uniform(-0.1, 1.1, 4096), np.zeros(4096)])      # phi over the table's range
    base = dynamica.load(_model(folder, "bare", {}, lambda k: f"(phi + {0.01 * k})"), check_mass_matrix=False)
    t_base = seconds_per_call(base, states=states, budget=1.0)
    rows = []
    scipy_1d = {"linear": lambda x, y: interp1d(x, y), "cubic": CubicSpline, "pchip": PchipInterpolator}
    for n in (10, 1000, 100_000):
        x = np.linspace(-0.2, 1.2, n)
        y = np.sin(3 * x) + 0.1 * x ** 2
        for interp in ("linear", "cubic", "pchip"):
            fn = {"f": {"x": x.tolist(), "y": y.tolist(), "interpolation": interp}}
            m = dynamica.load(_model(folder, f"t_{interp}_{n}", fn, lambda k: f"f(phi + {0.01 * k})"),
                              check_mass_matrix=False)
            t = seconds_per_call(m, states=states, budget=1.0)
            ref = scipy_1d[interp](x, y)
            rows.append((f"{interp}, {n} knots", (t - t_base) / K, _python_call(lambda: ref(0.37))))
    for n in (10, 300):
        gx = np.linspace(-0.2, 1.2, n)
        z = np.outer(np.sin(gx), np.cos(gx))
        fn = {"f": {"x": gx.tolist(), "y": gx.tolist(), "z": z.tolist()}}
        m = dynamica.load(_model(folder, f"g_{n}", fn, lambda k: f"f(phi + {0.01 * k}, phi)"), check_mass_matrix=False)
        t = seconds_per_call(m, states=states, budget=1.0)
        rgi = RegularGridInterpolator((gx, gx), z)
        rows.append((f"bilinear, {n} x {n}", (t - t_base) / K, _python_call(lambda: rgi((0.37, 0.41)))))
    return rows, t_base


def _python_call(fn, n=2000):
    """CPU seconds per call, best of 5 rounds."""
    best = float("inf")
    for _ in range(5):
        t0 = time.thread_time()
        for _ in range(n):
            fn()
        best = min(best, (time.thread_time() - t0) / n)
    return best


def sampling_costs() -> list:
    """Per Ts: (Ts, samples, CPU s of the run with a controller returning a constant, CPU s of the same
    run with that constant as a data signal cut at the same times (the same segments and restarts,
    no Python per segment), Python per sample, CPU s with the PD controller, the PD's own cost per
    call, the constant controller's)."""
    import dynamica
    model = dynamica.load(ROOT / "models" / "dc_motor_joint.yaml")
    hold = model.parameters["R"] / (model.parameters["N"] * model.parameters["k_t"])
    g = model.gravity_forces

    def pd(t, q, qd, s):
        return {"u": float(np.clip(hold * g(q)[0] + 300.0 * (0.8 - q[0]) - 15.0 * qd[0], -24.0, 24.0))}

    def constant(t, q, qd, s):              # a controller that costs nothing: what the sampling costs
        return {"u": 6.0}

    def cpu(**kw):
        best = None
        for _ in range(5):
            t0 = time.thread_time()
            r = dynamica.simulate(model, t_end=1.0, output_step=1e-2, rtol=1e-8, atol=1e-8, **kw)
            c = time.thread_time() - t0
            best = (c, r) if best is None or c < best[0] else best
        return best
    rows = []
    zero = np.zeros(1)
    for Ts in (1e-3, 1e-4):
        c1, r1 = cpu(controller=constant, sample_time=Ts)
        k = r1.info["controller_calls"]
        cuts = np.append(Ts * np.arange(k), 1.0)
        c2, r2 = cpu(inputs={"u": (cuts, np.full(len(cuts), 6.0))})
        assert r2.info["segments"] == r1.info["segments"] and np.array_equal(r1.q, r2.q)
        c3, _ = cpu(controller=pd, sample_time=Ts)
        rows.append((Ts, k, c1, c2, (c1 - c2) / k, c3, _python_call(lambda: pd(0.0, zero, zero, zero)),
                     _python_call(lambda: constant(0.0, zero, zero, zero))))
    return rows


def inverse_costs(folder) -> list:
    import pinocchio as pin

    import dynamica
    from dynamica.runtime.kinds.inverse import companion
    rows = []
    for n in (5, 10, 20, 50):
        m = dynamica.load(bs.write_chain_yaml(n, folder), check_mass_matrix=False)
        t0 = time.perf_counter()
        m.inverse_dynamics(np.zeros(n), np.zeros(n), np.zeros(n))            # generate + compile (or cache)
        first = time.perf_counter() - t0
        pm = bs.pinocchio_chain(n)
        data = pm.createData()
        rng = np.random.default_rng(n)
        q, v, a = (rng.uniform(-1, 1, n) for _ in range(3))
        assert list(m.coordinates) == [pm.names[j] for j in range(1, pm.njoints)]     # the same order
        ref = pin.rnea(pm, data, q, v, a)
        mod = companion(m)                  # the generated inverse-dynamics module
        p, out = m.param_vector(), np.empty(n)
        mod.inverse_dynamics(0.0, q, v, a, p, out)
        err = np.abs(out - ref).max() / max(1.0, np.abs(ref).max())
        assert err < 1e-10, err
        ours = _per_call(lambda: mod.inverse_dynamics(0.0, q, v, a, p, out))
        theirs = _per_call(lambda: pin.rnea(pm, data, q, v, a))
        rows.append((n, ours, theirs, err, first))
    return rows


def _per_call(fn, n=20000, rounds=7):
    """CPU seconds per call (time.thread_time), best of `rounds`."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.thread_time()
        for _ in range(n):
            fn()
        best = min(best, (time.thread_time() - t0) / n)
    return best


def report(tables, t_base, sampling, inverse) -> str:
    out = ["# actuators, inputs, states, inverse dynamics (benchmarks/bench_actuators.py)", "",
           f"## 1. a tabulated-function call in the compiled RHS (K = {K} lookups per call; the RHS without them: "
           f"{t_base * 1e9:.0f} ns)", "",
           f"{'table':<24} {'ns per lookup':>14} {'scipy, 1 call from Python (us)':>32}"]
    out += [f"{name:<24} {cost * 1e9:>14.1f} {py * 1e6:>32.1f}" for name, cost, py in tables]
    out += ["", "## 2. a controller sampled from Python (dc_motor_joint, 1 s, adams rtol = atol = 1e-8; CPU time)", "",
            f"{'Ts':>7} {'samples':>8} {'controller ms':>14} {'same as data ms':>16} {'Python us/sample':>17} "
            f"{'its call us':>12} {'PD run ms':>10} {'PD call us':>11}"]
    out += [
        f"{Ts:>7g} {k:>8} {c1 * 1e3:>14.1f} {c2 * 1e3:>16.1f} {per * 1e6:>17.2f} {cc * 1e6:>12.2f} {c3 * 1e3:>10.1f} "
        f"{pc * 1e6:>11.2f}"
        for Ts, k, c1, c2, per, c3, pc, cc in sampling
    ]
    out += ["", "controller: a run with a controller that returns a constant voltage; same as data: the same run with",
            "that constant as a data signal cut at the same times (the same segments and restarts, handled in the",
            "compiled loop without Python). Python us/sample: their difference per sample: calling the",
            "controller (its own cost is the next column), checking and holding its answer, and the loop's",
            "calls into Python. PD: the same runs with a PD controller that also calls model.gravity_forces."]
    out += [
        "",
        "## 3. inverse dynamics per call from Python (CPU time): generated RNEA vs Pinocchio's rnea (chains)",
        "",
        f"{'N':>4} {'dynamica us':>12} {'pin.rnea us':>12} {'ratio':>7} {'max rel diff':>13} {'first call s':>13}",
    ]
    out += [f"{n:>4} {ours * 1e6:>12.2f} {theirs * 1e6:>12.2f} {theirs / ours:>7.2f} {err:>13.1e} {first:>13.2f}"
            for n, ours, theirs, err, first in inverse]
    out += ["", "ratio > 1: the generated kernel is faster. first call: generating and compiling the inverse-dynamics",
            "module (or fetching it from the cache)."]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "actuators.txt"))
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench_actuators_"))
    print("tables ...", file=sys.stderr, flush=True)
    tables, t_base = table_costs(folder)
    print("sampling ...", file=sys.stderr, flush=True)
    sampling = sampling_costs()
    print("inverse dynamics ...", file=sys.stderr, flush=True)
    inverse = inverse_costs(folder)
    text = report(tables, t_base, sampling, inverse)
    print(text)
    if not args.no_save:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
