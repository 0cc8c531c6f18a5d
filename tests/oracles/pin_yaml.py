"""A Pinocchio model read from a model file's text by this module (yaml and its own expression
evaluator, tests/oracles/pin_trees.py), not from dynamica's loader or ModelSpec: one Pinocchio joint
per elementary motion (constant offsets and rotations are the placement of the next joint), a `screw`
as HelicalUnaligned (its coordinate the angle 2 pi s / pitch), the body's inertia about its centre of
mass on its last joint."""

from __future__ import annotations

import math

import numpy as np
import yaml

from oracles.pin_trees import elementary_homog, evaluate, expand_joint, unit_axis, yaml_env, yaml_inertia_tensor


def pinocchio_from_file(path, values=None):
    """(pin.Model, coordinate names in Pinocchio's order, {coordinate: dynamica q per Pinocchio q})."""
    import pinocchio as pin

    data = yaml.safe_load(open(path, encoding="utf-8").read())
    env = yaml_env(data, values)
    model, ids = pin.Model(), {"ground": 0}
    names, scale = [], {}
    for body in data["bodies"]:
        parent, T = ids[body["parent"]], np.eye(4)
        for tr in expand_joint(body.get("joint")):
            if "q" not in tr:                                        # constant: part of the next placement
                T = T @ elementary_homog(tr, env, {})
                continue
            if "rotate" in tr:
                joint = pin.JointModelRevoluteUnaligned(unit_axis(tr["rotate"], env))
            elif "translate" in tr:
                joint = pin.JointModelPrismaticUnaligned(unit_axis(tr["translate"], env))
            elif "screw" in tr:
                pitch = float(evaluate(tr["pitch"], env))
                joint = pin.JointModelHelicalUnaligned(unit_axis(tr["screw"], env), pitch / (2 * math.pi))
                scale[tr["q"]] = pitch / (2 * math.pi)               # s = pitch / (2 pi) * angle
            else:                                                    # pragma: no cover
                raise ValueError(f"unknown transform {tr}")
            place = pin.SE3(T[:3, :3].copy(), T[:3, 3].copy())
            parent = model.addJoint(parent, joint, place, f"{body['name']}_{tr['q']}")
            names.append(tr["q"])
            T = np.eye(4)
        m = float(evaluate(body["mass"], env))
        com = np.array(evaluate(body["com"], env), dtype=float)
        Ic = yaml_inertia_tensor(body["inertia"], env)
        if not np.allclose(T, np.eye(4)):                           # pragma: no cover
            raise NotImplementedError("a constant transform after a joint's last motion")
        model.appendBodyToJoint(parent, pin.Inertia(m, com, Ic), pin.SE3.Identity())
        ids[body["name"]] = parent
    model.gravity.linear = np.array(evaluate(data["gravity"], env), dtype=float)
    return model, names, scale
