#!/usr/bin/env python
"""MJCF models falling onto their floor for 2 s (actuators off), in one run on the same files:
Gymnasium's hopper and humanoid (its 17 hinges, a free root, 126 contact pairs here).

  dynamica : dynamica.load(model.xml, torques="off") (contacts and joint limits by default: docs/contact.md),
             simulate with the Adams integrator at rtol 1e-6, atol 1e-8 (contact events located);
             the time of `simulate` only (the model compiled and loaded before)
  MuJoCo   : mj_step at the model's own time step (its default: the file's `timestep`)

Each row: wall time, steps, the deepest penetration over the run (dynamica: the largest
`<pair>.penetration` output; MuJoCo: minus the smallest `contact.dist` after each step), and
the mechanical energy at the start and the end, both evaluated by MuJoCo's mj_energyPos and
mj_energyVel (gravity and kinetic; dynamica's states mapped to MuJoCo's qpos/qvel by
tests/oracles/mujoco_mjcf.py), so that the two runs' energies are the same function.

A second table, the cost of building and of one evaluation, for Gymnasium's humanoid and
dm_control's dog (63 bodies, 2961 contact pairs under MuJoCo's filters):

  dynamica : dynamica.load(model.xml, actuators="off", torques="off") into an empty cache (generate and compile,
             contacts on: above 64 pairs through the broad phase, docs/contact.md), and one
             right-hand side (the module's rhs from Python, the mean of repeated calls at the
             initial state); the humanoid also with its pairs generated into the equations
             (`broad_phase: false`, the code before the broad phase); a fall of 0.5 s (Adams,
             rtol 1e-6, atol 1e-8, contact events located); a model refused is loaded again with
             contacts=False and marked so
  MuJoCo   : MjModel.from_xml_path (its compile), and one mj_step (contacts on, the mean of
             repeated steps from the initial state: the model falls and lies on its floor) and one
             mj_forward at the initial state; the fall of 0.5 s with mj_step at the file's time step

A plain script, run by hand:  python benchmarks/bench_contact.py [--t-end 2] [--only build|fall]
[--out benchmarks/results/contact.txt]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _peers import write_table

from oracles.mujoco_mjcf import MujocoOracle

MODELS = ("hopper", "humanoid")


def asset(name):
    spec = importlib.util.find_spec("gymnasium")
    return os.path.join(os.path.dirname(spec.origin), "envs", "mujoco", "assets", f"{name}.xml")


def energy_of(m, d, mujoco, qpos, qvel):
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, d)
    mujoco.mj_energyPos(m, d)
    mujoco.mj_energyVel(m, d)
    return float(d.energy[0] + d.energy[1])


def run_mujoco(path, t_end):
    import mujoco
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ACTUATION
    d = mujoco.MjData(m)
    e = mujoco.MjData(m)
    E0 = energy_of(m, e, mujoco, d.qpos, d.qvel)
    steps, deepest = 0, 0.0
    start = time.perf_counter()
    while d.time < t_end - 1e-12:
        mujoco.mj_step(m, d)
        steps += 1
        if d.ncon:
            deepest = max(deepest, -float(min(d.contact.dist[:d.ncon])))
    wall = time.perf_counter() - start
    return {"wall": wall, "steps": steps, "h": m.opt.timestep, "deepest": deepest, "E0": E0,
            "E1": energy_of(m, e, mujoco, d.qpos, d.qvel)}


def run_dynamica(path, t_end):
    import mujoco

    import dynamica
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                        # what the import leaves out, named once
        model = dynamica.load(path, actuators="off", torques="off")
    pairs = sum(f.type == "contact" for f in model.spec.forces)
    start = time.perf_counter()
    r = dynamica.simulate(model, t_end, output_step=0.005, rtol=1e-6, atol=1e-8)
    wall = time.perf_counter() - start
    deepest = max(float(np.max(v)) for k, v in r.outputs.items() if k.endswith(".penetration"))
    oracle = MujocoOracle(path, model.coordinates)
    m, d = oracle.m, oracle.d
    E = []
    for k in (0, -1):
        qpos, qvel, _ = oracle.state(r.q[k], r.qd[k])
        E.append(energy_of(m, d, mujoco, qpos, qvel))
    return {"wall": wall, "steps": r.info["steps"], "events": r.info["restarts"], "pairs": pairs,
            "deepest": deepest, "E0": E[0], "E1": E[1]}


BUILD_MODELS = (("humanoid", "gymnasium"), ("dog", "dm_control"))


def suite_file(name, package):
    if package == "gymnasium":
        return asset(name)
    spec = importlib.util.find_spec("dm_control")
    return os.path.join(os.path.dirname(spec.origin), "suite", f"{name}.xml")


def per_call(f, seconds=0.5):
    """Mean seconds of one call of f over repeated calls (at least `seconds` in all)."""
    f()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(10):
            f()
        n += 10
    return (time.perf_counter() - start) / n


def generated_pairs_row(path, form):
    """The model with its pairs generated into the equations (`broad_phase: false`): build and rhs."""
    import dataclasses
    import tempfile

    from dynamica.generator.spec.model import load_model
    from dynamica.runtime.api import load_spec
    with tempfile.TemporaryDirectory(prefix="bench_contact_") as cache, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        spec = dataclasses.replace(load_model(path, actuators="off", torques="off"), broad_phase=False)
        model = load_spec(spec, form, cache=cache)
        build = time.perf_counter() - start
        y = model.to_state(*model.initial_state())
        p, out = model.param_vector(), np.empty(model.state_size)
        rhs = per_call(lambda: model.module.rhs(0.0, y, p, out))
    return {"build": build, "rhs": rhs}


def fall_row(model, t_end=0.5):
    """Wall time and steps of a fall of `t_end` (Adams, rtol 1e-6, atol 1e-8, contact events located)."""
    import dynamica
    start = time.perf_counter()
    r = dynamica.simulate(model, t_end, output_step=0.005, rtol=1e-6, atol=1e-8)
    return time.perf_counter() - start, r.info["steps"]


def mujoco_fall(path, t_end=0.5):
    import mujoco
    m = mujoco.MjModel.from_xml_path(path)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ACTUATION
    d = mujoco.MjData(m)
    start, steps = time.perf_counter(), 0
    while d.time < t_end - 1e-12:
        mujoco.mj_step(m, d)
        steps += 1
    return time.perf_counter() - start, steps


def build_row(path):
    import tempfile

    import mujoco

    import dynamica
    from dynamica.errors import ModelError
    start = time.perf_counter()
    m = mujoco.MjModel.from_xml_path(path)
    mj_build = time.perf_counter() - start
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ACTUATION
    d = mujoco.MjData(m)
    mj_step = per_call(lambda: mujoco.mj_step(m, d))
    ncon = int(d.ncon)                                      # lying on the floor by then
    mujoco.mj_resetData(m, d)
    mj_forward = per_call(lambda: mujoco.mj_forward(m, d))
    note = ""
    with tempfile.TemporaryDirectory(prefix="bench_contact_") as cache, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        try:
            model = dynamica.load(path, actuators="off", torques="off", cache=cache)
        except ModelError as exc:
            note = "contacts=False: " + str(exc.problems[0].message).split(" under")[0].removeprefix("the geoms make ")
            start = time.perf_counter()
            model = dynamica.load(path, actuators="off", torques="off", contacts=False, cache=cache)
        build = time.perf_counter() - start
        pairs = sum(f.type == "contact" for f in model.spec.forces)
        from dynamica.generator.mechanics.broad_phase import used
        broad = used(model.spec)
        y = model.to_state(*model.initial_state())
        p, out = model.param_vector(), np.empty(model.state_size)
        rhs = per_call(lambda: model.module.rhs(0.0, y, p, out))
        fall = fall_row(model) if pairs else None
    return {"build": build, "rhs": rhs, "pairs": pairs, "note": note, "mj_build": mj_build, "mj_step": mj_step,
            "mj_forward": mj_forward, "ncon": ncon, "broad": broad, "form": model.form, "fall": fall,
            "mj_fall": mujoco_fall(path)}


def build_table(generated=("humanoid",)):
    """Per model: dynamica (broad phase when it has more than 64 pairs; for the models in `generated`
    also with every pair generated into the equations), MuJoCo; and a fall of 0.5 s in both."""
    lines = ["Building and one evaluation (contacts on); a fall of 0.5 s from the initial state", "",
             f"{'model':10s} {'code':22s} {'build [s]':>10s} {'call [us]':>10s} {'fall [s]':>9s} {'steps':>7s}"
             "   what is called"]
    for name, package in BUILD_MODELS:
        path = suite_file(name, package)
        r = build_row(path)
        what = f"rhs, {r['pairs']} pairs" + (f" ({r['note']})" if r["note"] else "")
        code = "dynamica, broad phase" if r["broad"] else "dynamica"
        fall = f"{r['fall'][0]:9.2f} {r['fall'][1]:7d}" if r["fall"] else f"{'':9s} {'':7s}"
        lines.append(f"{name:10s} {code:22s} {r['build']:10.2f} {1e6 * r['rhs']:10.1f} {fall}   {what}")
        if name in generated and r["broad"]:
            g = generated_pairs_row(path, r["form"])
            lines.append(f"{'':10s} {'dynamica, generated':22s} {g['build']:10.2f} {1e6 * g['rhs']:10.1f} "
                         f"{'':9s} {'':7s}   rhs, the {r['pairs']} pairs in the equations (broad_phase: false)")
        lines.append(f"{'':10s} {'MuJoCo':22s} {r['mj_build']:10.3f} {1e6 * r['mj_step']:10.1f} "
                     f"{r['mj_fall'][0]:9.3f} {r['mj_fall'][1]:7d}   mj_step ({r['ncon']} contacts at the last step)")
        lines.append(f"{'':10s} {'':22s} {'':10s} {1e6 * r['mj_forward']:10.1f} {'':9s} {'':7s}   mj_forward")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--t-end", type=float, default=2.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", choices=("build", "fall"), default=None)
    args = ap.parse_args()
    lines = [f"MJCF models falling for {args.t_end:g} s, actuators off (contacts and joint limits on)", "",
             f"{'model':10s} {'code':9s} {'wall [s]':>9s} {'steps':>8s} {'events':>7s} {'deepest [mm]':>13s} "
             f"{'E(0) [J]':>10s} {'E(end) [J]':>11s}"]
    if args.only == "build":
        lines = []
    for name in MODELS if args.only != "build" else ():
        path = asset(name)
        mj = run_mujoco(path, args.t_end)
        dy = run_dynamica(path, args.t_end)
        lines.append(f"{name:10s} {'dynamica':9s} {dy['wall']:9.3f} {dy['steps']:8d} {dy['events']:7d} "
                     f"{1e3 * dy['deepest']:13.2f} {dy['E0']:10.3f} {dy['E1']:11.3f}   ({dy['pairs']} pairs)")
        lines.append(f"{'':10s} {'MuJoCo':9s} {mj['wall']:9.3f} {mj['steps']:8d} {'':>7s} "
                     f"{1e3 * mj['deepest']:13.2f} {mj['E0']:10.3f} {mj['E1']:11.3f}   (time step {mj['h']:g} s)")
    if args.only != "fall":
        lines += ([""] if lines else []) + build_table()
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
