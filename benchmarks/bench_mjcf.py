#!/usr/bin/env python
"""MJCF models, in one run on the same files (Gymnasium's MuJoCo assets, dm_control's suite):

1. Load time, each in a fresh Python process (imports included):
     dynamica cold   : dynamica.load(model.xml) with an empty cache (MuJoCo's compiler, the
                       conversion, generation, C compilation)
     dynamica cached : the same with the module and the converted model in the cache (mujoco is
                       not imported)
     MuJoCo          : mujoco.MjModel.from_xml_path + MjData + the first mj_forward
2. q'' per call: dynamica's compiled RHS from C (runtime/integrators/timing.py) and through model.rhs from
   Python, against mujoco.mj_forward from Python with qpos and qvel set (contacts and other
   constraints disabled, fluid forces off: the same equations; mj_forward also computes what
   the RHS does not need, e.g. sensors, which these models have few of).

A plain script, run by hand:  python benchmarks/bench_mjcf.py [--out benchmarks/results/mjcf.txt]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from _peers import per_call, write_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from oracles.mujoco_mjcf import MujocoOracle


def asset(package, folder, name):
    spec = importlib.util.find_spec(package)
    return os.path.join(os.path.dirname(spec.origin), *folder.split("/"), f"{name}.xml")


MODELS = {"cartpole (dm_control)": ("dm_control", "suite", "cartpole"),
          "ant (Gymnasium)": ("gymnasium", "envs/mujoco/assets", "ant"),
          "humanoid (Gymnasium)": ("gymnasium", "envs/mujoco/assets", "humanoid"),
          "humanoid (dm_control)": ("dm_control", "suite", "humanoid")}

DYNAMICA_LOAD = """
import time, json, sys, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import dynamica
m = dynamica.load(sys.argv[1], limits=False, contacts=False)
m.rhs(0.0, [0.1] * (2 * m.n))
print(json.dumps(time.perf_counter() - t0))
"""
MUJOCO_LOAD = """
import time, json, sys
t0 = time.perf_counter()
import mujoco
m = mujoco.MjModel.from_xml_path(sys.argv[1]); d = mujoco.MjData(m)
mujoco.mj_forward(m, d)
print(json.dumps(time.perf_counter() - t0))
"""


def fresh(script, path, cache, runs=3):
    env = dict(os.environ, DYNAMICA_CACHE=str(cache))
    times = [json.loads(subprocess.run([sys.executable, "-c", script, str(path)], env=env, check=True,
                                       capture_output=True, text=True, cwd=str(cache.parent)).stdout.split()[-1])
             for _ in range(runs)]
    return min(times)


def load_times(path):
    with tempfile.TemporaryDirectory() as d:
        cold = fresh(DYNAMICA_LOAD, path, Path(d) / "c1", runs=1)          # builds into c1
        cached = fresh(DYNAMICA_LOAD, path, Path(d) / "c1")
        mj = fresh(MUJOCO_LOAD, path, Path(d) / "c1")
    return cold, cached, mj


def rhs_times(path):
    import mujoco

    import dynamica
    from dynamica.runtime.integrators.timing import seconds_per_call
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dynamica.load(path, limits=False, contacts=False)   # the peer's equations: no limits, contacts
    oracle = MujocoOracle(path, model.coordinates)
    m, d = oracle.m, oracle.d
    rng = np.random.default_rng(0)
    states = [(rng.uniform(-1, 1, model.n), rng.uniform(-1, 1, model.n)) for _ in range(64)]
    ys = np.ascontiguousarray([np.concatenate(s) for s in states])
    mj_states = [oracle.state(q, qd)[:2] for q, qd in states]
    c_level = seconds_per_call(model, states=ys, budget=0.5)

    def loop(fn, repeat):
        return per_call(fn, len(states), repeat)

    def mj_call(k):
        d.qpos[:], d.qvel[:] = mj_states[k]
        mujoco.mj_forward(m, d)
    f = model.rhs_function()
    py = loop(lambda k: f(0.0, ys[k]), 50)
    mj = loop(mj_call, 50)
    return model.n, c_level, py, mj


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="also write the tables to this file")
    args = ap.parse_args()
    import mujoco
    lines = ["MJCF models of Gymnasium's and dm_control's assets; best of fresh processes (imports included), "
             f"cold: one process; Python {sys.version.split()[0]}, mujoco {mujoco.__version__}", "",
             "load time [s]            dynamica cold   dynamica cached   MuJoCo (compile + first mj_forward)"]
    paths = {name: asset(*where) for name, where in MODELS.items()}
    for name, path in paths.items():
        cold, cached, mj = load_times(path)
        lines.append(f"{name:<24s} {cold:13.3f}   {cached:15.3f}   {mj:12.3f}")
    lines += ["", "q'' per call [us]        n    dynamica (C loop)   dynamica model.rhs (Python)   "
                  "mj_forward (Python)   ratio mj_forward / model.rhs"]
    for name, path in paths.items():
        n, c, py, mj = rhs_times(path)
        lines.append(f"{name:<24s} {n:2d}   {1e6 * c:14.3f}   {1e6 * py:24.3f}   {1e6 * mj:18.3f}   {mj / py:10.2f}")
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
