"""Planar mechanisms with closed loops, written by hand with sympy (shares no code with
dynamica's generator or runtime), for tests/runtime/test_singular_loops.py.

A mechanism is its tree coordinates q (names as in the model file), its rigid bodies (mass m,
moment of inertia I about the centre of mass, centre (x_c(q), y_c(q)), absolute angle theta(q))
and its loop-closure equations phi(q) = 0 (planar point coincidences, written by hand). From the
Lagrangian L = T - V,

    T = sum 1/2 m (x_c'^2 + y_c'^2) + 1/2 I theta'^2,   V = sum m g y_c   (gravity along -y),

    M = d^2 T / dq'^2,   Q = dL/dq - (d^2 T / dq' dq) q'          (M q'' = Q for the tree),
    J = dphi/dq,         gamma = -d(J q')/dq q'                   (J q'' = gamma on the loops).

The constrained accelerations by the null-space method, which holds where J loses rank too:
with J = U S V^T (SVD), rank r = #{s_k > RANK_TOL s_1}, N the last n - r columns of V,

    q_p = J^+ gamma (truncated to rank r, the minimum-norm least-squares solution),
    q'' = q_p + N (N^T M N)^-1 N^T (Q - M q_p).

Everything is evaluated in mpmath at DPS decimal digits, so that the reference's own rounding
(amplified by 1/s_r near a singular configuration) is far below what the test checks: the
reference is q'' of the float64 state given, to ~1e-30.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import sympy as sp

DPS = 40
#: rank tolerance of the reference SVD, relative to the largest singular value. States are
#: float64: at an exactly singular configuration the rounded q leaves J a smallest singular
#: value of ~1e-16 (which must count as zero), while the states near it (d >= 1e-9) have
#: s_min ~ d (which must count: J has full rank there, and gamma is only consistent with it).
RANK_TOL = 1e-12


def rot(theta):
    return sp.Matrix([[sp.cos(theta), -sp.sin(theta)], [sp.sin(theta), sp.cos(theta)]])


class Planar:
    """The equations of one planar mechanism, lambdified once (mpmath)."""

    def __init__(self, coords, bodies, phi, g):
        """coords: coordinate names (the order of the model's q); bodies: (m, I, centre, theta)
        with centre a 2-vector and theta an expression of the symbols `self.q`; phi: the loop
        equations (expressions); g: gravity along -y."""
        self.coords = list(coords)
        q, qd = self.q, self.qd = self.symbols(coords)
        qdv = sp.Matrix(qd)
        T, V = 0, 0
        for m, inertia, centre, theta in bodies:
            c = sp.Matrix(centre)
            v = c.jacobian(q) * qdv
            w = sp.Matrix([theta]).jacobian(q) * qdv
            T += sp.Rational(1, 2) * m * (v.T * v)[0] + sp.Rational(1, 2) * inertia * w[0] ** 2
            V += m * g * c[1]
        L = T - V
        M = sp.hessian(T, qd)
        dTdqd = sp.Matrix([T]).jacobian(qd).T
        Q = sp.Matrix([L]).jacobian(q).T - dTdqd.jacobian(q) * qdv
        phi = sp.Matrix(phi)
        J = phi.jacobian(q)
        gamma = -(J * qdv).jacobian(q) * qdv
        args = (list(q), list(qd))
        self._phi = sp.lambdify([list(q)], phi, modules="mpmath")
        self._J = sp.lambdify([list(q)], J, modules="mpmath")
        self._M = sp.lambdify([list(q)], M, modules="mpmath")
        self._Q = sp.lambdify(args, Q, modules="mpmath")
        self._gamma = sp.lambdify(args, gamma, modules="mpmath")
        self.n, self.m = len(q), phi.shape[0]
        self.hessians = [sp.lambdify([list(q)], sp.hessian(p, q), modules="mpmath") for p in phi]

    @staticmethod
    def symbols(coords):
        return ([sp.Symbol(c, real=True) for c in coords],
                [sp.Symbol(f"{c}_d", real=True) for c in coords])

    # --- evaluation (mpmath matrices at DPS digits) ------------------------------------------
    @staticmethod
    def _mp(x):
        return [mp.mpf(float(v)) if isinstance(v, (float, np.floating)) else mp.mpf(v) for v in x]

    def phi(self, q):
        with mp.workdps(DPS):
            return mp.matrix(self._phi(self._mp(q)))

    def jacobian(self, q):
        with mp.workdps(DPS):
            return mp.matrix(self._J(self._mp(q)))

    def svd(self, q):
        """(singular values, V) of J at q: J = U diag(s) V^T, s descending; V's columns."""
        with mp.workdps(DPS):
            _, s, Vt = mp.svd_r(self.jacobian(q), full_matrices=True)
            sv = [s[k] for k in range(min(self.m, self.n))]
            return sv, Vt.T

    def null_space(self, q, tol=RANK_TOL):
        with mp.workdps(DPS):
            s, V = self.svd(q)
            r = sum(1 for x in s if x > tol * s[0])
            return V[:, r:] if r < self.n else mp.matrix(self.n, 0), s, r

    def qdd(self, q, qd, tol=RANK_TOL):
        """(q'', info) by the null-space method at the float64 state (q, q'), as floats; info has
        the singular values of J, the rank used and the residual of the left-out equations."""
        with mp.workdps(DPS):
            qm, qdm = self._mp(q), self._mp(qd)
            J = self.jacobian(q)
            M, Q = mp.matrix(self._M(qm)), mp.matrix(self._Q(qm, qdm))
            gamma = mp.matrix(self._gamma(qm, qdm))
            U, s, Vt = mp.svd_r(J, full_matrices=True)
            V = Vt.T
            k = min(self.m, self.n)
            r = sum(1 for i in range(k) if s[i] > tol * s[0])
            qp = mp.matrix(self.n, 1)
            for i in range(r):                       # J^+ gamma, rank r
                coef = sum(U[a, i] * gamma[a] for a in range(self.m)) / s[i]
                for j in range(self.n):
                    qp[j] += coef * V[j, i]
            left_out = [sum(U[a, i] * gamma[a] for a in range(self.m)) for i in range(r, self.m)]
            if r < self.n:
                N = V[:, r:]
                NtMN = N.T * M * N
                z = mp.lu_solve(NtMN, N.T * (Q - M * qp))
                out = qp + N * z
            else:
                out = qp
            info = {"s": [float(s[i]) for i in range(k)], "rank": r,
                    "left_out": max([abs(float(x)) for x in left_out], default=0.0)}
            return np.array([float(x) for x in out]), info

    def inconsistency(self, q, qd, u):
        """u^T gamma = -q'^T (sum_a u_a Hess(phi_a)) q' for a left null vector u of J."""
        with mp.workdps(DPS):
            qm, qdm = self._mp(q), self._mp(qd)
            gamma = mp.matrix(self._gamma(qm, qdm))
            return float(sum(u[a] * gamma[a] for a in range(self.m)))


# --- the mechanisms -----------------------------------------------------------------------------

def fourbar(l0, l1, l2, l3, bodies, g):
    """Crank (th1, at the origin), coupler (th2, relative, on the crank's tip), rocker (th3, at
    (l0, 0)); the loop: coupler's (l2, 0) on rocker's (l3, 0). bodies: (m, I, cx, cy) per link
    in its own frame (x along the link)."""
    (th1, th2, th3), _ = Planar.symbols(["th1", "th2", "th3"])
    A, B, D = sp.Matrix([0, 0]), rot(th1) * sp.Matrix([l1, 0]), sp.Matrix([l0, 0])
    frames = [(A, th1), (B, th1 + th2), (D, th3)]
    bs = [(m, I, o + rot(t) * sp.Matrix([cx, cy]), t) for (o, t), (m, I, cx, cy) in zip(frames, bodies)]
    C_coupler = B + rot(th1 + th2) * sp.Matrix([l2, 0])
    C_rocker = D + rot(th3) * sp.Matrix([l3, 0])
    return Planar(["th1", "th2", "th3"], bs, list(C_coupler - C_rocker), g)


def fourbar_flat(l0, l1, l2, l3):
    """The flattened (all-collinear) configuration of a change-point four-bar (mpmath): crank
    angle 0 or pi, the coupler and rocker along +-x. The lengths must satisfy the change-point
    condition exactly (binary fractions)."""
    for th1, bx in ((0, l1), (1, -l1)):
        for s2 in (1, -1):
            for s3 in (1, -1):
                if bx + s2 * l2 == l0 + s3 * l3:
                    th2 = 0 if s2 * bx > 0 else 1
                    return [mp.pi * th1, mp.pi * th2, mp.pi * (0 if s3 > 0 else 1)]
    raise ValueError("the lengths have no flattened configuration")


def fourbar_branch(l0, l1, l2, l3, q_flat, sign):
    """q(d): the branch of the four-bar through its flattened configuration q_flat with crank
    angle q_flat[0] + d (d > 0), in closed form (intersection of two circles), mpmath; `sign`
    picks one of the two branches that cross there. Angles are unwrapped next to q_flat."""
    def q_of(d):
        th1 = mp.mpf(q_flat[0]) + d
        P = (l1 * mp.cos(th1), l1 * mp.sin(th1))
        v = (P[0] - l0, P[1])
        dd = mp.sqrt(v[0] ** 2 + v[1] ** 2)
        c = (l3 ** 2 + dd ** 2 - l2 ** 2) / (2 * l3 * dd)
        th3 = mp.atan2(v[1], v[0]) + sign * mp.acos(max(-1, min(1, c)))
        C = (l0 + l3 * mp.cos(th3), l3 * mp.sin(th3))
        th2 = mp.atan2(C[1] - P[1], C[0] - P[0]) - th1
        return _unwrap([th1, th2, th3], q_flat)
    return q_of


def _unwrap(q, ref):
    return [x - 2 * mp.pi * mp.nint((x - r) / (2 * mp.pi)) for x, r in zip(q, ref)]


def slider_crank(r, L, bodies, g):
    """Crank (th1, at the origin), rod (th2, relative, on the crank's tip), slider (s, along x
    from the origin); the loop: rod's (L, 0) on the slider's origin."""
    (th1, th2, s), _ = Planar.symbols(["th1", "th2", "s"])
    B = rot(th1) * sp.Matrix([r, 0])
    frames = [(sp.Matrix([0, 0]), th1), (B, th1 + th2), (sp.Matrix([s, 0]), sp.Integer(0))]
    bs = [(m, I, o + rot(t) * sp.Matrix([cx, cy]), t) for (o, t), (m, I, cx, cy) in zip(frames, bodies)]
    C = B + rot(th1 + th2) * sp.Matrix([L, 0])
    return Planar(["th1", "th2", "s"], bs, list(C - sp.Matrix([s, 0])), g)


def slider_crank_branch(r, L, th_dead):
    """q(d) at crank angle th_dead + d: s = r cos + sqrt(L^2 - r^2 sin^2), the rod's absolute
    angle psi with sin psi = -r sin(th1) / L, cos psi > 0."""
    def q_of(d):
        th1 = mp.mpf(th_dead) + d
        psi = mp.asin(-r * mp.sin(th1) / L)
        s = r * mp.cos(th1) + L * mp.cos(psi)
        return [th1, psi - th1, s]
    return q_of


def fivebar(l0, c1, d1, c2, d2, bodies, g):
    """Cranks a1 (at the origin, length c1) and a2 (at (l0, 0), length c2); distal links b1, b2
    (relative angles, on the cranks' tips, lengths d1, d2); the loop: the distal links' ends
    coincide. bodies: (m, I, cx, cy) for crank1, distal1, crank2, distal2."""
    (a1, b1, a2, b2), _ = Planar.symbols(["a1", "b1", "a2", "b2"])
    P1, P2 = sp.Matrix([0, 0]), sp.Matrix([l0, 0])
    B1, B2 = P1 + rot(a1) * sp.Matrix([c1, 0]), P2 + rot(a2) * sp.Matrix([c2, 0])
    frames = [(P1, a1), (B1, a1 + b1), (P2, a2), (B2, a2 + b2)]
    bs = [(m, I, o + rot(t) * sp.Matrix([cx, cy]), t) for (o, t), (m, I, cx, cy) in zip(frames, bodies)]
    E1, E2 = B1 + rot(a1 + b1) * sp.Matrix([d1, 0]), B2 + rot(a2 + b2) * sp.Matrix([d2, 0])
    return Planar(["a1", "b1", "a2", "b2"], bs, list(E1 - E2), g)


def fivebar_ik(l0, c1, d1, c2, d2, modes):
    """(a1, b1, a2, b2) with the distal links' ends at the point C (inverse kinematics of the two
    legs, closed form, mpmath); modes: the signs of the two legs' elbows."""
    def leg(P, c, d, C, sign):
        v = (C[0] - P[0], C[1] - P[1])
        dist = mp.sqrt(v[0] ** 2 + v[1] ** 2)
        a = mp.atan2(v[1], v[0]) + sign * mp.acos((c ** 2 + dist ** 2 - d ** 2) / (2 * c * dist))
        B = (P[0] + c * mp.cos(a), P[1] + c * mp.sin(a))
        return a, mp.atan2(C[1] - B[1], C[0] - B[0]) - a

    def q_of(C):
        a1, b1 = leg((0, 0), c1, d1, C, modes[0])
        a2, b2 = leg((l0, 0), c2, d2, C, modes[1])
        return [a1, b1, a2, b2]
    return q_of
