"""The motion of a Grashof change-point four-bar through its flattened configurations, as the
one-coordinate equation of its smooth branch (tests/runtime/test_iftomm_nfourbar.py's oracle for a
crossing of branches whose normals turn, unlike the N four-bar's).

The mechanism is tests/oracles/planar_loops.py's four-bar (Lagrangian, loop equations and the
null-space accelerations written by hand in sympy, evaluated in mpmath). The branch is followed
in its crank angle s = th1: at every evaluation the configuration q(s) is one of the two closed
forms of the loop's closure (the intersection of two circles), the one nearest the prediction from
the last configuration, so that the crossed branch is never taken (the two separate linearly with
the distance from the crossing, the prediction's error is quadratic); its rates are t(s) s' with t
spanning J's null space; then s'' is the th1 row of the constrained accelerations at that exact
state, in 40 digits. No state off the constraint manifold is ever evaluated, so the conditioning
that troubles the index-1 equations near the crossing does not enter. scipy's DOP853 integrates
(s, s') at rtol 1e-13.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np

from oracles import planar_loops as pl


class Branch:
    def __init__(self, l0, l1, l2, l3, bodies, g):
        self.l = (l0, l1, l2, l3)
        self.mech = pl.fourbar(l0, l1, l2, l3, bodies, g)
        self.last = None                     # (s, q, t) of the last evaluation

    def _candidates(self, s):
        l0, l1, l2, l3 = self.l
        out = []
        for sign in (1, -1):
            P = (l1 * mp.cos(s), l1 * mp.sin(s))
            v = (P[0] - l0, P[1])
            dd = mp.sqrt(v[0] ** 2 + v[1] ** 2)
            c = (l3 ** 2 + dd ** 2 - l2 ** 2) / (2 * l3 * dd)
            th3 = mp.atan2(v[1], v[0]) + sign * mp.acos(max(-1, min(1, c)))
            C = (l0 + l3 * mp.cos(th3), l3 * mp.sin(th3))
            th2 = mp.atan2(C[1] - P[1], C[0] - P[0]) - s
            out.append([s, th2, th3])
        return out

    def configuration(self, s):
        """(q, t) on the branch at crank angle s (mpmath), t = dq/ds."""
        with mp.workdps(pl.DPS):
            s = mp.mpf(s)
            if self.last is None:
                raise ValueError("start the branch with start(q0)")
            s0, q0, t0 = self.last
            pred = [q0[k] + t0[k] * (s - s0) for k in range(3)]
            best = min(self._candidates(s),
                       key=lambda q: sum((pl._unwrap([x], [p])[0] - p) ** 2 for x, p in zip(q, pred)))
            q = [pl._unwrap([x], [p])[0] for x, p in zip(best, pred)]
            J = mp.matrix(self.mech._J(q))
            _, _, Vt = mp.svd_r(J, full_matrices=True)
            t = [Vt[2, k] / Vt[2, 0] for k in range(3)]
            self.last = (s, q, t)
            return q, t

    def start(self, q0):
        with mp.workdps(pl.DPS):
            q = [mp.mpf(float(x)) for x in q0]
            J = mp.matrix(self.mech._J(q))
            _, _, Vt = mp.svd_r(J, full_matrices=True)
            self.last = (q[0], q, [Vt[2, k] / Vt[2, 0] for k in range(3)])

    def rhs(self, t, y):
        q, tan = self.configuration(y[0])
        with mp.workdps(pl.DPS):
            qd = [x * mp.mpf(float(y[1])) for x in tan]
            M, Q = mp.matrix(self.mech._M(q)), mp.matrix(self.mech._Q(q, qd))
            gamma = mp.matrix(self.mech._gamma(q, qd))
            J = mp.matrix(self.mech._J(q))
            # the KKT system [M J^T; J 0] [q''; lambda] = [Q; gamma] (J has full rank off the crossing)
            K = mp.matrix(5, 5)
            rhs = mp.matrix(5, 1)
            for i in range(3):
                rhs[i] = Q[i]
                for j in range(3):
                    K[i, j] = M[i, j]
                for a in range(2):
                    K[i, 3 + a] = J[a, i]
                    K[3 + a, i] = J[a, i]
            for a in range(2):
                rhs[3 + a] = gamma[a]
            x = mp.lu_solve(K, rhs)
            return np.array([float(y[1]), float(x[0])])

    def energy(self, q, qd):
        """T + V of the tree at (q, q') (floats)."""
        with mp.workdps(pl.DPS):
            qm, qdm = [mp.mpf(float(v)) for v in q], [mp.mpf(float(v)) for v in qd]
            M = mp.matrix(self.mech._M(qm))
            T = sum(qdm[i] * M[i, j] * qdm[j] for i in range(3) for j in range(3)) / 2
            return float(T)


def reference(branch, q0, s_dot0, times, rtol=1e-13):
    """th1(t) at `times` from the assembled state (q0, th1' = s_dot0)."""
    from scipy.integrate import solve_ivp
    branch.start(q0)
    sol = solve_ivp(branch.rhs, (times[0], times[-1]), [float(q0[0]), float(s_dot0)], method="DOP853",
                    rtol=rtol, atol=rtol, t_eval=times)
    return sol.y[0], sol
