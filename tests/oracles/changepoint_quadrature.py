"""The motion of any Grashof change-point four-bar along its smooth branch, by quadrature (an oracle
for tests/runtime/test_changepoint_property.py, independent of dynamica and lighter than
tests/oracles/changepoint.py's 40-digit integration, with which it agrees: see the test).

The mechanism is that of tests/oracles/changepoint.py (planar; x right, y up): the crank of length
l1 turns about the origin (absolute angle p1 = th1), the coupler of length l2 on its tip (absolute
angle p2 = th1 + th2), the rocker of length l3 about (l0, 0) (angle p3 = th3), the coupler's tip
pinned to the rocker's; l1 + l2 = l0 + l3 with the crank the shortest, so the crank turns fully
and the links fold flat (all along +x) once a turn, at th1 = 0 mod 2 pi, where two branches cross.

On a branch the mechanism has one coordinate s = th1. The closed form of the closure (two circles)
gives p3 = atan2(B - D) + sign acos(c(s)) with acos(c) ~ k |s| at the flat configuration: each
smooth branch takes the other sign after every flat configuration. Its tangent (p2', p3' per unit
s) follows from the closure's derivative, l1 e'(p1) + l2 e'(p2) p2' = l3 e'(p3) p3'. With the
branch's generalised mass m(s) (the kinetic energy 1/2 m(s) s'^2 of the links, masses and
inertias about their centres) and potential V(s) (gravity g along -y), energy conservation gives
s' = sqrt(2 (E - V(s)) / m(s)) while s' > 0, and the time to reach s is the integral of
1 / s' (scipy's quad, 1e-13): no differential equation, no state off the branch. Rounding: the
tangent is a ratio of two sines that vanish like s at the flat configuration (relative rounding
eps / |s|, integrable: a few 1e-16 s of time).
"""

from __future__ import annotations

import math

import numpy as np

TWO_PI = 2.0 * math.pi


class Fourbar:
    """lengths (l0, l1, l2, l3); bodies: (m, I about the centre, cx, cy) per link (crank,
    coupler, rocker) in its own frame, x along the link; g; sign: the branch's sign of the acos
    term for th1 in (-2 pi, 0)."""

    def __init__(self, lengths, bodies, g, sign):
        self.l0, self.l1, self.l2, self.l3 = lengths
        self.bodies, self.g, self.sign = bodies, g, sign

    def _sign(self, s):
        return self.sign * (-1) ** (math.floor(s / TWO_PI) + 1)

    def angles(self, s):
        """(p1, p2, p3): the absolute angles of the links at crank angle s on the branch."""
        l0, l1, l2, l3 = self.l0, self.l1, self.l2, self.l3
        bx, by = l1 * math.cos(s) - l0, l1 * math.sin(s)
        dd = math.hypot(bx, by)
        c = (l3 ** 2 + dd ** 2 - l2 ** 2) / (2 * l3 * dd)
        p3 = math.atan2(by, bx) + self._sign(s) * math.acos(max(-1.0, min(1.0, c)))
        cx, cy = l0 + l3 * math.cos(p3) - l1 * math.cos(s), l3 * math.sin(p3) - l1 * math.sin(s)
        return s, math.atan2(cy, cx), p3

    def tangent(self, p):
        """(1, p2', p3') per unit crank angle: l1 e'(p1) + l2 e'(p2) p2' = l3 e'(p3) p3'."""
        p1, p2, p3 = p
        d = math.sin(p3 - p2)
        return 1.0, self.l1 * math.sin(p1 - p3) / (self.l2 * d), self.l1 * math.sin(p1 - p2) / (self.l3 * d)

    def _centres(self, p, t):
        """(position, velocity per unit s, angular velocity per unit s) of each link's centre."""
        p1, p2, p3 = p
        bases = [((0.0, 0.0), (0.0, 0.0)),
                 ((self.l1 * math.cos(p1), self.l1 * math.sin(p1)), (-self.l1 * math.sin(p1), self.l1 * math.cos(p1))),
                 ((self.l0, 0.0), (0.0, 0.0))]
        out = []
        for (o, do), ang, w, (_, _, cx, cy) in zip(bases, (p1, p2, p3), t, self.bodies):
            ca, sa = math.cos(ang), math.sin(ang)
            rx, ry = ca * cx - sa * cy, sa * cx + ca * cy
            out.append(((o[0] + rx, o[1] + ry), (do[0] * t[0] - ry * w, do[1] * t[0] + rx * w), w))
        return out

    def mass(self, s):
        p = self.angles(s)
        m = 0.0
        for (_, v, w), (mb, inertia, _, _) in zip(self._centres(p, self.tangent(p)), self.bodies):
            m += mb * (v[0] ** 2 + v[1] ** 2) + inertia * w ** 2
        return m

    def potential(self, s):
        p = self.angles(s)
        return sum(mb * self.g * c[1] for (c, _, _), (mb, _, _, _) in
                   zip(self._centres(p, (1.0, 0.0, 0.0)), self.bodies))

    def state(self, s, sdot):
        """(q, q') of the dynamica model (th1, th2 relative to the crank, th3)."""
        p = self.angles(s)
        t = self.tangent(p)
        return np.array([p[0], p[1] - p[0], p[2]]), np.array([t[0], t[1] - t[0], t[2]]) * sdot


def times(fb, s0, sdot0, s, t0=0.0):
    """The times at which the crank reaches the angles s (increasing, >= s0) from (s0, s'0 > 0),
    and s' there. Raises ValueError if the crank stops on the way."""
    from scipy.integrate import quad
    energy = 0.5 * fb.mass(s0) * sdot0 ** 2 + fb.potential(s0)

    def rate(x):
        k = 2.0 * (energy - fb.potential(x)) / fb.mass(x)
        if k <= 0.0:
            raise ValueError(f"the crank stops before th1 = {x}")
        return math.sqrt(k)

    out, rates, t, a = [], [], t0, s0
    for b in s:
        if b > a:
            t += quad(lambda x: 1.0 / rate(x), a, b, epsabs=1e-13, epsrel=1e-13, limit=200)[0]
        out.append(t)
        rates.append(rate(b))
        a = max(a, b)
    return np.array(out), np.array(rates)


def bodies(l0, l1, l2, l3):
    """The links of tests/data/changepoint.yaml, (m, I about the centre, cx, cy) of the crank, the
    coupler and the rocker, for lengths l0 ... l3."""
    return [(1.0, l1 ** 2 / 12, l1 / 2, 0.0), (2.0, l2 ** 2 / 6, l2 / 3, 0.1), (1.0, l3 ** 2 / 12, l3 / 2, 0.0)]


def crossing_start(lengths, sign, s0, extra, g=9.81):
    """A motion through the flat configuration at th1 = 0 on the branch `sign`: from th1 = s0 with the
    kinetic energy `extra` above what gravity takes up to th1 = 0.5 (the crank never stops).
    Returns (Fourbar, s'(s0), q0, qd0, t_end) with t_end the time to reach th1 = 0.5."""
    fb = Fourbar(lengths, bodies(*lengths), g, sign)
    grid = np.linspace(s0, 0.5, 400)
    climb = max(fb.potential(x) for x in grid) - fb.potential(s0)
    sdot0 = math.sqrt(2.0 * (max(climb, 0.0) + extra) / fb.mass(s0))
    q0, qd0 = fb.state(s0, sdot0)
    return fb, sdot0, q0, qd0, float(times(fb, s0, sdot0, [0.5])[0][0])
