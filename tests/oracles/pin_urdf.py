"""Pinocchio's reading of a URDF file (buildModelFromUrdf) as an oracle for dynamica's, and the
robots of the `example-robot-data` package (URDFs installed under its cmeel prefix)."""

from __future__ import annotations

import importlib.metadata
import re
from functools import lru_cache
from pathlib import Path

import numpy as np


@lru_cache(maxsize=None)
def robot_file(relative: str) -> Path | None:
    """A file of example-robot-data (`robots/ur_description/urdf/ur5_robot.urdf`), None when the
    package is not installed."""
    try:
        files = importlib.metadata.files("example-robot-data") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in files:
        if str(f).replace("\\", "/").endswith(relative):
            return Path(f.locate())
    return None


def pin_model(path, root=None):
    """Pinocchio's model of a URDF; root="cardan": a free base as dynamica's `free` joint
    (translations x, y, z, then rotations x, y, z), a composite joint."""
    import pinocchio as pin
    if root == "cardan":
        joint = pin.JointModelComposite()
        for j in (pin.JointModelPX(), pin.JointModelPY(), pin.JointModelPZ(),
                  pin.JointModelRX(), pin.JointModelRY(), pin.JointModelRZ()):
            joint.addJoint(j)
        return pin.buildModelFromUrdf(str(path), joint)
    return pin.buildModelFromUrdf(str(path))


def coordinate_map(pmodel, coordinates, root_coordinates=()):
    """For every joint of Pinocchio's model: (its q and v index, kind, dynamica coordinate
    indices). kind 'rub': a continuous joint as (cos, sin)."""
    out = []
    for jid in range(1, pmodel.njoints):
        j = pmodel.joints[jid]
        name = pmodel.names[jid]
        names = list(root_coordinates) if name == "root_joint" else [identifier(name)]
        idx = [coordinates.index(c) for c in names]
        kind = "rub" if (j.nq, j.nv) == (2, 1) else "plain"
        assert kind == "rub" or j.nq == j.nv == len(idx), (name, j.nq, j.nv, idx)
        out.append((j.idx_q, j.idx_v, kind, idx))
    return out


def identifier(urdf_name: str) -> str:
    """A URDF joint's name as dynamica's coordinate (docs/urdf.md: other characters become `_`)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", urdf_name)


def pin_state(pmodel, cmap, q, qd):
    qp, vp = np.zeros(pmodel.nq), np.zeros(pmodel.nv)
    for iq, iv, kind, idx in cmap:
        if kind == "rub":
            qp[iq:iq + 2] = np.cos(q[idx[0]]), np.sin(q[idx[0]])
            vp[iv] = qd[idx[0]]
        else:
            qp[iq:iq + len(idx)] = q[idx]
            vp[iv:iv + len(idx)] = qd[idx]
    return qp, vp


def to_dynamica(cmap, xp, n):
    """A vector in Pinocchio's velocity order, in dynamica's coordinate order."""
    out = np.zeros(n)
    for _, iv, _, idx in cmap:
        out[idx] = xp[iv:iv + len(idx)]
    return out


def to_pinocchio(cmap, x, nv):
    """A vector in dynamica's coordinate order, in Pinocchio's velocity order."""
    out = np.zeros(nv)
    for _, iv, _, idx in cmap:
        out[iv:iv + len(idx)] = x[idx]
    return out


#: docs/urdf.md: URDF Coulomb friction f as -f tanh(q'/v_s), v_s the parameter friction_velocity
FRICTION_VELOCITY = 0.2


def pin_qdd_and_M(pmodel, cmap, q, qd, n, tau=None):
    """q'' (aba, with the joint torques `tau` (dynamica's order, default 0) and the URDF's damping
    and Coulomb friction f tanh(v / 0.2) added as joint torques) and M (crba), in dynamica's
    coordinate order."""
    import pinocchio as pin
    data = pmodel.createData()
    qp, vp = pin_state(pmodel, cmap, q, qd)
    applied = np.zeros(pmodel.nv) if tau is None else to_pinocchio(cmap, np.asarray(tau, float), pmodel.nv)
    tau = applied - np.asarray(pmodel.damping) * vp - np.asarray(pmodel.friction) * np.tanh(vp / FRICTION_VELOCITY)
    a = pin.aba(pmodel, data, qp, vp, tau)
    M = pin.crba(pmodel, data, qp)
    M = np.triu(M) + np.triu(M, 1).T
    order = np.zeros(n, dtype=int)
    for _, iv, _, idx in cmap:
        order[idx] = np.arange(iv, iv + len(idx))
    return to_dynamica(cmap, a, n), M[np.ix_(order, order)]
