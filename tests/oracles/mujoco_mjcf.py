"""MuJoCo as the oracle of MJCF models (tests/generator/importers/test_mjcf.py): q'' and M of a dynamica model of an
MJCF file against MuJoCo's mj_forward (qacc) and mj_fullM on the same file, contacts and other
constraints disabled by the option flags, fluid forces off (density and viscosity 0).

Coordinates: hinge and slide joints are MuJoCo's qpos/qvel themselves. A ball joint's Cardan
angles (a, b, c), R = Rx(a) Ry(b) Rz(c), are MuJoCo's quaternion of R, and its rates map to
MuJoCo's qvel, the angular velocity in the child's axes, by w = E(q) q' with
E q' = Rz(c)^T Ry(b)^T [a', 0, 0] + Rz(c)^T [0, b', 0] + [0, 0, c'] (written here, not taken
from either program); a free joint is the ground-axes position (qvel: the linear velocity in
the ground frame) and such a ball. Accelerations then map as w' = E q'' + (dE/dt) q', the
derivative by a complex step (exact to rounding), and M_dynamica = T^T M_mujoco T with T the
block-diagonal map of the rates.
"""

from __future__ import annotations

import numpy as np

FREE, BALL, SLIDE, HINGE = 0, 1, 2, 3


def _rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]], dtype=np.result_type(a, float))


def _ry(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]], dtype=np.result_type(a, float))


def _rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]], dtype=np.result_type(a, float))


def cardan_rates(abc):
    """E with w (child axes) = E [a', b', c'] for R = Rx(a) Ry(b) Rz(c)."""
    a, b, c = abc
    Rz, Ry = _rz(c), _ry(b)
    return np.column_stack([Rz.T @ Ry.T @ np.array([1, 0, 0]), Rz.T @ np.array([0, 1, 0]), np.array([0, 0, 1])])


def quat_of(R):
    """Unit quaternion (w, x, y, z) of a rotation matrix."""
    import mujoco
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(R, dtype=float).ravel())
    return q


