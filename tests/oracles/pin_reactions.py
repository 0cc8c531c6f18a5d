"""Pinocchio's joint wrenches for the random trees of pin_trees.py (joint reactions oracle)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from oracles.pin_trees import yaml_body_mass_props


def pin_solution(tree, q, qd, overrides):
    """Pinocchio (model, data, names, qdd) after aba (tau = 0) and rnea at that qdd."""
    pmodel, names = tree.to_pinocchio(tree.param_values(overrides))
    data = pmodel.createData()
    qv = np.array([q[c] for c in names])
    vv = np.array([qd[c] for c in names])
    a = pin.aba(pmodel, data, qv, vv, np.zeros(pmodel.nv)).copy()
    pin.rnea(pmodel, data, qv, vv, a)
    pin.forwardKinematics(pmodel, data, qv)       # rnea does not update data.oMi
    return pmodel, data, names, a


def pin_transmitted_wrench(tree, data, name, overrides=None):
    """Wrench from the parent on the subtree of body `name`, in its frame at its origin, summed
    from the bodies' inertial wrenches I a + v x* I v (a with gravity: data.a_gf)."""
    jid, P = tree.pin_attach[name]
    oMb = data.oMi[jid] * P
    mp = yaml_body_mass_props(tree.model_dict, tree.param_values(overrides))
    total = pin.Force.Zero()
    stack = [name]
    while stack:
        b = stack.pop()
        stack += [c.name for c in tree.bodies if c.parent == b]
        j, Pb = tree.pin_attach[b]
        m, c, Ic = mp[b]
        inertia = pin.Inertia(m, c, Ic)
        v, a = Pb.actInv(data.v[j]), Pb.actInv(data.a_gf[j])
        f = inertia * a + v.cross(inertia * v)
        total += (oMb.inverse() * data.oMi[j] * Pb).act(f)
    return np.concatenate([total.linear, total.angular])
