#!/usr/bin/env python
"""Frame kinematics per call from Python (model.frame_function, generator/kinds/frames.py) against
Pinocchio from Python in the same run, on the tool frame of the UR5 (6 DOF), the hand of the
Panda (9 DOF) and the tip of the Allegro hand's index finger (16 DOF), example-robot-data's URDFs.

dynamica: a prepared function `f = model.frame_function(body, what, ref)` called as f(q[, qd[, qdd]],
out=OUT) (kinematics and the quantity from the state, one compiled call), and the same without
`out` (a new array each call) and through the Frame methods (frame.jacobian(q, ref), ...).
Pinocchio, two ways each:
    "from state": the kinematics from the state and the quantity, as a controller calls it
        placement     framesForwardKinematics(q) (all frames), data.oMf[frame]
        jacobian      computeFrameJacobian(q, frame, ref)
        velocity      forwardKinematics(q, v), getFrameVelocity(frame, ref)
        acceleration  forwardKinematics(q, v, a), getFrameAcceleration(frame, ref)
        classical     forwardKinematics(q, v, a), getFrameClassicalAcceleration(frame, ref)
        J'q'          forwardKinematics(q, v, 0), getFrameClassicalAcceleration(frame, ref)
    "alone": the getter only, after the kinematics were computed (updateFramePlacement,
        getFrameJacobian, getFrameVelocity, getFrameAcceleration, getFrameClassicalAcceleration)

Per call: the best of 5 rounds of 20 000 calls (timeit), in microseconds; ratio = dynamica's
prepared call with `out` / Pinocchio's from the state.

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

from oracles.pin_urdf import coordinate_map, identifier, pin_model, pin_state, robot_file

ROBOTS = {"ur5": ("robots/ur_description/urdf/ur5_robot.urdf", "tool0"),
          "panda": ("robots/panda_description/urdf/panda.urdf", "panda_hand"),
          "allegro": ("robots/allegro_hand_description/urdf/allegro_right_hand.urdf", "link_3.0_tip")}
CALLS = 20000
REFS = ("LOCAL", "WORLD", "LOCAL_WORLD_ALIGNED")


def per_call(fn) -> float:
    return min(timeit.repeat(fn, number=CALLS, repeat=5)) / CALLS * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="also write the table to this file")
    args = ap.parse_args(argv)
    import pinocchio as pin

    import dynamica
    from dynamica.generator.spec.model import DynamicaWarning
    from dynamica.runtime.kinds.frames import WHATS
    head = (f"{'robot':<8} {'what':<13} {'reference':<20} {'out= us':>8} {'new us':>7} {'method us':>9} "
            f"{'pin state us':>12} {'pin alone us':>12} {'ratio':>6}")
    lines = [head]
    for name, (rel, link) in ROBOTS.items():
        path = robot_file(rel)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DynamicaWarning)
            model = dynamica.load(path, limits=False)
        body = identifier(link)
        frame = model.frame(body)
        pm = pin_model(path)
        data = pm.createData()
        fid = pm.getFrameId(link)
        cmap = coordinate_map(pm, list(model.coordinates))
        rng = np.random.default_rng(0)
        q, qd, qdd = (rng.uniform(-1, 1, model.n) for _ in range(3))
        qp, vp = pin_state(pm, cmap, q, qd)
        ap_ = np.asarray(pin_state(pm, cmap, q, qdd)[1])
        zero = np.zeros(pm.nv)
        pin.forwardKinematics(pm, data, qp, vp, ap_)
        pin.computeJointJacobians(pm, data, qp)
        pin.updateFramePlacements(pm, data)
        for what in ("placement", "jacobian", "velocity", "acceleration", "classical", "bias"):
            for ref in (("LOCAL",) if what == "placement" else REFS):
                pref = getattr(pin.ReferenceFrame, ref)
                f = model.frame_function(body, what, ref)
                out = np.empty(WHATS[what][2] or (6, model.n))
                state = (q, qd, qdd)[:WHATS[what][1]]
                ours = per_call(lambda: f(*state, out=out))
                new = per_call(lambda: f(*state))
                if what == "placement":
                    method = per_call(lambda: frame.placement(q))
                    theirs = per_call(lambda: (pin.framesForwardKinematics(pm, data, qp), data.oMf[fid]))
                    alone = per_call(lambda: pin.updateFramePlacement(pm, data, fid))
                elif what == "jacobian":
                    method = per_call(lambda: frame.jacobian(q, ref))
                    theirs = per_call(lambda: pin.computeFrameJacobian(pm, data, qp, fid, pref))
                    alone = per_call(lambda: pin.getFrameJacobian(pm, data, fid, pref))
                elif what == "velocity":
                    method = per_call(lambda: frame.velocity(q, qd, ref))
                    theirs = per_call(lambda: (pin.forwardKinematics(pm, data, qp, vp),
                                               pin.getFrameVelocity(pm, data, fid, pref)))
                    alone = per_call(lambda: pin.getFrameVelocity(pm, data, fid, pref))
                elif what in ("acceleration", "classical"):
                    get = pin.getFrameAcceleration if what == "acceleration" else pin.getFrameClassicalAcceleration
                    method = per_call(lambda: frame.acceleration(q, qd, qdd, ref, classical=what == "classical"))
                    theirs = per_call(lambda: (pin.forwardKinematics(pm, data, qp, vp, ap_),
                                               get(pm, data, fid, pref)))
                    alone = per_call(lambda: get(pm, data, fid, pref))
                else:
                    method = per_call(lambda: frame.bias(q, qd, ref))
                    theirs = per_call(lambda: (pin.forwardKinematics(pm, data, qp, vp, zero),
                                               pin.getFrameClassicalAcceleration(pm, data, fid, pref)))
                    alone = float("nan")
                    pin.forwardKinematics(pm, data, qp, vp, ap_)
                lines.append(f"{name:<8} {what:<13} {ref:<20} {ours:>8.3f} {new:>7.3f} {method:>9.3f} "
                             f"{theirs:>12.3f} {alone:>12.3f} {ours / theirs:>6.2f}")
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
