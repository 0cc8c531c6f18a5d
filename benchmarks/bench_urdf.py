#!/usr/bin/env python
"""URDF robots, in one run on the same files (example-robot-data):

1. Load time of a URDF robot, each in a fresh Python process (imports included):
     dynamica cold   : dynamica.load(robot.urdf) with an empty cache (parse, generate, compile)
     dynamica cached : the same with the module (and the converted URDF) in the cache
     Pinocchio       : pin.buildModelFromUrdf + createData + the first pin.aba call
2. Right-hand side per call, UR5 (6 DOF) and Allegro hand (16 DOF): dynamica's compiled RHS
   from C (runtime/integrators/timing.py) and through model.rhs from Python, against pin.aba from Python
   (the same states; the URDF's damping and friction as joint torques in both).

A plain script, run by hand:  python benchmarks/bench_urdf.py [--out benchmarks/results/urdf.txt]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from _peers import per_call, write_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from oracles.pin_urdf import FRICTION_VELOCITY, coordinate_map, pin_model, pin_state, robot_file

ROBOTS = {"ur5": "robots/ur_description/urdf/ur5_robot.urdf",
          "allegro_hand": "robots/allegro_hand_description/urdf/allegro_right_hand.urdf"}

DYNAMICA_LOAD = """
import time, json, sys
t0 = time.perf_counter()
import dynamica
m = dynamica.load(sys.argv[1], limits=False)
m.rhs(0.0, [0.1] * (2 * m.n))
print(json.dumps(time.perf_counter() - t0))
"""
PIN_LOAD = """
import time, json, sys
t0 = time.perf_counter()
import numpy as np, pinocchio as pin
model = pin.buildModelFromUrdf(sys.argv[1]); data = model.createData()
pin.aba(model, data, pin.neutral(model), np.zeros(model.nv), np.zeros(model.nv))
print(json.dumps(time.perf_counter() - t0))
"""


def fresh(script, path, cache, runs=3):
    env = dict(os.environ, DYNAMICA_CACHE=str(cache))
    times = [json.loads(subprocess.run([sys.executable, "-c", script, str(path)], env=env, check=True,
                                       capture_output=True, text=True).stdout) for _ in range(runs)]
    return min(times)


def load_times(name):
    path = robot_file(ROBOTS[name])
    with tempfile.TemporaryDirectory() as d:
        cold = fresh(DYNAMICA_LOAD, path, Path(d) / "c1", runs=1)          # builds into c1
        colds = [cold] + [fresh(DYNAMICA_LOAD, path, Path(d) / f"c{k}", runs=1) for k in (2, 3)]
        cached = fresh(DYNAMICA_LOAD, path, Path(d) / "c1")
        pin_t = fresh(PIN_LOAD, path, Path(d) / "c1")
    return min(colds), cached, pin_t


def rhs_times(name):
    import pinocchio as pin

    import dynamica
    from dynamica.runtime.integrators.timing import seconds_per_call
    path = robot_file(ROBOTS[name])
    model = dynamica.load(path, limits=False)   # the peer's equations: no limits, contacts
    pm = pin_model(path)
    data = pm.createData()
    cmap = coordinate_map(pm, list(model.coordinates))
    rng = np.random.default_rng(0)
    states = [(rng.uniform(-1, 1, model.n), rng.uniform(-1, 1, model.n)) for _ in range(64)]
    ys = np.ascontiguousarray([np.concatenate(s) for s in states])
    c_level = seconds_per_call(model, states=ys, budget=0.5)
    pins = [pin_state(pm, cmap, q, qd) for q, qd in states]
    damping, friction = np.asarray(pm.damping), np.asarray(pm.friction)
    taus = [-damping * v - friction * np.tanh(v / FRICTION_VELOCITY) for _, v in pins]

    def loop(fn, repeat):
        return per_call(fn, len(states), repeat)
    f = model.rhs_function()
    py = loop(lambda k: f(0.0, ys[k]), 50)
    pa = loop(lambda k: pin.aba(pm, data, pins[k][0], pins[k][1], taus[k]), 50)
    return model.n, c_level, py, pa


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="also write the tables to this file")
    args = ap.parse_args()
    lines = ["URDF robots of example-robot-data; best of fresh processes (imports included); "
             f"Python {sys.version.split()[0]}", "",
             "load time [s]          dynamica cold   dynamica cached   Pinocchio (build + first aba)"]
    for name in ROBOTS:
        cold, cached, p = load_times(name)
        lines.append(f"{name:<22s} {cold:13.3f}   {cached:15.3f}   {p:12.3f}")
    lines += ["", "RHS per call [us]      n    dynamica (C loop)   dynamica model.rhs (Python)   pin.aba (Python)"]
    for name in ROBOTS:
        n, c, py, pa = rhs_times(name)
        lines.append(f"{name:<22s} {n:2d}   {1e6 * c:14.3f}   {1e6 * py:24.3f}   {1e6 * pa:15.3f}")
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
