"""Bricard's mechanism (IFToMM benchmark A04; Gonzalez, Dopico, Lugris, Cuadrado, "A benchmarking
system for MBS simulation software", Multibody System Dynamics 16, 2006), built here as a Pinocchio
model independently of models/bricard.yaml and cut elsewhere: the open chain
O1 - rod1 - rod2 - rod3 - rod4 - rod5 of five revolute joints (about y, z, x, y, z at O1 (0, 0, 0),
P2 (1, 0, 0), P3 (1, -1, 0), P4 (1, -1, 1), P5 (0, -1, 1) at t = 0) from the ground, closed by
the sixth joint at O2 (0, 0, 1), about x, between rod5 and the ground. Rods of 1 m, 1 kg, square
section 0.1 m; gravity 9.81 m/s^2 along -y; released at rest.

The closing joint holds the point O2 of rod5 at rest and rod5's angular velocity along its
local x (the joint's axis): five rows C of rod5's body velocity at O2, C J(q) q' = 0, of rank 4
on this mechanism (the redundant equation). The motion has one degree of freedom; with n the
unit vector spanning the null space of C J (SVD) and w the minimum-norm solution of
C J w = -C (dJ/dt) q' (Pinocchio's frame acceleration at q'' = 0),

    q'' = w + n alpha,   n^T (M (w + n alpha) + b) = 0

(M and b = Coriolis + gravity from Pinocchio's CRBA and RNEA): d'Alembert's principle projected
on the one admissible direction. Integrated with scipy's DOP853 at rtol = atol = 1e-12.
"""

from __future__ import annotations

import numpy as np

LENGTH, MASS, SIDE, G = 1.0, 1.0, 0.1, 9.81
#: C: rod5's body velocity at O2 (Pinocchio's order: linear x, y, z, angular x, y, z), all but
#: the rotation about the closing joint's axis (local x)
ROWS = [0, 1, 2, 4, 5]


def _rod_inertia(pin, along: int, com):
    """pin.Inertia of a rod of square section along body axis `along` (0, 1, 2)."""
    long_ = MASS * 2 * SIDE ** 2 / 12
    trans = MASS * (LENGTH ** 2 + SIDE ** 2) / 12
    diag = [trans, trans, trans]
    diag[along] = long_
    return pin.Inertia(MASS, np.array(com, dtype=float), np.diag(diag))


class Bricard:
    """The Pinocchio model of the chain, its closing joint and the projected equations."""

    def __init__(self):
        import pinocchio as pin
        self.pin = pin
        model = pin.Model()
        model.gravity = pin.Motion(np.array([0.0, -G, 0.0, 0.0, 0.0, 0.0]))
        # (joint type, placement in the parent joint's frame, rod axis, centre of mass)
        chain = [(pin.JointModelRY(), (0, 0, 0), 0, (0.5, 0, 0)),
                 (pin.JointModelRZ(), (1, 0, 0), 1, (0, -0.5, 0)),
                 (pin.JointModelRX(), (0, -1, 0), 2, (0, 0, 0.5)),
                 (pin.JointModelRY(), (0, 0, 1), 0, (-0.5, 0, 0)),
                 (pin.JointModelRZ(), (-1, 0, 0), 1, (0, 0.5, 0))]
        parent = 0
        for k, (joint, at, along, com) in enumerate(chain):
            parent = model.addJoint(parent, joint, pin.SE3(np.eye(3), np.array(at, dtype=float)), f"j{k + 1}")
            model.appendBodyToJoint(parent, _rod_inertia(pin, along, com), pin.SE3.Identity())
        self.o2 = model.addFrame(pin.Frame("O2", parent, 0, pin.SE3(np.eye(3), np.array([0.0, 1.0, 0.0])),
                                           pin.FrameType.OP_FRAME))
        self.model, self.data = model, model.createData()

    def closure(self, q) -> np.ndarray:
        """The sixth joint's position equations: O2 of rod5 at (0, 0, 1), rod5's x axis along the
        ground's x (its y and z components)."""
        pin = self.pin
        pin.framesForwardKinematics(self.model, self.data, q)
        pose = self.data.oMf[self.o2]
        return np.concatenate([pose.translation - np.array([0.0, 0.0, LENGTH]), pose.rotation[1:, 0]])

    def p3(self, q) -> np.ndarray:
        """The point P3 (the joint between rod2 and rod3)."""
        self.pin.forwardKinematics(self.model, self.data, q)
        return self.data.oMi[3].translation.copy()

    def energy(self, q, v) -> float:
        pin = self.pin
        return float(pin.computeKineticEnergy(self.model, self.data, q, v)
                     + pin.computePotentialEnergy(self.model, self.data, q))

    def qdd(self, q, v):
        """(q'', the singular values of C J): the projected equations above."""
        pin, model, data = self.pin, self.model, self.data
        pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        A = pin.getFrameJacobian(model, data, self.o2, pin.LOCAL)[ROWS]
        drift = pin.getFrameAcceleration(model, data, self.o2, pin.LOCAL).vector[ROWS]
        _, s, vt = np.linalg.svd(A)
        n = vt[-1]
        w = -np.linalg.pinv(A, rcond=1e-8) @ drift
        M = pin.crba(model, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        b = pin.nonLinearEffects(model, data, q, v)
        alpha = -(n @ (M @ w + b)) / (n @ M @ n)
        return w + alpha * n, s

    def run(self, times, rtol: float = 1e-12, atol: float = 1e-12):
        """P3 (rows of times x 3) and the energy along the motion from rest at t = 0."""
        from scipy.integrate import solve_ivp
        nq = self.model.nq
        res = solve_ivp(lambda t, y: np.concatenate([y[nq:], self.qdd(y[:nq], y[nq:])[0]]),
                        (0.0, float(times[-1])), np.zeros(2 * nq), method="DOP853", rtol=rtol, atol=atol,
                        t_eval=times)
        ys = res.y.T
        p3 = np.array([self.p3(y[:nq]) for y in ys])
        energy = np.array([self.energy(y[:nq], y[nq:]) for y in ys])
        residual = max(float(np.abs(self.closure(y[:nq])).max()) for y in ys)
        return p3, energy, residual
