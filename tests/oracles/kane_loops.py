"""Closed-loop mechanisms by sympy.physics.mechanics.KanesMethod with configuration and velocity
constraints (dependent coordinates and speeds): an oracle written independently of dynamica."""

from __future__ import annotations

import numpy as np
import sympy as sp
import sympy.physics.mechanics as me


def fourbar(l1, l2, l3, l0, m, g):
    """Planar four-bar in the x-y plane: crank (q1) and rocker (q3) pinned to the ground at O and at
    (l0, 0), coupler (q2, relative to the crank) pinned to the crank's tip; the loop closes where
    the coupler's and the rocker's tips meet. Rods of mass m, inertia about the com
    diag(1e-4, m l^2/12, m l^2/12) in their axes, gravity -g y. q2, q3 and their speeds are dependent.
    Returns qdd(q, qd) -> the three accelerations."""
    q1, q2, q3 = me.dynamicsymbols("q1:4")
    u1, u2, u3 = me.dynamicsymbols("u1:4")
    N = me.ReferenceFrame("N")
    A = N.orientnew("A", "Axis", (q1, N.z))
    B = A.orientnew("B", "Axis", (q2, A.z))
    C = N.orientnew("C", "Axis", (q3, N.z))
    A.set_ang_vel(N, u1 * N.z)
    B.set_ang_vel(A, u2 * A.z)
    C.set_ang_vel(N, u3 * N.z)
    O = me.Point("O")
    O.set_vel(N, 0)
    P1 = O.locatenew("P1", l1 * A.x)
    D = O.locatenew("D", l0 * N.x)
    D.set_vel(N, 0)
    Ac, Bc, Cc = O.locatenew("Ac", l1 / 2 * A.x), P1.locatenew("Bc", l2 / 2 * B.x), D.locatenew("Cc", l3 / 2 * C.x)
    Ac.v2pt_theory(O, N, A)
    P1.v2pt_theory(O, N, A)
    Bc.v2pt_theory(P1, N, B)
    Cc.v2pt_theory(D, N, C)
    bodies = [me.RigidBody(name, pt, frame, m, (me.inertia(frame, 1e-4, m * l**2 / 12, m * l**2 / 12), pt))
              for name, frame, pt, l in (("a", A, Ac, l1), ("b", B, Bc, l2), ("c", C, Cc, l3))]
    loads = [(b.masscenter, -m * g * N.y) for b in bodies]
    loop = P1.locatenew("tB", l2 * B.x).pos_from(O) - D.locatenew("tC", l3 * C.x).pos_from(O)
    conf = [loop.dot(N.x), loop.dot(N.y)]
    t = me.dynamicsymbols._t
    vel = [sp.diff(c, t).subs({sp.diff(q1, t): u1, sp.diff(q2, t): u2, sp.diff(q3, t): u3}) for c in conf]
    kd = [sp.diff(q1, t) - u1, sp.diff(q2, t) - u2, sp.diff(q3, t) - u3]
    km = me.KanesMethod(N, q_ind=[q1], u_ind=[u1], kd_eqs=kd, q_dependent=[q2, q3], configuration_constraints=conf,
                        u_dependent=[u2, u3], velocity_constraints=vel)
    km.kanes_equations(bodies, loads)
    args = [q1, q2, q3, u1, u2, u3]
    Mf, ff = sp.lambdify(args, km.mass_matrix_full, "numpy"), sp.lambdify(args, km.forcing_full, "numpy")

    def qdd(q, qd):
        x = list(q) + list(qd)
        return np.linalg.solve(np.array(Mf(*x), float), np.array(ff(*x), float).ravel())[3:]
    return qdd