class MujocoOracle:
    """An MJCF file compiled by MuJoCo, with the map between dynamica's coordinates (in the
    order of a model's `coordinates`) and MuJoCo's qpos/qvel."""

    def __init__(self, path, coordinates, actuation=False):
        import mujoco
        self.mj = mujoco
        self.m = mujoco.MjModel.from_xml_path(str(path))
        self.d = mujoco.MjData(self.m)
        flags = mujoco.mjtDisableBit
        self.m.opt.disableflags |= flags.mjDSBL_CONSTRAINT | flags.mjDSBL_CONTACT
        self.m.opt.density = self.m.opt.viscosity = 0.0      # fluid forces off (not modelled)
        if not actuation:
            self.m.opt.disableflags |= flags.mjDSBL_ACTUATION
        self.n = len(coordinates)
        # per joint: (type, index of its first coordinate in dynamica's order, qposadr, dofadr)
        self.joints = []
        start = {}
        k = 0
        m = self.m
        names = list(coordinates)
        for j in range(m.njnt):                      # dynamica numbers depth first as MuJoCo does
            t = int(m.jnt_type[j])
            width = {FREE: 6, BALL: 3, SLIDE: 1, HINGE: 1}[t]
            start[j] = k
            self.joints.append((t, k, int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])))
            k += width
        assert k == self.n == m.nv, (k, self.n, m.nv, names)

    def _rotation_block(self, t, q):
        return cardan_rates(q)

    def state(self, q, qd):
        """MuJoCo's qpos, qvel of dynamica's (q, q') and the map T (nv x n) of the rates."""
        m = self.m
        qpos, qvel = np.array(m.qpos0, dtype=float), np.zeros(m.nv)
        T = np.zeros((m.nv, self.n))
        for t, k, pa, da in self.joints:
            if t in (HINGE, SLIDE):
                qpos[pa], qvel[da], T[da, k] = q[k], qd[k], 1.0
                continue
            if t == FREE:
                qpos[pa:pa + 3] = q[k:k + 3]
                qvel[da:da + 3] = qd[k:k + 3]
                T[da:da + 3, k:k + 3] = np.eye(3)
                pa, da, k = pa + 3, da + 3, k + 3
            abc = q[k:k + 3]
            qpos[pa:pa + 4] = quat_of(_rx(abc[0]) @ _ry(abc[1]) @ _rz(abc[2]))
            E = cardan_rates(abc)
            qvel[da:da + 3] = E @ qd[k:k + 3]
            T[da:da + 3, k:k + 3] = E
        return qpos, qvel, T

    def bias_rate(self, q, qd):
        """(dT/dt) q' in MuJoCo's dofs: the part of MuJoCo's qacc not from q''."""
        out = np.zeros(self.m.nv)
        h = 1e-20
        for t, k, pa, da in self.joints:
            if t in (HINGE, SLIDE):
                continue
            if t == FREE:
                da, k = da + 3, k + 3
            abc = q[k:k + 3] + 1j * h * qd[k:k + 3]
            out[da:da + 3] = np.imag(cardan_rates(abc) @ qd[k:k + 3]) / h
        return out

    def qacc_and_M(self, q, qd, ctrl=None, qfrc=None):
        """MuJoCo's qacc and full M (dofs) at dynamica's state, and T; `qfrc`: qfrc_applied (dofs)."""
        mj, m, d = self.mj, self.m, self.d
        qpos, qvel, T = self.state(np.asarray(q, float), np.asarray(qd, float))
        d.qpos[:], d.qvel[:] = qpos, qvel
        d.qfrc_applied[:] = 0.0 if qfrc is None else qfrc
        if ctrl is not None:
            d.ctrl[:] = ctrl
        mj.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mj.mj_fullM(m, d, M) if not hasattr(d, "qM") else mj.mj_fullM(m, M, d.qM)
        return np.array(d.qacc), M, T

    def compare(self, model, q, qd, ctrl=None, inputs=None, qfrc=None):
        """(MuJoCo's qacc, dynamica's q'' mapped to MuJoCo's dofs, M of MuJoCo mapped, M of
        dynamica)."""
        qacc, M, T = self.qacc_and_M(q, qd, ctrl, qfrc)
        ours = model.qdd(q, qd, inputs=inputs) if inputs else model.qdd(q, qd)
        return qacc, T @ ours + self.bias_rate(np.asarray(q, float), np.asarray(qd, float)), T.T @ M @ T, \
            model.mass_matrix(q)


def constrained_qacc(oracle, q, qd, h=1e-5):
    """q'' of a hinge/slide model with its `connect` and `weld` equalities as exact constraints:
    MuJoCo's unconstrained qacc a0 and M (constraints disabled), the constraints' Jacobian J
    from mj_jac at the equalities' points (connect: the two points' velocities equal; weld: also
    the two bodies' angular velocities), dJ/dt q' by a central difference along q', and the
    Gauss principle written here: q'' = a0 - M^-1 J^T (J M^-1 J^T)^+ (J a0 + J' q')."""
    mj, m, d = oracle.mj, oracle.m, oracle.d
    q, qd = np.asarray(q, float), np.asarray(qd, float)

    def jac(qq):
        d.qpos[:] = qq
        mj.mj_kinematics(m, d)
        mj.mj_comPos(m, d)
        rows = []
        for e in range(m.neq):
            kind, b1, b2 = int(m.eq_type[e]), int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
            data = m.eq_data[e]
            pa, pb = (data[0:3], data[3:6]) if kind == 0 else (data[3:6], data[0:3])
            J = []
            for b, p, s in ((b1, pa, 1.0), (b2, pb, -1.0)):
                jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
                x = d.xpos[b] + d.xmat[b].reshape(3, 3) @ p
                mj.mj_jac(m, d, jp, jr, x, b)
                J.append(s * np.vstack([jp, jr] if kind == 1 else [jp]))
            rows.append(J[0] + J[1])
        return np.vstack(rows)
    J = jac(q)
    Jd_qd = (jac(q + h * qd) - jac(q - h * qd)) @ qd / (2 * h)
    a0, M, _ = oracle.qacc_and_M(q, qd)
    Minv = np.linalg.inv(M)
    S = J @ Minv @ J.T
    return a0 - Minv @ J.T @ np.linalg.pinv(S, rcond=1e-10) @ (J @ a0 + Jd_qd)
