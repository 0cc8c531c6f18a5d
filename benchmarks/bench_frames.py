#!/usr/bin/env python
"""Frame kinematics per call from Python (model.frame, generator/kinds/frames.py) against Pinocchio
from Python in the same run, on the tool frame of the UR5 (6 DOF) and the hand of the Panda
(9 DOF), example-robot-data's URDFs:

    jacobian (q -> J, each reference)
        dynamica   : frame.jacobian(q, ref)  (kinematics and the Jacobian from q, one call)
        Pinocchio  : computeFrameJacobian(model, data, q, frame, ref) (the same from q), and
                     getFrameJacobian(model, data, frame, ref) alone, after computeJointJacobians
    placement (q -> position, rotation)
        dynamica   : frame.placement(q)
        Pinocchio  : framesForwardKinematics(model, data, q), then data.oMf[frame]
    J'q' (q, q' -> classical acceleration at q'' = 0, LOCAL_WORLD_ALIGNED)
        dynamica   : frame.bias(q, qd, "LOCAL_WORLD_ALIGNED")
        Pinocchio  : forwardKinematics(q, v, 0), getFrameClassicalAcceleration

Per call: the best of 5 rounds of 20 000 calls over 16 random states (timeit), in microseconds.

A plain script, run by hand:  python benchmarks/bench_frames.py [--out benchmarks/results/frames.txt]
"""

from __future__ import annotations

import argparse
import sys
import timeit
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _peers import write_table

from oracles.pin_urdf import coordinate_map, pin_model, pin_state, robot_file

ROBOTS = {"ur5": ("robots/ur_description/urdf/ur5_robot.urdf", "tool0"),
          "panda": ("robots/panda_description/urdf/panda.urdf", "panda_hand")}
CALLS = 20000


def per_call(fn) -> float:
    return min(timeit.repeat(fn, number=CALLS, repeat=5)) / CALLS * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="also write the table to this file")
    args = ap.parse_args(argv)
    import pinocchio as pin

    import dynamica
    from dynamica.generator.spec.model import DynamicaWarning
    lines = [f"{'robot':<7} {'what':<34} {'dynamica us':>12} {'Pinocchio us':>13} {'ratio':>6}"]
    for name, (rel, link) in ROBOTS.items():
        path = robot_file(rel)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DynamicaWarning)
            model = dynamica.load(path)
        frame = model.frame(link)
        pm = pin_model(path)
        data = pm.createData()
        fid = pm.getFrameId(link)
        cmap = coordinate_map(pm, list(model.coordinates))
        rng = np.random.default_rng(0)
        states = [(rng.uniform(-1, 1, model.n), rng.uniform(-1, 1, model.n)) for _ in range(16)]
        pstates = [pin_state(pm, cmap, q, qd) for q, qd in states]
        q, qd = states[0]
        qp, vp = pstates[0]
        zero = np.zeros(pm.nv)
        for ref in ("LOCAL", "WORLD", "LOCAL_WORLD_ALIGNED"):
            pref = getattr(pin.ReferenceFrame, ref)
            ours = per_call(lambda: frame.jacobian(q, ref))
            theirs = per_call(lambda: pin.computeFrameJacobian(pm, data, qp, fid, pref))
            lines.append(f"{name:<7} {'jacobian ' + ref + ' from q':<34} {ours:>12.3f} {theirs:>13.3f} "
                         f"{ours / theirs:>6.2f}")
            pin.computeJointJacobians(pm, data, qp)
            pin.updateFramePlacements(pm, data)
            alone = per_call(lambda: pin.getFrameJacobian(pm, data, fid, pref))
            lines.append(f"{name:<7} {'  vs getFrameJacobian alone':<34} {ours:>12.3f} {alone:>13.3f} "
                         f"{ours / alone:>6.2f}")

        def pin_place():
            pin.framesForwardKinematics(pm, data, qp)
            return data.oMf[fid]
        ours, theirs = per_call(lambda: frame.placement(q)), per_call(pin_place)
        lines.append(f"{name:<7} {'placement from q':<34} {ours:>12.3f} {theirs:>13.3f} {ours / theirs:>6.2f}")

        def pin_bias():
            pin.forwardKinematics(pm, data, qp, vp, zero)
            return pin.getFrameClassicalAcceleration(pm, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        ours = per_call(lambda: frame.bias(q, qd, "LOCAL_WORLD_ALIGNED"))
        theirs = per_call(pin_bias)
        lines.append(f"{name:<7} {'Jdot qd (LWA) from q, qd':<34} {ours:>12.3f} {theirs:>13.3f} "
                     f"{ours / theirs:>6.2f}")
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
