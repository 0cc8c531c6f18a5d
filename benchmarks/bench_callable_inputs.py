#!/usr/bin/env python
"""The cost of a callable input evaluated where the integrator asks (prints one table, saves
results/callable_inputs.txt).

models/dc_motor_joint.yaml driven for 1 s by u(t) = 12 sin(8 t) + 4 cos(23 t) V, rtol = atol = 1e-10,
given as: the callable itself (exact: one Python call of u and of the module's rhs per right-hand-side
evaluation), the same callable sampled every 1 ms (`sample_time`: linear between samples, the compiled
loop free of Python between the samples), and the data (t, u(t)) on that 1 ms grid. The peer in the same
run: scipy's solve_ivp on the hand-written equations (tests/generator/mechanics/test_states_inputs.py
motor_rhs) with the same callable. Per row: the best of 3 wall times, the right-hand-side
evaluations, the time per evaluation and the largest deviation of (phi, phi', i) at the output points
from the exact reference (solve_ivp DOP853 at 1e-13 on the hand equations), relative to each
component's largest value.

    python benchmarks/bench_callable_inputs.py [--no-save]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import yaml
from scipy.integrate import solve_ivp

import dynamica

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models" / "dc_motor_joint.yaml"
T_END, TS, TOL = 1.0, 1e-3, 1e-10


def u(t):
    return 12.0 * math.sin(8.0 * t) + 4.0 * math.cos(23.0 * t)


def hand_rhs():
    P = yaml.safe_load(MODEL.read_text())["parameters"]
    V = {k: (v["value"] if isinstance(v, dict) else v) for k, v in P.items()}
    J = V["m"] * V["l"] ** 2 / 12 + V["m"] * (V["l"] / 2) ** 2 + V["N"] ** 2 * V["J_m"]

    def f(t, y):
        phi, w, i = y
        return [w, (-V["m"] * V["g"] * V["l"] / 2 * math.cos(phi) + V["N"] * V["k_t"] * i - V["b"] * w) / J,
                (u(t) - V["R"] * i - V["k_e"] * V["N"] * w) / V["L_m"]]
    return f


def best(run, rounds=3):
    times, out = [], None
    for _ in range(rounds):
        t0 = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()
    motor = dynamica.load(MODEL)
    t_out = np.linspace(0.0, T_END, 101)
    ref = solve_ivp(hand_rhs(), (0.0, T_END), [0.0, 0.0, 0.0], method="DOP853", rtol=1e-13, atol=1e-13,
                    t_eval=t_out).y.T
    scale = np.abs(ref).max(axis=0)
    grid = np.linspace(0.0, T_END, int(round(T_END / TS)) + 1)
    cases = [("callable, exact", "adams", dict(inputs={"u": u})),
             ("callable, exact", "DOP853", dict(inputs={"u": u})),
             ("callable, sample_time 1 ms", "adams", dict(inputs={"u": u}, sample_time=TS)),
             ("data on a 1 ms grid", "adams", dict(inputs={"u": (grid, [u(t) for t in grid])}))]
    rows = []
    for what, method, kw in cases:
        dt, r = best(lambda: dynamica.simulate(motor, T_END, method=method, rtol=TOL, atol=TOL, output_step=0.01, **kw))
        got = np.column_stack([r.q[:, 0], r.qd[:, 0], r.outputs["i_m"]])
        rows.append((f"dynamica {method}", what, dt, r.nfev, float(np.max(np.abs(got - ref) / scale))))
    dt, sol = best(lambda: solve_ivp(hand_rhs(), (0.0, T_END), [0.0, 0.0, 0.0], method="DOP853", rtol=TOL,
                                     atol=TOL, t_eval=t_out))
    rows.append(("scipy DOP853 (peer)", "callable, hand equations", dt, sol.nfev,
                 float(np.max(np.abs(sol.y.T - ref) / scale))))
    head = f"{'integrator':<22} {'input':<28} {'time [ms]':>10} {'RHS calls':>10} {'us/call':>8} {'max rel dev':>12}"
    lines = [f"dc_motor_joint, t_end = {T_END} s, rtol = atol = {TOL:g}, u(t) = 12 sin(8t) + 4 cos(23t)", head,
             "-" * len(head)]
    lines += [f"{a:<22} {b:<28} {1e3 * t:>10.2f} {n:>10d} {1e6 * t / max(n, 1):>8.2f} {d:>12.2e}"
              for a, b, t, n, d in rows]
    text = "\n".join(lines)
    print(text)
    if not args.no_save:
        (ROOT / "benchmarks" / "results" / "callable_inputs.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
